// train.dtype: the dtype a run computes in. f32 everywhere; bf16 and f16 on
// CUDA (16-bit compute with f32 master weights, f32 Adam state, f32 loss,
// softmax and LayerNorm statistics, f32 gradients at the optimizer; f16
// with dynamic loss scaling, runtime/train/loss_scaling.h); bf16 on the CPU
// (f32 tensors, the matrix products' inputs rounded to bf16 and summed in
// f32: core/cpu_product_precision.h). Config
// validation and the model ask this one place, so that a dtype joins a
// device here, together with its kernels.
#ifndef TFM_CORE_CONFIG_TRAINING_DTYPE_H_
#define TFM_CORE_CONFIG_TRAINING_DTYPE_H_

#include "absl/status/status.h"
#include "core/device.h"
#include "core/dtype.h"

namespace tfm {

// Whether every op a Transformer's update runs has kernels computing in
// `dtype` on `device`: f32 on both; bf16 on both; f16 on CUDA only.
bool CanTrainIn(DeviceType device, DType dtype);

// What trains on `device`, for messages: "the CPU trains in f32, or bf16
// (...)", "CUDA trains in f32, bf16, or f16 (...)".
const char* TrainingDTypesOn(DeviceType device);

// OkStatus, or FailedPrecondition saying that `dtype` cannot train on
// `device` and what can.
absl::Status CheckCanTrainIn(const Device& device, DType dtype);

}  // namespace tfm

#endif  // TFM_CORE_CONFIG_TRAINING_DTYPE_H_

// train.dtype: the dtype a run computes in. f32 everywhere; bf16 on CUDA
// (bf16 compute with f32 master weights, f32 Adam state, f32 loss, softmax
// and LayerNorm statistics, f32 gradients at the optimizer). Config
// validation and the model ask this one place, so that a dtype joins a
// device here, together with its kernels.
#ifndef TFM_CORE_CONFIG_TRAINING_DTYPE_H_
#define TFM_CORE_CONFIG_TRAINING_DTYPE_H_

#include "absl/status/status.h"
#include "core/device.h"
#include "core/dtype.h"

namespace tfm {

// Whether every op a Transformer's update runs has kernels computing in
// `dtype` on `device`: f32 on both; bf16 on CUDA only (the CPU has no bf16
// kernels); f16 nowhere yet (it needs dynamic loss scaling).
bool CanTrainIn(DeviceType device, DType dtype);

// What trains on `device`, for messages: "the CPU kernels compute in f32
// only", "CUDA trains in f32 or bf16 (...)".
const char* TrainingDTypesOn(DeviceType device);

// OkStatus, or FailedPrecondition saying that `dtype` cannot train on
// `device` and what can.
absl::Status CheckCanTrainIn(const Device& device, DType dtype);

}  // namespace tfm

#endif  // TFM_CORE_CONFIG_TRAINING_DTYPE_H_

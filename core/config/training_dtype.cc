#include "core/config/training_dtype.h"

#include "absl/strings/str_cat.h"

namespace tfm {

bool CanTrainIn(DeviceType device, DType dtype) {
  switch (device) {
    case DeviceType::kCPU:
      return dtype == DType::kF32 || dtype == DType::kBF16;
    case DeviceType::kCUDA:
      return dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16;
  }
  return false;
}

const char* TrainingDTypesOn(DeviceType device) {
  switch (device) {
    case DeviceType::kCPU:
      return "the CPU trains in f32, or bf16 (f32 tensors, products of bf16-rounded inputs "
             "summed in f32)";
    case DeviceType::kCUDA:
      return "CUDA trains in f32, bf16, or f16 (with dynamic loss scaling, train.loss_scaling)";
  }
  return "unknown device type";
}

absl::Status CheckCanTrainIn(const Device& device, DType dtype) {
  if (CanTrainIn(device.type, dtype)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("train.dtype ", DTypeName(dtype),
                                                    " is not supported for training on ",
                                                    device.ToString(), ": ",
                                                    TrainingDTypesOn(device.type)));
}

}  // namespace tfm

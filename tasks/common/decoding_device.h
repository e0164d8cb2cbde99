// Where a decoding command (decode/translate/parse, evaluate, the main
// job's held-out decoding) runs: --device, else the command's config's
// decode.device, resolved on this machine at the command's start (before an
// input is read or a model loaded), and the dtype it computes in.
#ifndef TFM_TASKS_COMMON_DECODING_DEVICE_H_
#define TFM_TASKS_COMMON_DECODING_DEVICE_H_

#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/task_registry.h"

namespace tfm {

struct DecodingTarget {
  Device device;
  DType dtype = DType::kF32;
};

// request.device (--device) over the config's decode.device, and
// request.dtype (--dtype) over decode.dtype. Writes the device chosen to
// `log` ("decoding on: cuda:0 (NVIDIA H100 ...), chosen by decode.device
// auto"). Errors name what the user typed ("--device=cuda: cuda:0 but this
// machine has no GPU", or the config line of decode.device).
absl::StatusOr<DecodingTarget> ChooseDecodingTarget(const TaskContext& context, std::ostream* log);

// OK when decoding on `device` can compute in `dtype`: f32 always; on the
// CPU bf16 (f32 tensors, bf16 products: Transformer::SetDecodingDType) and
// not f16; elsewhere bf16 or f16 where every op a Transformer's search
// runs in that dtype has a kernel for it on that device (the kernel
// registry says). Else FailedPrecondition, naming the first few ops that
// lack one.
absl::Status CheckDecodingDType(DeviceType device, DType dtype);

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_DECODING_DEVICE_H_

// Registers the Philox CUDA kernels (linked only in builds with CUDA).
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/random/random_cuda.h"

namespace tfm {
namespace {

template <bool kNormal>
absl::Status RandomCuda(KernelContext& context) {
  const Attrs& attrs = context.attrs();
  TFM_ASSIGN_OR_RETURN(std::vector<int64_t> shape, attrs.Get<std::vector<int64_t>>("shape"));
  TFM_ASSIGN_OR_RETURN(int64_t seed, attrs.Get<int64_t>("seed"));
  TFM_ASSIGN_OR_RETURN(int64_t stream_id, attrs.GetOr<int64_t>("stream", 0));
  TFM_ASSIGN_OR_RETURN(int64_t offset, attrs.GetOr<int64_t>("offset", 0));
  TFM_ASSIGN_OR_RETURN(double a, attrs.Get<double>(kNormal ? "mean" : "low"));
  TFM_ASSIGN_OR_RETURN(double b, attrs.Get<double>(kNormal ? "stddev" : "high"));
  TFM_ASSIGN_OR_RETURN(Tensor * out,
                       context.AllocateOutput(0, Shape(shape.begin(), shape.end()), DType::kF32));
  const auto launch = kNormal ? LaunchRandomNormal : LaunchRandomUniform;
  const char* error = launch(out->data<float>(), out->num_elements(), seed, stream_id, offset,
                             static_cast<float>(a), static_cast<float>(b), context.stream());
  if (error != nullptr) return absl::InternalError(absl::StrCat(context.def().name, ": ", error));
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("random_uniform", DeviceType::kCUDA, DType::kF32, RandomCuda<false>);
TFM_REGISTER_KERNEL("random_normal", DeviceType::kCUDA, DType::kF32, RandomCuda<true>);

}  // namespace
}  // namespace tfm

// CPU kernels of cast: each element through float (exact for all three
// dtypes), then rounded to nearest even by the target type's constructor,
// the same rounding as the CUDA kernels' intrinsics. f32 <-> f16 go through
// F16C's vector conversions instead (per instruction set:
// ops/cpu_math/isa.h), the same rounding ten times as fast: the f16 caches
// of CPU decoding round each batch's encoder keys and values.
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/simd_math.h"

TFM_ISA_BEGIN
namespace {

template <typename From, typename To>
void ConvertRange(const From* in, To* out, int64_t begin, int64_t end) {
  if constexpr (std::is_same_v<From, float> && std::is_same_v<To, Half>) {
    simd::RoundToHalf(in + begin, reinterpret_cast<uint16_t*>(out) + begin, end - begin);
  } else if constexpr (std::is_same_v<From, Half> && std::is_same_v<To, float>) {
    simd::WidenHalf(reinterpret_cast<const uint16_t*>(in) + begin, out + begin, end - begin);
  } else {
    for (int64_t i = begin; i < end; ++i) out[i] = To(static_cast<float>(in[i]));
  }
}

template <typename From, typename To>
void ConvertAll(const From* in, To* out, int64_t count, ThreadPool* pool) {
  pool->ParallelFor(count, 1 << 16,
                    [&](int64_t begin, int64_t end) { ConvertRange(in, out, begin, end); });
}

template <typename From>
absl::Status CastEntry(KernelContext& context, int entry, DType dtype) {
  const Tensor& x = context.list_input(entry, 0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(context.layout().output(0, entry), dtype));
  const From* in = x.data<From>();
  switch (dtype) {
    case DType::kF32:
      ConvertAll(in, out->data<float>(), x.num_elements(), context.thread_pool());
      return absl::OkStatus();
    case DType::kF16:
      ConvertAll(in, out->data<Half>(), x.num_elements(), context.thread_pool());
      return absl::OkStatus();
    case DType::kBF16:
      ConvertAll(in, out->data<BFloat16>(), x.num_elements(), context.thread_pool());
      return absl::OkStatus();
    default:  // Validation stops it.
      return context.Error(absl::StrCat("no conversion to ", DTypeName(dtype)));
  }
}

template <typename From>
absl::Status CastCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(std::string name, context.attrs().Get<std::string>("dtype"));
  TFM_ASSIGN_OR_RETURN(DType dtype, ParseDType(name));
  for (int entry = 0; entry < context.list_size(); ++entry) {
    TFM_RETURN_IF_ERROR(CastEntry<From>(context, entry, dtype));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CastFromF32Cpu(KernelContext& context) { return CastCpu<float>(context); }
absl::Status CastFromF16Cpu(KernelContext& context) { return CastCpu<Half>(context); }
absl::Status CastFromBF16Cpu(KernelContext& context) { return CastCpu<BFloat16>(context); }

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("cast", DType::kF32, CastFromF32Cpu);
TFM_REGISTER_ISA_KERNEL("cast", DType::kF16, CastFromF16Cpu);
TFM_REGISTER_ISA_KERNEL("cast", DType::kBF16, CastFromBF16Cpu);

// How the CPU's matrix products multiply: in f32, or with their inputs
// rounded to bf16 and their products summed in f32 (training's
// `train.dtype: bf16` on the CPU; ops/matmul/gemm_bf16_cpu.h). A process
// setting, as PyTorch's float32_matmul_precision, held by a scope: the model
// holds one around its passes, and every product inside them (the pool's
// threads' too) reads it.
#ifndef TFM_CORE_CPU_PRODUCT_PRECISION_H_
#define TFM_CORE_CPU_PRODUCT_PRECISION_H_

namespace tfm {

enum class CpuProductPrecision { kF32, kBf16 };

// The process's setting: f32 unless a ScopedCpuProductPrecision lives.
CpuProductPrecision CurrentCpuProductPrecision();

// Sets the precision while it lives, then restores the previous one.
class ScopedCpuProductPrecision {
 public:
  explicit ScopedCpuProductPrecision(CpuProductPrecision precision);
  ~ScopedCpuProductPrecision();
  ScopedCpuProductPrecision(const ScopedCpuProductPrecision&) = delete;
  ScopedCpuProductPrecision& operator=(const ScopedCpuProductPrecision&) = delete;

 private:
  CpuProductPrecision previous_;
};

}  // namespace tfm

#endif  // TFM_CORE_CPU_PRODUCT_PRECISION_H_

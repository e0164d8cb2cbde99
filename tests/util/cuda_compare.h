// Helpers for tests that check a CUDA kernel against the CPU kernel of the
// same op: move tensors between devices and between f32 and the 16-bit
// floating dtypes on the host. For a bf16 test the reference is the f32 CPU
// kernel on the bf16-rounded inputs, so that only the kernel's own rounding
// (once, at the store) is measured.
#ifndef TFM_TESTS_UTIL_CUDA_COMPARE_H_
#define TFM_TESTS_UTIL_CUDA_COMPARE_H_

#include "core/tensor.h"

namespace tfm {
namespace testing {

// A copy of `tensor` on GPU 0 (checks success).
Tensor OnCuda(const Tensor& tensor);

// A host copy of `tensor` (any device) as f32; f16 and bf16 are widened
// exactly, f32 is copied.
Tensor HostF32(const Tensor& tensor);

// A host tensor of `dtype` (f32, f16 or bf16) holding the host f32
// `tensor` rounded to nearest even.
Tensor HostAs(const Tensor& tensor, DType dtype);

// HostF32(HostAs(tensor, dtype)): the values a `dtype` kernel really sees.
Tensor RoundedThrough(const Tensor& tensor, DType dtype);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_CUDA_COMPARE_H_

// A row count known at run time (the rows left after whole register
// blocks) as the template argument a register block needs. Plain C++, for
// the per-instruction-set kernels (register_product.h) and for the files
// that compile their own instruction set with #pragma GCC target.
#ifndef TFM_OPS_CPU_MATH_WITH_ROW_COUNT_H_
#define TFM_OPS_CPU_MATH_WITH_ROW_COUNT_H_

#include <type_traits>

namespace tfm {

// f(std::integral_constant<int, rows>{}) for 1 <= rows <= kMax, found by
// recursion over kMax.
template <int kMax, typename F>
inline void WithRowCount(int rows, F&& f) {
  if constexpr (kMax >= 1) {
    if (rows == kMax) {
      f(std::integral_constant<int, kMax>{});
    } else {
      WithRowCount<kMax - 1>(rows, f);
    }
  }
}

}  // namespace tfm

#endif  // TFM_OPS_CPU_MATH_WITH_ROW_COUNT_H_

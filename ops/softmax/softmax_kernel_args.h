// What the masked_softmax kernels of every device share: where each row of x
// finds its mask row.
#ifndef TFM_OPS_SOFTMAX_SOFTMAX_KERNEL_ARGS_H_
#define TFM_OPS_SOFTMAX_SOFTMAX_KERNEL_ARGS_H_

#include <cstdint>
#include <vector>

#include "core/shape.h"

namespace tfm {

// The mask's element strides along x's leading axes, 0 where the mask
// broadcasts (absent or extent 1). Offset(row) is where row `row` of x (in
// row-major order of x's leading axes) finds its mask row.
class MaskRows {
 public:
  MaskRows(const Shape& x, const Shape& mask) {
    const int leading = static_cast<int>(x.size()) - 1;
    const int offset = static_cast<int>(x.size() - mask.size());
    int64_t stride = mask.back();
    extents_.assign(x.begin(), x.end() - 1);
    strides_.assign(leading, 0);
    for (int axis = leading - 1; axis >= offset; --axis) {
      const int64_t extent = mask[axis - offset];
      strides_[axis] = extent == 1 ? 0 : stride;
      stride *= extent;
    }
  }

  int64_t Offset(int64_t row) const {
    int64_t offset = 0;
    for (int axis = static_cast<int>(extents_.size()) - 1; axis >= 0 && row > 0; --axis) {
      offset += (row % extents_[axis]) * strides_[axis];
      row /= extents_[axis];
    }
    return offset;
  }

  // x's leading extents and the mask's strides along them.
  const std::vector<int64_t>& extents() const { return extents_; }
  const std::vector<int64_t>& strides() const { return strides_; }

 private:
  std::vector<int64_t> extents_;
  std::vector<int64_t> strides_;
};

}  // namespace tfm

#endif  // TFM_OPS_SOFTMAX_SOFTMAX_KERNEL_ARGS_H_

#include "ops/add/add.h"

#include <algorithm>

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// b's shape must be a suffix of a's.
absl::Status ValidateAdd(const KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  const bool suffix = b.rank() <= a.rank() &&
                      std::equal(b.shape().begin(), b.shape().end(), a.shape().end() - b.rank());
  if (!suffix) return context.Error("b's shape must equal the trailing extents of a's");
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "add",
    .inputs = {"a", "b"},
    .outputs = {"out"},
    .doc = "out = a + b, b broadcast over a's leading axes",
    .validate = ValidateAdd,
    .kernel_dtype_inputs = {0, 1},
});

TFM_REGISTER_OP(OpDef{
    .name = "add_backward",
    .inputs = {"dout", "b"},
    .outputs = {"da", "db"},
    .doc = "da = dout (shared), db = dout summed over b's broadcast axes",
    .validate = ValidateAdd,
    .kernel_dtype_inputs = {0, 1},
});

TFM_REGISTER_OP(OpDef{
    .name = "sum_to_shape",
    .inputs = {"dout", "b"},
    .outputs = {"db"},
    .doc = "db = dout summed over b's broadcast axes (add_backward's db alone)",
    .validate = ValidateAdd,
    .kernel_dtype_inputs = {0, 1},
});

}  // namespace

absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("add", {a, b}));
  return out[0];
}

absl::StatusOr<AddGrads> AddBackward(const Tensor& dout, const Tensor& b) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("add_backward", {dout, b}));
  return AddGrads{out[0], out[1]};
}

}  // namespace tfm

namespace tfm {

absl::StatusOr<Tensor> SumToShape(const Tensor& dout, const Tensor& b) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("sum_to_shape", {dout, b}));
  return out[0];
}

}  // namespace tfm

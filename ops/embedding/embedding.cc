#include "ops/embedding/embedding.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/deterministic.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

bool IsIndex(const Tensor& t) { return t.dtype() == DType::kI32 || t.dtype() == DType::kI64; }

absl::Status ValidateScale(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(double scale, context.attrs().GetOr<double>("scale", 1.0));
  if (!std::isfinite(scale)) return context.Error("scale must be finite");
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "embedding",
    .inputs = {"table", "ids"},
    .outputs = {"out"},
    .attrs = {"scale", "ids_checked"},
    .doc = "out[..., :] = scale * table[ids[...], :]",
    .validate =
        [](const KernelContext& context) {
          const Tensor& table = context.input(0);
          if (table.rank() != 2) return context.Error("table must be [vocab, d]");
          if (!IsIndex(context.input(1))) return context.Error("ids must be i32 or i64");
          return ValidateScale(context);
        },
    // ids.shape + [d].
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      Shape shape = context.input(1).shape();
      shape.push_back(context.input(0).dim(1));
      return std::vector<Shape>{shape};
    },
});

TFM_REGISTER_OP(OpDef{
    .name = "embedding_backward",
    .inputs = {"ids", "d_out"},
    .outputs = {"d_table"},
    .attrs = {"vocab", "scale", "ids_checked", "deterministic"},
    .doc = "d_table[row, :] = scale * sum of d_out[p, :] over positions p with ids[p] = row",
    .validate =
        [](const KernelContext& context) {
          const Tensor& ids = context.input(0);
          const Tensor& d_out = context.input(1);
          if (!IsIndex(ids)) return context.Error("ids must be i32 or i64");
          Shape expected = ids.shape();
          if (d_out.rank() != ids.rank() + 1) return context.Error("d_out must be ids.shape + [d]");
          expected.push_back(d_out.dim(-1));
          if (d_out.shape() != expected) return context.Error("d_out must be ids.shape + [d]");
          TFM_ASSIGN_OR_RETURN(int64_t vocab, context.attrs().Get<int64_t>("vocab"));
          if (vocab < 0) return context.Error("vocab must be >= 0");
          return ValidateScale(context);
        },
    // [vocab, d].
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      TFM_ASSIGN_OR_RETURN(int64_t vocab, context.attrs().Get<int64_t>("vocab"));
      return std::vector<Shape>{{vocab, context.input(1).dim(-1)}};
    },
});

}  // namespace

absl::StatusOr<Tensor> Embedding(const Tensor& table, const Tensor& ids, float scale,
                                 bool ids_checked) {
  Attrs attrs;
  attrs.Set("scale", static_cast<double>(scale));
  if (ids_checked) attrs.Set("ids_checked", true);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("embedding", {table, ids}, attrs,
                                                      OpTarget{table.device(), table.dtype()}));
  return out[0];
}

absl::StatusOr<Tensor> EmbeddingBackward(const Tensor& ids, const Tensor& d_out, int64_t vocab,
                                         float scale, bool ids_checked) {
  Attrs attrs;
  attrs.Set("vocab", vocab).Set("scale", static_cast<double>(scale));
  if (ids_checked) attrs.Set("ids_checked", true);
  // Read by the CUDA kernel (core/deterministic.h); the CPU's is always so.
  if (DeterministicKernels()) attrs.Set("deterministic", true);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("embedding_backward", {ids, d_out}, attrs,
                                                      OpTarget{d_out.device(), d_out.dtype()}));
  return out[0];
}

}  // namespace tfm

// CPU f32 kernels of scaled_dot_product_attention and its backward: read the
// key mask into per-batch key ends, then run the tiled loops
// (attention_cpu_forward.cc, attention_cpu_backward.cc). The loops read
// heads-first tensors: interleaved ones are permuted to that layout and
// back here (the split_heads and merge_heads a layer would have run).
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/attention/attention_cpu_tiles.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/split_heads/split_heads.h"

TFM_ISA_BEGIN
namespace {

template <typename T>
absl::Status ReadKeyMask(const KernelContext& context, const Tensor& mask,
                         attention_cpu::Problem* problem) {
  const AttentionParams& p = problem->params;
  const T* values = mask.data<T>();
  if (p.key_mask == KeyMaskKind::kLengths) {
    for (int64_t b = 0; b < p.batch; ++b) {
      if (values[b] < 0 || values[b] > p.k_len) {
        return context.Error(absl::StrCat("key length ", values[b], " of batch item ", b,
                                          " is outside [0, ", p.k_len, "]"));
      }
      problem->key_end[b] = values[b];
    }
  } else if (p.key_mask == KeyMaskKind::kPadding) {
    problem->padding.resize(p.batch * p.k_len);
    for (int64_t b = 0; b < p.batch; ++b) {
      int64_t end = 0;  // Keys after the last unpadded one are skipped whole.
      for (int64_t j = 0; j < p.k_len; ++j) {
        const bool padded = values[b * p.k_len + j] != 0;
        problem->padding[b * p.k_len + j] = padded;
        if (!padded) end = j + 1;
      }
      problem->key_end[b] = end;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<attention_cpu::Problem> MakeProblem(const KernelContext& context,
                                                   int key_mask_input, bool key_rows = false) {
  attention_cpu::Problem problem;  // q, k and v: ReadInputs.
  TFM_ASSIGN_OR_RETURN(problem.params, ParseAttentionParams(context, key_mask_input, key_rows));
  problem.key_end.assign(problem.params.batch, problem.params.k_len);
  const Tensor& mask = context.input(key_mask_input);
  if (mask.dtype() == DType::kI64) {
    TFM_RETURN_IF_ERROR(ReadKeyMask<int64_t>(context, mask, &problem));
  } else if (mask.dtype() == DType::kI32) {
    TFM_RETURN_IF_ERROR(ReadKeyMask<int32_t>(context, mask, &problem));
  }
  return problem;
}

// [batch, heads, len, d] for interleaved `x` [batch, len, heads, d].
Shape HeadsFirstShape(const Tensor& x) { return {x.dim(0), x.dim(2), x.dim(1), x.dim(3)}; }

// Whether interleaved `x` has the bytes of its heads-first form: one
// position (a decoding step's query) or one head.
bool SameAsHeadsFirst(const Tensor& x) { return x.dim(1) == 1 || x.dim(2) == 1; }

// An input as the loops read it: itself where it is heads-first, or where
// the layouts share their bytes (a view), else a heads-first copy.
absl::StatusOr<Tensor> AsHeadsFirst(const Tensor& x, bool interleaved) {
  if (!interleaved) return x;
  if (SameAsHeadsFirst(x)) return x.Reshape(HeadsFirstShape(x));
  TFM_ASSIGN_OR_RETURN(Tensor copy, Tensor::Empty(HeadsFirstShape(x), DType::kF32));
  PermuteHeadsOnHost(x.raw_data(), copy.raw_data(), x.dim(0), x.dim(1), x.dim(2),
                     x.dim(3) * sizeof(float), /*split=*/true);
  return copy;
}

// Where the loops write an output: the output itself (a heads-first view of
// it where the layouts share their bytes), or a heads-first temporary that
// FinishOutput interleaves into it.
absl::StatusOr<Tensor> HeadsFirstTarget(const Tensor& out, bool interleaved) {
  if (!interleaved) return out;
  if (SameAsHeadsFirst(out)) return out.Reshape(HeadsFirstShape(out));
  return Tensor::Empty(HeadsFirstShape(out), DType::kF32);
}

void FinishOutput(const Tensor& target, Tensor& out, bool interleaved) {
  if (!interleaved || SameAsHeadsFirst(out)) return;
  PermuteHeadsOnHost(target.raw_data(), out.raw_data(), out.dim(0), out.dim(1), out.dim(2),
                     out.dim(3) * sizeof(float), /*split=*/false);
}

// q, k and v as the loops read them, kept alive in `inputs`, behind the
// problem's pointers.
absl::Status ReadInputs(const KernelContext& context, attention_cpu::Problem& problem,
                        Tensor (&inputs)[3]) {
  const AttentionParams& p = problem.params;
  TFM_ASSIGN_OR_RETURN(inputs[0], AsHeadsFirst(context.input(0), p.interleaved_queries));
  TFM_ASSIGN_OR_RETURN(inputs[1], AsHeadsFirst(context.input(1), p.interleaved_keys));
  TFM_ASSIGN_OR_RETURN(inputs[2], AsHeadsFirst(context.input(2), p.interleaved_keys));
  problem.q = inputs[0].data<float>();
  problem.k = inputs[1].data<float>();
  problem.v = inputs[2].data<float>();
  return absl::OkStatus();
}

}  // namespace

absl::Status AttentionForwardCpu(KernelContext& context) {
  // Checked by the op's validation: [batch, k_len] i32, few query rows.
  const Tensor& key_rows = context.input(kForwardKeyRowsInput);
  const bool has_key_rows = key_rows.num_elements() > 0;
  TFM_ASSIGN_OR_RETURN(attention_cpu::Problem problem,
                       MakeProblem(context, kForwardKeyMaskInput, has_key_rows));
  if (has_key_rows) problem.key_rows = key_rows.data<int32_t>();
  const AttentionParams& p = problem.params;
  // AllocateOutput's pointers move when a later output is added: read the
  // outputs only once all are allocated.
  TFM_RETURN_IF_ERROR(context.AllocateOutput(0, AttentionOutShape(p), DType::kF32).status());
  TFM_RETURN_IF_ERROR(context.AllocateOutput(1, {p.batch, p.heads, p.q_len}, DType::kF32).status());
  Tensor inputs[3];
  TFM_RETURN_IF_ERROR(ReadInputs(context, problem, inputs));
  Tensor& out = context.outputs()[0];
  TFM_ASSIGN_OR_RETURN(Tensor target, HeadsFirstTarget(out, p.interleaved_queries));
  attention_cpu::Forward(problem, target.data<float>(), context.outputs()[1].data<float>());
  FinishOutput(target, out, p.interleaved_queries);
  return absl::OkStatus();
}

absl::Status AttentionBackwardCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(attention_cpu::Problem problem, MakeProblem(context, kBackwardKeyMaskInput));
  const AttentionParams& p = problem.params;
  for (int i = 0; i < 3; ++i) {
    TFM_RETURN_IF_ERROR(context.AllocateOutput(i, context.input(i).shape(), DType::kF32).status());
  }
  Tensor inputs[3];
  TFM_RETURN_IF_ERROR(ReadInputs(context, problem, inputs));
  TFM_ASSIGN_OR_RETURN(const Tensor out, AsHeadsFirst(context.input(3), p.interleaved_queries));
  TFM_ASSIGN_OR_RETURN(const Tensor d_out, AsHeadsFirst(context.input(5), p.interleaved_queries));
  std::vector<Tensor>& grads = context.outputs();
  const bool interleaved[3] = {p.interleaved_queries, p.interleaved_keys, p.interleaved_keys};
  Tensor targets[3];
  for (int i = 0; i < 3; ++i) {
    TFM_ASSIGN_OR_RETURN(targets[i], HeadsFirstTarget(grads[i], interleaved[i]));
  }
  attention_cpu::Backward(problem, out.data<float>(), context.input(4).data<float>(),
                          d_out.data<float>(), targets[0].data<float>(),
                          targets[1].data<float>(), targets[2].data<float>());
  for (int i = 0; i < 3; ++i) FinishOutput(targets[i], grads[i], interleaved[i]);
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("scaled_dot_product_attention", DType::kF32, AttentionForwardCpu);
TFM_REGISTER_ISA_KERNEL("scaled_dot_product_attention_backward", DType::kF32, AttentionBackwardCpu);

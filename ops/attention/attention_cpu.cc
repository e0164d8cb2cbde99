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
  attention_cpu::Problem problem;
  TFM_ASSIGN_OR_RETURN(problem.params, ParseAttentionParams(context, key_mask_input, key_rows));
  problem.q = context.input(0).data<float>();
  problem.k = context.input(1).data<float>();
  problem.v = context.input(2).data<float>();
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

// The heads-first copy of interleaved `x`.
absl::StatusOr<Tensor> HeadsFirst(const Tensor& x) {
  TFM_ASSIGN_OR_RETURN(Tensor copy, Tensor::Empty(HeadsFirstShape(x), DType::kF32));
  PermuteHeadsOnHost(x.raw_data(), copy.raw_data(), x.dim(0), x.dim(1), x.dim(2),
                     x.dim(3) * sizeof(float), /*split=*/true);
  return copy;
}

// Heads-first `from` [batch, heads, len, d] into interleaved `to`.
void Interleave(const Tensor& from, Tensor& to) {
  PermuteHeadsOnHost(from.raw_data(), to.raw_data(), from.dim(0), from.dim(2), from.dim(1),
                     from.dim(3) * sizeof(float), /*split=*/false);
}

// Interleaved q, k and v as the loops read them: heads-first copies, kept
// alive in `copies`, behind the problem's pointers.
absl::Status ReadHeadsFirst(const KernelContext& context, attention_cpu::Problem& problem,
                            Tensor (&copies)[3]) {
  for (int i = 0; i < 3; ++i) {
    TFM_ASSIGN_OR_RETURN(copies[i], HeadsFirst(context.input(i)));
  }
  problem.q = copies[0].data<float>();
  problem.k = copies[1].data<float>();
  problem.v = copies[2].data<float>();
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
  if (!p.interleaved_heads) {
    attention_cpu::Forward(problem, context.outputs()[0].data<float>(),
                           context.outputs()[1].data<float>());
    return absl::OkStatus();
  }
  Tensor inputs[3];
  TFM_RETURN_IF_ERROR(ReadHeadsFirst(context, problem, inputs));
  TFM_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(HeadsFirstShape(context.outputs()[0]), DType::kF32));
  attention_cpu::Forward(problem, out.data<float>(), context.outputs()[1].data<float>());
  Interleave(out, context.outputs()[0]);
  return absl::OkStatus();
}

absl::Status AttentionBackwardCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(attention_cpu::Problem problem, MakeProblem(context, kBackwardKeyMaskInput));
  for (int i = 0; i < 3; ++i) {
    TFM_RETURN_IF_ERROR(context.AllocateOutput(i, context.input(i).shape(), DType::kF32).status());
  }
  std::vector<Tensor>& grads = context.outputs();
  if (!problem.params.interleaved_heads) {
    attention_cpu::Backward(problem, context.input(3).data<float>(),
                            context.input(4).data<float>(), context.input(5).data<float>(),
                            grads[0].data<float>(), grads[1].data<float>(),
                            grads[2].data<float>());
    return absl::OkStatus();
  }
  Tensor inputs[3];
  TFM_RETURN_IF_ERROR(ReadHeadsFirst(context, problem, inputs));
  TFM_ASSIGN_OR_RETURN(const Tensor out, HeadsFirst(context.input(3)));
  TFM_ASSIGN_OR_RETURN(const Tensor d_out, HeadsFirst(context.input(5)));
  Tensor heads_first[3];
  for (int i = 0; i < 3; ++i) {
    TFM_ASSIGN_OR_RETURN(heads_first[i], Tensor::Empty(HeadsFirstShape(grads[i]), DType::kF32));
  }
  attention_cpu::Backward(problem, out.data<float>(), context.input(4).data<float>(),
                          d_out.data<float>(), heads_first[0].data<float>(),
                          heads_first[1].data<float>(), heads_first[2].data<float>());
  for (int i = 0; i < 3; ++i) Interleave(heads_first[i], grads[i]);
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("scaled_dot_product_attention", DType::kF32, AttentionForwardCpu);
TFM_REGISTER_ISA_KERNEL("scaled_dot_product_attention_backward", DType::kF32, AttentionBackwardCpu);

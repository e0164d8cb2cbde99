// CPU f32 kernels of scaled_dot_product_attention and its backward (the
// forward's keys and values may be f16 for a decoding step): read the
// key mask into per-batch key ends, then run the tiled loops
// (attention_cpu_forward.cc, attention_cpu_backward.cc). The packed kernels
// (head sizes that are multiples of 16) read and write interleaved tensors
// in place; for the other loops (the row-by-row path of decoding steps, the
// BLAS loops) interleaved tensors are permuted to heads-first and back here
// (the split_heads and merge_heads a layer would have run).
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/attention/attention_cpu_tiles.h"
#include "ops/attention/heads_first.h"
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
  attention_cpu::Problem problem;  // q, k and v: ReadInputs or ReadInputsInPlace.
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

// Interleaved heads through the host's permute (split_heads' loop).
HeadsFirstTensors HostHeadsFirst() {
  return HeadsFirstTensors(Device::Cpu(), nullptr,
                           [](absl::Span<const PermuteHeadsTensor> tensors, bool split) {
                             for (const PermuteHeadsTensor& t : tensors) {
                               PermuteHeadsOnHost(t, split);
                             }
                             return absl::OkStatus();
                           });
}

// q, k and v as the loops read them, kept alive in `inputs`, behind the
// problem's pointers.
absl::Status ReadInputs(const KernelContext& context, HeadsFirstTensors& layout,
                        attention_cpu::Problem& problem, std::vector<Tensor>& inputs) {
  const AttentionParams& p = problem.params;
  // Packed projections: each operand's heads of the one tensor.
  TFM_ASSIGN_OR_RETURN(inputs,
                       layout.Inputs({{&context.input(0), p.interleaved_queries, p.heads, 0},
                                      {&context.input(1), p.interleaved_keys, p.heads, KeyPart(p)},
                                      {&context.input(2), p.interleaved_keys, p.heads,
                                       ValuePart(p)}}));
  const auto heads_first = [&](const Tensor& x, int64_t len, int64_t d) {
    return attention_cpu::HeadsFirstRows(x.data<float>(), p.heads, len, d);
  };
  problem.q_rows = heads_first(inputs[0], p.q_len, p.d_k);
  if (inputs[1].dtype() == DType::kF16) {  // A decoding step's 16-bit caches (validated).
    problem.k_f16 = static_cast<const uint16_t*>(inputs[1].raw_data());
    problem.v_f16 = static_cast<const uint16_t*>(inputs[2].raw_data());
  } else {
    problem.k_rows = heads_first(inputs[1], p.k_len, p.d_k);
    problem.v_rows = heads_first(inputs[2], p.k_len, p.d_v);
  }
  return absl::OkStatus();
}

// A tensor's rows where they are (attention_cpu::HeadRows): heads-first, or
// interleaved with `heads` of its slots from part `part` on (packed
// projections), as HeadsFirstTensors would have permuted them.
template <typename T>
attention_cpu::HeadRows<T> RowsInPlace(T* data, const Tensor& x, bool interleaved, int64_t heads,
                                       int64_t part, int64_t len, int64_t d) {
  if (!interleaved) return attention_cpu::HeadsFirstRows(data, heads, len, d);
  return {data + part * heads * d, heads, len, d, x.dim(2)};
}

// q, k and v in place, for the packed kernels.
void ReadInputsInPlace(const KernelContext& context, attention_cpu::Problem& problem) {
  const AttentionParams& p = problem.params;
  const Tensor &q = context.input(0), &k = context.input(1), &v = context.input(2);
  problem.q_rows = RowsInPlace(q.data<float>(), q, p.interleaved_queries, p.heads, 0, p.q_len,
                               p.d_k);
  problem.k_rows = RowsInPlace(k.data<float>(), k, p.interleaved_keys, p.heads, KeyPart(p),
                               p.k_len, p.d_k);
  problem.v_rows = RowsInPlace(v.data<float>(), v, p.interleaved_keys, p.heads, ValuePart(p),
                               p.k_len, p.d_v);
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
  // The packed kernels read and write interleaved tensors in place; the
  // row-by-row path (decoding: few query rows, key rows, f16 caches) and
  // the BLAS loops read heads-first ones.
  if (attention_cpu::UsePackedKernels(p) &&
      !attention_cpu::ForwardIsRowwise(p, has_key_rows,
                                       context.input(1).dtype() == DType::kF16)) {
    ReadInputsInPlace(context, problem);
    Tensor& out = context.outputs()[0];
    attention_cpu::ForwardPacked(problem,
                                 RowsInPlace(out.data<float>(), out, p.interleaved_queries,
                                             p.heads, 0, p.q_len, p.d_v),
                                 context.outputs()[1].data<float>());
    return absl::OkStatus();
  }
  HeadsFirstTensors layout = HostHeadsFirst();
  std::vector<Tensor> inputs;
  TFM_RETURN_IF_ERROR(ReadInputs(context, layout, problem, inputs));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       layout.Outputs({{&context.outputs()[0], p.interleaved_queries}}));
  attention_cpu::Forward(problem, out[0].data<float>(), context.outputs()[1].data<float>());
  return layout.Finish();
}

absl::Status AttentionBackwardCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(attention_cpu::Problem problem, MakeProblem(context, kBackwardKeyMaskInput));
  const AttentionParams& p = problem.params;
  for (int i = 0; i < 3; ++i) {
    TFM_RETURN_IF_ERROR(
        context.AllocateOutput(i, AttentionGradShape(p, i, context.input(i).shape()), DType::kF32)
            .status());
  }
  std::vector<Tensor>& grads = context.outputs();
  // Packed projections: dk and dv are parts of dq's tensor (qkv), dv of
  // dk's (kv).
  Tensor* const dk = &grads[AttentionGradOutput(p, 1)];
  Tensor* const dv = &grads[AttentionGradOutput(p, 2)];
  const float* lse = context.input(4).data<float>();
  if (attention_cpu::UsePackedKernels(p)) {  // In place, as the forward.
    ReadInputsInPlace(context, problem);
    const Tensor &out = context.input(3), &d_out = context.input(5);
    const bool q_rows = p.interleaved_queries, k_rows = p.interleaved_keys;
    attention_cpu::Backward(
        problem, RowsInPlace(out.data<float>(), out, q_rows, p.heads, 0, p.q_len, p.d_v), lse,
        RowsInPlace(d_out.data<float>(), d_out, q_rows, p.heads, 0, p.q_len, p.d_v),
        RowsInPlace(grads[0].data<float>(), grads[0], q_rows, p.heads, 0, p.q_len, p.d_k),
        RowsInPlace(dk->data<float>(), *dk, k_rows, p.heads, KeyPart(p), p.k_len, p.d_k),
        RowsInPlace(dv->data<float>(), *dv, k_rows, p.heads, ValuePart(p), p.k_len, p.d_v));
    return absl::OkStatus();
  }
  HeadsFirstTensors layout = HostHeadsFirst();
  std::vector<Tensor> inputs;
  TFM_RETURN_IF_ERROR(ReadInputs(context, layout, problem, inputs));
  TFM_ASSIGN_OR_RETURN(const std::vector<Tensor> out_and_d_out,
                       layout.Inputs({{&context.input(3), p.interleaved_queries},
                                      {&context.input(5), p.interleaved_queries}}));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> targets,
                       layout.Outputs({{&grads[0], p.interleaved_queries, p.heads, 0},
                                       {dk, p.interleaved_keys, p.heads, KeyPart(p)},
                                       {dv, p.interleaved_keys, p.heads, ValuePart(p)}}));
  const auto heads_first = [&](auto* data, int64_t len, int64_t d) {
    return attention_cpu::HeadsFirstRows(data, p.heads, len, d);
  };
  attention_cpu::Backward(problem, heads_first(out_and_d_out[0].data<float>(), p.q_len, p.d_v), lse,
                          heads_first(out_and_d_out[1].data<float>(), p.q_len, p.d_v),
                          heads_first(targets[0].data<float>(), p.q_len, p.d_k),
                          heads_first(targets[1].data<float>(), p.k_len, p.d_k),
                          heads_first(targets[2].data<float>(), p.k_len, p.d_v));
  return layout.Finish();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("scaled_dot_product_attention", DType::kF32, AttentionForwardCpu);
TFM_REGISTER_ISA_KERNEL("scaled_dot_product_attention_backward", DType::kF32, AttentionBackwardCpu);

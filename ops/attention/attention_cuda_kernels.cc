// Registers the CUDA kernels of scaled_dot_product_attention and its
// backward (linked only in builds with CUDA), f32, bf16 and f16: parses the
// attributes, turns the key mask into the kernels' form, allocates the
// outputs and workspaces on the device and picks the kernels (cuDNN's, the
// decode kernel for few query rows, or the flash-attention tiles).
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/attention/attention_backend.h"
#include "ops/attention/attention_cuda.h"
#include "ops/attention/attention_params.h"
#include "ops/attention/cudnn_sdpa.h"
#include "ops/attention/heads_first.h"
#include "ops/cuda_launch_status.h"
#include "ops/kv_cache/kv_cache_cuda.h"
#include "ops/split_heads/split_heads_cuda.h"

namespace tfm {
namespace {

// A problem and the device tensors its key mask lives in (which must outlive
// the launches: the caching allocator reuses a buffer only after the
// stream's work that was queued before its release).
struct CudaProblem {
  AttentionCudaProblem problem;
  AttentionParams params;  // As parsed (packed projections' parts).
  AttentionBackend backend = AttentionBackend::kAuto;
  bool key_lengths_only = false;  // The mask, if any, is key lengths (key_end).
  Shape out_shape;                // The forward's out, in the problem's layout.
  Tensor key_end;
  Tensor key_bias;
};

// key_rows: the forward reads keys through key rows (k and v may hold more
// batch items than q).
absl::StatusOr<CudaProblem> MakeCudaProblem(const KernelContext& context, int key_mask_input,
                                            bool key_rows = false) {
  TFM_ASSIGN_OR_RETURN(AttentionBackend backend, AttentionBackendFor(context.attrs()));
  TFM_ASSIGN_OR_RETURN(AttentionParams params,
                       ParseAttentionParams(context, key_mask_input, key_rows));
  if (params.d_k > kMaxCudaAttentionHeadSize || params.d_v > kMaxCudaAttentionHeadSize) {
    return absl::UnimplementedError(
        absl::StrCat(context.def().name, ": the CUDA kernels take head sizes up to ",
                     kMaxCudaAttentionHeadSize, ", got d_k ", params.d_k, " and d_v ", params.d_v));
  }
  CudaProblem cuda;
  cuda.params = params;
  cuda.backend = backend;
  cuda.out_shape = AttentionOutShape(params);
  cuda.key_lengths_only = params.key_mask != KeyMaskKind::kPadding;
  AttentionCudaProblem& problem = cuda.problem;
  problem.batch = params.batch;
  problem.heads = params.heads;
  problem.q_len = params.q_len;
  problem.k_len = params.k_len;
  problem.d_k = params.d_k;
  problem.d_v = params.d_v;
  problem.causal = params.causal;
  problem.scale = params.scale;
  problem.dropout = params.dropout;
  problem.seed = params.dropout_state.seed;
  problem.stream = params.dropout_state.stream;
  problem.offset = params.dropout_state.offset;
  problem.interleaved_queries = params.interleaved_queries;
  problem.interleaved_keys = params.interleaved_keys;
  if (params.packed != PackedHeads::kNone) {
    problem.q_slots = QuerySlots(params);
    problem.kv_slots = KeySlots(params);
  }
  problem.bf16 = context.dtype() == DType::kBF16;
  problem.f16 = context.dtype() == DType::kF16;
  TFM_ASSIGN_OR_RETURN(problem.deterministic,
                       context.attrs().GetOr<bool>("deterministic", false));
  if (params.key_mask == KeyMaskKind::kNone) return cuda;

  const bool is_lengths = params.key_mask == KeyMaskKind::kLengths;
  // key_end [batch], then for a padding mask key_has_holes [batch].
  TFM_ASSIGN_OR_RETURN(cuda.key_end, Tensor::Empty({is_lengths ? 1 : 2, params.batch}, DType::kI32,
                                                   context.device(), context.stream()));
  int32_t* key_end = cuda.key_end.data<int32_t>();
  int32_t* key_has_holes = is_lengths ? nullptr : key_end + params.batch;
  float* key_bias = nullptr;
  if (!is_lengths) {
    TFM_ASSIGN_OR_RETURN(cuda.key_bias, Tensor::Empty({params.batch, params.k_len}, DType::kF32,
                                                      context.device(), context.stream()));
    key_bias = cuda.key_bias.data<float>();
  }
  const Tensor& mask = context.input(key_mask_input);
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context,
      LaunchPrepareKeyMask(mask.raw_data(), mask.dtype() == DType::kI64, is_lengths, params.batch,
                           params.k_len, key_end, key_bias, key_has_holes, context.stream())));
  problem.key_end = key_end;
  problem.key_bias = key_bias;
  problem.key_has_holes = key_has_holes;
  return cuda;
}

// cuDNN's problem for `cuda` where the back-end choice and the problem allow
// it (bf16, no dropout, no mask or key lengths, d_k == d_v), else nullopt;
// CudnnSdpa* themselves refuse what else they do not take (Unimplemented),
// and the caller then runs our kernels.
std::optional<CudnnSdpaProblem> CudnnProblemFor(const CudaProblem& cuda) {
  const AttentionCudaProblem& p = cuda.problem;
  if (cuda.backend == AttentionBackend::kFlash || cuda.backend == AttentionBackend::kFlashTiles ||
      !p.bf16 || p.dropout > 0.0f || p.d_k != p.d_v || !cuda.key_lengths_only ||
      !CudnnSdpaAvailable()) {
    return std::nullopt;
  }
  // Empty problems: cuDNN's graph validation refuses zero extents (an error,
  // not Unimplemented); our kernels write the empty or zero results.
  if (p.batch == 0 || p.heads == 0 || p.q_len == 0 || p.k_len == 0) return std::nullopt;
  // Measured on an H100 (benchmarks/results/attention_h100.txt): at 64 keys
  // our kernels are 2x cuDNN's forward and 1.2x its forward+backward.
  if (cuda.backend == AttentionBackend::kAuto && p.k_len <= 64) return std::nullopt;
  return CudnnSdpaProblem{static_cast<int>(p.batch),
                          static_cast<int>(p.heads),
                          static_cast<int>(p.q_len),
                          static_cast<int>(p.k_len),
                          static_cast<int>(p.d_k),
                          /*bf16=*/true,
                          p.causal,
                          p.scale,
                          p.key_end};
}

// After cuDNN: the rows of sentences with no key as our kernels leave them.
absl::Status ClearEmptySentences(const KernelContext& context, const CudaProblem& cuda,
                                 std::initializer_list<std::pair<Tensor*, uint32_t>> tensors) {
  const AttentionCudaProblem& p = cuda.problem;
  if (p.key_end == nullptr || p.batch == 0) return absl::OkStatus();
  for (const auto& [tensor, fill_bits] : tensors) {
    const int word_bytes = static_cast<int>(DTypeSize(tensor->dtype()));
    TFM_RETURN_IF_ERROR(CudaLaunchStatus(
        context,
        LaunchClearEmptySentences(p.key_end, p.batch, tensor->num_elements() / p.batch, word_bytes,
                                  fill_bits, tensor->raw_data(), context.stream())));
  }
  return absl::OkStatus();
}

// q, k and v of a forward: the op's inputs, or keys and values gathered
// through key rows.
struct ForwardInputs {
  const void* q;
  const void* k;
  const void* v;
};

// A packed tensor's part (PackedHeads) as the in-place kernels read it:
// its first head (heads_first.h's PackedPart).
const void* PartOf(const Tensor& packed, const AttentionParams& p, int64_t part) {
  return PackedPart(packed, p.heads, part);
}
void* PartOf(Tensor& packed, const AttentionParams& p, int64_t part) {
  return const_cast<void*>(PackedPart(packed, p.heads, part));
}

// The problem of the heads-first copies of an interleaved one (no slots).
void MakeHeadsFirst(AttentionCudaProblem& p) {
  p.interleaved_queries = p.interleaved_keys = false;
  p.q_slots = p.kv_slots = 0;
}

// The decode kernel for few query rows, with its split-K workspace.
absl::Status DecodeForward(const KernelContext& context, const AttentionCudaProblem& p,
                           const ForwardInputs& in, Tensor* out, Tensor* lse) {
  const int splits = AttentionDecodeSplits(p);
  Tensor workspace;
  if (const int64_t floats = AttentionDecodeWorkspaceFloats(p, splits); floats > 0) {
    TFM_ASSIGN_OR_RETURN(workspace,
                         Tensor::Empty({floats}, DType::kF32, context.device(), context.stream()));
  }
  return CudaLaunchStatus(
      context, LaunchAttentionDecode(p, splits, in.q, in.k, in.v, out->raw_data(),
                                     lse->data<float>(),
                                     workspace.defined() ? workspace.data<float>() : nullptr,
                                     context.stream()));
}

// k or v [key items, heads, k_len, d] gathered through the key rows into
// [batch, heads, k_len, d], for the kernels that read no key rows.
absl::StatusOr<Tensor> GatherByKeyRows(const KernelContext& context, const Tensor& cache,
                                       const AttentionCudaProblem& p) {
  TFM_ASSIGN_OR_RETURN(Tensor gathered, Tensor::Empty({p.batch, p.heads, p.k_len, cache.dim(3)},
                                                      cache.dtype(), context.device(),
                                                      context.stream()));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context, LaunchKvCacheGatherByPosition(
                   cache.raw_data(), p.key_rows, gathered.raw_data(), p.batch, p.heads, p.k_len,
                   p.k_len, p.k_len, cache.dim(3) * DTypeSize(cache.dtype()), context.stream())));
  return gathered;
}

// Interleaved heads for the kernels that read heads-first ones (cuDNN's,
// the CUDA-core kernels), through split_heads' launcher: a few tensors a
// launch.
HeadsFirstTensors DeviceHeadsFirst(const KernelContext& context) {
  return HeadsFirstTensors(
      context.device(), context.stream(),
      [&context](absl::Span<const PermuteHeadsTensor> tensors, bool split) {
        return CudaLaunchStatus(context,
                                LaunchPermuteHeads(tensors.data(), static_cast<int>(tensors.size()),
                                                   split, context.stream()));
      });
}

// Whether the forward runs the decode kernel (few query rows), and the
// cuDNN problem where the forward tries cuDNN before our tiles: shared by
// the heads-first forward and the choice of kernels for interleaved heads.
bool ForwardDecodes(const CudaProblem& cuda, const ForwardInputs& in, const Tensor& out) {
  return cuda.backend != AttentionBackend::kFlashTiles &&
         AttentionDecodeTakes(cuda.problem, {in.q, in.k, in.v, out.raw_data()});
}
std::optional<CudnnSdpaProblem> ForwardCudnnProblem(const CudaProblem& cuda) {
  // A decoding step the decode kernel does not take (another head size) goes
  // to our tiles, which read no key past each row's length, unless cuDNN is
  // asked for by name: cuDNN reads the cache's unwritten tail (0 x garbage,
  // NaN where the garbage is NaN: seen on an H200, bf16, d 40).
  const bool cudnn_allowed = cuda.problem.q_len > kMaxAttentionDecodeQueries ||
                             cuda.backend == AttentionBackend::kCudnn;
  return cudnn_allowed ? CudnnProblemFor(cuda) : std::nullopt;
}

// The forward on heads-first q, k and v (`in`), key rows included.
absl::Status ForwardHeadsFirst(const KernelContext& context, CudaProblem& cuda, ForwardInputs in,
                               Tensor* out, Tensor* lse) {
  AttentionCudaProblem& p = cuda.problem;
  const Tensor& key_rows = context.input(kForwardKeyRowsInput);
  const bool has_key_rows = key_rows.num_elements() > 0;
  // A decoding step's few query rows: the decode kernel reads each head's
  // keys once for all of them where a 32-query tile would leave most of its
  // rows idle. Ahead of cuDNN unless cuDNN is asked for by name.
  const bool decode = ForwardDecodes(cuda, in, *out);
  Tensor k_gathered, v_gathered;  // Alive until the launches are queued.
  if (has_key_rows) {
    // A beam's caches reordered by table: the decode kernel reads each key
    // through the rows; the other kernels (f16, other head sizes) read keys
    // and values gathered through them first.
    p.key_rows = key_rows.data<int32_t>();
    if (decode) return DecodeForward(context, p, in, out, lse);
    TFM_ASSIGN_OR_RETURN(k_gathered, GatherByKeyRows(context, context.input(1), p));
    TFM_ASSIGN_OR_RETURN(v_gathered, GatherByKeyRows(context, context.input(2), p));
    p.key_rows = nullptr;
    in.k = k_gathered.raw_data();
    in.v = v_gathered.raw_data();
  }
  if (decode && cuda.backend != AttentionBackend::kCudnn) {
    return DecodeForward(context, p, in, out, lse);
  }
  if (std::optional<CudnnSdpaProblem> cudnn = ForwardCudnnProblem(cuda)) {
    absl::Status status = CudnnSdpaForward(*cudnn, in.q, in.k, in.v, out->raw_data(),
                                           lse->data<float>(), context.stream());
    if (status.ok()) return ClearEmptySentences(context, cuda, {{out, 0u}, {lse, 0xff800000u}});
    if (!absl::IsUnimplemented(status)) return status;
  }
  if (decode) return DecodeForward(context, p, in, out, lse);
  return CudaLaunchStatus(context, LaunchAttentionForward(p, in.q, in.k, in.v, out->raw_data(),
                                                          lse->data<float>(), context.stream()));
}

absl::Status AttentionForwardCuda(KernelContext& context) {
  const Tensor& key_rows = context.input(kForwardKeyRowsInput);
  const bool has_key_rows = key_rows.num_elements() > 0;
  TFM_ASSIGN_OR_RETURN(CudaProblem cuda,
                       MakeCudaProblem(context, kForwardKeyMaskInput, has_key_rows));
  AttentionCudaProblem& p = cuda.problem;
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, cuda.out_shape, context.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor * lse,
                       context.AllocateOutput(1, {p.batch, p.heads, p.q_len}, DType::kF32));
  // Packed projections: each operand's part of the one tensor.
  const ForwardInputs in{context.input(0).raw_data(),
                         PartOf(context.input(1), cuda.params, KeyPart(cuda.params)),
                         PartOf(context.input(2), cuda.params, ValuePart(cuda.params))};
  if (!p.interleaved_queries && !p.interleaved_keys) {
    return ForwardHeadsFirst(context, cuda, in, out, lse);
  }
  // Kernels that read interleaved heads in place: the decode kernel (so
  // that the same problem takes the same kernel in either layout, bit for
  // bit), else the tensor-core kernels unless cuDNN comes first (long sentences without dropout:
  // faster than ours there, by more than the permutes cost).
  const bool decode = ForwardDecodes(cuda, in, *out);
  if (decode && (has_key_rows || cuda.backend != AttentionBackend::kCudnn)) {
    if (has_key_rows) p.key_rows = key_rows.data<int32_t>();
    return DecodeForward(context, p, in, out, lse);
  }
  if (!has_key_rows && !decode && !ForwardCudnnProblem(cuda).has_value() &&
      AttentionMmaTakes(p, {in.q, in.k, in.v, out->raw_data()})) {
    return CudaLaunchStatus(context, LaunchAttentionForward(p, in.q, in.k, in.v, out->raw_data(),
                                                            lse->data<float>(), context.stream()));
  }
  const AttentionParams& params = cuda.params;
  HeadsFirstTensors layout = DeviceHeadsFirst(context);
  TFM_ASSIGN_OR_RETURN(
      const std::vector<Tensor> inputs,
      layout.Inputs({{&context.input(0), p.interleaved_queries, params.heads, 0},
                     {&context.input(1), p.interleaved_keys, params.heads, KeyPart(params)},
                     {&context.input(2), p.interleaved_keys, params.heads, ValuePart(params)}}));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> heads_first_out,
                       layout.Outputs({{out, p.interleaved_queries}}));
  MakeHeadsFirst(p);
  TFM_RETURN_IF_ERROR(ForwardHeadsFirst(
      context, cuda, {inputs[0].raw_data(), inputs[1].raw_data(), inputs[2].raw_data()},
      &heads_first_out[0], lse));
  return layout.Finish();
}

// The backward's tensors: the op's inputs, or their heads-first forms.
struct BackwardTensors {
  const void *q, *k, *v, *out, *d_out;
};

// Where the backward writes dq, dk and dv: the op's outputs (in place:
// each operand's part of a packed one) or heads-first temporaries.
struct BackwardTargets {
  Tensor* tensors[3];  // Whole tensors: unpacked ones, where cuDNN may write.
  void* data[3];       // Where the kernels write each.
};

// The backward into `grads` (dq, dk, dv), in the problem's layout.
absl::Status BackwardInto(const KernelContext& context, const CudaProblem& cuda,
                          const BackwardTensors& in, const BackwardTargets& grads) {
  const AttentionCudaProblem& p = cuda.problem;
  // cuDNN's backward adds dQ with atomics: not in deterministic mode.
  if (std::optional<CudnnSdpaProblem> cudnn =
          p.deterministic ? std::nullopt : CudnnProblemFor(cuda)) {
    absl::Status status =
        CudnnSdpaBackward(*cudnn, in.q, in.k, in.v, in.out, context.input(4).data<float>(),
                          in.d_out, grads.data[0], grads.data[1], grads.data[2], context.stream());
    if (status.ok()) {
      return ClearEmptySentences(
          context, cuda, {{grads.tensors[0], 0u}, {grads.tensors[1], 0u}, {grads.tensors[2], 0u}});
    }
    if (!absl::IsUnimplemented(status)) return status;
  }
  const int64_t workspace_floats = AttentionBackwardWorkspaceFloats(
      p, in.q, in.k, in.v, in.d_out, grads.data[0], grads.data[1], grads.data[2]);
  TFM_ASSIGN_OR_RETURN(Tensor workspace, Tensor::Empty({workspace_floats}, DType::kF32,
                                                       context.device(), context.stream()));
  return CudaLaunchStatus(
      context, LaunchAttentionBackward(p, in.q, in.k, in.v, in.out, context.input(4).data<float>(),
                                       in.d_out, grads.data[0], grads.data[1], grads.data[2],
                                       workspace.data<float>(), context.stream()));
}

absl::Status AttentionBackwardCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(CudaProblem cuda, MakeCudaProblem(context, kBackwardKeyMaskInput));
  AttentionCudaProblem& p = cuda.problem;
  const AttentionParams& params = cuda.params;
  Tensor* grads[3];
  for (int i = 0; i < 3; ++i) {
    TFM_ASSIGN_OR_RETURN(grads[i], context.AllocateOutput(
                                       i, AttentionGradShape(params, i, context.input(i).shape()),
                                       context.dtype()));
  }
  // Packed projections: dk and dv are parts of dq's tensor (qkv) or dv of
  // dk's (kv), as k and v are of their input.
  Tensor* const dk = grads[AttentionGradOutput(params, 1)];
  Tensor* const dv = grads[AttentionGradOutput(params, 2)];
  const BackwardTensors in{context.input(0).raw_data(),
                           PartOf(context.input(1), params, KeyPart(params)),
                           PartOf(context.input(2), params, ValuePart(params)),
                           context.input(3).raw_data(), context.input(5).raw_data()};
  const BackwardTargets in_place{{grads[0], grads[1], grads[2]},
                                 {grads[0]->raw_data(), PartOf(*dk, params, KeyPart(params)),
                                  PartOf(*dv, params, ValuePart(params))}};
  // Interleaved heads: in place on the tensor cores unless cuDNN comes
  // first (as in the forward).
  const bool cudnn_first = !p.deterministic && CudnnProblemFor(cuda).has_value();
  if ((!p.interleaved_queries && !p.interleaved_keys) ||
      (!cudnn_first && AttentionMmaTakes(p, {in.q, in.k, in.v, in.d_out, in_place.data[0],
                                             in_place.data[1], in_place.data[2]}))) {
    return BackwardInto(context, cuda, in, in_place);
  }
  HeadsFirstTensors layout = DeviceHeadsFirst(context);
  TFM_ASSIGN_OR_RETURN(
      const std::vector<Tensor> inputs,
      layout.Inputs({{&context.input(0), p.interleaved_queries, params.heads, 0},
                     {&context.input(1), p.interleaved_keys, params.heads, KeyPart(params)},
                     {&context.input(2), p.interleaved_keys, params.heads, ValuePart(params)},
                     {&context.input(3), p.interleaved_queries},
                     {&context.input(5), p.interleaved_queries}}));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> heads_first,
                       layout.Outputs({{grads[0], p.interleaved_queries, params.heads, 0},
                                       {dk, p.interleaved_keys, params.heads, KeyPart(params)},
                                       {dv, p.interleaved_keys, params.heads, ValuePart(params)}}));
  MakeHeadsFirst(p);
  const BackwardTargets targets{
      {&heads_first[0], &heads_first[1], &heads_first[2]},
      {heads_first[0].raw_data(), heads_first[1].raw_data(), heads_first[2].raw_data()}};
  TFM_RETURN_IF_ERROR(BackwardInto(context, cuda,
                                   {inputs[0].raw_data(), inputs[1].raw_data(),
                                    inputs[2].raw_data(), inputs[3].raw_data(),
                                    inputs[4].raw_data()},
                                   targets));
  return layout.Finish();
}

TFM_REGISTER_KERNELS("scaled_dot_product_attention", DeviceType::kCUDA, AttentionForwardCuda,
                     DType::kF32, DType::kBF16, DType::kF16);
TFM_REGISTER_KERNELS("scaled_dot_product_attention_backward", DeviceType::kCUDA,
                     AttentionBackwardCuda, DType::kF32, DType::kBF16, DType::kF16);

}  // namespace
}  // namespace tfm

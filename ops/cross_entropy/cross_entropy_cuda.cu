// CUDA kernels of label_smoothed_cross_entropy. The forward reads each row
// of logits once (a warp per row up to 1024 classes, else a block): every
// thread keeps a running max with the sum of exponentials rescaled to it
// (online softmax) and the plain sum; the group combines them into the lse,
// and the row's loss and nll are formed in double as on the CPU. A second
// kernel (one block) adds the rows' terms in a fixed order. The backward
// writes d_logits from the saved lse in one pass. Both read (and the
// backward writes) a row's 16-byte-aligned middle as 16-byte packs, two a
// thread step, so that enough bytes are in flight for HBM bandwidth (the
// forward, one 2-byte load at a time behind a running max, took 1.85 ms for
// a big model's 27648 x 37000 bf16 logits, 28% of the bandwidth's floor);
// a row's few elements before and after it go one by one.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "ops/cross_entropy/cross_entropy_cuda.h"
#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_row_reduce.cuh"

namespace tfm {
namespace {

using cuda_elementwise::DeviceT;
using cuda_elementwise::ErrorText;
using cuda_elementwise::FromFloat;
using cuda_elementwise::LastError;
using cuda_elementwise::Pack;
using cuda_elementwise::ToFloat;
using cuda_row_reduce::ForRowWidth;
using cuda_row_reduce::GroupReduce;
using cuda_row_reduce::GroupScratch;
using cuda_row_reduce::RowBlocks;
using cuda_row_reduce::Sum;

constexpr int kThreads = cuda_row_reduce::kRowThreads;
constexpr float kNegInf = -__builtin_huge_valf();
constexpr unsigned long long kNoBadRow = ~0ull;

// Where the forward keeps its per-row terms: the first word is the flag of
// bad targets, then rows doubles of loss and rows of nll.
struct Workspace {
  unsigned long long* flag;
  double* row_loss;
  double* row_nll;
};

Workspace SplitWorkspace(uint64_t* words, int64_t rows) {
  double* terms = reinterpret_cast<double*>(words + 1);
  return Workspace{reinterpret_cast<unsigned long long*>(words), terms, terms + rows};
}

// Whether row `row`'s target counts; an out-of-range one is flagged unless
// `flag` is null (the lowest such row wins).
__device__ __forceinline__ bool TargetCounts(int64_t target, int64_t row,
                                             const CrossEntropyCudaShape& shape,
                                             unsigned long long* flag) {
  if (target == shape.padding_index) return false;
  if (target < 0 || target >= shape.vocab) {
    if (flag != nullptr) atomicMin(flag, static_cast<unsigned long long>(row));
    return false;
  }
  return true;
}

// A row of `vocab` elements as the packed loops take it: `head` elements
// before its first 16-byte boundary, then `packs` whole packs, then the rest.
template <typename D>
struct RowLayout {
  int64_t head;
  int64_t packs;
  __device__ RowLayout(const D* row, int64_t vocab) {
    constexpr int64_t kSize = Pack<D>::kSize;
    const int64_t misaligned = static_cast<int64_t>(reinterpret_cast<uintptr_t>(row) % 16);
    head = misaligned == 0 ? 0 : (16 - misaligned) / static_cast<int64_t>(sizeof(D));
    if (head > vocab || misaligned % sizeof(D) != 0) head = vocab;
    packs = (vocab - head) / kSize;
  }
  __device__ int64_t tail_begin() const { return head + packs * Pack<D>::kSize; }
};

// Walks the parts of `row` (laid out as `layout`) that lane `lane` of a
// group of kWidth threads takes: one(i) for each of its head and tail
// elements, one a lane, and packed(p, pack) for each of its whole packs p
// (counted from the head's end), two a lane per step, both loaded before
// either is passed on.
template <int kWidth, typename D, typename One, typename Packed>
__device__ __forceinline__ void ForRowParts(const D* row, const RowLayout<D>& layout,
                                            int64_t vocab, int lane, One one, Packed packed) {
  using P = Pack<D>;
  for (int64_t i = lane; i < layout.head; i += kWidth) one(i);
  const P* packs = reinterpret_cast<const P*>(row + layout.head);
  for (int64_t p = lane; p < layout.packs; p += 2 * kWidth) {
    const P first = packs[p];
    const bool second_in = p + kWidth < layout.packs;
    P second;
    if (second_in) second = packs[p + kWidth];
    packed(p, first);
    if (second_in) packed(p + kWidth, second);
  }
  for (int64_t i = layout.tail_begin() + lane; i < vocab; i += kWidth) one(i);
}

// Calls f(i, value) for every element i of `row` that lane `lane` of a
// group of kWidth threads takes, as f32 (ForRowParts' walk).
template <int kWidth, typename D, typename F>
__device__ __forceinline__ void ForRowElements(const D* row, int64_t vocab, int lane, F f) {
  using P = Pack<D>;
  const RowLayout<D> layout(row, vocab);
  ForRowParts<kWidth>(
      row, layout, vocab, lane, [&](int64_t i) { f(i, ToFloat(row[i])); },
      [&](int64_t p, const P& pack) {
#pragma unroll
        for (int j = 0; j < P::kSize; ++j) f(layout.head + p * P::kSize + j, ToFloat(pack.v[j]));
      });
}

// One thread's share of a row: running max, the sum of exponentials
// rescaled to it, and the plain sum.
struct OnlineSoftmax {
  float max = kNegInf;
  float sum_exp = 0.0f;
  float sum = 0.0f;
  __device__ __forceinline__ void Add(float v) {
    sum += v;
    if (v > max) {
      sum_exp = sum_exp * expf(max - v) + 1.0f;
      max = v;
    } else if (v != kNegInf) {  // exp(-inf - -inf) would be NaN.
      sum_exp += expf(v - max);
    }
  }
};

template <int kWidth, typename D, typename Target>
__global__ void __launch_bounds__(kThreads)
    CrossEntropyRowsKernel(const D* __restrict__ logits, const Target* __restrict__ targets,
                           const CrossEntropyCudaShape shape, float* __restrict__ lse,
                           Workspace workspace) {
  __shared__ GroupScratch<float> scratch;
  constexpr int kGroups = kThreads / kWidth;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  const int64_t vocab = shape.vocab;
  // Every thread runs the same iterations (they depend on the block only),
  // so the group reductions see every thread.
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kGroups; first < shape.rows;
       first += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = first + group;
    const bool valid = row < shape.rows;
    const D* x = logits + (valid ? row : 0) * vocab;
    OnlineSoftmax scan;
    if (valid) ForRowElements<kWidth>(x, vocab, lane, [&](int64_t, float v) { scan.Add(v); });
    const float max = scan.max, sum_exp = scan.sum_exp, sum = scan.sum;
    const float row_max = GroupReduce<kWidth>(max, cuda_row_reduce::Max(), &scratch);
    // A share of -inf and NaN only keeps max at -inf and sum_exp at NaN: the
    // NaN goes on into the lse, as on the CPU.
    const float rescaled =
        max == kNegInf ? (sum_exp != sum_exp ? sum_exp : 0.0f) : sum_exp * expf(max - row_max);
    const float row_sum_exp = GroupReduce<kWidth>(rescaled, Sum(), &scratch);
    const float row_sum = GroupReduce<kWidth>(sum, Sum(), &scratch);
    if (!valid || lane != 0) continue;
    const double row_lse = row_max + log(static_cast<double>(row_sum_exp));
    lse[row] = static_cast<float>(row_lse);
    const int64_t target = static_cast<int64_t>(targets[row]);
    double loss = 0.0, nll = 0.0;
    if (TargetCounts(target, row, shape, workspace.flag)) {
      // CrossEntropyCpu's expression, types included (eps / V in float).
      nll = row_lse - ToFloat(x[target]);
      const double smooth = vocab * row_lse - row_sum;
      loss = (1.0 - shape.epsilon) * nll + shape.epsilon / vocab * smooth;
    }
    workspace.row_loss[row] = loss;
    workspace.row_nll[row] = nll;
  }
}

// One block: the rows' loss and nll added in double and the counted tokens,
// each thread over a fixed stride of rows, then across the block.
template <typename Target>
__global__ void __launch_bounds__(kThreads)
    CrossEntropyTotalsKernel(const Target* __restrict__ targets, const CrossEntropyCudaShape shape,
                             Workspace workspace, float* __restrict__ loss, float* __restrict__ nll,
                             int64_t* __restrict__ count) {
  __shared__ GroupScratch<double> scratch;
  __shared__ GroupScratch<long long> count_scratch;
  double loss_sum = 0.0, nll_sum = 0.0;
  long long tokens = 0;
  for (int64_t row = threadIdx.x; row < shape.rows; row += kThreads) {
    loss_sum += workspace.row_loss[row];
    nll_sum += workspace.row_nll[row];
    tokens += static_cast<int64_t>(targets[row]) != shape.padding_index;
  }
  loss_sum = GroupReduce<kThreads>(loss_sum, Sum(), &scratch);
  nll_sum = GroupReduce<kThreads>(nll_sum, Sum(), &scratch);
  tokens = GroupReduce<kThreads>(tokens, Sum(), &count_scratch);
  if (threadIdx.x == 0) {
    *loss = static_cast<float>(loss_sum);
    *nll = static_cast<float>(nll_sum);
    *count = tokens;
  }
}

// No reductions: a group per row only keeps the row's target and lse in
// registers for the whole row.
template <int kWidth, typename D, typename Target>
__global__ void __launch_bounds__(kThreads)
    CrossEntropyBackwardKernel(const D* __restrict__ logits, const Target* __restrict__ targets,
                               const float* __restrict__ lse, const float* __restrict__ d_loss,
                               const CrossEntropyCudaShape shape, D* __restrict__ d_logits,
                               unsigned long long* flag) {
  constexpr int kGroups = kThreads / kWidth;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  const int64_t vocab = shape.vocab;
  const float scale = *d_loss;
  // LabelSmoothedCrossEntropyBackwardCpu's constants, in its float order.
  const float smooth = scale * shape.epsilon / vocab;
  const float target_term = scale * (1.0f - shape.epsilon);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kGroups + group; row < shape.rows;
       row += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t target = static_cast<int64_t>(targets[row]);
    D* out = d_logits + row * vocab;
    if (!TargetCounts(target, row, shape, lane == 0 ? flag : nullptr)) {
      for (int64_t i = lane; i < vocab; i += kWidth) out[i] = FromFloat<D>(0.0f);
      continue;
    }
    const D* x = logits + row * vocab;
    const float row_lse = lse[row];
    auto gradient = [&](int64_t i, float v) {
      float g = scale * expf(v - row_lse) - smooth;
      if (i == target) g -= target_term;
      return FromFloat<D>(g);
    };
    const RowLayout<D> layout(x, vocab);
    if (RowLayout<D>(out, vocab).head != layout.head) {
      // The two rows lie differently against 16 bytes: element by element.
      for (int64_t i = lane; i < vocab; i += kWidth) out[i] = gradient(i, ToFloat(x[i]));
      continue;
    }
    // out's parts are x's (the same head), written as they are read.
    using P = Pack<D>;
    P* out_packs = reinterpret_cast<P*>(out + layout.head);
    ForRowParts<kWidth>(
        x, layout, vocab, lane, [&](int64_t i) { out[i] = gradient(i, ToFloat(x[i])); },
        [&](int64_t p, P pack) {
          P result;
#pragma unroll
          for (int j = 0; j < P::kSize; ++j) {
            result.v[j] = gradient(layout.head + p * P::kSize + j, ToFloat(pack.v[j]));
          }
          out_packs[p] = result;
        });
  }
}

// Waits for the stream and fills *check from the flag; with no `check` (the
// caller checked the targets), neither.
template <typename Target>
const char* ReadCheck(const unsigned long long* flag, const Target* targets, cudaStream_t stream,
                      TargetCheck* check) {
  if (check == nullptr) return nullptr;
  unsigned long long bad_row = kNoBadRow;
  if (const char* error = ErrorText(
          cudaMemcpyAsync(&bad_row, flag, sizeof(bad_row), cudaMemcpyDeviceToHost, stream))) {
    return error;
  }
  if (const char* error = ErrorText(cudaStreamSynchronize(stream))) return error;
  check->bad_row = -1;
  if (bad_row == kNoBadRow) return nullptr;
  Target target;
  if (const char* error = ErrorText(
          cudaMemcpy(&target, targets + bad_row, sizeof(target), cudaMemcpyDeviceToHost))) {
    return error;
  }
  check->bad_row = static_cast<int64_t>(bad_row);
  check->bad_target = static_cast<int64_t>(target);
  return nullptr;
}

}  // namespace

int64_t CrossEntropyWorkspaceWords(int64_t rows) { return 1 + 2 * rows; }

template <typename T, typename Target>
const char* LaunchCrossEntropy(const T* logits, const Target* targets,
                               const CrossEntropyCudaShape& shape, float* loss, float* nll,
                               int64_t* count, float* lse, uint64_t* workspace, TargetCheck* check,
                               StreamHandle stream) {
  using D = DeviceT<T>;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const Workspace split = SplitWorkspace(workspace, shape.rows);
  if (const char* error = ErrorText(cudaMemsetAsync(split.flag, 0xFF, sizeof(*split.flag), s))) {
    return error;
  }
  if (shape.rows > 0) {
    ForRowWidth(shape.vocab, [&](auto width) {
      constexpr int kWidth = decltype(width)::value;
      CrossEntropyRowsKernel<kWidth, D, Target><<<RowBlocks<kWidth>(shape.rows), kThreads, 0, s>>>(
          reinterpret_cast<const D*>(logits), targets, shape, lse, split);
    });
    if (const char* error = LastError()) return error;
  }
  CrossEntropyTotalsKernel<Target><<<1, kThreads, 0, s>>>(targets, shape, split, loss, nll, count);
  if (const char* error = LastError()) return error;
  return ReadCheck(split.flag, targets, s, check);
}

template <typename T, typename Target>
const char* LaunchCrossEntropyBackward(const T* logits, const Target* targets, const float* lse,
                                       const float* d_loss, const CrossEntropyCudaShape& shape,
                                       T* d_logits, uint64_t* flag, TargetCheck* check,
                                       StreamHandle stream) {
  using D = DeviceT<T>;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  auto* bad_row = reinterpret_cast<unsigned long long*>(flag);
  if (const char* error = ErrorText(cudaMemsetAsync(bad_row, 0xFF, sizeof(*bad_row), s))) {
    return error;
  }
  if (shape.rows > 0) {  // Even without classes: the targets are checked.
    ForRowWidth(shape.vocab, [&](auto width) {
      constexpr int kWidth = decltype(width)::value;
      CrossEntropyBackwardKernel<kWidth, D, Target>
          <<<RowBlocks<kWidth>(shape.rows), kThreads, 0, s>>>(
              reinterpret_cast<const D*>(logits), targets, lse, d_loss, shape,
              reinterpret_cast<D*>(d_logits), bad_row);
    });
    if (const char* error = LastError()) return error;
  }
  return ReadCheck(bad_row, targets, s, check);
}

#define TFM_INSTANTIATE_CROSS_ENTROPY_CUDA(T, Target)                                          \
  template const char* LaunchCrossEntropy<T, Target>(                                          \
      const T*, const Target*, const CrossEntropyCudaShape&, float*, float*, int64_t*, float*, \
      uint64_t*, TargetCheck*, StreamHandle);                                                  \
  template const char* LaunchCrossEntropyBackward<T, Target>(                                  \
      const T*, const Target*, const float*, const float*, const CrossEntropyCudaShape&, T*,   \
      uint64_t*, TargetCheck*, StreamHandle)
TFM_INSTANTIATE_CROSS_ENTROPY_CUDA(float, int32_t);
TFM_INSTANTIATE_CROSS_ENTROPY_CUDA(float, int64_t);
TFM_INSTANTIATE_CROSS_ENTROPY_CUDA(Half, int32_t);
TFM_INSTANTIATE_CROSS_ENTROPY_CUDA(Half, int64_t);
TFM_INSTANTIATE_CROSS_ENTROPY_CUDA(BFloat16, int32_t);
TFM_INSTANTIATE_CROSS_ENTROPY_CUDA(BFloat16, int64_t);

}  // namespace tfm

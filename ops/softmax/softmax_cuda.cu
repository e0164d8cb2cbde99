// CUDA kernels of softmax. A row belongs to one warp (n <= 1024) or to a
// whole block and is read once per pass: the max, the sum of exponentials,
// then the output (masks are applied to the logits on the fly in every
// pass). NaN, +inf and fully masked rows behave exactly as on the CPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_row_reduce.cuh"
#include "ops/softmax/softmax_cuda.h"

namespace tfm {
namespace {

using cuda_elementwise::DeviceT;
using cuda_elementwise::FromFloat;
using cuda_elementwise::LastError;
using cuda_elementwise::ToFloat;
using cuda_row_reduce::ForRowWidth;
using cuda_row_reduce::GroupReduce;
using cuda_row_reduce::GroupScratch;
using cuda_row_reduce::RowBlocks;

constexpr int kThreads = cuda_row_reduce::kRowThreads;
constexpr float kNegInf = -__builtin_huge_valf();

enum MaskKind { kNoMask, kAdditiveMask, kRemovingMask };

// MaskRows::Offset on the device.
__device__ int64_t MaskRowOffset(const SoftmaxCudaMask& mask, int64_t row) {
  int64_t offset = 0;
  for (int axis = mask.num_axes - 1; axis >= 0 && row > 0; --axis) {
    offset += (row % mask.extents[axis]) * mask.strides[axis];
    row /= mask.extents[axis];
  }
  return offset;
}

template <MaskKind kKind>
__device__ __forceinline__ float MaskedLogit(float x, const SoftmaxCudaMask& mask, int64_t at) {
  if constexpr (kKind == kAdditiveMask) {
    return x + mask.additive[at];
  } else if constexpr (kKind == kRemovingMask) {
    return mask.removing[at] != 0 ? kNegInf : x;
  } else {
    return x;
  }
}

// As the CPU: the max ignores NaNs (fmaxf), so a row of -inf and NaN only
// is "fully masked" and gives zeros; otherwise a NaN or +inf makes the sum,
// and with it the whole row, NaN. The loops of every thread run alike (they
// depend on the block only), so the group reductions see every thread;
// threads of rows past the end reduce identities and store nothing.
template <int kWidth, MaskKind kKind, typename D>
__global__ void __launch_bounds__(kThreads)
    SoftmaxKernel(const D* __restrict__ x, const SoftmaxCudaMask mask, int64_t rows, int64_t n,
                  D* __restrict__ out) {
  __shared__ GroupScratch<float> scratch;
  constexpr int kGroups = kThreads / kWidth;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kGroups; first < rows;
       first += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = first + group;
    const bool valid = row < rows;
    const D* xr = x + (valid ? row : 0) * n;
    const int64_t mask_row = kKind != kNoMask && valid ? MaskRowOffset(mask, row) : 0;
    const auto logit = [&](int64_t i) {
      return MaskedLogit<kKind>(ToFloat(xr[i]), mask, mask_row + i);
    };
    float max = kNegInf;
    if (valid) {
      for (int64_t i = lane; i < n; i += kWidth) max = fmaxf(max, logit(i));
    }
    max = GroupReduce<kWidth>(max, cuda_row_reduce::Max(), &scratch);
    D* yr = out + (valid ? row : 0) * n;
    if (max == kNegInf) {  // The same in the whole group.
      if (valid) {
        for (int64_t i = lane; i < n; i += kWidth) yr[i] = FromFloat<D>(0.0f);
      }
      continue;
    }
    float sum = 0.0f;
    if (valid) {
      for (int64_t i = lane; i < n; i += kWidth) sum += expf(logit(i) - max);
    }
    const float inv_sum = 1.0f / GroupReduce<kWidth>(sum, cuda_row_reduce::Sum(), &scratch);
    if (!valid) continue;
    for (int64_t i = lane; i < n; i += kWidth) yr[i] = FromFloat<D>(expf(logit(i) - max) * inv_sum);
  }
}

// (x - max) - log(sum(exp(x - max))), with the max propagating NaN as
// LogSoftmaxCpu's: a row of -inf only stays -inf; a NaN or +inf anywhere
// makes the row x - max (NaN or -inf).
template <int kWidth, typename D>
__global__ void __launch_bounds__(kThreads)
    LogSoftmaxKernel(const D* __restrict__ x, int64_t rows, int64_t n, D* __restrict__ out) {
  __shared__ GroupScratch<float> scratch;
  constexpr int kGroups = kThreads / kWidth;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kGroups; first < rows;
       first += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = first + group;
    const bool valid = row < rows;
    const D* xr = x + (valid ? row : 0) * n;
    D* yr = out + (valid ? row : 0) * n;
    float max = kNegInf;
    if (valid) {
      for (int64_t i = lane; i < n; i += kWidth) {
        max = cuda_row_reduce::MaxOrNaN()(max, ToFloat(xr[i]));
      }
    }
    max = GroupReduce<kWidth>(max, cuda_row_reduce::MaxOrNaN(), &scratch);
    if (max == kNegInf) {  // The same in the whole group.
      if (valid) {
        for (int64_t i = lane; i < n; i += kWidth) yr[i] = FromFloat<D>(kNegInf);
      }
      continue;
    }
    float log_sum = 0.0f;
    if (isfinite(max)) {  // The same in the whole group.
      float sum = 0.0f;
      if (valid) {
        for (int64_t i = lane; i < n; i += kWidth) sum += expf(ToFloat(xr[i]) - max);
      }
      log_sum = logf(GroupReduce<kWidth>(sum, cuda_row_reduce::Sum(), &scratch));
    }
    if (!valid) continue;
    for (int64_t i = lane; i < n; i += kWidth) {
      yr[i] = FromFloat<D>((ToFloat(xr[i]) - max) - log_sum);
    }
  }
}

template <int kWidth, typename D>
__global__ void __launch_bounds__(kThreads)
    SoftmaxBackwardKernel(const D* __restrict__ dout, const D* __restrict__ out, int64_t rows,
                          int64_t n, D* __restrict__ dx) {
  __shared__ GroupScratch<float> scratch;
  constexpr int kGroups = kThreads / kWidth;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kGroups; first < rows;
       first += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = first + group;
    const bool valid = row < rows;
    const int64_t offset = (valid ? row : 0) * n;
    float dot = 0.0f;
    if (valid) {
      for (int64_t i = lane; i < n; i += kWidth) {
        dot = fmaf(ToFloat(dout[offset + i]), ToFloat(out[offset + i]), dot);
      }
    }
    dot = GroupReduce<kWidth>(dot, cuda_row_reduce::Sum(), &scratch);
    if (!valid) continue;
    for (int64_t i = lane; i < n; i += kWidth) {
      dx[offset + i] = FromFloat<D>(ToFloat(out[offset + i]) * (ToFloat(dout[offset + i]) - dot));
    }
  }
}

template <MaskKind kKind, typename D>
void LaunchSoftmaxOfKind(const D* x, const SoftmaxCudaMask& mask, int64_t rows, int64_t n, D* out,
                         cudaStream_t stream) {
  ForRowWidth(n, [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    SoftmaxKernel<kWidth, kKind, D>
        <<<RowBlocks<kWidth>(rows), kThreads, 0, stream>>>(x, mask, rows, n, out);
  });
}

}  // namespace

template <typename T>
const char* LaunchSoftmax(const T* x, const SoftmaxCudaMask& mask, int64_t rows, int64_t n, T* out,
                          StreamHandle stream) {
  if (rows == 0 || n == 0) return nullptr;
  using D = DeviceT<T>;
  const auto* xd = reinterpret_cast<const D*>(x);
  auto* yd = reinterpret_cast<D*>(out);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (mask.additive != nullptr) {
    LaunchSoftmaxOfKind<kAdditiveMask>(xd, mask, rows, n, yd, s);
  } else if (mask.removing != nullptr) {
    LaunchSoftmaxOfKind<kRemovingMask>(xd, mask, rows, n, yd, s);
  } else {
    LaunchSoftmaxOfKind<kNoMask>(xd, mask, rows, n, yd, s);
  }
  return LastError();
}

template <typename T>
const char* LaunchLogSoftmax(const T* x, int64_t rows, int64_t n, T* out, StreamHandle stream) {
  if (rows == 0 || n == 0) return nullptr;
  using D = DeviceT<T>;
  ForRowWidth(n, [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    LogSoftmaxKernel<kWidth, D>
        <<<RowBlocks<kWidth>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            reinterpret_cast<const D*>(x), rows, n, reinterpret_cast<D*>(out));
  });
  return LastError();
}

template <typename T>
const char* LaunchSoftmaxBackward(const T* dout, const T* out, int64_t rows, int64_t n, T* dx,
                                  StreamHandle stream) {
  if (rows == 0 || n == 0) return nullptr;
  using D = DeviceT<T>;
  ForRowWidth(n, [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    SoftmaxBackwardKernel<kWidth, D>
        <<<RowBlocks<kWidth>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            reinterpret_cast<const D*>(dout), reinterpret_cast<const D*>(out), rows, n,
            reinterpret_cast<D*>(dx));
  });
  return LastError();
}

#define TFM_INSTANTIATE_SOFTMAX_CUDA(T)                                                         \
  template const char* LaunchSoftmax<T>(const T*, const SoftmaxCudaMask&, int64_t, int64_t, T*, \
                                        StreamHandle);                                          \
  template const char* LaunchLogSoftmax<T>(const T*, int64_t, int64_t, T*, StreamHandle);       \
  template const char* LaunchSoftmaxBackward<T>(const T*, const T*, int64_t, int64_t, T*,       \
                                                StreamHandle)
TFM_INSTANTIATE_SOFTMAX_CUDA(float);
TFM_INSTANTIATE_SOFTMAX_CUDA(Half);
TFM_INSTANTIATE_SOFTMAX_CUDA(BFloat16);

}  // namespace tfm

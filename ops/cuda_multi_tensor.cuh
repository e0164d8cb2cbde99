// Multi-tensor launches (apex's and PyTorch's multi_tensor_apply, our way):
// one kernel over a list of tensors, each cut into fixed chunks of elements
// numbered across the list, one block per chunk. A list entry is any struct
// with `int64_t count` (elements) and `int64_t first_chunk` (its first
// chunk's number); a block finds its entry by a binary search over the
// list's first_chunk, so the host uploads only the list (tens of bytes per
// tensor) rather than a table with an entry per chunk.
#ifndef TFM_OPS_CUDA_MULTI_TENSOR_CUH_
#define TFM_OPS_CUDA_MULTI_TENSOR_CUH_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ops/cuda_elementwise.cuh"

namespace tfm {
namespace cuda {
// Copies `bytes` of host memory at `src` to `dst` on `stream`; the host may
// reuse `src` at once. On the default stream, through the pinned staging
// ring of uploads (core/cuda/runtime.h's CopyHostToDeviceInStreamOrder), so
// that the host does not wait for the device; elsewhere, or where nothing
// is pinned, cudaMemcpyAsync from pageable memory (where the driver may
// wait for the stream). Returns nullptr or the error's text. Defined in
// core/cuda/runtime_cuda.cc; declared here, where nvcc compiles without
// the runtime header's absl.
const char* UploadHostList(void* dst, const void* src, size_t bytes, cudaStream_t stream);
}  // namespace cuda

namespace cuda_multi_tensor {

// Numbers every entry's chunks of `chunk` elements, from 0 in list order;
// returns the total (an empty tensor has none).
template <typename Entry>
int64_t AssignFirstChunks(Entry* entries, int num_entries, int64_t chunk) {
  int64_t chunks = 0;
  for (int i = 0; i < num_entries; ++i) {
    entries[i].first_chunk = chunks;
    chunks += (entries[i].count + chunk - 1) / chunk;
  }
  return chunks;
}

// The entry that holds chunk `chunk`: the last whose first chunk is at or
// before it (empty entries share their successor's first chunk and are
// skipped that way).
template <typename Entry>
__device__ int FindEntry(const Entry* __restrict__ entries, int num_entries, int64_t chunk) {
  int low = 0, high = num_entries - 1;
  while (low < high) {
    const int mid = (low + high + 1) / 2;
    if (entries[mid].first_chunk <= chunk) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  return low;
}

// Copies the host list into `device_entries` on `stream`, staged so that
// the host list may go at once (cuda::UploadHostList: without a wait for
// the device on the default stream, where training's updates run); a
// kernel after it on the stream sees the list.
template <typename Entry>
const char* UploadList(const Entry* entries, int num_entries, Entry* device_entries,
                       cudaStream_t stream) {
  return cuda::UploadHostList(device_entries, entries, num_entries * sizeof(Entry), stream);
}

// Numbers the chunks of the host list `entries` (of `chunk` elements),
// copies the list into `device_entries` on `stream`, and launches
// kernel(device_entries, num_entries, total_chunks, args...) with one
// block of `threads` per chunk, at most max_blocks (a kernel's blocks loop
// over the rest). Nothing to do (no elements) launches nothing. Returns
// nullptr or the CUDA error text.
template <typename Entry, typename... KernelArgs, typename... Args>
const char* LaunchOverList(void (*kernel)(const Entry*, int, int64_t, KernelArgs...), int threads,
                           int64_t chunk, int64_t max_blocks, Entry* entries, int num_entries,
                           Entry* device_entries, cudaStream_t stream, Args... args) {
  const int64_t chunks = AssignFirstChunks(entries, num_entries, chunk);
  if (chunks == 0) return nullptr;
  if (const char* error = UploadList(entries, num_entries, device_entries, stream)) return error;
  const int blocks = static_cast<int>(chunks < max_blocks ? chunks : max_blocks);
  kernel<<<blocks, threads, 0, stream>>>(device_entries, num_entries, chunks, args...);
  return cuda_elementwise::LastError();
}

}  // namespace cuda_multi_tensor
}  // namespace tfm

#endif  // TFM_OPS_CUDA_MULTI_TENSOR_CUH_

// Scaled dot-product attention through cuDNN 9's fused flash-attention
// engines, built as a cuDNN backend operation graph (no cudnn_frontend).
//
// A second GPU back end beside the engine's own attention kernels: the same
// math and the same conventions as ops/attention/attention.h (layout
// [batch, heads, len, head_dim] row-major, causal queries bottom-right
// aligned, key lengths masking padded keys, lse the natural-log log-sum-exp
// of the scaled, masked scores), but bf16 or fp16 only and without dropout:
// cuDNN cannot reproduce our Philox dropout mask, so a caller that needs
// dropout (or f32) uses the engine's own kernels instead.
//
// Supported: sm_80 or newer, head_dim a multiple of 8 up to 128, causal only
// with q_len <= k_len (every query sees a key), every key length >= 1 (a row
// that sees no key is not defined here; the CPU op returns zeros and -inf).
// Anything else is an Unimplemented or InvalidArgument status, never a crash.
//
// The first call for a (device, shape, dtype, causal, has key lengths)
// builds the cuDNN graph and plan (seconds: cuDNN compiles the kernel); later
// calls only fill a variant pack and launch. All pointers are device
// pointers on the current CUDA device; `stream` is a cudaStream_t (nullptr
// for the default stream). Calls are asynchronous on `stream`.
#ifndef TFM_OPS_ATTENTION_CUDNN_SDPA_H_
#define TFM_OPS_ATTENTION_CUDNN_SDPA_H_

#include <cstdint>

#include "absl/status/status.h"

namespace tfm {

struct CudnnSdpaProblem {
  int batch = 0;
  int heads = 0;
  int q_len = 0;
  int k_len = 0;
  int head_dim = 0;  // Of q, k and v alike.
  bool bf16 = true;  // Else fp16.
  bool causal = false;
  float scale = 0.0f;  // Usually 1 / sqrt(head_dim).
  // Nullable: [batch] int32 on the GPU; keys j >= key_lengths[b] are padding.
  const int32_t* key_lengths_device = nullptr;
};

// out [batch, heads, q_len, head_dim] and lse [batch, heads, q_len] (f32)
// from q [batch, heads, q_len, head_dim] and k, v [batch, heads, k_len,
// head_dim].
absl::Status CudnnSdpaForward(const CudnnSdpaProblem& problem, const void* q, const void* k,
                              const void* v, void* out, float* lse, void* stream);

// dq, dk, dv (shaped like q, k, v) from the forward's inputs, its out and lse,
// and d_out. Rows of dk and dv for padded keys are zero.
absl::Status CudnnSdpaBackward(const CudnnSdpaProblem& problem, const void* q, const void* k,
                               const void* v, const void* out, const float* lse, const void* d_out,
                               void* dq, void* dk, void* dv, void* stream);

// True if this binary has cuDNN 9, it loads, and the current device is
// sm_80 or newer.
bool CudnnSdpaAvailable();

}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_CUDNN_SDPA_H_

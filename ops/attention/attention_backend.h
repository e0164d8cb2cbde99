// Which implementation runs scaled_dot_product_attention on CUDA, chosen by
// the op's "backend" attribute (AttentionOptions::backend) or else the
// environment variable TFM_ATTENTION_BACKEND:
//   "auto" (or unset)  cuDNN's fused attention where it takes the problem
//                      (bf16, no dropout, no mask or key lengths, head size
//                      a multiple of 8 up to 128), else our kernels;
//   "flash"            our flash-attention kernels (attention_cuda*.cu);
//   "cudnn"            cuDNN where it takes the problem, else our kernels;
//   "flash_tiles"      our flash-attention kernels without the decode kernel
//                      for few query rows (attention_cuda_decode.cu), so that
//                      benchmarks can time the 32-query tiles it replaces.
// "auto" and "flash" run the decode kernel wherever it takes the problem
// (AttentionDecodeTakes in attention_cuda.h).
#ifndef TFM_OPS_ATTENTION_ATTENTION_BACKEND_H_
#define TFM_OPS_ATTENTION_ATTENTION_BACKEND_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/attrs.h"

namespace tfm {

enum class AttentionBackend { kAuto, kFlash, kCudnn, kFlashTiles };

// The back end a setting names after resolving "auto"; an error names the
// accepted values.
absl::StatusOr<AttentionBackend> ResolveAttentionBackend(absl::string_view setting);

// ResolveAttentionBackend of TFM_ATTENTION_BACKEND, read once per process
// (kernels run on hot paths and must not read the environment each call).
absl::StatusOr<AttentionBackend> AttentionBackendFromEnvironment();

// The op attribute "backend" when given and not "auto", else the
// environment's choice.
absl::StatusOr<AttentionBackend> AttentionBackendFor(const Attrs& attrs);

}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_ATTENTION_BACKEND_H_

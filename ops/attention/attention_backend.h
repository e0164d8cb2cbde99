// Which implementation runs scaled_dot_product_attention on CUDA, chosen by
// the environment variable TFM_ATTENTION_BACKEND:
//   "auto" (or unset)  the best one available for the problem;
//   "flash"            our flash-attention kernels (attention_cuda*.cu);
//   "cudnn"            cuDNN's fused attention.
// cuDNN is not wired in yet: "auto" and "cudnn" both resolve to "flash".
#ifndef TFM_OPS_ATTENTION_ATTENTION_BACKEND_H_
#define TFM_OPS_ATTENTION_ATTENTION_BACKEND_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {

enum class AttentionBackend { kFlash, kCudnn };

// The back end a setting names after resolving "auto"; an error names the
// accepted values.
absl::StatusOr<AttentionBackend> ResolveAttentionBackend(absl::string_view setting);

// ResolveAttentionBackend of TFM_ATTENTION_BACKEND, read once per process
// (kernels run on hot paths and must not read the environment each call).
absl::StatusOr<AttentionBackend> AttentionBackendFromEnvironment();

}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_ATTENTION_BACKEND_H_

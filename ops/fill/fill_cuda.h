// Launchers of fill's CUDA kernels (plain C++: included by host code).
#ifndef TFM_OPS_FILL_FILL_CUDA_H_
#define TFM_OPS_FILL_FILL_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

// Writes `count` elements of `element_bytes` (1, 2, 4 or 8) bytes each, all
// equal to the low bytes of `pattern`. Returns nullptr or the CUDA error text.
const char* LaunchFillPattern(void* out, int64_t count, int element_bytes,
                              uint64_t pattern, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_FILL_FILL_CUDA_H_

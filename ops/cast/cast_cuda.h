// Launcher of cast's CUDA kernel (plain C++: included by host code). From
// and To are host element types (float, Half or BFloat16; declarations
// suffice). Returns nullptr or the CUDA error text.
#ifndef TFM_OPS_CAST_CAST_CUDA_H_
#define TFM_OPS_CAST_CAST_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// out[i] = x[i] converted through f32, rounded to nearest even.
template <typename From, typename To>
const char* LaunchCast(const From* x, To* out, int64_t count, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_CAST_CAST_CUDA_H_

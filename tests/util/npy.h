// Reading and writing NumPy .npy files (format version 1.0 written, 1.0-3.0
// read), so tests can exchange tensors with Python peers.
//
// Supported element types: '<f4' (f32), '<i4' (i32), '<i8' (i64); C order
// only. Reading also accepts '<f8' and converts it to f32, because a peer that
// computes its reference in float64 should not have to remember to cast.
#ifndef TFM_TESTS_UTIL_NPY_H_
#define TFM_TESTS_UTIL_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {
namespace testing {

// Writes a host tensor of dtype f32, i32 or i64 to `path`.
absl::Status WriteNpy(const std::string& path, const Tensor& tensor);

// Reads `path` into a new host tensor.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_NPY_H_

// GPU tests skip cleanly where there is no GPU (or no CUDA in the build).
#ifndef TFM_TESTS_UTIL_GPU_H_
#define TFM_TESTS_UTIL_GPU_H_

#include "core/cuda/runtime.h"
#include "gtest/gtest.h"

#define TFM_SKIP_WITHOUT_GPU()                                                   \
  do {                                                                           \
    if (::tfm::cuda::DeviceCount() == 0) {                                       \
      GTEST_SKIP() << (::tfm::cuda::BuiltWithCuda()                              \
                           ? "no CUDA GPU visible on this machine"               \
                           : "built without CUDA");                              \
    }                                                                            \
  } while (false)

#endif  // TFM_TESTS_UTIL_GPU_H_

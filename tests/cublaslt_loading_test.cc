// cuBLASLt is loaded by its first call, not linked (cublaslt_shim.cc): a
// process that links every op and runs a CPU product has not loaded it, and
// asking its version loads the toolkit's library. Runs wherever the build
// has CUDA; a GPU is not needed (loading and the version ask for none).
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "ops/linear/linear.h"

namespace tfm {
namespace {

TEST(CublasLtLoadingTest, LoadedByItsFirstCallNotAtStart) {
  if (!cuda::BuiltWithCuda()) GTEST_SKIP() << "built without CUDA";
  EXPECT_FALSE(cuda::CublasLtLoaded()) << "loaded at start";
  // A CPU product does not need it.
  const Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).value();
  const Tensor w = Tensor::FromVector<float>({1, 0, 0, 0, 1, 1}, {2, 3}).value();
  absl::StatusOr<Tensor> y = Linear(x, w);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->ToVector<float>(), (std::vector<float>{1, 5, 4, 11}));
  EXPECT_FALSE(cuda::CublasLtLoaded()) << "loaded by a CPU product";

  // The version report asks the library, which loads it: a failed load
  // would read as version 0.
  const std::string versions = cuda::LibraryVersions();
  EXPECT_TRUE(cuda::CublasLtLoaded()) << versions;
  EXPECT_TRUE(std::regex_search(versions, std::regex(R"(cuBLAS [1-9][0-9]*\.[0-9]+ \(cuBLASLt [1-9][0-9]+\))")))
      << versions;
  std::printf("[ measured ] %s\n", versions.c_str());
}

}  // namespace
}  // namespace tfm

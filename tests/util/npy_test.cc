#include "tests/util/npy.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace testing {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

TEST(NpyTest, RoundTripsEveryType) {
  const Tensor f = *Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, {2, 3});
  const Tensor i = *Tensor::FromVector<int32_t>({7, -8, 9}, {3});
  const Tensor l = *Tensor::FromVector<int64_t>({int64_t{1} << 40}, {});
  for (const Tensor& t : {f, i, l}) {
    const std::string path = TempPath(absl::StrCat("round_trip_", DTypeName(t.dtype()), ".npy"));
    ASSERT_TRUE(WriteNpy(path, t).ok());
    absl::StatusOr<Tensor> back = ReadNpy(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape(), t.shape());
    EXPECT_EQ(back->dtype(), t.dtype());
    EXPECT_EQ(std::memcmp(back->raw_data(), t.raw_data(), t.nbytes()), 0);
  }
}

// NumPy itself must read what we write and write what we read.
TEST(NpyTest, NumpyAgrees) {
  const std::string in = TempPath("to_numpy.npy");
  const std::string out = TempPath("from_numpy.npy");
  ASSERT_TRUE(WriteNpy(in, *Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2})).ok());
  absl::StatusOr<std::string> printed = RunPeerPython(
      "import sys, numpy as np\n"
      "a = np.load(sys.argv[1])\n"
      "print(a.dtype, a.shape, a[2, 1])\n"
      "np.save(sys.argv[2], np.arange(12, dtype=np.float64).reshape(2, 3, 2) / 4)\n",
      {in, out});
  ASSERT_TRUE(printed.ok()) << printed.status();
  EXPECT_EQ(absl::StripAsciiWhitespace(*printed), "float32 (3, 2) 6.0");
  absl::StatusOr<Tensor> back = ReadNpy(out);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(back->dtype(), DType::kF32);  // float64 arrives as f32.
  EXPECT_EQ(back->data<float>()[11], 2.75f);
}

TEST(NpyTest, RejectsGarbage) {
  EXPECT_FALSE(ReadNpy(TempPath("missing.npy")).ok());
  const std::string path = TempPath("garbage.npy");
  std::FILE* file = std::fopen(path.c_str(), "wb");
  std::fputs("not numpy at all", file);
  std::fclose(file);
  EXPECT_EQ(ReadNpy(path).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace testing
}  // namespace tfm

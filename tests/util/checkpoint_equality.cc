#include "tests/util/checkpoint_equality.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tfm {
namespace testing {
namespace {

void ExpectSameTensors(const char* what, const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_FALSE(a.empty()) << what << ": no tensors";
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& [name, x] = a[i];
    const Tensor& y = b[i].second;
    ASSERT_EQ(name, b[i].first) << what;
    ASSERT_EQ(x.dtype(), y.dtype()) << what << " " << name;
    ASSERT_EQ(x.nbytes(), y.nbytes()) << what << " " << name;
    if (std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0) continue;
    // Name the first element that differs (as f32 where it is one).
    const auto* u = static_cast<const unsigned char*>(x.raw_data());
    const auto* v = static_cast<const unsigned char*>(y.raw_data());
    size_t byte = 0;
    while (u[byte] == v[byte]) ++byte;
    std::string values;
    if (x.dtype() == DType::kF32) {
      const size_t element = byte / sizeof(float);
      values = absl::StrCat(" (element ", element, ": ", x.data<float>()[element], " against ",
                            y.data<float>()[element], ")");
    }
    ADD_FAILURE() << what << " tensor " << name << " differs from byte " << byte << values;
  }
}

}  // namespace

Checkpoint ReadCheckpointOrFail(const std::string& work_dir, int64_t update) {
  absl::StatusOr<Checkpoint> checkpoint =
      ReadCheckpoint(absl::StrCat(work_dir, "/", CheckpointDirName(update)));
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  return checkpoint.ok() ? *std::move(checkpoint) : Checkpoint();
}

void ExpectBitIdentical(const Checkpoint& a, const Checkpoint& b) {
  ExpectSameTensors("model", a.model, b.model);
  ExpectSameTensors("optimizer", a.optimizer, b.optimizer);
  EXPECT_EQ(a.state.update(), b.state.update());
  EXPECT_EQ(a.state.batches(), b.state.batches());
  EXPECT_EQ(a.state.data_position().DebugString(), b.state.data_position().DebugString());
  EXPECT_EQ(a.state.rng().DebugString(), b.state.rng().DebugString());  // The dropout counter.
}

}  // namespace testing
}  // namespace tfm

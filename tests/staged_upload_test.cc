// Host-to-device copies go through pinned staging and do not wait for the
// GPU (cuda::CopyHostToDeviceInStreamOrder, used by CopyInto): so these
// tests queue them behind real GPU work and check that each lands intact and
// in its place in the stream's order, that the host's buffer may change at
// once, that more copies than slots reuse the slots safely, and that a copy
// too large for a slot still arrives. And the reads back with one wait
// (CopyAllToHost). The GPU cases skip without a GPU.
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/tensor.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/add/add.h"
#include "ops/fill/fill.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

const Device kGpu = Device::Cuda(0);

// Keeps the GPU busy for a while (element-wise adds over 256 MiB), so the
// copies queued after it are still waiting when the host goes on.
void QueueGpuWork() {
  absl::StatusOr<Tensor> x = Fill({64 << 20}, 1.0, DType::kF32, kGpu);
  ASSERT_TRUE(x.ok()) << x.status();
  for (int i = 0; i < 8; ++i) {
    x = Add(*x, *x);
    ASSERT_TRUE(x.ok()) << x.status();
  }
}

std::vector<int32_t> Numbered(int64_t count, int32_t first) {
  std::vector<int32_t> values(count);
  std::iota(values.begin(), values.end(), first);
  return values;
}

std::vector<int32_t> OnHost(const Tensor& tensor) {
  absl::StatusOr<Tensor> host = CopyToDevice(tensor, Device::Cpu());
  EXPECT_TRUE(host.ok()) << host.status();
  return host.ok() ? host->ToVector<int32_t>() : std::vector<int32_t>();
}

TEST(StagedUploadTest, ManyCopiesBehindGpuWorkLandIntact) {
  TFM_SKIP_WITHOUT_GPU();
  const cuda::StagingStats before = cuda::GetStagingStats();
  QueueGpuWork();
  // Four times the slots, of sizes from one element to a whole slot.
  constexpr int kCopies = 4 * cuda::kStagingSlots;
  std::vector<Tensor> uploaded;
  std::vector<std::vector<int32_t>> expected;
  for (int i = 0; i < kCopies; ++i) {
    const int64_t count =
        i % 4 == 3 ? static_cast<int64_t>(cuda::kStagingSlotBytes / sizeof(int32_t)) : 1 + 977 * i;
    std::vector<int32_t> values = Numbered(count, 1000 * i);
    absl::StatusOr<Tensor> t = Int32OnDevice(values, {count}, kGpu);
    ASSERT_TRUE(t.ok()) << t.status();
    // The host's buffer is the caller's again at once.
    std::fill(values.begin(), values.end(), -1);
    uploaded.push_back(*t);
    expected.push_back(Numbered(count, 1000 * i));
  }
  for (int i = 0; i < kCopies; ++i) {
    EXPECT_EQ(OnHost(uploaded[i]), expected[i]) << "copy " << i;
  }
  const cuda::StagingStats after = cuda::GetStagingStats();
  if (after.pinning_refused) {
    // Copied as plain copies: intact all the same (checked above).
    std::printf("staging: this machine refuses pinned memory; copies waited\n");
    return;
  }
  EXPECT_EQ(after.staged_copies - before.staged_copies, kCopies);
  EXPECT_GE(after.slots, 1);
  EXPECT_LE(after.slots, cuda::kStagingSlots);
  std::printf("staging: %d slots, %lld copies staged, %lld waited for a slot\n", after.slots,
              static_cast<long long>(after.staged_copies),
              static_cast<long long>(after.waits_for_slot));
}

// Work queued between two copies into one tensor reads the first; work
// queued after the second reads the second.
TEST(StagedUploadTest, CopiesKeepTheStreamOrder) {
  TFM_SKIP_WITHOUT_GPU();
  constexpr int64_t kCount = 1 << 16;
  absl::StatusOr<Tensor> target = Tensor::Empty({kCount}, DType::kF32, kGpu);
  ASSERT_TRUE(target.ok()) << target.status();
  QueueGpuWork();
  std::vector<float> first(kCount, 3.0f), second(kCount, 5.0f);
  ASSERT_TRUE(CopyInto(Tensor::FromVector<float>(first, {kCount}).value(), *target).ok());
  absl::StatusOr<Tensor> doubled_first = Add(*target, *target);
  ASSERT_TRUE(doubled_first.ok()) << doubled_first.status();
  ASSERT_TRUE(CopyInto(Tensor::FromVector<float>(second, {kCount}).value(), *target).ok());
  absl::StatusOr<Tensor> doubled_second = Add(*target, *target);
  ASSERT_TRUE(doubled_second.ok()) << doubled_second.status();
  const std::vector<float> a = CopyToDevice(*doubled_first, Device::Cpu())->ToVector<float>();
  const std::vector<float> b = CopyToDevice(*doubled_second, Device::Cpu())->ToVector<float>();
  EXPECT_EQ(a, std::vector<float>(kCount, 6.0f));
  EXPECT_EQ(b, std::vector<float>(kCount, 10.0f));
}

// Larger than a slot: the copy waits, as a plain copy does, and arrives.
TEST(StagedUploadTest, CopyLargerThanASlotArrives) {
  TFM_SKIP_WITHOUT_GPU();
  const int64_t count = static_cast<int64_t>(cuda::kStagingSlotBytes / sizeof(int32_t)) + 17;
  const cuda::StagingStats before = cuda::GetStagingStats();
  QueueGpuWork();
  const std::vector<int32_t> values = Numbered(count, -5);
  absl::StatusOr<Tensor> t = Int32OnDevice(values, {count}, kGpu);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(OnHost(*t), values);
  EXPECT_EQ(cuda::GetStagingStats().staged_copies, before.staged_copies);
}

// Several device tensors (f32, i32, i64, queued behind GPU work) read back
// together, with a host tensor among them returned as it is.
TEST(StagedUploadTest, TensorsReadTogetherAreTheirValues) {
  TFM_SKIP_WITHOUT_GPU();
  const std::vector<float> floats = {1.5f, -2.0f, 3.25f};
  const std::vector<int32_t> ints = Numbered(1000, 7);
  const std::vector<int64_t> longs = {int64_t{1} << 40, -3};
  const Tensor on_host = Tensor::FromVector<int32_t>(ints, {1000}).value();
  QueueGpuWork();
  const Tensor a = CopyToDevice(Tensor::FromVector<float>(floats, {3}).value(), kGpu).value();
  const Tensor b = CopyToDevice(on_host, kGpu).value();
  const Tensor c = CopyToDevice(Tensor::FromVector<int64_t>(longs, {2}).value(), kGpu).value();
  absl::StatusOr<std::vector<Tensor>> read = CopyAllToHost({a, on_host, b, c});
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 4u);
  for (const Tensor& t : *read) EXPECT_TRUE(t.device().is_cpu());
  EXPECT_EQ((*read)[0].ToVector<float>(), floats);
  EXPECT_EQ((*read)[1].raw_data(), on_host.raw_data());
  EXPECT_EQ((*read)[2].ToVector<int32_t>(), ints);
  EXPECT_EQ((*read)[3].ToVector<int64_t>(), longs);
}

// Everywhere: host tensors come back as they are; an undefined one is an
// error.
TEST(StagedUploadTest, HostTensorsReadTogetherComeBackAsTheyAre) {
  const Tensor x = Tensor::FromVector<float>({1.0f, 2.0f}, {2}).value();
  absl::StatusOr<std::vector<Tensor>> read = CopyAllToHost({x, x});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[1].raw_data(), x.raw_data());
  EXPECT_FALSE(CopyAllToHost({x, Tensor()}).ok());
}

}  // namespace
}  // namespace tfm

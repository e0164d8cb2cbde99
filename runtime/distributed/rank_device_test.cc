#include "runtime/distributed/rank_device.h"

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace tfm {
namespace {

TEST(RankDeviceTest, SeveralRanksTakeOneGpuEachByLocalRank) {
  for (const char* setting : {"auto", "cuda", "cuda:0"}) {
    SCOPED_TRACE(setting);
    absl::StatusOr<Device> device = ChooseRankDevice(setting, 4, 2, 4);
    ASSERT_TRUE(device.ok()) << device.status();
    EXPECT_EQ(*device, Device::Cuda(2));
  }
  EXPECT_EQ(*ChooseRankDevice("cpu", 4, 2, 4), Device::Cpu());
  EXPECT_EQ(*ChooseRankDevice("auto", 4, 2, 0), Device::Cpu());  // No GPU: the CPU.
}

TEST(RankDeviceTest, ImpossibleGpuChoicesNameTrainDevice) {
  const absl::Status no_gpu = ChooseRankDevice("cuda", 2, 0, 0).status();
  EXPECT_EQ(no_gpu.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(no_gpu.message().find("train.device: cuda with 2 ranks, but this machine has no GPU"),
            std::string::npos)
      << no_gpu;
  const absl::Status too_many = ChooseRankDevice("auto", 3, 2, 2).status();
  EXPECT_EQ(too_many.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(too_many.message().find("this rank is number 2 on its machine, which has 2 GPUs"),
            std::string::npos)
      << too_many;
  const absl::Status numbered = ChooseRankDevice("cuda:1", 2, 0, 2).status();
  EXPECT_EQ(numbered.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(numbered.message().find("train.device: cuda:1 with 2 ranks"), std::string::npos)
      << numbered;
  EXPECT_FALSE(ChooseRankDevice("tpu", 2, 0, 2).ok());
}

// One rank resolves train.device on this machine, as a single process does.
TEST(RankDeviceTest, OneRankResolvesTheSettingHere) {
  EXPECT_EQ(*ChooseRankDevice("cpu", 1, 0, 8), Device::Cpu());
  const absl::Status missing = ChooseRankDevice("cuda:63", 1, 0, 8).status();
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.message().rfind("train.device: ", 0), 0u) << missing;
}

TEST(RankDeviceTest, LocalRankComesFromTheLauncher) {
  unsetenv("MPI_LOCALRANKID");
  unsetenv("SLURM_LOCALID");
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  EXPECT_EQ(LocalRank(11), 3);
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_EQ(LocalRank(5), 5);
  setenv("SLURM_LOCALID", "1", 1);
  EXPECT_EQ(LocalRank(5), 1);
  unsetenv("SLURM_LOCALID");
}

}  // namespace
}  // namespace tfm

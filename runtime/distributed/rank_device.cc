#include "runtime/distributed/rank_device.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/config/device_setting.h"

namespace tfm {

absl::StatusOr<Device> ChooseRankDevice(absl::string_view setting, int ranks, int local_rank,
                                        int gpus) {
  if (ranks <= 1) {
    absl::StatusOr<Device> device = ResolveDevice(setting);
    if (!device.ok()) {
      return absl::Status(device.status().code(),
                          absl::StrCat("train.device: ", device.status().message()));
    }
    return device;
  }
  const bool automatic = IsAutoDevice(setting);
  if (automatic && gpus == 0) return Device::Cpu();
  Device asked = Device::Cuda(0);
  if (!automatic) {
    absl::StatusOr<Device> parsed = Device::Parse(setting);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("train.device: ", parsed.status().message()));
    }
    asked = *parsed;
  }
  if (asked.is_cpu()) return asked;
  if (asked.index != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "train.device: ", setting, " with ", ranks,
        " ranks: each rank takes the GPU numbered by its rank on its machine; say cuda or "
        "auto (and CUDA_VISIBLE_DEVICES to choose the GPUs)"));
  }
  if (gpus == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "train.device: ", setting, " with ", ranks,
        " ranks, but this machine has no GPU (or this build has no CUDA); say cpu or auto"));
  }
  if (local_rank >= gpus) {
    return absl::FailedPreconditionError(absl::StrCat(
        "train.device: ", setting, ": this rank is number ", local_rank,
        " on its machine, which has ", gpus, " GPU", gpus == 1 ? "" : "s",
        ": start at most one rank per GPU on each machine"));
  }
  return Device::Cuda(local_rank);
}

int LocalRank(int rank) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* value = std::getenv(name);
    int local = 0;
    if (value != nullptr && absl::SimpleAtoi(value, &local) && local >= 0) return local;
  }
  return rank;
}

}  // namespace tfm

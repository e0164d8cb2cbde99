// The device each rank of a training run trains on. One process trains
// where train.device says (ResolveDevice: "auto" is the first GPU, else the
// CPU). Several ranks (under mpirun) on machines with GPUs take one GPU
// each, the one numbered by the rank's place on its machine (its local
// rank), as fairseq and PyTorch's launchers do: "auto" and "cuda" start one
// rank per GPU, and their gradients are summed over NCCL (the trainer's
// GradientReducer on an NcclCommunicator that the MPI ranks bootstrap).
#ifndef TFM_RUNTIME_DISTRIBUTED_RANK_DEVICE_H_
#define TFM_RUNTIME_DISTRIBUTED_RANK_DEVICE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device.h"

namespace tfm {

// The device of local rank `local_rank` of `ranks` for the train.device
// `setting` on a machine with `gpus` GPUs. With one rank: ResolveDevice
// (which asks this machine). With several: the CPU for "cpu", and for "auto"
// where there is no GPU; else cuda:<local_rank>. Errors name train.device:
// a GPU asked for where there is none, more ranks on the machine than GPUs,
// and cuda:N with N > 0 for several ranks (each rank takes its own GPU).
absl::StatusOr<Device> ChooseRankDevice(absl::string_view setting, int ranks, int local_rank,
                                        int gpus);

// This process's rank among the ranks on its machine: Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK (or MPI_LOCALRANKID, SLURM_LOCALID), else
// `rank` (all ranks on one machine).
int LocalRank(int rank);

}  // namespace tfm

#endif  // TFM_RUNTIME_DISTRIBUTED_RANK_DEVICE_H_

// The gradient all-reduce of data-parallel training on the base model
// (ende_base: 63.1M parameters, the paper's 37k shared vocabulary), bucketed
// as the trainer buckets it (runtime/distributed/gradient_reducer.h, 25 MiB):
//
//   mpirun --allow-run-as-root -np 2 bazel-bin/benchmarks/allreduce      # MPI, host memory
//   bazel-bin/benchmarks/allreduce --device=cuda                         # NCCL, 1 GPU
//   mpirun -np 8 bazel-bin/benchmarks/allreduce --device=cuda            # NCCL, 8 GPUs
//
// Rank 0 prints the environment, the buckets, and per way of reducing
// (our communicator, which polls a non-blocking collective under a timeout;
// MPI_Allreduce blocking, for comparison) the time of one update's buckets
// (median and min over --passes) with algorithm bandwidth (gradient bytes /
// time) and bus bandwidth (x 2(n-1)/n, what a ring moves per link; NCCL's
// convention), the figure to compare across rank counts.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/cuda/runtime.h"
#include "runtime/distributed/gradient_reducer.h"
#include "runtime/distributed/local_communicator.h"
#include "runtime/distributed/mpi_communicator.h"
#include "runtime/distributed/nccl_communicator.h"
#include "core/environment_report.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "layers/transformer.h"

ABSL_FLAG(std::string, device, "cpu", "cpu (MPI over host memory) or cuda (NCCL, GPU = local rank)");
ABSL_FLAG(int, passes, 10, "timed passes over all buckets (after 2 warm-up passes)");
ABSL_FLAG(int, bucket_mib, 25, "bucket size in MiB");

namespace tfm {
namespace {

// The base model's parameter sizes in bytes, in the model's order.
absl::StatusOr<std::vector<size_t>> BaseModelParameterBytes() {
  const config::ModelConfig model;  // The proto's defaults: the paper's base shape.
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<Transformer> transformer,
                       Transformer::Create(model, VocabularySpec{37000, 0, 2, 3}, Device::Cpu(), 1));
  std::vector<size_t> bytes;
  for (const Parameter* p : transformer->Parameters()) bytes.push_back(p->value.nbytes());
  return bytes;
}

// Element i of a rank's bucket before the check: small integers, so that
// every sum over ranks is exact in f32 whatever order a collective adds in.
float PatternValue(int rank, int64_t i) { return static_cast<float>(rank + 1 + i % 7); }

// Fills every bucket with PatternValue(rank, i), all-reduces once, and counts
// the elements (over every rank) that are not the exact sum over the ranks.
absl::StatusOr<int64_t> CheckSums(std::vector<Tensor>& buckets, Communicator& reducer,
                                  Communicator& bootstrap, const Device& device) {
  const int rank = bootstrap.rank(), ranks = bootstrap.size();
  double wrong = 0;
  for (Tensor& bucket : buckets) {
    std::vector<float> values(bucket.num_elements());
    for (int64_t i = 0; i < bucket.num_elements(); ++i) values[i] = PatternValue(rank, i);
    TFM_ASSIGN_OR_RETURN(Tensor host, Tensor::Empty(bucket.shape(), DType::kF32, Device::Cpu()));
    std::copy(values.begin(), values.end(), host.span<float>().begin());
    TFM_RETURN_IF_ERROR(CopyInto(host, bucket));
    TFM_RETURN_IF_ERROR(reducer.AllReduceSum(bucket, "checked bucket"));
    TFM_ASSIGN_OR_RETURN(Tensor result, CopyToDevice(bucket, Device::Cpu()));
    const absl::Span<const float> sums = result.span<float>();
    for (int64_t i = 0; i < bucket.num_elements(); ++i) {
      const float expected = static_cast<float>(ranks * (ranks + 1) / 2 + ranks * (i % 7));
      wrong += sums[i] != expected ? 1 : 0;
    }
    // Back to small values for the timed passes, which add up again and again.
    std::fill(host.span<float>().begin(), host.span<float>().end(), 1e-3f);
    TFM_RETURN_IF_ERROR(CopyInto(host, bucket));
  }
  double total[] = {wrong};
  TFM_RETURN_IF_ERROR(bootstrap.AllReduceSum(total, "check result"));
  return static_cast<int64_t>(total[0]);
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

absl::Status Main() {
  const bool cuda = absl::GetFlag(FLAGS_device) == "cuda";
  if (!cuda && absl::GetFlag(FLAGS_device) != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device=", absl::GetFlag(FLAGS_device), ": cpu or cuda"));
  }
  const absl::Duration timeout = absl::Minutes(5);
  std::unique_ptr<MpiCommunicator> mpi;
  std::unique_ptr<Communicator> local;
  Communicator* bootstrap;
  if (LaunchedByMpi()) {
    TFM_ASSIGN_OR_RETURN(mpi, MpiCommunicator::Create(timeout));
    bootstrap = mpi.get();
  } else {
    local = std::make_unique<LocalCommunicator>();
    bootstrap = local.get();
  }
  const bool zero = bootstrap->rank() == 0;
  const int ranks = bootstrap->size();
  std::unique_ptr<NcclCommunicator> nccl;
  Device device = Device::Cpu();
  if (cuda) {
    const int gpus = cuda::DeviceCount();
    if (gpus == 0) return absl::UnavailableError("--device=cuda: no GPU visible");
    device = Device::Cuda(bootstrap->rank() % gpus);
    TFM_ASSIGN_OR_RETURN(nccl, NcclCommunicator::Create(bootstrap, device.index, timeout));
  }
  if (zero) {
    for (const auto& [label, text] : EnvironmentReport()) std::printf("%s: %s\n", label.c_str(), text.c_str());
    std::printf("ranks: %d (%s)%s\n", ranks, bootstrap->name().c_str(),
                mpi ? absl::StrCat(", ", mpi->Describe(0), " ... ", mpi->Describe(ranks - 1)).c_str()
                    : "");
    if (cuda) {
      TFM_ASSIGN_OR_RETURN(const std::string gpu, cuda::DeviceName(device.index));
      std::printf("device: %s, %s; %s\n", gpu.c_str(), nccl->name().c_str(),
                  cuda::LibraryVersions().c_str());
    } else {
      std::printf("device: host memory (MPI)\n");
    }
  }

  TFM_ASSIGN_OR_RETURN(const std::vector<size_t> parameter_bytes, BaseModelParameterBytes());
  const std::vector<std::vector<int>> plan =
      PlanBuckets(parameter_bytes, (size_t{1} << 20) * absl::GetFlag(FLAGS_bucket_mib));
  std::vector<Tensor> buckets;
  size_t total = 0;
  std::vector<std::string> sizes;
  for (const std::vector<int>& bucket : plan) {
    size_t bytes = 0;
    for (int i : bucket) bytes += parameter_bytes[i];
    total += bytes;
    sizes.push_back(absl::StrFormat("%.1f", bytes / 1048576.0));
    TFM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty({static_cast<int64_t>(bytes / 4)},
                                                      DType::kF32, device));
    if (!cuda) std::fill(tensor.span<float>().begin(), tensor.span<float>().end(), 1e-3f);
    buckets.push_back(tensor);
  }
  if (zero) {
    std::printf("gradients: base model, %zu parameters (%.1f MiB f32) in %zu buckets (each closed "
                "once it holds >= %d MiB; the shared table alone): %s MiB\n",
                total / 4, total / 1048576.0, buckets.size(), absl::GetFlag(FLAGS_bucket_mib),
                absl::StrJoin(sizes, " ").c_str());
  }
  Communicator* reducer = cuda ? static_cast<Communicator*>(nccl.get()) : bootstrap;
  // The sums first: a fast collective that adds wrongly is no result.
  TFM_ASSIGN_OR_RETURN(const int64_t wrong, CheckSums(buckets, *reducer, *bootstrap, device));
  if (zero) {
    if (wrong == 0) {
      std::printf("check: PASS (every element of the %zu buckets, on every rank, is the exact sum "
                  "over the %d ranks)\n", buckets.size(), ranks);
    } else {
      std::printf("check: FAIL (%lld elements over the ranks are not the sum over the ranks)\n",
                  static_cast<long long>(wrong));
    }
  }
  if (wrong != 0) return absl::InternalError("the all-reduce's sums are wrong (check: FAIL)");
  if (zero) {
    std::printf("%-34s %10s %10s %12s %12s\n", "all-reduce of all buckets", "median ms", "min ms",
                "algo GB/s", "bus GB/s");
  }
  struct Way {
    std::string name;
    std::function<absl::Status(Tensor&)> reduce;
  };
  std::vector<Way> ways = {
      {cuda ? "NCCL (ours: polled, timeout)" : "MPI (ours: polled, timeout)",
       [&](Tensor& t) { return reducer->AllReduceSum(t, "benchmark bucket"); }}};
  if (mpi && !cuda) {
    ways.push_back({"MPI_Allreduce (blocking)", [&](Tensor& t) { return mpi->BlockingAllReduceSum(t); }});
  }
  for (const Way& way : ways) {
    std::vector<double> seconds;
    for (int pass = -2; pass < absl::GetFlag(FLAGS_passes); ++pass) {
      double flag[] = {0};
      TFM_RETURN_IF_ERROR(bootstrap->AllReduceSum(flag, "start together"));
      const absl::Time start = absl::Now();
      for (Tensor& bucket : buckets) TFM_RETURN_IF_ERROR(way.reduce(bucket));
      if (cuda) TFM_RETURN_IF_ERROR(cuda::Synchronize(device.index));
      if (pass >= 0) seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    }
    const double median = Median(seconds);
    const double best = *std::min_element(seconds.begin(), seconds.end());
    const double algo = total / median / 1e9;
    if (zero) {
      std::printf("%-34s %10.2f %10.2f %12.2f %12.2f\n", way.name.c_str(), median * 1e3,
                  best * 1e3, algo, algo * 2.0 * (ranks - 1) / ranks);
    }
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tfm

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = tfm::Main();
  if (!status.ok()) {
    std::fprintf(stderr, "allreduce: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

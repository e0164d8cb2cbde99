// A single process: every collective leaves its data as it is. Training
// without mpirun uses it, and a one-rank NCCL communicator bootstraps from
// it.
#ifndef TFM_RUNTIME_DISTRIBUTED_LOCAL_COMMUNICATOR_H_
#define TFM_RUNTIME_DISTRIBUTED_LOCAL_COMMUNICATOR_H_

#include "runtime/distributed/communicator.h"

namespace tfm {

class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "single process"; }
  absl::Status AllReduceSum(Tensor& tensor, absl::string_view what) override;
  absl::Status AllReduceSum(absl::Span<double>, absl::string_view) override {
    return absl::OkStatus();
  }
  absl::Status Broadcast(absl::Span<char>, int root, absl::string_view what,
                         absl::Duration) override;
  int64_t Announce() override { return ++announced_; }
  std::string Missing(int64_t) override { return ""; }
  void Abort(int) override {}

 private:
  int64_t announced_ = 0;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_DISTRIBUTED_LOCAL_COMMUNICATOR_H_

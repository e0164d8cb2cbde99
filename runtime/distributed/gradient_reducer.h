// Sums the gradients of data-parallel ranks in buckets, overlapped with the
// backward pass (the scheme of PyTorch's DistributedDataParallel): the
// parameters are grouped, in the reverse of their order (roughly the order
// backward finishes them), into buckets of about 25 MiB; during a rank's
// last backward pass of an update, a bucket whose gradients are all final is
// flattened and all-reduced on a background thread while backward goes on.
//
// A gradient is final when its parameter has had as many AccumulateGrad
// calls in this pass as in the first pass the reducer watched (the
// Parameter::on_grad_accumulated hook counts them). A model that writes its
// gradients some other way is still reduced correctly, at Finish, without
// overlap. Buckets are reduced strictly in order, so every rank issues the
// same collectives in the same order whatever order its gradients finish in.
#ifndef TFM_RUNTIME_DISTRIBUTED_GRADIENT_REDUCER_H_
#define TFM_RUNTIME_DISTRIBUTED_GRADIENT_REDUCER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/distributed/communicator.h"
#include "core/layer_registry.h"

namespace tfm {

// PyTorch DDP's default bucket size.
inline constexpr size_t kDefaultBucketBytes = size_t{25} << 20;

// Parameter indices per bucket: from the last parameter backwards, a bucket
// closes once it holds at least `bucket_bytes` (a parameter larger than that
// is a bucket of its own).
std::vector<std::vector<int>> PlanBuckets(const std::vector<size_t>& parameter_bytes,
                                          size_t bucket_bytes);

class GradientReducer {
 public:
  // The gradients must be f32 on one device that `communicator` serves;
  // neither the communicator nor the parameters are owned.
  static absl::StatusOr<std::unique_ptr<GradientReducer>> Create(
      Communicator* communicator, std::vector<Parameter*> parameters,
      size_t bucket_bytes = kDefaultBucketBytes);
  ~GradientReducer();  // Removes the hooks and stops the thread.

  // Before each backward pass of `update` on this rank; `last`: this rank's
  // last pass of the update, whose finished buckets are reduced at once.
  // `earlier` (gradients on the reducer's device, one per parameter, or
  // empty) is the sum of this rank's earlier passes, which the last pass's
  // gradients (computed from zero) are added to before the all-reduce: each
  // batch's gradient is formed on its own, as when each rank computes one
  // batch.
  void BeginBackward(int64_t update, bool last, std::vector<Tensor> earlier = {});
  // Reduces the buckets still waiting and returns once every gradient holds
  // the sum over the ranks.
  absl::Status Finish();

  int num_buckets() const { return static_cast<int>(buckets_.size()); }

 private:
  struct Bucket {
    std::vector<int> parameters;
    Tensor flat;
    int pending = 0;  // Parameters not yet final in this pass.
    bool posted = false;
  };

  GradientReducer(Communicator* communicator, std::vector<Parameter*> parameters);
  void OnAccumulated(int parameter);
  void Post(int bucket);
  void Work();
  absl::Status Reduce(Bucket& bucket, int index, int64_t update);

  Communicator* communicator_;
  std::vector<Parameter*> parameters_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;  // Parameter index -> bucket index.

  // Main thread only.
  std::vector<int> counts_;    // AccumulateGrad calls per parameter in this pass.
  std::vector<int> expected_;  // Calls per pass, from the first pass watched.
  bool watching_ = false;      // A pass has begun since the last Finish.
  bool calibrated_ = false;
  bool last_pass_ = false;
  std::vector<Tensor> earlier_;
  std::string late_;  // A parameter accumulated after its bucket was posted.

  // Shared with the worker.
  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t update_ = 0;
  int next_ = 0;  // The next bucket the worker reduces.
  bool stop_ = false;
  absl::Status error_;
  std::thread worker_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_DISTRIBUTED_GRADIENT_REDUCER_H_

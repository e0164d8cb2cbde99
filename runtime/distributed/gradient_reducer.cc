#include "runtime/distributed/gradient_reducer.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/cuda/runtime.h"
#include "core/status_macros.h"
#include "ops/add/add.h"

namespace tfm {
namespace {

// Copies `bytes` between two buffers on `device`.
absl::Status CopyOnDevice(const Device& device, void* dst, const void* src, size_t bytes) {
  if (device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  return cuda::Memcpy(dst, src, bytes, cuda::CopyKind::kDeviceToDevice);
}

}  // namespace

std::vector<std::vector<int>> PlanBuckets(const std::vector<size_t>& parameter_bytes,
                                          size_t bucket_bytes) {
  std::vector<std::vector<int>> buckets;
  size_t filled = 0;
  for (int i = static_cast<int>(parameter_bytes.size()) - 1; i >= 0; --i) {
    if (buckets.empty() || filled >= bucket_bytes) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(i);
    filled += parameter_bytes[i];
  }
  return buckets;
}

GradientReducer::GradientReducer(Communicator* communicator, std::vector<Parameter*> parameters)
    : communicator_(communicator), parameters_(std::move(parameters)) {}

absl::StatusOr<std::unique_ptr<GradientReducer>> GradientReducer::Create(
    Communicator* communicator, std::vector<Parameter*> parameters, size_t bucket_bytes) {
  if (parameters.empty()) return absl::InvalidArgumentError("gradient reducer: no parameters");
  const Device device = parameters[0]->grad.device();
  std::vector<size_t> bytes;
  for (const Parameter* p : parameters) {
    if (p->grad.dtype() != DType::kF32 || p->grad.device() != device) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient reducer: ", p->name, "'s gradient is ", DTypeName(p->grad.dtype()), " on ",
          p->grad.device().ToString(), "; every gradient must be f32 on ", device.ToString()));
    }
    bytes.push_back(p->grad.nbytes());
  }
  std::unique_ptr<GradientReducer> reducer(
      new GradientReducer(communicator, std::move(parameters)));
  const std::vector<std::vector<int>> plan = PlanBuckets(bytes, bucket_bytes);
  reducer->buckets_.resize(plan.size());
  reducer->bucket_of_.resize(reducer->parameters_.size());
  for (size_t b = 0; b < plan.size(); ++b) {
    Bucket& bucket = reducer->buckets_[b];
    bucket.parameters = plan[b];
    int64_t elements = 0;
    for (int i : plan[b]) {
      reducer->bucket_of_[i] = static_cast<int>(b);
      elements += reducer->parameters_[i]->grad.num_elements();
    }
    TFM_ASSIGN_OR_RETURN(bucket.flat, Tensor::Empty({elements}, DType::kF32, device));
  }
  reducer->counts_.assign(reducer->parameters_.size(), 0);
  reducer->expected_.assign(reducer->parameters_.size(), 0);
  for (size_t i = 0; i < reducer->parameters_.size(); ++i) {
    GradientReducer* self = reducer.get();
    reducer->parameters_[i]->on_grad_accumulated = [self, i] {
      self->OnAccumulated(static_cast<int>(i));
    };
  }
  reducer->worker_ = std::thread([self = reducer.get()] { self->Work(); });
  return reducer;
}

GradientReducer::~GradientReducer() {
  for (Parameter* p : parameters_) p->on_grad_accumulated = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void GradientReducer::BeginBackward(int64_t update, bool last, std::vector<Tensor> earlier) {
  if (watching_ && !calibrated_) {  // The pass before this one was the first.
    expected_ = counts_;
    calibrated_ = true;
  }
  watching_ = true;
  last_pass_ = last;
  earlier_ = std::move(earlier);
  std::fill(counts_.begin(), counts_.end(), 0);
  for (Bucket& bucket : buckets_) bucket.pending = static_cast<int>(bucket.parameters.size());
  std::lock_guard<std::mutex> lock(mutex_);
  update_ = update;
}

void GradientReducer::OnAccumulated(int parameter) {
  const int count = ++counts_[parameter];
  if (!last_pass_ || !calibrated_) return;
  Bucket& bucket = buckets_[bucket_of_[parameter]];
  if (count == expected_[parameter]) {
    if (--bucket.pending == 0) Post(bucket_of_[parameter]);
  } else if (count > expected_[parameter] && bucket.posted && late_.empty()) {
    late_ = parameters_[parameter]->name;
  }
}

void GradientReducer::Post(int bucket) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buckets_[bucket].posted = true;
  }
  changed_.notify_all();
}

absl::Status GradientReducer::Finish() {
  if (watching_ && !calibrated_) {
    expected_ = counts_;
    calibrated_ = true;
  }
  watching_ = false;
  last_pass_ = false;
  absl::Status status;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (Bucket& bucket : buckets_) bucket.posted = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return next_ == num_buckets(); });
    next_ = 0;
    for (Bucket& bucket : buckets_) bucket.posted = false;
    status = error_;
    error_ = absl::OkStatus();
  }
  earlier_.clear();  // The worker is idle until the next pass.
  if (!late_.empty()) {
    const std::string name = late_;
    late_.clear();
    return absl::InternalError(absl::StrCat(
        "gradient reducer: ", name, "'s gradient was accumulated again after it was summed "
        "across ranks: the model's backward accumulated it more often than in the first pass"));
  }
  return status;
}

void GradientReducer::Work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || (next_ < num_buckets() && buckets_[next_].posted); });
    if (stop_) return;
    const int index = next_;
    // After a failure the remaining buckets are skipped (their collectives
    // would only wait out the timeout again).
    if (error_.ok()) {
      const int64_t update = update_;
      lock.unlock();
      absl::Status status = Reduce(buckets_[index], index, update);
      lock.lock();
      error_.Update(status);
    }
    ++next_;
    if (next_ == num_buckets()) changed_.notify_all();
  }
}

absl::Status GradientReducer::Reduce(Bucket& bucket, int index, int64_t update) {
  const Device device = bucket.flat.device();
  // This worker thread began on GPU 0; rank r's gradients are on GPU r, and
  // the add and the copies below must run there, behind its backward.
  if (device.is_cuda()) TFM_RETURN_IF_ERROR(cuda::SetCurrentDevice(device.index));
  char* flat = static_cast<char*>(bucket.flat.raw_data());
  size_t offset = 0;
  for (int i : bucket.parameters) {
    Tensor grad = parameters_[i]->grad;
    // The add op runs on the gradients' device; on a GPU it is queued on
    // the default stream behind the backward kernels that produced `grad`.
    if (!earlier_.empty()) {
      TFM_ASSIGN_OR_RETURN(grad, Add(earlier_[i], grad));
    }
    TFM_RETURN_IF_ERROR(CopyOnDevice(device, flat + offset, grad.raw_data(), grad.nbytes()));
    offset += grad.nbytes();
  }
  TFM_RETURN_IF_ERROR(communicator_->AllReduceSum(
      bucket.flat,
      absl::StrCat("all-reduce of gradient bucket ", index + 1, " of ", num_buckets(), " (update ",
                   update, ")")));
  offset = 0;
  for (int i : bucket.parameters) {
    Tensor& grad = parameters_[i]->grad;
    TFM_RETURN_IF_ERROR(CopyOnDevice(device, grad.raw_data(), flat + offset, grad.nbytes()));
    offset += grad.nbytes();
  }
  return absl::OkStatus();
}

}  // namespace tfm

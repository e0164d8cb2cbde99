// The NCCL path with one rank and no mpirun (LocalCommunicator bootstraps
// it): gradient-sized buffers summed by NCCL on the GPU equal the same
// buffers summed on the host, and the gradient reducer over GPU parameters
// leaves what the reducer over host parameters leaves.
#include "runtime/distributed/nccl_communicator.h"

#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/distributed/gradient_reducer.h"
#include "runtime/distributed/local_communicator.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

// Sizes of the base model's gradients: the shared table (37000 x 512), an
// FFN matrix, a projection, a bias; and one odd size.
const std::vector<int64_t> kSizes = {37000 * 512, 2048 * 512, 512 * 512, 2048, 4099};

Tensor Random(int64_t n, unsigned seed) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(0.f, 1e-3f);
  std::vector<float> values(n);
  for (float& v : values) v = normal(generator);
  return *Tensor::FromVector<float>(values, {n});
}

class NcclCommunicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TFM_SKIP_WITHOUT_GPU();
    auto created = NcclCommunicator::Create(&bootstrap_, 0, absl::Seconds(60));
    ASSERT_TRUE(created.ok()) << created.status();
    nccl_ = std::move(*created);
  }
  LocalCommunicator bootstrap_;
  std::unique_ptr<NcclCommunicator> nccl_;
};

TEST_F(NcclCommunicatorTest, SumsGradientSizedBuffersAsTheHostDoes) {
  EXPECT_EQ(nccl_->rank(), 0);
  EXPECT_EQ(nccl_->size(), 1);
  EXPECT_NE(nccl_->name().find("NCCL 2."), std::string::npos) << nccl_->name();
  for (size_t i = 0; i < kSizes.size(); ++i) {
    Tensor host = Random(kSizes[i], i);
    const std::vector<float> before = host.ToVector<float>();
    Tensor gpu = *CopyToDevice(host, Device::Cuda(0));
    ASSERT_TRUE(bootstrap_.AllReduceSum(host, "host").ok());
    ASSERT_TRUE(nccl_->AllReduceSum(gpu, absl::StrCat("buffer ", i)).ok());
    const Tensor back = *CopyToDevice(gpu, Device::Cpu());
    EXPECT_EQ(back.ToVector<float>(), host.ToVector<float>()) << kSizes[i];
    EXPECT_EQ(back.ToVector<float>(), before) << "one rank's sum is its own values";
  }
}

TEST_F(NcclCommunicatorTest, RejectsAHostTensor) {
  Tensor host = Random(16, 1);
  const absl::Status status = nccl_->AllReduceSum(host, "a host tensor");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("got a tensor on cpu"), std::string::npos) << status;
}

// Parameters whose gradients live on `device`, filled from the same seeds.
std::vector<Parameter> Parameters(const Device& device) {
  std::vector<Parameter> parameters(kSizes.size());
  for (size_t i = 0; i < kSizes.size(); ++i) {
    parameters[i].name = absl::StrCat("p", i);
    parameters[i].grad = *CopyToDevice(Random(kSizes[i], 100 + i), device);
    parameters[i].value = parameters[i].grad;
  }
  return parameters;
}

TEST_F(NcclCommunicatorTest, TheReducerOverTheGpuLeavesWhatItLeavesOnTheHost) {
  std::vector<Parameter> gpu = Parameters(Device::Cuda(0)), host = Parameters(Device::Cpu());
  std::vector<Parameter*> gpu_pointers, host_pointers;
  for (size_t i = 0; i < gpu.size(); ++i) {
    gpu_pointers.push_back(&gpu[i]);
    host_pointers.push_back(&host[i]);
  }
  auto on_gpu = GradientReducer::Create(nccl_.get(), gpu_pointers, /*bucket_bytes=*/2 << 20);
  auto on_host = GradientReducer::Create(&bootstrap_, host_pointers, /*bucket_bytes=*/2 << 20);
  ASSERT_TRUE(on_gpu.ok() && on_host.ok()) << on_gpu.status() << on_host.status();
  ASSERT_GT((*on_gpu)->num_buckets(), 1);
  // Two updates: the second reduces buckets as the hooks report them final.
  for (int update = 1; update <= 2; ++update) {
    for (auto* reducer : {on_gpu->get(), on_host->get()}) reducer->BeginBackward(update, true);
    for (int i = static_cast<int>(gpu.size()) - 1; i >= 0; --i) {
      gpu[i].on_grad_accumulated();
      host[i].on_grad_accumulated();
    }
    ASSERT_TRUE((*on_gpu)->Finish().ok());
    ASSERT_TRUE((*on_host)->Finish().ok());
  }
  for (size_t i = 0; i < gpu.size(); ++i) {
    EXPECT_EQ(CopyToDevice(gpu[i].grad, Device::Cpu())->ToVector<float>(),
              host[i].grad.ToVector<float>())
        << gpu[i].name;
  }
}

}  // namespace
}  // namespace tfm

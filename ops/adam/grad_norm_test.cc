#include "ops/adam/grad_norm.h"

#include <cmath>

#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

TEST(GradNormTest, ClippingMatchesTorch) {
  const Tensor a = *RandomNormal({40, 30}, {10, 0, 0}, 0.0f, 1.0f);
  const Tensor b = *RandomNormal({70000}, {10, 1, 0}, 0.0f, 0.1f);  // Several chunks.
  absl::StatusOr<testing::NamedTensors> ref = testing::TorchReference(R"py(
      ps = [torch.nn.Parameter(torch.zeros_like(t)) for t in (a, b)]
      for p, t in zip(ps, (a, b)):
          p.grad = t.detach().clone()
      norm = torch.nn.utils.clip_grad_norm_(ps, max_norm=5.0).double()
      ca, cb = ps[0].grad, ps[1].grad
  )py", {{"a", a}, {"b", b}}, {"norm", "ca", "cb"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<double> norm = ClipGradNorm({a, b}, 5.0);
  ASSERT_TRUE(norm.ok()) << norm.status();
  EXPECT_NEAR(*norm, ref->at("norm").data<float>()[0], 1e-5 * *norm);
  EXPECT_TRUE(testing::AllClose(a, ref->at("ca")));
  EXPECT_TRUE(testing::AllClose(b, ref->at("cb")));
  // Now within the limit: unchanged, and the norm is max_norm (up to 1e-6).
  const std::vector<float> before = a.ToVector<float>();
  EXPECT_NEAR(*ClipGradNorm({a, b}, 10.0), 5.0, 1e-4);
  EXPECT_EQ(a.ToVector<float>(), before);
}

TEST(GradNormTest, NonFiniteNormIsAnErrorWhenAsked) {
  const Tensor a = *Tensor::FromVector<float>({1.0f, NAN}, {2});
  EXPECT_TRUE(std::isnan(*GlobalGradNorm({a})));
  absl::Status status = ClipGradNorm({a}, 1.0, /*error_if_nonfinite=*/true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ClipGradNorm({a}, 0.0).ok());
  EXPECT_EQ(GlobalGradNorm({*Tensor::Zeros({2}, DType::kI32)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm

// Every built-in op, layer and task must be registered in a binary that links
// //ops:all_ops, //layers and //tasks:all_tasks: static libraries silently drop
// registrars that nothing references unless their targets are alwayslink.
#include <string>
#include <vector>

#include "core/layer_registry.h"
#include "core/op_registry.h"
#include "core/registration_journal.h"
#include "core/task_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using ::testing::IsSupersetOf;

// The built-in parts; extend these lists when adding one.
const std::vector<std::string> kBuiltinOps = {
    "adam",
    "add",
    "add_backward",
    "add_positional_encoding",
    "dropout",
    "dropout_backward",
    "dropout_backward_masked",
    "dropout_with_mask",
    "embedding",
    "embedding_backward",
    "fill",
    "kv_cache_gather",
    "kv_cache_write",
    "label_smoothed_cross_entropy",
    "label_smoothed_cross_entropy_backward",
    "layer_norm",
    "layer_norm_backward",
    "linear",
    "linear_backward",
    "linear_no_bias",
    "log_softmax",
    "masked_softmax",
    "merge_heads",
    "matmul",
    "matmul_backward",
    "positional_encoding",
    "random_normal",
    "random_uniform",
    "relu",
    "relu_backward",
    "scale_in_place",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward",
    "softmax",
    "softmax_backward",
    "split_heads",
    "sum_of_squares",
    "tied_projection",
    "tied_projection_backward",
};
const std::vector<std::string> kBuiltinLayers = {
    "decoder_layer",        "embedding", "encoder_layer", "feed_forward",
    "multi_head_attention", "residual",  "stack",
};
const std::vector<std::string> kBuiltinTasks = {"parsing", "translation"};

TEST(RegistrationTest, NoBuiltinRegistrationFailed) {
  EXPECT_TRUE(RegistrationJournal::Get().Check().ok())
      << RegistrationJournal::Get().Check();
}

TEST(RegistrationTest, EveryBuiltinOpHasACpuF32Kernel) {
  EXPECT_THAT(OpRegistry().Names(), IsSupersetOf(kBuiltinOps));
  for (const std::string& op : kBuiltinOps) {
    EXPECT_TRUE(KernelRegistry().Contains(KernelName(op, DeviceType::kCPU, DType::kF32))) << op;
  }
  // And every kernel belongs to a defined op.
  for (const std::string& kernel : KernelRegistry().Names()) {
    EXPECT_TRUE(OpRegistry().Contains(kernel.substr(0, kernel.find('/')))) << kernel;
  }
}

TEST(RegistrationTest, EveryBuiltinLayerAndTask) {
  EXPECT_EQ(LayerRegistry().Names(), kBuiltinLayers);
  EXPECT_EQ(TaskRegistry().Names(), kBuiltinTasks);
  for (const std::string& task : kBuiltinTasks) EXPECT_TRUE(CreateTask(task).ok()) << task;
}

}  // namespace
}  // namespace tfm

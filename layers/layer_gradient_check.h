// Numerical gradient checks of a whole layer: its inputs and every
// parameter against central differences of its Forward (tests only).
#ifndef TFM_LAYERS_LAYER_GRADIENT_CHECK_H_
#define TFM_LAYERS_LAYER_GRADIENT_CHECK_H_

#include <vector>

#include "core/layer_registry.h"
#include "core/tensor.h"
#include "gtest/gtest.h"
#include "tests/util/gradient_check.h"

namespace tfm {
namespace testing {

// Checks d(loss)/d(inputs) (the f32 ones) and d(loss)/d(parameter) for every
// parameter of `layer`. With `training`, every forward pass draws its
// dropout masks from the same generator state, so the masks are fixed and
// checked too. The layer's parameter values are restored afterwards.
::testing::AssertionResult CheckLayerGradients(Layer& layer, const std::vector<Tensor>& inputs,
                                               bool training, GradientCheckOptions options = {});

}  // namespace testing
}  // namespace tfm

#endif  // TFM_LAYERS_LAYER_GRADIENT_CHECK_H_

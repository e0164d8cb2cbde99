#include "tests/util/tiny_model.h"

namespace tfm {
namespace testing {

void SetTinyModelShape(config::ModelConfig& model, int layers, int heads) {
  constexpr int kDModel = 32;
  model.set_num_encoder_layers(layers);
  model.set_num_decoder_layers(layers);
  model.set_d_model(kDModel);
  model.set_d_ff(2 * kDModel);
  model.set_num_heads(heads);
  model.set_d_k(kDModel / heads);
  model.set_d_v(kDModel / heads);
}

}  // namespace testing
}  // namespace tfm

// The parameter count of a Transformer written out from the paper's
// architecture, independently of the layers' code: tests compare built
// models (layers/) and the presets (tasks/) against it.
#ifndef TFM_LAYERS_PARAMETER_COUNT_TESTING_H_
#define TFM_LAYERS_PARAMETER_COUNT_TESTING_H_

#include <cstdint>

#include "core/config/task_config.pb.h"

namespace tfm {

// Parameters of the model from its hyperparameters alone, written out from
// the paper's architecture (independently of the layers' code).
inline int64_t ExpectedParameterCount(const config::ModelConfig& m, int64_t vocab) {
  const int64_t d = m.d_model(), h = m.num_heads(), q = h * m.d_k(), v = h * m.d_v();
  const int64_t attention = (d * q + q) * 2 + (d * v + v) + (v * d + d);
  const int64_t feed_forward = (d * m.d_ff() + m.d_ff()) + (m.d_ff() * d + d);
  const int64_t norm = 2 * d;
  const int64_t encoder_layer = attention + feed_forward + 2 * norm;
  const int64_t decoder_layer = 2 * attention + feed_forward + 3 * norm;
  return vocab * d + m.num_encoder_layers() * encoder_layer +
         m.num_decoder_layers() * decoder_layer;
}

}  // namespace tfm

#endif  // TFM_LAYERS_PARAMETER_COUNT_TESTING_H_

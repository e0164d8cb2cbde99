#include "tests/util/tiny_model.h"

#include <algorithm>

namespace tfm {
namespace testing {

void SetTinyModelShape(config::ModelConfig& model, int layers, int heads, int d_model) {
  model.set_num_encoder_layers(layers);
  model.set_num_decoder_layers(layers);
  model.set_d_model(d_model);
  model.set_d_ff(2 * d_model);
  model.set_num_heads(heads);
  model.set_d_k(d_model / heads);
  model.set_d_v(d_model / heads);
}

Batch ToyBatch(int rows, int salt) {
  std::vector<int> source_lengths, target_lengths;
  for (int r = 0; r < rows; ++r) {
    source_lengths.push_back(4 + (r * 3 + salt) % 5);
    target_lengths.push_back(3 + (r * 2 + salt) % 5);
  }
  return ToyBatchOfLengths(source_lengths, target_lengths, salt);
}

Batch ToyBatchOfLengths(const std::vector<int>& source_lengths,
                        const std::vector<int>& target_lengths, int salt) {
  constexpr int kPad = 0, kEos = 2;
  const int rows = static_cast<int>(source_lengths.size());
  Batch batch;
  batch.size = rows;
  batch.source_lengths = source_lengths;
  batch.target_lengths = target_lengths;
  batch.source_length = *std::max_element(batch.source_lengths.begin(), batch.source_lengths.end());
  batch.target_length = *std::max_element(batch.target_lengths.begin(), batch.target_lengths.end());
  batch.source.assign(rows * batch.source_length, kPad);
  batch.target.assign(rows * batch.target_length, kPad);
  for (int r = 0; r < rows; ++r) {
    for (int t = 0; t < batch.source_lengths[r]; ++t) {
      const bool last = t + 1 == batch.source_lengths[r];
      batch.source[r * batch.source_length + t] = last ? kEos : 3 + (r * 7 + t * 5 + salt) % 37;
    }
    for (int t = 0; t < batch.target_lengths[r]; ++t) {
      const bool last = t + 1 == batch.target_lengths[r];
      batch.target[r * batch.target_length + t] = last ? kEos : 3 + (r * 11 + t * 3 + salt) % 37;
    }
  }
  return batch;
}

}  // namespace testing
}  // namespace tfm

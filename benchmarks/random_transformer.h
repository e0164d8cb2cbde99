// A Transformer-base-sized model with random weights, for decoding
// benchmarks that need no trained model: the paper's base architecture (6+6
// layers, d_model 512, d_ff 2048, 8 heads, post-norm, shared embeddings) over
// a vocabulary of `vocab_size` pieces, and sources of random ids. With
// end of sentence disabled (SearchOptions::ignore_eos) every side decodes
// the same number of steps, so random weights time the same work a trained
// model of that size does.
#ifndef TFM_BENCHMARKS_RANDOM_TRANSFORMER_H_
#define TFM_BENCHMARKS_RANDOM_TRANSFORMER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/device.h"
#include "layers/transformer.h"

namespace tfm {

struct RandomTransformer {
  config::ModelConfig config;
  VocabularySpec vocabulary;  // pad 0, unk 1, bos 2, eos 3 (as our tokenizer's).
  int unk_id = 1;
  std::unique_ptr<Transformer> model;
};

// The base model on `device`, initialised from `seed` as training would.
absl::StatusOr<RandomTransformer> CreateRandomBaseTransformer(int64_t vocab_size,
                                                              const Device& device,
                                                              uint64_t seed);

// Its weights as `dir`/model.safetensors (our checkpoint's names, which the
// peers read), `dir` created if missing.
absl::Status WriteWeights(Transformer& model, const std::string& dir);

// `count` sources of `length` ids each, eos last, the others drawn
// uniformly from the pieces that are not special (ids past eos).
std::vector<std::vector<int>> RandomSources(int count, int length, const VocabularySpec& vocabulary,
                                            uint32_t seed);

}  // namespace tfm

#endif  // TFM_BENCHMARKS_RANDOM_TRANSFORMER_H_

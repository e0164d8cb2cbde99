#include "benchmarks/random_transformer.h"

#include <filesystem>
#include <random>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "runtime/train/safetensors.h"

namespace tfm {

absl::StatusOr<RandomTransformer> CreateRandomBaseTransformer(int64_t vocab_size,
                                                              const Device& device,
                                                              uint64_t seed) {
  RandomTransformer result;
  // The proto's defaults are the paper's base model (6+6 layers, d_model
  // 512, d_ff 2048, 8 heads of 64, post-norm, shared embeddings,
  // sinusoidal positions); dropout plays no part in decoding.
  result.config.set_dropout(0);
  result.vocabulary.size = vocab_size;
  result.vocabulary.pad_id = 0;
  result.vocabulary.bos_id = 2;
  result.vocabulary.eos_id = 3;
  if (vocab_size <= result.vocabulary.eos_id + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("random base model: a vocabulary of ", vocab_size,
                     " pieces has no room past the special ids 0..3"));
  }
  TFM_ASSIGN_OR_RETURN(result.model,
                       Transformer::Create(result.config, result.vocabulary, device, seed));
  return result;
}

absl::Status WriteWeights(Transformer& model, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  NamedTensors tensors;
  for (Parameter* parameter : model.Parameters()) {
    tensors.emplace_back(parameter->name, parameter->value);
  }
  return WriteSafetensors(absl::StrCat(dir, "/model.safetensors"), tensors);
}

std::vector<std::vector<int>> RandomSources(int count, int length, const VocabularySpec& vocabulary,
                                            uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> piece(vocabulary.eos_id + 1,
                                           static_cast<int>(vocabulary.size) - 1);
  std::vector<std::vector<int>> sources(count);
  for (std::vector<int>& source : sources) {
    for (int i = 0; i + 1 < length; ++i) source.push_back(piece(generator));
    source.push_back(vocabulary.eos_id);
  }
  return sources;
}

}  // namespace tfm

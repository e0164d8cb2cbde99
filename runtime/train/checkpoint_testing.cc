#include "runtime/train/checkpoint_testing.h"

#include <cstdlib>
#include <filesystem>

#include "runtime/train/checkpoint.pb.h"

namespace tfm {
namespace testing {

std::string SentencePieceModelBytes(const std::vector<std::string>& pieces) {
  train::SentencePiecePieces model;
  float score = 0;
  for (const std::string& piece : pieces) {
    train::SentencePiecePieces::Piece* entry = model.add_pieces();
    entry->set_piece(piece);
    entry->set_score(score -= 1);
  }
  return model.SerializeAsString();
}

Checkpoint SampleCheckpoint(int64_t update, float seed) {
  auto make = [seed](int64_t rows, int64_t columns, float scale) {
    std::vector<float> values(rows * columns);
    for (size_t i = 0; i < values.size(); ++i) values[i] = seed * scale * (i + 1) - 0.5f * i;
    return Tensor::FromVector<float>(values, {rows, columns}).value();
  };
  Checkpoint checkpoint;
  checkpoint.model = {{"encoder.embedding.weight", make(5, 4, 0.25f)},
                      {"encoder.layers.0.ffn.bias", make(1, 3, -1.0f)}};
  checkpoint.optimizer = {{"encoder.embedding.weight.adam_m", make(5, 4, 0.01f)},
                          {"encoder.embedding.weight.adam_v", make(5, 4, 0.001f)}};
  train::TrainingState& state = checkpoint.state;
  state.set_update(update);
  state.set_epoch(3);
  state.mutable_data_position()->set_epoch(3);
  state.mutable_data_position()->set_pairs(120000);
  state.mutable_data_position()->set_batch(17);
  state.mutable_rng()->set_seed(1234);
  state.mutable_rng()->set_offset(uint64_t{1} << 40);
  state.set_elapsed_seconds(3600.25);
  (*state.mutable_metrics())["loss"] = 4.5;
  checkpoint.config.set_task("translation");
  checkpoint.config.mutable_model()->set_d_model(4);
  checkpoint.config.mutable_model()->set_num_heads(2);
  checkpoint.config.mutable_data()->mutable_tokenizer()->set_vocab_size(5);
  checkpoint.vocabulary = SentencePieceModelBytes({"<pad>", "<unk>", "▁the", "▁a", "s"});
  return checkpoint;
}

std::string FreshDirectory(const std::string& name) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

std::string TensorBytes(const Tensor& tensor) {
  return std::string(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
}

}  // namespace testing
}  // namespace tfm

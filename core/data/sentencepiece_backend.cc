// Built only into libtfm_sentencepiece.so (see sentencepiece_backend.h). No
// Abseil header may be included here.
#include "core/data/sentencepiece_backend.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <thread>
#include <unordered_map>

namespace tfm {
namespace spm {
namespace {

using sentencepiece::SentencePieceProcessor;

class CallbackIterator : public sentencepiece::SentenceIterator {
 public:
  explicit CallbackIterator(const SentenceSource& next) : next_(next) { Next(); }
  bool done() const override { return done_; }
  void Next() override { done_ = !next_(&value_); }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

 private:
  const SentenceSource& next_;
  std::string value_;
  bool done_ = false;
};

std::string Train(const TrainOptions& options, const SentenceSource& next, std::string* model) {
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", options.unigram ? "unigram" : "bpe"},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"character_coverage", std::to_string(options.character_coverage)},
      {"pad_id", std::to_string(options.pad_id)},
      {"unk_id", std::to_string(options.unk_id)},
      {"bos_id", std::to_string(options.bos_id)},
      {"eos_id", std::to_string(options.eos_id)},
      {"input_sentence_size", std::to_string(options.input_sentence_size)},
      // Sampling (when input_sentence_size is exceeded) draws from the seeded
      // generator; one thread fixes the order of the unigram EM's sums.
      {"shuffle_input_sentence", "true"},
      {"num_threads", "1"},
      // Above FATAL (3): SentencePiece writes nothing to std::cerr. Under
      // RTLD_DEEPBIND it would bind std::cerr to libstdc++'s own, never
      // constructed copy when the executable holds a copy-relocated one
      // (non-PIE builds such as -c opt) and crash; its errors reach us as
      // Status messages instead.
      {"minloglevel", "4"},
  };
  std::string error;
  // SentencePiece keeps its generator in a thread_local seeded on first use
  // from the global seed; a fresh thread gets a fresh generator, so every
  // training in a process starts from `seed`, not from where an earlier
  // training left the generator.
  std::thread worker([&] {
    sentencepiece::SetRandomGeneratorSeed(options.seed);
    CallbackIterator iterator(next);
    // With an output string the model stays in memory; the caller writes it
    // atomically.
    const sentencepiece::util::Status status =
        sentencepiece::SentencePieceTrainer::Train(args, &iterator, model);
    if (!status.ok()) error = status.ToString();
  });
  worker.join();
  return error;
}

const SentencePieceProcessor& Get(const void* processor) {
  return *static_cast<const SentencePieceProcessor*>(processor);
}

const Api kApi = {
    kApiVersion,
    &Train,
    /*new_processor=*/[]() -> void* { return new SentencePieceProcessor(); },
    /*delete_processor=*/
    [](void* processor) { delete static_cast<SentencePieceProcessor*>(processor); },
    /*load=*/
    [](void* processor, const std::string& model) -> std::string {
      const auto status =
          static_cast<SentencePieceProcessor*>(processor)->LoadFromSerializedProto(model);
      return status.ok() ? "" : status.ToString();
    },
    /*encode=*/
    [](const void* processor, const std::string& text, std::vector<int>* ids) {
      // Fails only without a loaded model, which the Tokenizer rules out.
      Get(processor).Encode(text, ids).IgnoreError();
    },
    /*decode=*/
    [](const void* processor, const std::vector<int>& ids, std::string* text) {
      Get(processor).Decode(ids, text).IgnoreError();
    },
    /*piece_size=*/[](const void* processor) { return Get(processor).GetPieceSize(); },
    /*id_to_piece=*/
    [](const void* processor, int id, std::string* piece) {
      *piece = Get(processor).IdToPiece(id);
    },
    /*special_ids=*/
    [](const void* processor) {
      const SentencePieceProcessor& p = Get(processor);
      return SpecialIds{p.pad_id(), p.unk_id(), p.bos_id(), p.eos_id()};
    },
};

}  // namespace
}  // namespace spm
}  // namespace tfm

extern "C" __attribute__((visibility("default"))) const tfm::spm::Api* TfmSentencePieceApi() {
  return &tfm::spm::kApi;
}

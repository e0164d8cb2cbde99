// The only contact with the SentencePiece library, as a table of functions
// in std types that a separately loaded shared library provides.
//
// Why a separate library: Debian's libsentencepiece embeds its own copy of
// protobuf-lite (3.14) and exports its symbols, which collide with the
// system libprotobuf (3.21) that the engine's configs use. Linked into one
// executable, whichever comes first in the dynamic linker's order wins and
// the other crashes (libprotobuf's initialisers before main, or
// SentencePiece's version check). So sentencepiece_backend.cc is built into
// libtfm_sentencepiece.so, which sentencepiece_loader.h opens with
// RTLD_DEEPBIND: SentencePiece then binds to its own protobuf copy and stays
// out of the executable's global symbol scope.
//
// Its headers also bring their own absl::string_view that clashes with
// Debian's Abseil, so this header, shared by both sides, uses std types
// only.
#ifndef TFM_CORE_DATA_SENTENCEPIECE_BACKEND_H_
#define TFM_CORE_DATA_SENTENCEPIECE_BACKEND_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tfm {
namespace spm {

struct TrainOptions {
  bool unigram = false;  // Else BPE.
  int vocab_size = 8000;
  float character_coverage = 1.0f;
  int pad_id = 0;
  int unk_id = 1;
  int bos_id = 2;
  int eos_id = 3;
  uint32_t seed = 1;
  int64_t input_sentence_size = 0;  // 0: all sentences.
};

// Yields the next training sentence into *sentence; false at the end.
using SentenceSource = std::function<bool(std::string* sentence)>;

struct SpecialIds {
  int pad, unk, bos, eos;
};

// Bumped whenever the table changes, so a stale library is refused.
inline constexpr int kApiVersion = 1;

// Functions returning std::string return "" on success, else an error
// message. A processor is an opaque handle made by new_processor.
struct Api {
  int version;
  // Trains on the sentences of `next`; the serialized model goes to *model.
  std::string (*train)(const TrainOptions& options, const SentenceSource& next,
                       std::string* model);
  void* (*new_processor)();
  void (*delete_processor)(void* processor);
  std::string (*load)(void* processor, const std::string& serialized_model);
  void (*encode)(const void* processor, const std::string& text, std::vector<int>* ids);
  // Ids must be inside the vocabulary.
  void (*decode)(const void* processor, const std::vector<int>& ids, std::string* text);
  int (*piece_size)(const void* processor);
  void (*id_to_piece)(const void* processor, int id, std::string* piece);
  SpecialIds (*special_ids)(const void* processor);
};

// The library's one exported symbol: extern "C" const Api* TfmSentencePieceApi().
inline constexpr char kApiSymbol[] = "TfmSentencePieceApi";
inline constexpr char kLibraryName[] = "libtfm_sentencepiece.so";

}  // namespace spm
}  // namespace tfm

#endif  // TFM_CORE_DATA_SENTENCEPIECE_BACKEND_H_

#include "core/data/bpe_dropout.h"

#include <algorithm>
#include <queue>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/data/sentencepiece_model.pb.h"
#include "core/philox.h"

namespace tfm {
namespace {

using spm_model::ModelProto;

// Keeps these draws apart from the batcher's (which key Philox with the
// shuffle seed itself).
constexpr uint64_t kKeyMix = 0x9E3779B97F4A7C15ull;

uint64_t MergeKey(int32_t left, int32_t right) {
  return uint64_t{static_cast<uint32_t>(left)} << 32 | static_cast<uint32_t>(right);
}

// The length of the UTF-8 character that `text` starts with, by its first
// byte as SentencePiece splits its input (at most what is left).
size_t CharacterLength(const std::string& text, size_t at) {
  static constexpr char kLengths[] = "\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4";
  const size_t length = kLengths[static_cast<unsigned char>(text[at]) >> 4];
  return std::min(length, text.size() - at);
}

// A merge waiting in SentencePiece's agenda: the adjacent symbols at `left`
// and `right` with these ids make `merged`.
struct Candidate {
  float score;
  int left, right;
  int32_t left_id, right_id, merged;
};

// The top is the highest score, the leftmost among equals (SentencePiece's
// SymbolPairComparator).
struct LowerPriority {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

struct Symbol {
  int32_t id;  // -1: merged into the symbol before it.
  int prev, next;
  bool frozen;
};

// Uniform draws from one Philox stream, four per block.
class Draws {
 public:
  Draws(uint64_t key, uint64_t stream) : key_(key), stream_(stream) {}
  float Next() {
    if (lane_ == 4) {
      block_ = philox::Block(key_, stream_, counter_++);
      lane_ = 0;
    }
    return philox::ToUniform(philox::Lane(block_, lane_++));
  }

 private:
  uint64_t key_, stream_, counter_ = 0;
  philox::Uint4 block_{};
  int lane_ = 4;
};

}  // namespace

absl::StatusOr<BpeDropout> BpeDropout::Create(const Tokenizer& tokenizer, float probability,
                                              uint64_t seed) {
  if (!(probability >= 0 && probability < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("BPE-dropout probability ", probability, " must be in [0, 1)"));
  }
  ModelProto model;
  if (!model.ParseFromString(tokenizer.model())) {
    return absl::InvalidArgumentError("BPE-dropout: the vocabulary is not a SentencePiece model");
  }
  if (model.trainer_spec().model_type() != ModelProto::TrainerSpec::BPE) {
    return absl::InvalidArgumentError(
        "BPE-dropout needs a BPE vocabulary (data.tokenizer.model_type: BPE); this one is "
        "another SentencePiece model type");
  }
  BpeDropout dropout;
  dropout.probability_ = probability;
  dropout.key_ = seed ^ kKeyMix;
  const int size = model.pieces_size();
  // The ids of the pieces that merges make or start from.
  absl::flat_hash_map<std::string, int32_t> normal;
  for (int id = 0; id < size; ++id) {
    const ModelProto::SentencePiece& piece = model.pieces(id);
    switch (piece.type()) {
      case ModelProto::SentencePiece::NORMAL:
        normal.emplace(piece.piece(), id);
        break;
      case ModelProto::SentencePiece::UNKNOWN:
      case ModelProto::SentencePiece::CONTROL:
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            "BPE-dropout: piece ", id, " '", piece.piece(),
            "' is user-defined, unused or a byte; only plain BPE vocabularies are supported"));
    }
  }
  dropout.offsets_.reserve(size + 1);
  dropout.scores_.reserve(size);
  for (int id = 0; id < size; ++id) {
    const ModelProto::SentencePiece& piece = model.pieces(id);
    dropout.offsets_.push_back(dropout.characters_.size());
    dropout.scores_.push_back(piece.score());
    if (piece.type() != ModelProto::SentencePiece::NORMAL) continue;
    const std::string& text = piece.piece();
    std::vector<size_t> boundaries;
    for (size_t at = 0, length; at < text.size(); at += length) {
      length = CharacterLength(text, at);
      boundaries.push_back(at);
      const std::string character = text.substr(at, length);
      const auto found = normal.find(character);
      if (found == normal.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "BPE-dropout: piece ", id, " '", text, "' holds '", character,
            "', which is not a piece itself: not a BPE vocabulary as SentencePiece trains one"));
      }
      dropout.characters_.push_back(found->second);
    }
    // Every way the piece splits into two pieces is a merge that makes it
    // (SentencePiece looks up the two symbols' joined text).
    for (size_t k = 1; k < boundaries.size(); ++k) {
      const auto left = normal.find(text.substr(0, boundaries[k]));
      const auto right = normal.find(text.substr(boundaries[k]));
      if (left != normal.end() && right != normal.end()) {
        dropout.merges_.emplace(MergeKey(left->second, right->second), id);
      }
    }
  }
  dropout.offsets_.push_back(dropout.characters_.size());
  return dropout;
}

std::vector<int> BpeDropout::Resample(absl::Span<const int> ids, uint64_t stream) const {
  std::vector<Symbol> symbols;
  symbols.reserve(ids.size() * 4);
  for (const int id : ids) {
    const bool known = id >= 0 && id + 1 < static_cast<int>(offsets_.size());
    const int32_t begin = known ? offsets_[id] : 0, end = known ? offsets_[id + 1] : 0;
    if (begin == end) {
      symbols.push_back({id, 0, 0, /*frozen=*/true});
      continue;
    }
    for (int32_t c = begin; c < end; ++c) symbols.push_back({characters_[c], 0, 0, false});
  }
  const int count = symbols.size();
  for (int i = 0; i < count; ++i) {
    symbols[i].prev = i - 1;
    symbols[i].next = i + 1 < count ? i + 1 : -1;
  }

  std::priority_queue<Candidate, std::vector<Candidate>, LowerPriority> agenda;
  auto consider = [&](int left, int right) {
    if (left < 0 || right < 0 || symbols[left].frozen || symbols[right].frozen) return;
    const auto found = merges_.find(MergeKey(symbols[left].id, symbols[right].id));
    if (found == merges_.end()) return;
    agenda.push(Candidate{scores_[found->second], left, right, symbols[left].id,
                          symbols[right].id, found->second});
  };
  for (int i = 1; i < count; ++i) consider(i - 1, i);

  Draws draws(key_, stream);
  while (!agenda.empty()) {
    const Candidate top = agenda.top();
    agenda.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    // Stale: one side has merged since (a symbol only grows by merging with
    // its next, and is emptied by merging into its previous).
    if (left.id != top.left_id || right.id != top.right_id || left.next != top.right) continue;
    // Skipped for good, as SentencePiece's SampleEncode skips it.
    if (probability_ > 0 && draws.Next() < probability_) continue;
    left.id = top.merged;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    right.id = -1;
    consider(left.prev, top.left);
    consider(top.left, left.next);
  }

  std::vector<int> out;
  out.reserve(ids.size() * 2);
  for (int i = count > 0 ? 0 : -1; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
  return out;
}

void BpeDropout::Apply(int64_t epoch, int64_t index, Example* example) const {
  const uint64_t stream =
      static_cast<uint64_t>(epoch) << 33 ^ static_cast<uint64_t>(index) << 1;
  example->source = Resample(example->source, stream);
  example->target = Resample(example->target, stream | 1);
}

}  // namespace tfm

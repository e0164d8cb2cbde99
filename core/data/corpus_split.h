// A deterministic train/valid/test split of one pool of pairs by a hash of
// the source text. Equal source sentences always land in the same split, so
// no test sentence is ever trained on, and the split is the same on every
// run and machine because the hash is computed from the bytes alone.
//
// Hash: 64-bit FNV-1a over the UTF-8 bytes of the source, then the
// SplitMix64 finaliser (FNV's low bits are poorly mixed). bucket = hash mod
// 1000: buckets 0..899 train (90%), 900..949 valid (5%), 950..999 test (5%).
#ifndef TFM_CORE_DATA_CORPUS_SPLIT_H_
#define TFM_CORE_DATA_CORPUS_SPLIT_H_

#include <cstdint>
#include <memory>

#include "absl/strings/string_view.h"
#include "core/config/task_config.pb.h"
#include "core/data/pair_reader.h"

namespace tfm {

inline constexpr int kSplitBuckets = 1000;
inline constexpr int kTrainBuckets = 900;
inline constexpr int kValidBuckets = 50;

uint64_t StableTextHash(absl::string_view text);

// TRAIN, VALID or TEST for `source` (never ALL).
config::CorpusConfig::Split SplitOfSource(absl::string_view source);

// Passes on only the pairs of `inner` whose source falls in `split`; ALL
// passes everything.
std::unique_ptr<PairReader> FilterSplit(std::unique_ptr<PairReader> inner,
                                        config::CorpusConfig::Split split);

}  // namespace tfm

#endif  // TFM_CORE_DATA_CORPUS_SPLIT_H_

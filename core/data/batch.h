// A training batch: source and target token ids padded into row-major
// matrices, and the padding statistics of a run of batches.
#ifndef TFM_CORE_DATA_BATCH_H_
#define TFM_CORE_DATA_BATCH_H_

#include <cstdint>
#include <vector>

namespace tfm {

// One tokenized pair; each side ends with eos (the decoder's input is bos
// followed by the target without its eos).
struct Example {
  std::vector<int> source;
  std::vector<int> target;
};

struct Batch {
  int size = 0;            // Rows.
  int source_length = 0;   // Columns of `source`: the longest source.
  int target_length = 0;
  std::vector<int> source;  // size x source_length, padded with pad_id.
  std::vector<int> target;  // size x target_length, padded with pad_id.
  std::vector<int> source_lengths;  // Unpadded length of each row.
  std::vector<int> target_lengths;

  int64_t source_tokens() const;  // Real (unpadded) tokens.
  int64_t target_tokens() const;
};

// Padded versus real positions over many batches.
struct BatchStats {
  int64_t batches = 0;
  int64_t examples = 0;
  int64_t source_tokens = 0;
  int64_t target_tokens = 0;
  int64_t padded_source_tokens = 0;  // Sum of size x source_length.
  int64_t padded_target_tokens = 0;

  void Add(const Batch& batch);
  // Fraction of padded positions among all positions, both sides together.
  double PaddingWaste() const;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_BATCH_H_

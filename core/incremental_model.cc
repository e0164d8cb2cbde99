#include "core/incremental_model.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/bit_rows.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"

namespace tfm {

SourceBatch PadSources(absl::Span<const std::vector<int>* const> sentences, int pad_id,
                       int extra_columns) {
  SourceBatch batch;
  batch.size = static_cast<int>(sentences.size());
  for (const std::vector<int>* sentence : sentences) {
    batch.length = std::max(batch.length, static_cast<int>(sentence->size()));
  }
  batch.length += extra_columns;
  batch.ids.assign(static_cast<size_t>(batch.size) * batch.length, pad_id);
  for (int s = 0; s < batch.size; ++s) {
    const std::vector<int>& sentence = *sentences[s];
    std::copy(sentence.begin(), sentence.end(), batch.ids.begin() + s * batch.length);
    batch.lengths.push_back(static_cast<int>(sentence.size()));
  }
  return batch;
}

bool IsIdentity(absl::Span<const int> indices, int64_t n) {
  if (static_cast<int64_t>(indices.size()) != n) return false;
  for (int64_t i = 0; i < n; ++i) {
    if (indices[i] != i) return false;
  }
  return true;
}

absl::Status CheckAllowedTokens(absl::Span<const uint32_t> allowed, int64_t rows,
                                int64_t vocabulary_size) {
  const int64_t words = BitRowWords(vocabulary_size);
  if (allowed.empty() || static_cast<int64_t>(allowed.size()) == rows * words) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("StepTopK: ", allowed.size(),
                                                 " words of allowed tokens for ", rows,
                                                 " rows of ", words));
}

absl::StatusOr<Tensor> BitRowsOnDevice(absl::Span<const uint32_t> bits, int64_t rows,
                                       const Device& device) {
  return Int32OnDevice(
      absl::MakeConstSpan(reinterpret_cast<const int32_t*>(bits.data()), bits.size()),
      {rows, static_cast<int64_t>(bits.size()) / rows}, device);
}

absl::StatusOr<StepTopTokens> StepTopTokensOf(const Tensor& values, const Tensor& columns) {
  TFM_ASSIGN_OR_RETURN(const std::vector<Tensor> on_host, CopyAllToHost({values, columns}));
  StepTopTokens top;
  top.count = static_cast<int>(values.dim(1));
  top.log_probs = on_host[0].ToVector<float>();
  top.tokens = on_host[1].ToVector<int32_t>();
  return top;
}

absl::StatusOr<Tensor> VocabularyLogProbs(const Tensor& log_probs,
                                          absl::Span<const int32_t> tokens,
                                          int64_t vocabulary_size) {
  TFM_ASSIGN_OR_RETURN(Tensor host, CopyToDevice(log_probs, Device::Cpu()));
  if (tokens.empty()) return host;
  const int64_t rows = host.dim(0), columns = host.dim(1);
  if (host.dtype() != DType::kF32 || columns != static_cast<int64_t>(tokens.size())) {
    return absl::InvalidArgumentError(absl::StrCat("log-probabilities ", ShapeToString(host.shape()),
                                                   " for ", tokens.size(), " tokens"));
  }
  for (const int32_t token : tokens) {
    if (token < 0 || token >= vocabulary_size) {
      return absl::InvalidArgumentError(absl::StrCat("token ", token,
                                                     " is outside the vocabulary of ",
                                                     vocabulary_size));
    }
  }
  TFM_ASSIGN_OR_RETURN(Tensor full,
                       Tensor::Empty({rows, vocabulary_size}, DType::kF32, Device::Cpu()));
  float* out = full.data<float>();
  const float* in = host.data<float>();
  std::fill(out, out + rows * vocabulary_size, -std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < columns; ++j) out[r * vocabulary_size + tokens[j]] = in[r * columns + j];
  }
  return full;
}

}  // namespace tfm

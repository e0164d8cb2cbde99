#include "layers/decoding_cache.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "ops/bf16_linear/bf16_linear.h"
#include "ops/fill/fill.h"
#include "ops/kv_cache/kv_cache.h"
#include "ops/linear/linear.h"
#include "ops/packed_linear/packed_linear.h"
#include "ops/quantized_linear/quantized_linear.h"
#include "ops/relu/relu.h"

namespace tfm {
namespace {

// Positions of a fresh cache: most outputs are short, and doubling keeps the
// copies of growth below one full cache in total.
constexpr int64_t kInitialCapacity = 16;

// Every tensor of the entries with `indexing` with rows `ids` (new row i =
// old row ids[i]) for their first `length` positions (kSentence entries:
// all), in `capacity` positions (kRow, kRowByTable). In place where the tensor has the
// rows and keeps its capacity (a search's reordering: only the rows that
// change move); gathered into a new tensor where it grows or a beam widens.
absl::Status GatherEntries(absl::node_hash_map<const void*, DecodingCache::Entry>& entries,
                           DecodingCache::Indexing indexing, const std::vector<int32_t>& ids,
                           int64_t length, int64_t capacity, const Device& device) {
  std::optional<Tensor> id_tensor;  // For the gathers, uploaded once.
  // For the in-place moves: planned and uploaded once per cache size (the
  // caches of every layer move alike).
  std::vector<UploadedKvReorder> reorders;
  const int64_t count = static_cast<int64_t>(ids.size());
  const bool per_position = indexing == DecodingCache::Indexing::kRow ||
                            indexing == DecodingCache::Indexing::kRowByTable;
  for (auto& [owner, entry] : entries) {
    if (entry.indexing != indexing) continue;
    for (Tensor& tensor : entry.tensors) {
      const int64_t keep = per_position ? length : tensor.dim(2);
      const int64_t room = per_position ? capacity : tensor.dim(2);
      if (count <= tensor.dim(0) && room == tensor.dim(2)) {
        auto reorder = std::find_if(reorders.begin(), reorders.end(), [&](const auto& r) {
          return r.cache_rows == tensor.dim(0);
        });
        if (reorder == reorders.end()) {
          TFM_ASSIGN_OR_RETURN(UploadedKvReorder uploaded,
                               UploadKvReorder(ids, tensor.dim(0), device));
          reorder = reorders.insert(reorders.end(), std::move(uploaded));
        }
        TFM_ASSIGN_OR_RETURN(tensor, KvCacheReorder(tensor, *reorder, keep));
        continue;
      }
      if (!id_tensor) {
        TFM_ASSIGN_OR_RETURN(id_tensor.emplace(), Int32OnDevice(ids, {count}, device));
      }
      TFM_ASSIGN_OR_RETURN(tensor, KvCacheGather(tensor, *id_tensor, keep, room));
    }
  }
  return absl::OkStatus();
}

}  // namespace

DecodingCache::DecodingCache(int64_t sentences, int64_t rows_per_sentence, int64_t max_steps,
                             const Device& device, std::shared_ptr<SharedEntries> shared,
                             DecodingPrecision precision)
    : sentences_(sentences),
      rows_per_sentence_(rows_per_sentence),
      max_steps_(max_steps),
      capacity_(std::min(max_steps, kInitialCapacity)),
      table_rows_(sentences * rows_per_sentence),
      device_(device),
      precision_(precision),
      shared_(shared != nullptr ? std::move(shared) : std::make_shared<SharedEntries>()) {}

DecodingCache::Entry* DecodingCache::Find(const void* owner) {
  auto it = entries_.find(owner);
  if (it != entries_.end()) return &it->second;
  it = shared_->find(owner);
  return it == shared_->end() ? nullptr : &it->second;
}

DecodingCache::Entry& DecodingCache::Store(const void* owner, Entry entry) {
  if (entry.indexing == Indexing::kShared) return (*shared_)[owner] = std::move(entry);
  return entries_[owner] = std::move(entry);
}

absl::Status DecodingCache::BeginStep() {
  if (position_ >= max_steps_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "decoding step ", position_ + 1, " exceeds the state's ", max_steps_, " steps"));
  }
  if (position_ == capacity_) {
    const int64_t capacity = std::min(max_steps_, 2 * capacity_);
    std::vector<int32_t> all(rows());
    for (int64_t r = 0; r < rows(); ++r) all[r] = static_cast<int32_t>(r);
    TFM_RETURN_IF_ERROR(ResolveTable(all, capacity));
    capacity_ = capacity;
    TFM_RETURN_IF_ERROR(
        GatherEntries(entries_, Indexing::kRow, all, position_, capacity_, device_));
  }
  if (!device_position_) {
    TFM_ASSIGN_OR_RETURN(key_lengths_,
                         Fill({rows()}, static_cast<double>(position_ + 1), DType::kI32, device_));
    return absl::OkStatus();
  }
  // Copied into the buffers the previous step read (a copy queued in stream
  // order: core/tensor_copy.h), not written by a kernel whose value a graph
  // would keep.
  const std::vector<int32_t> lengths(rows(), static_cast<int32_t>(position_ + 1));
  TFM_RETURN_IF_ERROR(Int32IntoBuffer(lengths, {rows()}, device_, key_lengths_));
  const int32_t position = static_cast<int32_t>(position_);
  return Int32IntoBuffer(absl::MakeConstSpan(&position, 1), {1}, device_, position_tensor_);
}

void DecodingCache::AppendToFingerprint(const Tensor& tensor, std::vector<int64_t>& print) {
  print.push_back(tensor.defined() ? reinterpret_cast<int64_t>(tensor.raw_data()) : 0);
  print.push_back(tensor.defined() ? tensor.rank() : -1);
  if (tensor.defined()) print.insert(print.end(), tensor.shape().begin(), tensor.shape().end());
}

std::vector<int64_t> DecodingCache::LayoutFingerprint() const {
  std::vector<int64_t> print = {sentences_, rows_per_sentence_, capacity_};
  const auto add = [&print](const Tensor& tensor) { AppendToFingerprint(tensor, print); };
  // The maps' orders are fixed while their keys are: sorted by owner, to be
  // sure.
  const absl::node_hash_map<const void*, Entry>* maps[] = {&entries_, shared_.get()};
  for (const auto* map : maps) {
    std::vector<std::pair<const void*, const Entry*>> sorted;
    for (const auto& [owner, entry] : *map) sorted.emplace_back(owner, &entry);
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [owner, entry] : sorted) {
      print.push_back(reinterpret_cast<int64_t>(owner));
      for (const Tensor& tensor : entry->tensors) add(tensor);
    }
  }
  add(key_lengths_);
  add(key_rows_);
  add(position_tensor_);
  return print;
}

absl::StatusOr<std::vector<int32_t>> DecodingCache::Reorder(absl::Span<const int> rows,
                                                            int64_t rows_per_sentence) {
  const int64_t group = rows_per_sentence;
  if (group < 1 || rows.empty() || static_cast<int64_t>(rows.size()) % group != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("reordering to ", rows.size(), " rows: need a positive multiple of ", group));
  }
  std::vector<int32_t> row_ids(rows.size()), sentence_ids(rows.size() / group);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= this->rows()) {
      return absl::InvalidArgumentError(
          absl::StrCat("row ", rows[i], " is not one of the state's ", this->rows(), " rows"));
    }
    const int32_t sentence = static_cast<int32_t>(rows[i] / rows_per_sentence_);
    if (i % group == 0) {
      sentence_ids[i / group] = sentence;
    } else if (sentence != sentence_ids[i / group]) {
      return absl::InvalidArgumentError(absl::StrCat("new rows ", i - i % group, " .. ",
                                                     i - i % group + group - 1, " mix sentences ",
                                                     sentence_ids[i / group], " and ", sentence));
    }
    row_ids[i] = static_cast<int32_t>(rows[i]);
  }
  if (!IsIdentity(rows, this->rows())) {
    TFM_RETURN_IF_ERROR(
        GatherEntries(entries_, Indexing::kRow, row_ids, position_, capacity_, device_));
    const int64_t count = static_cast<int64_t>(row_ids.size());
    if (count <= table_rows_) {
      // Nothing moves: new row i reads what old row row_ids[i] read, and
      // writes its own row from this position on.
      std::vector<int32_t> next(count * capacity_);
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t t = 0; t < capacity_; ++t) {
          next[i * capacity_ + t] = t < position_ ? KeyRow(row_ids[i], t) : static_cast<int32_t>(i);
        }
      }
      table_ = std::move(next);
      TFM_RETURN_IF_ERROR(SetKeyRows());
    } else {
      // More rows than the tensors have (a beam widening): rebuilt.
      TFM_RETURN_IF_ERROR(ResolveTable(row_ids, capacity_));
    }
  }
  if (!IsIdentity(sentence_ids, sentences_)) {
    TFM_RETURN_IF_ERROR(GatherEntries(entries_, Indexing::kSentence, sentence_ids, 0, 0, device_));
  }
  sentences_ = static_cast<int64_t>(sentence_ids.size());
  rows_per_sentence_ = group;
  return sentence_ids;
}

absl::Status DecodingCache::ResolveTable(const std::vector<int32_t>& rows, int64_t capacity) {
  const int64_t count = static_cast<int64_t>(rows.size());
  if (table_.empty()) {
    // Every row holds its own positions: a row gather,
    // in place where the rows and capacity allow.
    table_rows_ = count;
    return GatherEntries(entries_, Indexing::kRowByTable, rows, position_, capacity, device_);
  }
  std::vector<int32_t> sources(count * position_);
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t t = 0; t < position_; ++t) sources[i * position_ + t] = KeyRow(rows[i], t);
  }
  TFM_ASSIGN_OR_RETURN(const Tensor table, Int32OnDevice(sources, {count, position_}, device_));
  for (auto& [owner, entry] : entries_) {
    if (entry.indexing != Indexing::kRowByTable) continue;
    for (Tensor& tensor : entry.tensors) {
      TFM_ASSIGN_OR_RETURN(tensor, KvCacheGather(tensor, table, position_, capacity));
    }
  }
  table_.clear();
  table_rows_ = count;
  return SetKeyRows();
}

absl::Status DecodingCache::SetKeyRows() {
  if (table_.empty()) {
    key_rows_ = Tensor();
    return absl::OkStatus();
  }
  const int64_t rows = static_cast<int64_t>(table_.size()) / capacity_;
  if (device_position_) return Int32IntoBuffer(table_, {rows, capacity_}, device_, key_rows_);
  TFM_ASSIGN_OR_RETURN(key_rows_, Int32OnDevice(table_, {rows, capacity_}, device_));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> WeightFromSources(const DecodingCache::WeightSources* sources,
                                         const Tensor& value) {
  if (sources != nullptr) {
    const auto source = sources->find(&value);
    if (source != sources->end()) return source->second();
  }
  return value;
}

absl::StatusOr<Tensor> DecodingCache::WeightOf(const Tensor& value) const {
  return WeightFromSources(weight_sources_.get(), value);
}

namespace {

// The tensors of the weight laid out for decoding, kept under `owner`:
// made by `lay_out` (StatusOr<std::vector<Tensor>>()) the first time.
template <typename LayOut>
absl::StatusOr<const std::vector<Tensor>*> LaidOutWeight(DecodingCache& cache, const void* owner,
                                                         DecodingCache::Indexing keep,
                                                         LayOut lay_out) {
  const DecodingCache::Entry* entry = cache.Find(owner);
  if (entry == nullptr) {
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> tensors, lay_out());
    entry = &cache.Store(owner, {keep, std::move(tensors)});
  }
  return &entry->tensors;
}

}  // namespace

bool DecodingLinearLaysOut(const Tensor& like, DType x_dtype) {
  // The int8 and bf16 layouts take no weight the packed one does not.
  return x_dtype == DType::kF32 && PackedLinearSupported(like);
}

absl::StatusOr<Tensor> DecodingLinear(DecodingCache& cache, const void* owner, const Tensor& x,
                                      const MadeWeight& weight, const std::optional<Tensor>& bias,
                                      bool relu, DecodingCache::Indexing keep) {
  if (keep != DecodingCache::Indexing::kShared && keep != DecodingCache::Indexing::kBatch) {
    return absl::InvalidArgumentError("DecodingLinear keeps a weight as kShared or kBatch");
  }
  using Tensors = std::vector<Tensor>;
  const Tensor& like = weight.like;
  if (cache.precision() == DecodingPrecision::kInt8 && QuantizedLinearSupported(like) &&
      x.dtype() == DType::kF32) {
    TFM_ASSIGN_OR_RETURN(const Tensors* q,
                         LaidOutWeight(cache, owner, keep, [&]() -> absl::StatusOr<Tensors> {
                           TFM_ASSIGN_OR_RETURN(const Tensor made, weight.make());
                           TFM_ASSIGN_OR_RETURN(QuantizedWeight w, QuantizeLinearWeight(made));
                           return Tensors{w.packed, w.scales, w.row_sums};
                         }));
    return QuantizedLinear(x, QuantizedWeight{(*q)[0], (*q)[1], (*q)[2]}, bias, relu);
  }
  if (cache.precision() == DecodingPrecision::kBf16 && Bf16LinearSupported(like) &&
      x.dtype() == DType::kF32) {
    TFM_ASSIGN_OR_RETURN(const Tensors* pairs,
                         LaidOutWeight(cache, owner, keep, [&]() -> absl::StatusOr<Tensors> {
                           TFM_ASSIGN_OR_RETURN(const Tensor made, weight.make());
                           TFM_ASSIGN_OR_RETURN(Tensor packed, PackBf16LinearWeight(made));
                           return Tensors{packed};
                         }));
    return Bf16Linear(x, pairs->front(), weight.out_features, bias, relu);
  }
  if (!DecodingLinearLaysOut(like, x.dtype())) {
    TFM_ASSIGN_OR_RETURN(const Tensor made, weight.make());
    if (relu && bias.has_value()) return LinearRelu(x, made, *bias);
    TFM_ASSIGN_OR_RETURN(Tensor y, Linear(x, made, bias));
    if (!relu) return y;
    return Relu(y);
  }
  TFM_ASSIGN_OR_RETURN(const Tensors* panels,
                       LaidOutWeight(cache, owner, keep, [&]() -> absl::StatusOr<Tensors> {
                         TFM_ASSIGN_OR_RETURN(const Tensor made, weight.make());
                         TFM_ASSIGN_OR_RETURN(Tensor packed, PackLinearWeight(made));
                         return Tensors{packed};
                       }));
  return PackedLinear(x, panels->front(), weight.out_features, bias, relu);
}

absl::StatusOr<Tensor> DecodingLinear(DecodingCache& cache, const void* owner, const Tensor& x,
                                      const Tensor& weight, const std::optional<Tensor>& bias,
                                      bool relu, DecodingCache::Indexing keep) {
  if (!weight.defined() || weight.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("DecodingLinear: the weight must be [out, in], not ", weight.DebugString()));
  }
  // The weight itself, or made from its source (then `weight`'s elements
  // are unfilled: only its shape counts).
  const MadeWeight made{weight, weight.dim(0), [&cache, &weight]() -> absl::StatusOr<Tensor> {
                          return cache.WeightOf(weight);
                        }};
  return DecodingLinear(cache, owner, x, made, bias, relu, keep);
}

}  // namespace tfm

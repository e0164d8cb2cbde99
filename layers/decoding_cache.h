// What layers keep between the steps of incremental decoding: attention key
// and value caches. A layer finds its entry under its own address (a layer
// object is one place in the network), so the cache passes unchanged through
// the stack, the decoder layers and the residual blocks inside
// ForwardContext::cache, and a plugin's layer can keep its own entries.
//
// Rows and sentences: the decoder runs rows() hypotheses, rows_per_sentence()
// consecutive rows per source sentence (row r decodes sentence
// r / rows_per_sentence()). Per-row entries (self-attention keys and values)
// follow their rows when a search reorders them; per-sentence entries
// (encoder-decoder keys and values, computed once per sentence and layer)
// follow their sentences, so they are copied only when a sentence leaves.
// Shared entries (weights laid out for decoding) are made once per search:
// the caches of a search's batches share them (SharedEntries), since a
// model's weights do not change while it searches.
#ifndef TFM_LAYERS_DECODING_CACHE_H_
#define TFM_LAYERS_DECODING_CACHE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/incremental_model.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace tfm {

// The weights decoding steps multiply by (DecodingLinear): the model's f32
// ones, int8 with a scale per output row (--quantize=int8: quantized once
// per search from the f32 weights, ops/quantized_linear), or bf16 with the
// activations rounded to bf16 too and f32 sums (--dtype=bf16 on the CPU:
// packed once per search, ops/bf16_linear). The activations between the
// products stay f32 in all three.
enum class DecodingPrecision { kF32, kInt8, kBf16 };

class DecodingCache {
 public:
  enum class Indexing {
    // [rows, heads, capacity(), d]: positions 0 .. position() - 1 written
    // (the current step's at position() during the step).
    kRow,
    // [sentences, a, b, c]: whole, computed once.
    kSentence,
    // Anything shared by every row (e.g. weights rearranged for decoding):
    // never reordered.
    kShared,
    // Like kShared, but this batch's own (weights made for its sources, as
    // a shortlist's output projection): kept by this cache alone, never
    // shared with a search's other batches.
    kBatch,
    // Like kRow, but a reorder rewrites the cache's key_rows() table instead
    // of moving them (the layer must read them through it:
    // ops/attention/attention.h's key rows), and the tensors keep rows past
    // the live ones (rows() writes its first rows).
    kRowByTable,
  };
  struct Entry {
    Indexing indexing = Indexing::kRow;
    std::vector<Tensor> tensors;
  };
  // The kShared entries, which the caches of one search's batches may share.
  using SharedEntries = absl::node_hash_map<const void*, Entry>;
  // Weights a decoding model holds only as what they are made from (an
  // int8 model directory's rows: Transformer::SetWeightSources), by the
  // address of the Tensor object that holds the weight's unfilled value.
  using WeightSources =
      absl::flat_hash_map<const void*, std::function<absl::StatusOr<Tensor>()>>;

  // For a search of at most `max_steps` steps, with the kShared entries in
  // `shared` (null: the cache's own), its products in `precision`.
  DecodingCache(int64_t sentences, int64_t rows_per_sentence, int64_t max_steps,
                const Device& device, std::shared_ptr<SharedEntries> shared = nullptr,
                DecodingPrecision precision = DecodingPrecision::kF32);

  // Whether a search's whole-sequence products (the encoder's, the
  // cross-attention's keys and values) go through DecodingLinear too, their
  // weights laid out once per search: on the CPU, where BLAS re-packs a
  // weight at every call (a sentence's encoder pass is a few rows), and
  // with int8 or bf16 products anywhere. A GPU's f32 and 16-bit passes keep
  // Linear's (cuBLAS; one product for the packed q, k and v).
  bool LaysOutWholeSequenceProducts() const {
    return device_.is_cpu() || precision_ != DecodingPrecision::kF32;
  }

  int64_t sentences() const { return sentences_; }
  int64_t rows_per_sentence() const { return rows_per_sentence_; }
  int64_t rows() const { return sentences_ * rows_per_sentence_; }
  // Tokens each row has decoded: the position of the current step's token.
  int64_t position() const { return position_; }
  // Positions that per-row entries hold now (grown by doubling, up to
  // max_steps, so a short output never pays for the longest one allowed).
  int64_t capacity() const { return capacity_; }
  const Device& device() const { return device_; }
  DecodingPrecision precision() const { return precision_; }
  // The model's weight sources (none: every weight is its value).
  void set_weight_sources(std::shared_ptr<const WeightSources> sources) {
    weight_sources_ = std::move(sources);
  }
  // The values of the weight `value` (a parameter's value, by its object):
  // WeightFromSources with the model's sources.
  absl::StatusOr<Tensor> WeightOf(const Tensor& value) const;
  // The dtype of the attention keys and values it keeps (per-row and
  // per-sentence entries): unset, the step's own dtype; f16 for 16-bit
  // caches under f32 steps on the CPU (Transformer::SetKvCacheDType).
  std::optional<DType> kv_dtype() const { return kv_dtype_; }
  void set_kv_dtype(std::optional<DType> dtype) { kv_dtype_ = dtype; }
  // [rows] i32, position() + 1 during a step: the self-attention keys that
  // the step's query sees (the rest of the capacity is unwritten).
  const Tensor& key_lengths() const { return key_lengths_; }
  // [rows, capacity] i32 on the cache's device while kRowByTable entries are reordered
  // by table: position t of row r is in row key_rows[r, t] of those
  // entries' tensors. Undefined while every row holds its own positions.
  const Tensor& key_rows() const { return key_rows_; }

  // The entry `owner` stored, or nullptr.
  Entry* Find(const void* owner);
  // Entries stay where they are until the cache goes (pointers and
  // references to them remain valid across Store calls); kShared ones go to
  // the shared entries.
  Entry& Store(const void* owner, Entry entry);

  // Around each step of the model: BeginStep grows full per-row entries and
  // sets key_lengths(); EndStep counts the token.
  absl::Status BeginStep();
  void EndStep() { ++position_; }

  // Steps whose ops read the position from device memory (a CUDA graph
  // replays one captured step at every position): position_tensor() is then
  // [1] i32 on the device, holding position() during a step, and
  // key_lengths() and key_rows() keep their buffers from step to step while
  // their shapes do (their new values copied in), so that a step reads and
  // writes the same addresses as long as the cache's layout holds.
  void set_device_position(bool on) { device_position_ = on; }
  // Undefined unless device_position is on (then set by BeginStep).
  const Tensor& position_tensor() const { return position_tensor_; }
  // Every device address and shape a step reads or writes through this
  // cache (its entries', the shared ones', key_lengths, key_rows, the
  // position's), in a fixed order: equal fingerprints mean a step captured
  // at one may replay at the other.
  std::vector<int64_t> LayoutFingerprint() const;
  // One tensor's part of a fingerprint (its address, rank and shape; 0 and
  // -1 when undefined), for the tensors a step uses beside the cache's.
  static void AppendToFingerprint(const Tensor& tensor, std::vector<int64_t>& print);

  // Keeps rows `rows` in that order (new row i is old row rows[i]), which
  // come in groups of `rows_per_sentence` (the new rows_per_sentence(); a
  // beam widens from 1 after its first step), each group from one sentence.
  // Returns the kept sentences' old indices, in their new order.
  absl::StatusOr<std::vector<int32_t>> Reorder(absl::Span<const int> rows,
                                               int64_t rows_per_sentence);

 private:
  // The row of the kRowByTable tensors that holds position t of row `row`.
  int32_t KeyRow(int64_t row, int64_t t) const {
    return table_.empty() ? static_cast<int32_t>(row) : table_[row * capacity_ + t];
  }
  // The kRowByTable tensors rebuilt with new row i holding what row rows[i]
  // read at each written position, in `capacity` positions; the table goes
  // back to the identity (key_rows() undefined).
  absl::Status ResolveTable(const std::vector<int32_t>& rows, int64_t capacity);
  // key_rows_ from table_.
  absl::Status SetKeyRows();


  int64_t sentences_, rows_per_sentence_, max_steps_;
  int64_t position_ = 0, capacity_;
  // kRowByTable: [rows, capacity] on the host (empty: the identity), and the
  // rows of those entries' tensors (rows() or more).
  std::vector<int32_t> table_;
  int64_t table_rows_;
  Tensor key_rows_;
  bool device_position_ = false;
  std::optional<DType> kv_dtype_;
  Tensor position_tensor_;
  Device device_;
  DecodingPrecision precision_;
  Tensor key_lengths_;
  absl::node_hash_map<const void*, Entry> entries_;
  std::shared_ptr<SharedEntries> shared_;
  std::shared_ptr<const WeightSources> weight_sources_;
};

// `value` itself, or where `sources` (may be null) has a source for its
// object, the weight made from it (a new tensor; `value`'s own elements are
// not filled).
absl::StatusOr<Tensor> WeightFromSources(const DecodingCache::WeightSources* sources,
                                         const Tensor& value);

// x W^T + b in a decoding step (x [rows, ..., in], weight [out, in], bias
// [out] or none). On the CPU in f32, through the weight packed for
// packed_linear (ops/packed_linear) once per search, or with the cache's
// DecodingPrecision::kInt8 quantized and packed for quantized_linear
// (ops/quantized_linear), or with kBf16 rounded and packed for bf16_linear
// (ops/bf16_linear), once per search; kept as a shared entry under
// `owner`: the address of the long-lived Tensor object that holds the
// weight (a Parameter's value, a shared entry's tensor), which no layer
// uses as its own key. Elsewhere Linear. With `relu`, max(0, x W^T + b).
// `keep`: kShared (the search's batches share the laid-out weight), or
// kBatch for a weight of this batch alone (`owner` then lives as long as
// the cache).
absl::StatusOr<Tensor> DecodingLinear(
    DecodingCache& cache, const void* owner, const Tensor& x, const Tensor& weight,
    const std::optional<Tensor>& bias = std::nullopt, bool relu = false,
    DecodingCache::Indexing keep = DecodingCache::Indexing::kShared);

// Whether DecodingLinear lays a weight like `like` out for steps in
// `x_dtype` (packed, int8 or bf16 as the cache's precision asks): the CPU's
// f32 steps. Elsewhere it multiplies by the weight itself at every call.
bool DecodingLinearLaysOut(const Tensor& like, DType x_dtype);

// A DecodingLinear weight that is made only to be laid out: `like` (a
// tensor of its dtype, device and inputs, e.g. one of the tensors it
// stacks) and `out_features` choose the product; `make` builds the weight.
struct MadeWeight {
  const Tensor& like;
  int64_t out_features;
  std::function<absl::StatusOr<Tensor>()> make;
};
// DecodingLinear of such a weight. Where the product lays its weight out
// (the CPU's f32 steps: packed, int8 or bf16), `make` runs only when this
// search lays it out under `owner`, and nothing of the made weight stays
// (self-attention's q, k and v weights stacked into one kept a third copy
// of them beside the parameters and the layout). Elsewhere (a GPU, a weight
// no layout takes) `make` runs at every call: keep such a weight instead.
absl::StatusOr<Tensor> DecodingLinear(
    DecodingCache& cache, const void* owner, const Tensor& x, const MadeWeight& weight,
    const std::optional<Tensor>& bias = std::nullopt, bool relu = false,
    DecodingCache::Indexing keep = DecodingCache::Indexing::kShared);

}  // namespace tfm

#endif  // TFM_LAYERS_DECODING_CACHE_H_

// CPU f32 kernels of positional_encoding, add_positional_encoding and
// add_positional_encoding_at.
//
// The encodings depend only on (position, d_model), so, like fairseq's
// SinusoidalPositionalEmbedding, each d_model's rows are computed once (in
// double, as the header specifies) into a process-wide table that grows to
// the longest run of positions seen; the kernels then only copy or add.
// Positions beyond kMaxCachedElements (a far incremental-decoding offset)
// are computed on the fly with the same formula, so the values never depend
// on whether the table was used.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/simd_math.h"

TFM_ISA_BEGIN
namespace {

// 64 MiB of floats per d_model at most (d_model 512: 32768 positions).
constexpr int64_t kMaxCachedElements = int64_t{1} << 24;

// 1 / 10000^(2i / d) for each pair i, in double.
std::vector<double> Frequencies(int64_t d_model) {
  std::vector<double> frequencies((d_model + 1) / 2);
  for (size_t i = 0; i < frequencies.size(); ++i) {
    frequencies[i] = std::exp(-std::log(10000.0) * (2.0 * i) / static_cast<double>(d_model));
  }
  return frequencies;
}

// row[0 .. d_model) = PE(position).
void EncodeRow(int64_t position, const std::vector<double>& frequencies, int64_t d_model,
               float* row) {
  for (int64_t j = 0; j < d_model; ++j) {
    const double angle = static_cast<double>(position) * frequencies[j / 2];
    row[j] = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
  }
}

// PE rows for positions [0, rows) of one d_model, row-major.
struct Table {
  int64_t rows = 0;
  std::vector<float> values;
};

// Tables per d_model. A table is immutable once published: growing one
// builds a bigger table and swaps the pointer, so kernels still holding the
// old one read it safely.
class TableCache {
 public:
  // A table with at least `rows` rows, or nullptr if that is more than the
  // cache keeps.
  std::shared_ptr<const Table> Get(int64_t d_model, int64_t rows) {
    if (d_model <= 0 || rows > kMaxCachedElements / d_model) return nullptr;
    absl::MutexLock lock(&mu_);
    std::shared_ptr<const Table>& table = tables_[d_model];
    if (table == nullptr || table->rows < rows) {
      // Round up (at least 64 rows, then powers of two) so that decoding one
      // position further at a time rebuilds the table only log(n) times.
      int64_t grown = 64;
      while (grown < rows) grown *= 2;
      grown = std::min(grown, kMaxCachedElements / d_model);
      table = Build(d_model, std::max(grown, rows));
    }
    return table;
  }

  static TableCache& Instance() {
    static TableCache* const cache = new TableCache();
    return *cache;
  }

 private:
  static std::shared_ptr<const Table> Build(int64_t d_model, int64_t rows) {
    auto table = std::make_shared<Table>();
    table->rows = rows;
    table->values.resize(rows * d_model);
    const std::vector<double> frequencies = Frequencies(d_model);
    float* values = table->values.data();
    ThreadPool::Default()->ParallelFor(rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) EncodeRow(p, frequencies, d_model, values + p * d_model);
    });
    return table;
  }

  absl::Mutex mu_;
  absl::flat_hash_map<int64_t, std::shared_ptr<const Table>> tables_ ABSL_GUARDED_BY(mu_);
};

// out[r] = PE(offset + r % length) (+ in[r] when `in` is given) for `rows`
// rows of d_model.
void EncodeRows(int64_t rows, int64_t length, int64_t d_model, int64_t offset, const float* in,
                float* out) {
  if (rows == 0 || d_model == 0) return;
  // A far offset skips the cache before offset + length could overflow.
  const std::shared_ptr<const Table> table =
      offset > kMaxCachedElements
          ? nullptr
          : TableCache::Instance().Get(d_model, offset + std::min(rows, length));
  const std::vector<double> frequencies = table == nullptr ? Frequencies(d_model)
                                                           : std::vector<double>();
  // Whole rows per task: the table rows are contiguous, so each row is one
  // vectorised copy or add.
  const int64_t grain = std::max<int64_t>(1, 16384 / d_model);
  ThreadPool::Default()->ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(table == nullptr ? d_model : 0);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t position = offset + r % length;
      const float* pe;
      if (table != nullptr) {
        pe = table->values.data() + position * d_model;
      } else {
        EncodeRow(position, frequencies, d_model, scratch.data());
        pe = scratch.data();
      }
      float* __restrict y = out + r * d_model;
      if (in == nullptr) {
        std::memcpy(y, pe, d_model * sizeof(float));
      } else {
        simd::Add(in + r * d_model, pe, y, d_model);
      }
    }
  });
}

}  // namespace

absl::Status PositionalEncodingCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(int64_t d_model, context.attrs().Get<int64_t>("d_model"));
  TFM_ASSIGN_OR_RETURN(int64_t offset, context.attrs().GetOr<int64_t>("offset", 0));
  TFM_ASSIGN_OR_RETURN(Tensor * pe, context.AllocateOutput(0, DType::kF32));
  EncodeRows(length, length, d_model, offset, nullptr, pe->data<float>());
  return absl::OkStatus();
}

namespace {

// out = x + PE rows from `offset` (checked >= 0): both ops' kernel.
absl::Status AddFrom(KernelContext& context, int64_t offset) {
  const Tensor& x = context.input(0);
  const int64_t length = x.dim(-2), d_model = x.dim(-1);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  const int64_t rows = length == 0 || d_model == 0 ? 0 : x.num_elements() / d_model;
  EncodeRows(rows, length, d_model, offset, x.data<float>(), out->data<float>());
  return absl::OkStatus();
}

}  // namespace

absl::Status AddPositionalEncodingCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t offset, context.attrs().GetOr<int64_t>("offset", 0));
  return AddFrom(context, offset);
}

// The position validation could not see: its sign checked here.
absl::Status AddPositionalEncodingAtCpu(KernelContext& context) {
  const int64_t position = context.input(1).data<int32_t>()[0];
  if (position < 0) {
    return context.Error(absl::StrCat("position ", position, " is negative"));
  }
  return AddFrom(context, position);
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("positional_encoding", DType::kF32, PositionalEncodingCpu);
TFM_REGISTER_ISA_KERNEL("add_positional_encoding", DType::kF32, AddPositionalEncodingCpu);
TFM_REGISTER_ISA_KERNEL("add_positional_encoding_at", DType::kF32, AddPositionalEncodingAtCpu);

// Test helpers for attention's key rows (attention.h): a table that sends
// each position to another batch item, and the keys or values it reads,
// gathered on the host position by position, to compare against.
#ifndef TFM_OPS_ATTENTION_KEY_ROWS_TESTING_H_
#define TFM_OPS_ATTENTION_KEY_ROWS_TESTING_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace tfm {
namespace testing {

// [batch, k_len] rows spread over `key_batch` items, repeating some.
inline std::vector<int32_t> SpreadKeyRows(int64_t batch, int64_t k_len, int64_t key_batch) {
  std::vector<int32_t> table(batch * k_len);
  for (int64_t i = 0; i < batch * k_len; ++i) {
    table[i] = static_cast<int32_t>((i * 7 + 3) % key_batch);
  }
  return table;
}

// cache [key items, heads, k_len, d] host f32 read through `table`
// [batch, k_len]: [batch, heads, k_len, d].
inline Tensor GatherThroughKeyRows(const Tensor& cache, const std::vector<int32_t>& table,
                                   int64_t batch) {
  const int64_t heads = cache.dim(1), k_len = cache.dim(2), d = cache.dim(3);
  Tensor gathered = *Tensor::Zeros({batch, heads, k_len, d}, DType::kF32);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t j = 0; j < k_len; ++j) {
        const int64_t from = ((table[b * k_len + j] * heads + h) * k_len + j) * d;
        const int64_t to = ((b * heads + h) * k_len + j) * d;
        std::copy_n(cache.data<float>() + from, d, gathered.data<float>() + to);
      }
    }
  }
  return gathered;
}

// A key-rows problem: q [batch, heads, 1, d], k and v [key_batch, heads,
// k_len, d] drawn by normal(shape, stream) (streams 1, 2, 3), the table,
// and k and v gathered through it.
struct KeyRowsCase {
  Tensor q, k, v;
  std::vector<int32_t> table;
  Tensor k_gathered, v_gathered;
};

template <typename NormalFn>
KeyRowsCase MakeKeyRowsCase(int64_t batch, int64_t key_batch, int64_t heads, int64_t k_len,
                            int64_t d, NormalFn normal) {
  KeyRowsCase c;
  c.q = normal(Shape{batch, heads, 1, d}, 1);
  c.k = normal(Shape{key_batch, heads, k_len, d}, 2);
  c.v = normal(Shape{key_batch, heads, k_len, d}, 3);
  c.table = SpreadKeyRows(batch, k_len, key_batch);
  c.k_gathered = GatherThroughKeyRows(c.k, c.table, batch);
  c.v_gathered = GatherThroughKeyRows(c.v, c.table, batch);
  return c;
}

}  // namespace testing
}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_KEY_ROWS_TESTING_H_

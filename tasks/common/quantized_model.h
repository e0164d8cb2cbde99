// Quantized model directories: what the `quantize` command writes from a
// trained (or averaged) checkpoint, and what decoding loads.
//
// The directory is a checkpoint (runtime/train/checkpoint.h: config,
// vocabulary, state, task files, a MANIFEST with checksums) whose MANIFEST
// says quantization: "int8" and whose model.safetensors holds every matrix
// of the model (the linear layers' weights and the embedding table shared
// with the output projection, stored once) as I8 "<name>" [out, in] with
// F32 "<name>.scales" [out], one scale per row; everything else (biases,
// LayerNorm, learned positions) stays F32.
//
// Decoding dequantizes those rows into the model's f32 parameters (what
// the encoder and the embedding lookups compute with: each looked-up row is
// its scale times its int8 row) and multiplies by int8 in the decoder's
// products. --quantize=int8 on an f32 model goes through the very same
// functions at load (QuantizeWeightsInPlace), so both decode identically.
#ifndef TFM_TASKS_COMMON_QUANTIZED_MODEL_H_
#define TFM_TASKS_COMMON_QUANTIZED_MODEL_H_

#include <functional>
#include <map>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "layers/transformer.h"
#include "ops/quantized_linear/int8_weight_rows.h"
#include "runtime/train/safetensors.h"
#include "runtime/train/stored_tensors.h"

namespace tfm {

// The MANIFEST's quantization of an int8 model directory.
inline constexpr char kInt8Quantization[] = "int8";
// The suffix of a row-scales tensor's name.
inline constexpr char kScalesSuffix[] = ".scales";

// Whether the parameter `name` is stored as int8 rows: every f32 matrix
// but learned positional embeddings (added, not multiplied: no linear map).
bool IsInt8Parameter(const std::string& name, const Tensor& value);

// The tensors of an int8 model file for the f32 `parameters` (in their
// order; each quantized one followed by its scales).
absl::StatusOr<NamedTensors> Int8ModelTensors(const NamedTensors& parameters);

// The int8 matrices AssignInt8ModelTensors leaves as rows, by name.
using Int8RowsByName = std::map<std::string, Int8Rows>;

// Sets `parameters` (handles sharing a model's buffers) from `stored`, an
// int8 model file's tensors (read one at a time): int8 rows dequantized, the
// rest copied. With `rows_of`, each int8 matrix whose name `kept_as_rows`
// accepts is not dequantized: its rows go to (*rows_of)[name] and its
// parameter is left unfilled (for a weight source: Transformer::
// SetWeightSources). A missing tensor or scales, or a wrong dtype or shape,
// is an error naming the stored path and the tensor.
absl::Status AssignInt8ModelTensors(
    const StoredTensors& stored, NamedTensors* parameters,
    const std::function<bool(const std::string&)>& kept_as_rows = nullptr,
    Int8RowsByName* rows_of = nullptr);

// Whether one of `model_paths` (--model: comma-separated checkpoint or work
// directories) resolves to an int8 model directory (unreadable ones: no;
// loading says what is wrong with them).
bool NamesInt8Model(const std::string& model_paths);

// --quantize=int8 at load: `model`'s f32 weights replaced by their int8
// rows dequantized, exactly as loading the `quantize` command's output of
// them would set them.
absl::Status QuantizeWeightsInPlace(Transformer& model);

// The `quantize` command: the checkpoint `model_path` (a checkpoint
// directory or a work directory, chosen as decoding chooses) written as an
// int8 model directory `output` (built under a temporary name, then renamed
// into place). An existing non-empty `output` is refused unless it is an
// int8 model directory itself (re-quantizing replaces it). Writes the sizes
// on disk of the f32 and the int8 model files to `log`.
absl::Status QuantizeModelDirectory(const std::string& model_path, const std::string& output,
                                    std::ostream& log);

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_QUANTIZED_MODEL_H_

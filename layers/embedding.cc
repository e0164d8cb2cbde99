// embedding (section 3.4, 3.5): token embeddings times sqrt(d_model) plus
// positional encodings, then dropout (P_drop) on the sum.
//
// Inputs {table [vocab, d_model], ids [batch, len] i32}; outputs {x}; backward
// {dtable, -}. The table is an input, not a parameter, because the model
// shares one table between the source and target embeddings and the
// pre-softmax projection and adds up its three gradients. Positions are
// sinusoidal, or with positional_encoding LEARNED a parameter
// "embed_positions.weight" [max_positions, d_model] (Table 3, row E). In a
// decoding step (ForwardContext::cache) positions start at the cache's.
#include "ops/embedding/embedding.h"

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "layers/decoding_cache.h"
#include "core/layer_registry.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "layers/dropout_site.h"
#include "layers/parameter_gradients.h"
#include "layers/parameter_init.h"
#include "ops/add/add.h"
#include "ops/positional_encoding/positional_encoding.h"

namespace tfm {
namespace {

class EmbeddingLayer : public Layer {
 public:
  static absl::StatusOr<std::unique_ptr<Layer>> Create(const LayerArgs& args) {
    auto layer = std::make_unique<EmbeddingLayer>();
    const int64_t d = args.model.d_model();
    layer->scale_ = std::sqrt(static_cast<float>(d));
    layer->dropout_ = DropoutSite(args.model.dropout());
    layer->device_ = args.device;
    if (args.model.positional_encoding() == config::ModelConfig::LEARNED) {
      TFM_ASSIGN_OR_RETURN(
          layer->positions_.emplace(),
          MakeParameter(args, "embed_positions.weight", {args.model.max_positions(), d},
                        ParameterInit::kScaledNormal));
    }
    return std::unique_ptr<Layer>(std::move(layer));
  }

  absl::StatusOr<std::vector<Tensor>> Forward(ForwardContext& context,
                                              absl::Span<const Tensor> inputs) override {
    if (inputs.size() != 2 || inputs[1].rank() != 2) {
      return absl::InvalidArgumentError("embedding takes {table, ids [batch, len]}");
    }
    const Tensor& table = inputs[0];
    const Tensor& ids = inputs[1];
    TFM_ASSIGN_OR_RETURN(Tensor x, Embedding(table, ids, scale_, context.ids_checked));
    if (context.keeps()) {
      ids_ = ids;
      vocab_ = table.dim(0);
      ids_checked_ = context.ids_checked;
    }
    // A decoding step's tokens sit after those already decoded.
    const int64_t offset = context.cache != nullptr ? context.cache->position() : 0;
    // A step that reads its position from the device (a CUDA graph's:
    // layers/decoding_cache.h) takes it from there.
    const Tensor* device_position =
        context.cache != nullptr && context.cache->position_tensor().defined() && ids.dim(1) == 1
            ? &context.cache->position_tensor()
            : nullptr;
    if (positions_) {
      Tensor position_ids;
      if (device_position != nullptr) {
        // Checked here, on the host (nothing copied: a graph may be capturing).
        TFM_RETURN_IF_ERROR(CheckPositions(offset, 1));
        position_ids = *device_position;
      } else {
        TFM_ASSIGN_OR_RETURN(position_ids, PositionIds(offset, ids.dim(1)));
      }
      TFM_ASSIGN_OR_RETURN(const Tensor positions, ValueFor(*positions_, table.dtype()));
      // PositionIds built them within the table.
      TFM_ASSIGN_OR_RETURN(Tensor position_rows,
                           Embedding(positions, position_ids, 1.0f, /*ids_checked=*/true));
      TFM_ASSIGN_OR_RETURN(x, Add(x, position_rows));
      if (context.keeps()) {
        position_ids_ = std::move(position_ids);
        position_rows_ = std::move(position_rows);
      }
    } else if (device_position != nullptr) {
      TFM_ASSIGN_OR_RETURN(x, AddPositionalEncodingAt(x, *device_position));
    } else {
      TFM_ASSIGN_OR_RETURN(x, AddPositionalEncoding(x, offset));
    }
    TFM_ASSIGN_OR_RETURN(x, dropout_.Forward(context, x));
    return std::vector<Tensor>{x};
  }

  absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor> output_grads) override {
    TFM_ASSIGN_OR_RETURN(Tensor d_sum, dropout_.Backward(output_grads[0]));
    if (positions_) {
      TFM_ASSIGN_OR_RETURN(Tensor d_rows, SumToShape(d_sum, position_rows_));
      TFM_ASSIGN_OR_RETURN(Tensor d_positions,
                           EmbeddingBackward(position_ids_, d_rows, positions_->value.dim(0),
                                             1.0f, /*ids_checked=*/true));
      TFM_RETURN_IF_ERROR(AccumulateGrad(*positions_, d_positions));
    }
    TFM_ASSIGN_OR_RETURN(Tensor d_table,
                         EmbeddingBackward(ids_, d_sum, vocab_, scale_, ids_checked_));
    ids_ = position_ids_ = position_rows_ = Tensor();
    return std::vector<Tensor>{d_table, Tensor()};
  }

  std::vector<Parameter*> Parameters() override {
    if (!positions_) return {};
    return {&*positions_};
  }

 private:
  // Whether the learned table has rows offset .. offset + length - 1.
  absl::Status CheckPositions(int64_t offset, int64_t length) const {
    const int64_t rows = positions_->value.dim(0);
    if (offset + length <= rows) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "sequence of ", offset + length, " tokens is longer than model.max_positions = ", rows,
        " (learned positional embeddings have no row for it)"));
  }

  // offset .. offset + length - 1 on the model's device; too long a
  // sequence is the user's data or config (max_positions), so it is a
  // status, not a check.
  absl::StatusOr<Tensor> PositionIds(int64_t offset, int64_t length) const {
    TFM_RETURN_IF_ERROR(CheckPositions(offset, length));
    std::vector<int32_t> ids(length);
    for (int64_t i = 0; i < length; ++i) ids[i] = static_cast<int32_t>(offset + i);
    TFM_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector<int32_t>(ids, {length}));
    if (device_.is_cpu()) return host;
    return CopyToDevice(host, device_);
  }

  float scale_ = 1.0f;
  DropoutSite dropout_;
  Device device_;
  std::optional<Parameter> positions_;
  Tensor ids_, position_ids_;
  Tensor position_rows_;  // [len, d_model]: only its shape, for the broadcast add's backward.
  int64_t vocab_ = 0;
  bool ids_checked_ = false;  // ForwardContext::ids_checked of the pass.
};

TFM_REGISTER_LAYER(LayerDef{
    .name = "embedding",
    .doc = "sqrt(d_model) * table[ids] + positions (sinusoidal or learned), then dropout",
    .create = EmbeddingLayer::Create,
});

}  // namespace
}  // namespace tfm

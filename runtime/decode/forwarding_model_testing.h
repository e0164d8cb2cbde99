// Models that wrap another for tests: ForwardingModel passes every call a
// search makes on to the wrapped model, as a base for wrappers that change
// one thing; HostRanked hides the wrapped model's StepTopK, so that searches
// copy each step's whole distribution to the host and rank it there (and
// mask it there under a constraint), the path to compare device ranking
// with.
#ifndef TFM_RUNTIME_DECODE_FORWARDING_MODEL_TESTING_H_
#define TFM_RUNTIME_DECODE_FORWARDING_MODEL_TESTING_H_

#include <memory>

#include "core/incremental_model.h"

namespace tfm {
namespace testing {

class ForwardingModel : public IncrementalModel {
 public:
  explicit ForwardingModel(IncrementalModel& model) : model_(model) {}
  DecodingVocabulary vocabulary() const override { return model_.vocabulary(); }
  void BeginSearch() override { model_.BeginSearch(); }
  void EndSearch() override { model_.EndSearch(); }
  absl::StatusOr<std::unique_ptr<DecoderState>> Start(const SourceBatch& sources,
                                                      int rows_per_sentence,
                                                      int max_steps) override {
    return model_.Start(sources, rows_per_sentence, max_steps);
  }
  absl::StatusOr<Tensor> Step(DecoderState& state, absl::Span<const int> last) override {
    return model_.Step(state, last);
  }
  absl::Status Reorder(DecoderState& state, absl::Span<const int> rows,
                       int rows_per_sentence) override {
    return model_.Reorder(state, rows, rows_per_sentence);
  }

 protected:
  IncrementalModel& model_;
};

class HostRanked : public ForwardingModel {
 public:
  using ForwardingModel::ForwardingModel;
};

}  // namespace testing
}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_FORWARDING_MODEL_TESTING_H_

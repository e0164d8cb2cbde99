#include "runtime/train/checkpoint_match.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/data/crc32c.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "runtime/train/checkpoint.pb.h"
#include "google/protobuf/util/message_differencer.h"

namespace tfm {
namespace {

// Listing every difference of a large vocabulary or model helps nobody.
constexpr int kMaxListed = 10;

// The sections of `config` that must match, and nothing else.
config::TaskConfig MeaningOfWeights(const config::TaskConfig& config) {
  config::TaskConfig kept;
  if (config.has_model()) *kept.mutable_model() = config.model();
  if (config.data().has_tokenizer()) {
    *kept.mutable_data()->mutable_tokenizer() = config.data().tokenizer();
    kept.mutable_data()->mutable_tokenizer()->clear_model_path();
    // How training splits its pairs, not what the vocabulary is: a run may
    // resume or fine-tune with BPE-dropout turned on or off.
    kept.mutable_data()->mutable_tokenizer()->clear_bpe_dropout();
  }
  return kept;
}

std::string ShapeAndType(const Tensor& tensor) {
  return absl::StrCat(DTypeName(tensor.dtype()), ShapeToString(tensor.shape()));
}

}  // namespace

absl::Status CheckConfigMatches(const config::TaskConfig& checkpoint,
                                const std::string& checkpoint_path, const config::TaskConfig& run) {
  const config::TaskConfig stored = MeaningOfWeights(checkpoint);
  const config::TaskConfig wanted = MeaningOfWeights(run);
  google::protobuf::util::MessageDifferencer differencer;
  // An unset field equals its default: a preset that spells out a default
  // and one that leaves it implicit describe the same model.
  differencer.set_message_field_comparison(google::protobuf::util::MessageDifferencer::EQUIVALENT);
  std::string report;
  differencer.ReportDifferencesToString(&report);
  if (differencer.Compare(stored, wanted)) return absl::OkStatus();
  std::vector<std::string> lines = absl::StrSplit(absl::StripSuffix(report, "\n"), '\n');
  if (lines.size() > kMaxListed) {
    const size_t more = lines.size() - kMaxListed;
    lines.resize(kMaxListed);
    lines.push_back(absl::StrCat("and ", more, " more"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat(checkpoint_path, ": the checkpoint's config differs from the run's ",
                   "(checkpoint -> run): ", absl::StrJoin(lines, "; ")));
}

absl::Status CheckVocabularyMatches(absl::string_view checkpoint,
                                    const std::string& checkpoint_path, absl::string_view run,
                                    const std::string& run_path) {
  if (checkpoint == run) return absl::OkStatus();
  const std::string prefix =
      absl::StrCat(checkpoint_path, ": the checkpoint's vocabulary differs from ", run_path, ": ");
  train::SentencePiecePieces stored;
  train::SentencePiecePieces wanted;
  if (!stored.ParseFromArray(checkpoint.data(), checkpoint.size()) ||
      !wanted.ParseFromArray(run.data(), run.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        prefix, checkpoint.size(), " bytes (CRC-32C ", Crc32c(checkpoint), ") vs ", run.size(),
        " bytes (CRC-32C ", Crc32c(run), "), not both readable as SentencePiece models"));
  }
  if (stored.pieces_size() != wanted.pieces_size()) {
    return absl::FailedPreconditionError(absl::StrCat(prefix, stored.pieces_size(),
                                                      " pieces in the checkpoint, ",
                                                      wanted.pieces_size(), " in the run"));
  }
  for (int i = 0; i < stored.pieces_size(); ++i) {
    if (stored.pieces(i).piece() != wanted.pieces(i).piece()) {
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, "piece ", i, " is \"", stored.pieces(i).piece(),
                       "\" in the checkpoint, \"", wanted.pieces(i).piece(), "\" in the run"));
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat(prefix, "the same ", stored.pieces_size(),
                   " pieces, but scores or normalization settings differ"));
}

NamedTensors ParameterTensors(TrainableModel& model) {
  NamedTensors tensors;
  for (Parameter* parameter : model.Parameters()) {
    tensors.emplace_back(parameter->name, parameter->value);
  }
  return tensors;
}

absl::Status AssignTensors(const StoredTensors& source, NamedTensors* destination) {
  std::map<std::string, const TensorSpec*> by_name;
  for (const TensorSpec& spec : source.specs()) by_name[spec.name] = &spec;
  std::vector<std::string> missing;
  std::vector<std::string> mismatched;
  for (const auto& [name, tensor] : *destination) {
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      missing.push_back(name);
      continue;
    }
    const TensorSpec& stored = *it->second;
    if (stored.dtype != tensor.dtype() || stored.shape != tensor.shape()) {
      mismatched.push_back(absl::StrCat(name, " is ", DTypeName(stored.dtype),
                                        ShapeToString(stored.shape), " in the file, ",
                                        ShapeAndType(tensor), " in the model"));
    }
    by_name.erase(it);
  }
  std::vector<std::string> problems;
  auto list = [&problems](absl::string_view what, std::vector<std::string> names) {
    if (names.empty()) return;
    const size_t total = names.size();
    if (names.size() > kMaxListed) names.resize(kMaxListed);
    problems.push_back(absl::StrCat(total, " ", what, ": ", absl::StrJoin(names, ", "),
                                    total > names.size() ? ", ..." : ""));
  };
  std::vector<std::string> unexpected;
  for (const auto& entry : by_name) unexpected.push_back(entry.first);
  list("missing from the file", std::move(missing));
  list("in the file but not in the model", std::move(unexpected));
  list("with another shape or dtype", std::move(mismatched));
  if (!problems.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(source.path(), " does not fit the model: ", absl::StrJoin(problems, "; ")));
  }
  // Onto any device: a model on a GPU resumes from the file's host tensors.
  for (auto& [name, tensor] : *destination) TFM_RETURN_IF_ERROR(source.ReadInto(name, tensor));
  return absl::OkStatus();
}

absl::Status AssignTensors(const NamedTensors& source, const std::string& source_path,
                           NamedTensors* destination) {
  return AssignTensors(StoredTensors(source, source_path), destination);
}

}  // namespace tfm

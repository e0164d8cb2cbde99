#include "tasks/common/trained_model.h"

#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/train/checkpoint.h"
#include "core/train/checkpoint_directory.h"
#include "core/train/checkpoint_match.h"
#include "core/train/training_job.h"

namespace tfm {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool IsFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// The checkpoint directory `path` names, or the one to use in the work
// directory `path`.
absl::StatusOr<std::string> ChooseCheckpoint(const std::string& path, std::ostream* log) {
  if (!IsDirectory(path)) {
    return absl::NotFoundError(absl::StrCat(
        "--model=", path, ": no such directory (give a work directory of `train` or one of "
        "its checkpoint_* directories)"));
  }
  if (IsFile(absl::StrCat(path, "/", kManifestFile))) return path;
  for (const char* name : {"checkpoint_average", kBestCheckpoint}) {
    const std::string candidate = absl::StrCat(path, "/", name);
    if (IsFile(absl::StrCat(candidate, "/", kManifestFile))) {
      if (log) *log << "model: " << candidate << "\n";
      return candidate;
    }
  }
  absl::StatusOr<CheckpointEntry> latest = LatestCheckpoint(path);
  if (!latest.ok()) {
    return absl::NotFoundError(absl::StrCat(
        "--model=", path, ": not a checkpoint (no ", kManifestFile,
        ") and no checkpoint inside it; train one with `train --workdir=", path, "`"));
  }
  if (log) *log << "model: " << latest->path << " (the latest checkpoint)\n";
  return latest->path;
}

}  // namespace

VocabularySpec ModelVocabulary(const config::ModelConfig& model, const Tokenizer& tokenizer) {
  VocabularySpec vocabulary;
  vocabulary.size = tokenizer.vocab_size();
  vocabulary.pad_id = tokenizer.pad_id();
  vocabulary.bos_id = tokenizer.bos_id();
  vocabulary.eos_id = tokenizer.eos_id();
  if (model.decoder_leaf_alignment()) {
    std::vector<std::string> pieces(tokenizer.vocab_size());
    for (int id = 0; id < tokenizer.vocab_size(); ++id) pieces[id] = tokenizer.IdToPiece(id);
    vocabulary.leaf_alignment = LeafAlignmentTables::FromPieces(pieces);
    vocabulary.leaf_alignment.last_piece = model.decoder_leaf_alignment_last_piece();
  }
  return vocabulary;
}

absl::StatusOr<TrainedModel> LoadTrainedModel(const std::string& path, std::ostream* log) {
  TFM_ASSIGN_OR_RETURN(const std::string dir, ChooseCheckpoint(path, log));
  TFM_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpoint(dir, CheckpointParts::kDecoding));
  absl::StatusOr<Tokenizer> tokenizer = Tokenizer::FromModel(checkpoint.vocabulary);
  if (!tokenizer.ok()) {
    return absl::DataLossError(
        absl::StrCat(dir, "/", kVocabularyFile, ": ", tokenizer.status().message()));
  }
  TFM_ASSIGN_OR_RETURN(
      std::unique_ptr<Transformer> model,
      Transformer::Create(checkpoint.config.model(),
                          ModelVocabulary(checkpoint.config.model(), *tokenizer), Device::Cpu(),
                          /*init_seed=*/0));
  NamedTensors parameters;
  for (Parameter* parameter : model->Parameters()) {
    parameters.emplace_back(parameter->name, parameter->value);  // Shares the buffer.
  }
  TFM_RETURN_IF_ERROR(
      AssignTensors(checkpoint.model, absl::StrCat(dir, "/", kModelFile), &parameters));
  return TrainedModel{dir, std::move(checkpoint.config), *std::move(tokenizer), std::move(model)};
}

}  // namespace tfm

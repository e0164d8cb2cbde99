#include "tasks/common/trained_model.h"

#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/paths.h"
#include "core/status_macros.h"
#include "core/task_registry.h"
#include "ops/quantized_linear/quantized_linear.h"
#include "runtime/decode/shortlist_file.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_directory.h"
#include "runtime/train/checkpoint_match.h"
#include "runtime/train/training_job.h"
#include "tasks/common/quantized_model.h"

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

}  // namespace

absl::StatusOr<std::string> ChooseCheckpoint(const std::string& path, std::ostream* log) {
  if (!IsDirectory(path)) {
    return absl::NotFoundError(
        absl::StrCat("--model=", path, IsFile(path) ? ": a file, not a directory" : ": no such directory",
                     " (give a work directory of `train` or one of its checkpoint_* "
                     "directories)"));
  }
  if (IsFile(absl::StrCat(path, "/", kManifestFile))) return path;
  for (const char* name : {kAverageCheckpoint, kBestCheckpoint}) {
    const std::string candidate = JoinPath(path, name);
    if (IsFile(absl::StrCat(candidate, "/", kManifestFile))) {
      if (log) *log << "model: " << candidate << "\n";
      return candidate;
    }
  }
  absl::StatusOr<CheckpointEntry> latest = LatestCheckpoint(path);
  if (!latest.ok()) {
    return absl::NotFoundError(
        absl::StrCat("--model=", path, ": not a checkpoint (no ", kManifestFile,
                     ") and no checkpoint inside it; train one with `train --workdir=", path, "`"));
  }
  if (log) *log << "model: " << latest->path << " (the latest checkpoint)\n";
  return latest->path;
}

absl::StatusOr<VocabularySpec> ModelVocabulary(const config::TaskConfig& config,
                                               const Tokenizer& tokenizer) {
  VocabularySpec vocabulary;
  vocabulary.size = tokenizer.vocab_size();
  vocabulary.pad_id = tokenizer.pad_id();
  vocabulary.bos_id = tokenizer.bos_id();
  vocabulary.eos_id = tokenizer.eos_id();
  if (!config.model().decoder_input_hook().empty()) {
    DecoderInputHookArgs args{&config, {}};
    args.pieces.resize(tokenizer.vocab_size());
    for (int id = 0; id < tokenizer.vocab_size(); ++id) args.pieces[id] = tokenizer.IdToPiece(id);
    TFM_ASSIGN_OR_RETURN(vocabulary.decoder_input_hook,
                         CreateDecoderInputHook(config.model().decoder_input_hook(), args));
  }
  return vocabulary;
}

namespace {

// One checkpoint's config, vocabulary and weights.
struct LoadedMember {
  std::string dir;
  config::TaskConfig config;
  std::string vocabulary;  // The SentencePiece model's bytes.
  Tokenizer tokenizer;
  std::unique_ptr<Transformer> model;
  TaskFiles task_files;
  bool int8_weights = false;
};

absl::StatusOr<LoadedMember> LoadMember(const std::string& path, const Device& device,
                                        std::ostream* log, absl::string_view task) {
  TFM_ASSIGN_OR_RETURN(const std::string dir, ChooseCheckpoint(path, log));
  TFM_ASSIGN_OR_RETURN(Checkpoint checkpoint,
                       ReadCheckpoint(dir, CheckpointParts::kDescription));
  if (!task.empty() && checkpoint.config.task() != task) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model: ", dir, " holds a model of the '", checkpoint.config.task(),
        "' task (its ", kConfigFile, "); this command decodes '", task,
        "' models: run that task's binary on it"));
  }
  if (checkpoint.quantization == kInt8Quantization && !device.is_cpu()) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is an int8 model, which decodes on the CPU only; it cannot load on ",
                     device.ToString(), " (use --device=cpu or auto, or its f32 checkpoint)"));
  }
  absl::StatusOr<Tokenizer> tokenizer = Tokenizer::FromModel(checkpoint.vocabulary);
  if (!tokenizer.ok()) {
    return absl::DataLossError(
        absl::StrCat(dir, "/", kVocabularyFile, ": ", tokenizer.status().message()));
  }
  absl::StatusOr<VocabularySpec> vocabulary = ModelVocabulary(checkpoint.config, *tokenizer);
  if (!vocabulary.ok()) {
    return absl::Status(vocabulary.status().code(),
                        absl::StrCat(dir, ": ", vocabulary.status().message()));
  }
  TFM_ASSIGN_OR_RETURN(
      std::unique_ptr<Transformer> model,
      Transformer::CreateForLoading(checkpoint.config.model(), *vocabulary, device));
  NamedTensors parameters = ParameterTensors(*model);
  // Read into the parameters one tensor at a time: the model's memory, not
  // the file's copy beside it.
  TFM_ASSIGN_OR_RETURN(const StoredTensors stored,
                       StoredTensors::OpenFile(absl::StrCat(dir, "/", kModelFile)));
  const bool int8 = checkpoint.quantization == kInt8Quantization;
  if (int8) {
    // The matrices that only products read stay int8 rows, made into f32
    // only while a search lays them out: a quarter of their f32 memory. The
    // embedding tables, which lookups read, are dequantized.
    std::set<std::string> tables;
    for (const Parameter* table : model->LookupTables()) tables.insert(table->name);
    Int8RowsByName rows;
    TFM_RETURN_IF_ERROR(AssignInt8ModelTensors(
        stored, &parameters, [&tables](const std::string& name) { return !tables.count(name); },
        &rows));
    auto sources = std::make_shared<DecodingCache::WeightSources>();
    for (Parameter* parameter : model->Parameters()) {
      const auto kept = rows.find(parameter->name);
      if (kept == rows.end()) continue;
      (*sources)[&parameter->value] = [kept_rows = kept->second]() {
        return DequantizeInt8Rows(kept_rows);
      };
    }
    model->SetWeightSources(std::move(sources));
    if (log) *log << "model: " << dir << " has int8 weights (a scale per row)\n";
  } else if (!checkpoint.quantization.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(dir, "/", kManifestFile, ": quantization '",
                                                      checkpoint.quantization,
                                                      "' is not one this build reads (int8)"));
  } else {
    TFM_RETURN_IF_ERROR(AssignTensors(stored, &parameters));
  }
  return LoadedMember{dir,
                      std::move(checkpoint.config),
                      std::move(checkpoint.vocabulary),
                      *std::move(tokenizer),
                      std::move(model),
                      std::move(checkpoint.task_files),
                      int8};
}

// Why `member` cannot decode beside `first` in one ensemble, or OK.
absl::Status CheckSameOutputs(const LoadedMember& first, const LoadedMember& member) {
  const auto mismatch = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model: ", member.dir, " cannot decode in an ensemble with ", first.dir, ": ", what));
  };
  if (member.config.task() != first.config.task()) {
    return mismatch(
        absl::StrCat("task '", member.config.task(), "' against '", first.config.task(), "'"));
  }
  // What only the task knows (parsing: trees with other leaves).
  absl::StatusOr<std::shared_ptr<const TaskDef>> task = TaskRegistry().Find(first.config.task());
  if (task.ok() && (*task)->ensemble_mismatch) {
    const std::string why = (*task)->ensemble_mismatch(first.config, member.config);
    if (!why.empty()) return mismatch(why);
  }
  if (member.vocabulary != first.vocabulary) {
    return mismatch(absl::StrCat("another SentencePiece model (", kVocabularyFile,
                                 " differs): the same ids would mean other pieces"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TrainedModel> LoadTrainedModel(const std::string& path, const Device& device,
                                              std::ostream* log, absl::string_view task) {
  std::vector<std::string> paths = absl::StrSplit(path, ',', absl::SkipWhitespace());
  if (paths.empty()) paths.push_back(path);  // Let ChooseCheckpoint name the empty path.
  std::vector<LoadedMember> members;
  for (const std::string& member_path : paths) {
    TFM_ASSIGN_OR_RETURN(LoadedMember member, LoadMember(member_path, device, log, task));
    if (!members.empty()) TFM_RETURN_IF_ERROR(CheckSameOutputs(members.front(), member));
    members.push_back(std::move(member));
  }
  LoadedMember& first = members.front();
  TrainedModel trained{first.dir, std::move(first.config), std::move(first.tokenizer),
                       std::move(first.model), std::move(first.task_files)};
  for (const LoadedMember& member : members) trained.int8_weights.push_back(member.int8_weights);
  if (trained.int8_weights.front()) trained.model->set_decoding_precision(DecodingPrecision::kInt8);
  for (size_t i = 1; i < members.size(); ++i) {
    if (members[i].int8_weights) members[i].model->set_decoding_precision(DecodingPrecision::kInt8);
    trained.other_checkpoint_dirs.push_back(members[i].dir);
    trained.other_members.push_back(std::move(members[i].model));
  }
  if (log && paths.size() > 1) *log << "model: an ensemble of " << paths.size() << " models\n";
  return trained;
}

absl::Status SetDecodingPrecision(const std::vector<Transformer*>& members,
                                  config::DecodeConfig::Quantization quantize, std::ostream* log) {
  const DecodingPrecision precision = quantize == config::DecodeConfig::INT8
                                          ? DecodingPrecision::kInt8
                                          : DecodingPrecision::kF32;
  for (Transformer* member : members) {
    const Device weights = member->Parameters().front()->value.device();
    if (precision == DecodingPrecision::kInt8 && !weights.is_cpu()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--quantize=int8 decodes on the CPU only; the model's weights are on ",
                       weights.ToString(), " (leave --quantize out there)"));
    }
  }
  if (log != nullptr && !members.empty() && precision != members.front()->decoding_precision()) {
    *log << (precision == DecodingPrecision::kInt8
                 ? absl::StrCat("decoding with int8 weights (a scale per row; kernel ",
                                Int8KernelName(ActiveInt8Kernel()), ")")
                 : std::string("decoding with f32 weights"))
         << "\n";
  }
  for (Transformer* member : members) member->set_decoding_precision(precision);
  return absl::OkStatus();
}

absl::Status TrainedModel::SetDecodingPrecision(config::DecodeConfig::Quantization quantize,
                                                std::ostream* log) {
  std::vector<Transformer*> members = {model.get()};
  for (std::unique_ptr<Transformer>& member : other_members) members.push_back(member.get());
  int8_weights.resize(members.size(), false);
  // Says what is asked of the members (and why int8 cannot run on a GPU)
  // before any weights change.
  // Members with int8 weights decode in int8 whatever is asked: when all
  // have them, say so rather than "f32".
  const bool all_int8 = std::all_of(int8_weights.begin(), int8_weights.end(),
                                    [](bool int8) { return int8; });
  TFM_RETURN_IF_ERROR(tfm::SetDecodingPrecision(
      members, all_int8 ? config::DecodeConfig::INT8 : quantize, log));
  for (size_t i = 0; i < members.size(); ++i) {
    if (quantize == config::DecodeConfig::INT8 && !int8_weights[i]) {
      TFM_RETURN_IF_ERROR(QuantizeWeightsInPlace(*members[i]));
      int8_weights[i] = true;
    }
    if (int8_weights[i]) members[i]->set_decoding_precision(DecodingPrecision::kInt8);
  }
  return absl::OkStatus();
}

absl::Status TrainedModel::SetDecodingDType(const std::string& dtype, bool f32_residual) {
  TFM_ASSIGN_OR_RETURN(const DType parsed, ParseDType(dtype));
  TFM_RETURN_IF_ERROR(model->SetDecodingDType(parsed, f32_residual));
  for (std::unique_ptr<Transformer>& member : other_members) {
    TFM_RETURN_IF_ERROR(member->SetDecodingDType(parsed, f32_residual));
  }
  return absl::OkStatus();
}

absl::Status TrainedModel::SetKvCacheDType(const std::string& dtype, std::ostream* log) {
  std::optional<DType> parsed;
  if (dtype != "auto") {
    TFM_ASSIGN_OR_RETURN(parsed, ParseDType(dtype));
  }
  TFM_RETURN_IF_ERROR(model->SetKvCacheDType(parsed));
  for (std::unique_ptr<Transformer>& member : other_members) {
    TFM_RETURN_IF_ERROR(member->SetKvCacheDType(parsed));
  }
  const std::optional<DType> resolved = model->KvCacheDType();
  if (log != nullptr && resolved.has_value() && *resolved != model->decoding_dtype()) {
    *log << "key/value caches in " << DTypeName(*resolved) << " (decode.kv_cache_dtype " << dtype
         << ")\n";
  }
  return absl::OkStatus();
}

void TrainedModel::SetCudaGraphs(bool on) {
  model->SetCudaGraphs(on);
  for (std::unique_ptr<Transformer>& member : other_members) member->SetCudaGraphs(on);
}

absl::Status TrainedModel::SetShortlist(const config::DecodeConfig& decode, std::ostream* log) {
  const std::string source =
      decode.shortlist().empty()
          ? std::string()
          : absl::StrCat(decode.shortlist(), " ", decode.shortlist_frequent(), " ",
                         decode.shortlist_best());
  if (source != shortlist_source) {
    std::shared_ptr<const VocabularyShortlist> loaded;
    if (!source.empty()) {
      TFM_ASSIGN_OR_RETURN(VocabularyShortlist read,
                           LoadShortlist(decode.shortlist(), tokenizer, decode.shortlist_frequent(),
                                         decode.shortlist_best()));
      loaded = std::make_shared<const VocabularyShortlist>(std::move(read));
    }
    if (log != nullptr) {
      *log << (loaded ? absl::StrCat("decoding with the shortlist ", decode.shortlist(), " (",
                                     decode.shortlist_frequent(), " frequent targets, ",
                                     decode.shortlist_best(), " per source token)")
                      : std::string("decoding over the whole vocabulary"))
           << "\n";
    }
    shortlist = std::move(loaded);
    shortlist_source = source;
  }
  TFM_RETURN_IF_ERROR(model->SetShortlist(shortlist));
  for (std::unique_ptr<Transformer>& member : other_members) {
    TFM_RETURN_IF_ERROR(member->SetShortlist(shortlist));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EnsembleModel>> TrainedModel::Decoder(
    config::DecodeConfig::EnsembleCombination combination) {
  std::vector<IncrementalModel*> members = {model.get()};
  for (const std::unique_ptr<Transformer>& member : other_members) members.push_back(member.get());
  return EnsembleModel::Create(std::move(members),
                               combination == config::DecodeConfig::LOG_PROBABILITY_MEAN
                                   ? EnsembleCombination::kLogProbabilityMean
                                   : EnsembleCombination::kProbabilityMean);
}

}  // namespace tfm

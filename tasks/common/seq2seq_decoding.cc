#include "tasks/common/seq2seq_decoding.h"

#include <sys/stat.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/config/config_loader.h"
#include "core/data/file_io.h"
#include "core/data/line_reader.h"
#include "core/data/sentence_checks.h"
#include "core/op_profile.h"
#include "core/metrics/text_lines.h"
#include "core/status_macros.h"
#include "runtime/train/training_data.h"
#include "tasks/common/decoding_device.h"

namespace tfm {
namespace {

// Lines longer than this many bytes are bad input, not something to decode.
constexpr int64_t kMaxLineBytes = int64_t{1} << 20;

// Refuses an output path that names an input file: the output is renamed
// over its path at the end, so the run would succeed and leave only its
// output where the input was. A different spelling of the same file (./x, a
// symbolic link, whose target the output is written to) is caught by device
// and inode; only
// regular files count, so /dev/stdin and /dev/stdout on one terminal are not
// the same file.
absl::Status CheckOutputIsNotInput(const std::string& input_flag, const std::string& input,
                                   const std::string& output) {
  if (input.empty() || output.empty()) return absl::OkStatus();  // stdin, stdout.
  struct stat input_info, output_info;
  const bool both_exist =
      stat(input.c_str(), &input_info) == 0 && stat(output.c_str(), &output_info) == 0;
  // A device named twice (--input=/dev/null --output=/dev/null) is fine.
  const bool same = both_exist ? S_ISREG(input_info.st_mode) &&
                                     input_info.st_dev == output_info.st_dev &&
                                     input_info.st_ino == output_info.st_ino
                               : input == output;
  if (!same) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      input_flag, "=", input, " and --output=", output,
      " are the same file: writing the output would overwrite the input; give --output "
      "another path"));
}

// `lines`, each ending with '\n', as a file or stream gets them.
std::string OutputText(const std::vector<std::string>& lines) {
  std::string text = absl::StrJoin(lines, "\n");
  if (!lines.empty()) text += "\n";
  return text;
}

}  // namespace

absl::StatusOr<InputLineSource> InputLineSource::Open(const std::string& path) {
  InputLineSource source;
  if (!path.empty()) {
    TFM_ASSIGN_OR_RETURN(source.reader_, LineReader::Open(path, kMaxLineBytes));
  }
  return source;
}

InputLineSource::InputLineSource(InputLineSource&&) noexcept = default;
InputLineSource& InputLineSource::operator=(InputLineSource&&) noexcept = default;
InputLineSource::~InputLineSource() = default;

absl::StatusOr<InputLines> InputLineSource::Next(int64_t max_lines) {
  InputLines input;
  std::string line;
  while (static_cast<int64_t>(input.lines.size()) < max_lines) {
    bool too_long = false;
    if (reader_ == nullptr) {
      if (!std::getline(std::cin, line)) break;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      too_long = static_cast<int64_t>(line.size()) > kMaxLineBytes;
    } else {
      TFM_ASSIGN_OR_RETURN(const bool more, reader_->Next(&line, &too_long));
      if (!more) break;
    }
    input.lines.push_back(std::move(line));
    input.too_long.push_back(too_long);
  }
  return input;
}

absl::StatusOr<InputLines> ReadInputLines(const std::string& path) {
  TFM_ASSIGN_OR_RETURN(InputLineSource source, InputLineSource::Open(path));
  return source.Next(std::numeric_limits<int64_t>::max());
}

absl::Status WriteOutputLines(const std::string& path, const std::vector<std::string>& lines) {
  const std::string text = OutputText(lines);
  if (path.empty()) {
    std::cout << text << std::flush;
    return absl::OkStatus();
  }
  return WriteFileAtomically(path, text);
}

absl::Status RunDecodeCommand(const TaskContext& context, const DecodingHooks& hooks) {
  const DecodeRequest& request = context.decode;
  if (request.model.empty()) {
    return absl::InvalidArgumentError("decode needs --model=DIR (a work directory of `train`)");
  }
  TFM_RETURN_IF_ERROR(CheckOutputIsNotInput("--input", request.input, request.output));
  TFM_ASSIGN_OR_RETURN(const DecodingTarget target, ChooseDecodingTarget(context, &std::cerr));
  TFM_ASSIGN_OR_RETURN(TrainedModel trained,
                       LoadTrainedModel(request.model, target.device, &std::cerr,
                                        context.config.config.task()));
  TFM_ASSIGN_OR_RETURN(const config::DecodeConfig decode, DecodeSettings(trained.config, request));
  TFM_ASSIGN_OR_RETURN(InputLineSource input, InputLineSource::Open(request.input));
  // A file output is built under a temporary name and renamed at the end:
  // a failed run leaves what was there. Standard output gets each chunk as
  // it is done.
  std::optional<AtomicFileWriter> file;
  if (!request.output.empty()) {
    TFM_ASSIGN_OR_RETURN(AtomicFileWriter created, AtomicFileWriter::Create(request.output));
    file.emplace(std::move(created));
  }
  const std::string input_name = request.input.empty() ? "<stdin>" : request.input;
  const int64_t chunk_lines = std::max(1, decode.read_lines());
  const absl::Time start = absl::Now();
  int64_t decoded = 0;
  const auto lines_per_second = [&] {
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    return seconds > 0 ? decoded / seconds : 0.0;
  };
  while (true) {
    TFM_ASSIGN_OR_RETURN(InputLines chunk, input.Next(chunk_lines));
    if (chunk.lines.empty()) break;
    // Bad lines keep their place: only the cut ones are blanked (and
    // reported) here, the rest are checked in DecodeLines.
    DecodingHooks chunk_hooks = hooks;
    chunk_hooks.reported = chunk.too_long;
    chunk_hooks.first_line = decoded;
    for (size_t i = 0; i < chunk.lines.size(); ++i) {
      if (chunk.too_long[i]) {
        std::cerr << input_name << ":" << decoded + i + 1 << ": longer than " << kMaxLineBytes
                  << " bytes; its output line is left empty\n";
        chunk.lines[i].clear();
      }
    }
    TFM_ASSIGN_OR_RETURN(const std::vector<std::string> output,
                         DecodeLines(trained, decode, chunk.lines, input_name, &std::cerr,
                                     chunk_hooks));
    const std::string text = OutputText(output);
    if (file) {
      TFM_RETURN_IF_ERROR(file->Append(text));
    } else {
      std::cout << text << std::flush;
    }
    decoded += static_cast<int64_t>(chunk.lines.size());
    if (static_cast<int64_t>(chunk.lines.size()) == chunk_lines) {
      std::cerr << absl::StrFormat("%d lines decoded (%.1f lines/s)\n", decoded,
                                   lines_per_second());
    }
  }
  if (file) TFM_RETURN_IF_ERROR(file->Commit());
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::cerr << absl::StrFormat("decoded %d lines in %.1f s (%.1f lines/s)%s\n", decoded, seconds,
                               lines_per_second(),
                               request.output.empty() ? "" : " into " + request.output);
  return absl::OkStatus();
}

absl::Status CheckEvaluateRequest(const DecodeRequest& request, const std::string& inputs) {
  const std::string usage =
      absl::StrCat("evaluate needs --model=DIR and either --src=FILE --ref=FILE (", inputs,
                   ") or --split=valid|test (the model's own held-out split)");
  const bool files = !request.source.empty() || !request.reference.empty();
  if (request.model.empty()) return absl::InvalidArgumentError(usage);
  if (!request.split.empty()) {
    if (files) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--split=", request.split, " and --src/--ref: give one or the other; ", usage));
    }
    if (request.split != "valid" && request.split != "test") {
      return absl::InvalidArgumentError(
          absl::StrCat("--split=", request.split, ": expected valid or test"));
    }
    return absl::OkStatus();
  }
  if (request.source.empty() || request.reference.empty()) {
    return absl::InvalidArgumentError(usage);
  }
  TFM_RETURN_IF_ERROR(CheckOutputIsNotInput("--src", request.source, request.output));
  return CheckOutputIsNotInput("--ref", request.reference, request.output);
}

absl::Status ReadEvaluationFiles(const DecodeRequest& request, std::vector<std::string>* sources,
                                 std::vector<std::string>* references) {
  TFM_ASSIGN_OR_RETURN(InputLines source, ReadInputLines(request.source));
  // References are read as tools/bleu reads them (and tools/evalb gold trees
  // are UTF-8 too): a reference that is not UTF-8 is an error naming its
  // line, not a line scored as something else.
  TFM_ASSIGN_OR_RETURN(std::vector<std::string> reference,
                       ReadStrippedTextLines(request.reference));
  if (source.lines.size() != reference.size()) {
    return absl::InvalidArgumentError(absl::StrCat(request.source, " has ", source.lines.size(),
                                                   " lines but ", request.reference, " has ",
                                                   reference.size()));
  }
  *sources = std::move(source.lines);
  *references = std::move(reference);
  return absl::OkStatus();
}

absl::StatusOr<EvaluationSplit> SplitCorpora(const TrainedModel& trained,
                                             const std::string& split) {
  EvaluationSplit found;
  found.field = absl::StrCat("data.", split);
  found.corpora = split == "valid" ? &trained.config.data().valid() : &trained.config.data().test();
  if (found.corpora->empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--split=", split, ": the config saved with ", trained.checkpoint_dir,
                     " has no ", found.field, "; give --src=FILE --ref=FILE instead"));
  }
  return found;
}

absl::Status RunEvaluateCommand(const TaskContext& context, const CorpusMetric& metric,
                                const DecodingHooks& hooks) {
  const DecodeRequest& request = context.decode;
  TFM_RETURN_IF_ERROR(
      CheckEvaluateRequest(request, "plain or .gz, one sentence a line, and its references"));
  TFM_ASSIGN_OR_RETURN(const DecodingTarget target, ChooseDecodingTarget(context, context.log));
  TFM_ASSIGN_OR_RETURN(TrainedModel trained,
                       LoadTrainedModel(request.model, target.device, context.log,
                                        context.config.config.task()));
  std::vector<std::string> sources, references;
  std::string source_name = request.source;
  if (!request.split.empty()) {
    TFM_ASSIGN_OR_RETURN(const EvaluationSplit split, SplitCorpora(trained, request.split));
    TFM_RETURN_IF_ERROR(ReadCorpusPairs(*split.corpora, split.field,
                                        std::numeric_limits<int>::max(), &sources, &references));
    source_name = split.field;
  } else {
    TFM_RETURN_IF_ERROR(ReadEvaluationFiles(request, &sources, &references));
  }
  TFM_ASSIGN_OR_RETURN(config::DecodeConfig decode, DecodeSettings(trained.config, request));
  decode.set_nbest(1);
  const absl::Time start = absl::Now();
  TFM_ASSIGN_OR_RETURN(std::vector<std::string> hypotheses,
                       DecodeLines(trained, decode, sources, source_name, context.log, hooks));
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  TFM_ASSIGN_OR_RETURN(const CorpusScore score, metric.score(hypotheses, references));
  std::ostream& out = *context.log;
  for (size_t i = 0; i < hypotheses.size() && i < 5; ++i) {
    out << "source:     " << sources[i] << "\nreference:  " << references[i]
        << "\ndecoded:    " << hypotheses[i] << "\n\n";
  }
  out << absl::StrFormat("%d sentences in %.1f s, %s, beam %d, alpha %.2f\n", hypotheses.size(),
                         seconds, config::DecodeConfig::Strategy_Name(decode.strategy()),
                         decode.beam_size(), decode.length_penalty_alpha());
  out << score.report << "\n";
  if (!request.output.empty()) TFM_RETURN_IF_ERROR(WriteOutputLines(request.output, hypotheses));
  return absl::OkStatus();
}

bool IsDecodingCommand(TaskMode mode) {
  return mode == TaskMode::kDecode || mode == TaskMode::kEvaluate;
}

absl::StatusOr<config::DecodeConfig> DecodeSettings(const config::TaskConfig& saved,
                                                    const DecodeRequest& request) {
  LoadedConfig with_settings{saved, {}};
  for (const std::string& assignment : request.settings) {
    TFM_RETURN_IF_ERROR(ApplyOverride(assignment, &with_settings));
  }
  config::DecodeConfig decode = with_settings.config.decode();
  if (request.beam > 0) {
    decode.set_beam_size(request.beam);
    decode.set_strategy(request.beam == 1 ? config::DecodeConfig::GREEDY
                                          : config::DecodeConfig::BEAM);
  }
  if (request.alpha >= 0) decode.set_length_penalty_alpha(request.alpha);
  if (request.nbest > 0) decode.set_nbest(request.nbest);
  if (request.max_tokens > 0) decode.set_max_tokens(request.max_tokens);
  if (request.ensemble_combination >= 0) {
    decode.set_ensemble_combination(
        static_cast<config::DecodeConfig::EnsembleCombination>(request.ensemble_combination));
  }
  if (request.quantize >= 0) {
    decode.set_quantize(static_cast<config::DecodeConfig::Quantization>(request.quantize));
  }
  if (!request.dtype.empty()) decode.set_dtype(request.dtype);
  if (request.shortlist == "none") {
    decode.clear_shortlist();
  } else if (!request.shortlist.empty()) {
    decode.set_shortlist(request.shortlist);
  }
  if (request.shortlist_frequent >= 0) decode.set_shortlist_frequent(request.shortlist_frequent);
  if (request.shortlist_best >= 0) decode.set_shortlist_best(request.shortlist_best);
  return decode;
}

EncodedLines EncodeLines(const Tokenizer& tokenizer, int max_length,
                         const std::vector<std::string>& lines, const std::string& input_name,
                         std::ostream* log, const std::vector<bool>& reported,
                         int64_t first_line) {
  EncodedLines encoded;
  encoded.source_of.assign(lines.size(), -1);
  // A line is reported once: the caller's `reported` ones (cut when read)
  // were blanked and reported before.
  const auto no_words = [&](size_t i) {
    if (log && !(i < reported.size() && reported[i])) {
      *log << input_name << ":" << first_line + i + 1
           << ": no words (empty or only whitespace); its output line is left empty\n";
    }
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    // Training's rule for a sentence (core/data/sentence_checks.h), each
    // reason in a decoding's words.
    if (const char* reason = SentenceRejection(lines[i], /*too_long=*/false); reason != nullptr) {
      if (reason == kSkipEmpty) {
        no_words(i);
      } else if (log) {
        *log << input_name << ":" << first_line + i + 1 << ": "
             << (reason == kSkipInvalidUtf8 ? "not valid UTF-8" : "a NUL byte (binary data?)")
             << "; its output line is left empty\n";
      }
      continue;
    }
    std::vector<int> ids = tokenizer.Encode(lines[i]);
    if (ids.empty()) {  // Only spaces.
      no_words(i);
      continue;
    }
    ids.push_back(tokenizer.eos_id());  // Sources end with eos, as in training.
    if (static_cast<int>(ids.size()) > max_length) {
      if (log)
        *log << input_name << ":" << first_line + i + 1 << ": " << ids.size()
             << " subwords, over the model's limit of " << max_length
             << " (data.batching.max_length); its output line is left empty\n";
      continue;
    }
    encoded.source_of[i] = static_cast<int>(encoded.sources.size());
    encoded.sources.push_back(std::move(ids));
  }
  return encoded;
}

absl::StatusOr<std::vector<std::string>> DecodeLines(TrainedModel& trained,
                                                     const config::DecodeConfig& decode,
                                                     const std::vector<std::string>& lines,
                                                     const std::string& input_name,
                                                     std::ostream* log,
                                                     const DecodingHooks& hooks) {
  // A beam wider than the vocabulary cannot be filled: the search would run
  // at the cost of that width for nothing (--beam=20000 on an 8,000-token
  // model took minutes a line).
  if (decode.strategy() != config::DecodeConfig::GREEDY &&
      decode.beam_size() > trained.tokenizer.vocab_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "beam ", decode.beam_size(), " (--beam or decode.beam_size) is wider than the model's ",
        trained.tokenizer.vocab_size(), "-token vocabulary"));
  }
  DecodingHooks with_files = hooks;
  if (with_files.model_files.empty()) with_files.model_files = trained.task_files;
  TFM_RETURN_IF_ERROR(trained.SetDecodingPrecision(decode.quantize(), log));
  TFM_RETURN_IF_ERROR(trained.SetDecodingDType(decode.dtype(), decode.f32_residual()));
  TFM_RETURN_IF_ERROR(trained.SetKvCacheDType(decode.kv_cache_dtype(), log));
  TFM_RETURN_IF_ERROR(trained.SetShortlist(decode, log));
  trained.SetCudaGraphs(decode.cuda_graphs());
  // TFM_PROFILE_OPS=1 (core/op_profile.h): where the decoding's time went,
  // op by op, on the log when it is done (the ops before it, such as the
  // model's loading, left out).
  if (OpProfilingEnabled()) ResetOpProfile();
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::string>> output;
  if (trained.ensemble_size() == 1) {
    output = DecodeLines(*trained.model, trained.tokenizer, trained.config, decode, lines,
                         input_name, log, with_files);
  } else {
    TFM_ASSIGN_OR_RETURN(std::unique_ptr<EnsembleModel> ensemble,
                         trained.Decoder(decode.ensemble_combination()));
    output = DecodeLines(*ensemble, trained.tokenizer, trained.config, decode, lines, input_name,
                         log, with_files);
  }
  if (output.ok() && log != nullptr && OpProfilingEnabled()) {
    *log << "where decoding's time went (TFM_PROFILE_OPS), op by op:\n"
         << OpProfileReport(absl::ToDoubleSeconds(absl::Now() - start));
  }
  return output;
}

absl::StatusOr<std::vector<std::string>> DecodeLines(
    IncrementalModel& model, const Tokenizer& tokenizer, const config::TaskConfig& config,
    const config::DecodeConfig& decode, const std::vector<std::string>& lines,
    const std::string& input_name, std::ostream* log, const DecodingHooks& hooks) {
  std::vector<std::string> prepared;
  if (hooks.prepare) {
    prepared.reserve(lines.size());
    for (const std::string& line : lines) prepared.push_back(hooks.prepare(line));
  }
  const EncodedLines encoded =
      EncodeLines(tokenizer, config.data().batching().max_length(),
                  hooks.prepare ? prepared : lines, input_name, log, hooks.reported,
                  hooks.first_line);
  const std::vector<std::vector<int>>& sources = encoded.sources;
  const std::vector<int>& source_of = encoded.source_of;
  std::unique_ptr<DecodingConstraint> constraint;
  if (hooks.constraint) {
    // The constraint follows the decode settings asked for, not the saved ones.
    config::TaskConfig settings = config;
    *settings.mutable_decode() = decode;
    TFM_ASSIGN_OR_RETURN(
        constraint,
        hooks.constraint(settings, tokenizer, hooks.prepare ? prepared : lines, hooks.model_files));
  }
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<SearchStrategy> search,
                       CreateSearchStrategy(decode, constraint.get()));
  TFM_ASSIGN_OR_RETURN(std::vector<NBestList> results, search->Search(model, sources));
  // The line written for hypothesis `tokens` of input line i.
  const auto output_line = [&](size_t i,
                               const std::vector<int>& tokens) -> absl::StatusOr<std::string> {
    TFM_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(tokens));
    return hooks.format ? hooks.format(config, lines[i], text) : text;
  };
  const int nbest = std::max(1, decode.nbest());
  std::vector<std::string> output;
  output.reserve(lines.size() * nbest);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (nbest == 1) {
      std::string text;
      if (source_of[i] >= 0 && !results[source_of[i]].empty()) {
        TFM_ASSIGN_OR_RETURN(text, output_line(i, results[source_of[i]].front().tokens));
      }
      output.push_back(std::move(text));
      continue;
    }
    if (source_of[i] < 0) {
      output.push_back(absl::StrCat(hooks.first_line + i, " |||  ||| 0"));
      continue;
    }
    for (const Hypothesis& hypothesis : results[source_of[i]]) {
      TFM_ASSIGN_OR_RETURN(std::string text, output_line(i, hypothesis.tokens));
      output.push_back(
          absl::StrFormat("%d ||| %s ||| %.4f", hooks.first_line + i, text, hypothesis.score));
    }
  }
  return output;
}

absl::Status RunSeq2SeqDecoding(const TaskContext& context) {
  return context.mode == TaskMode::kEvaluate ? RunEvaluateCommand(context, BleuMetric())
                                             : RunDecodeCommand(context, DecodingHooks{});
}

}  // namespace tfm

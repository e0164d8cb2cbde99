// The decoding commands shared by the sequence-to-sequence tasks:
//   decode (translate): --model=DIR, lines from --input (or standard input)
//     to --output (or standard output), one line out per line in;
//   evaluate: --model=DIR --src=FILE --ref=FILE, printing "BLEU = ..." with
//     sacreBLEU's signature and example translations beside references.
// Search settings come from the checkpoint's decode section unless --beam,
// --alpha or --nbest override them.
//
// Bad lines never stop a run: an empty or blank line, a line that is not
// UTF-8 or is longer than the model's data.batching.max_length subwords
// gives an empty line and a message on the log naming the input and line
// number. Output files are written atomically, never over an input file
// (refused before the model is loaded).
#ifndef TFM_TASKS_COMMON_SEQ2SEQ_DECODING_H_
#define TFM_TASKS_COMMON_SEQ2SEQ_DECODING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/data/tokenizer.h"
#include "runtime/decode/decoding_constraint.h"
#include "runtime/decode/search.h"
#include "core/task_registry.h"
#include "runtime/train/task_files.h"
#include "tasks/common/corpus_metric.h"
#include "tasks/common/trained_model.h"

namespace tfm {

// True for the commands RunSeq2SeqDecoding serves: decode and evaluate.
bool IsDecodingCommand(TaskMode mode);

// What a task adds to decoding (translation: nothing), each given the
// model's config. `prepare` turns an input line into the text the model
// reads (parsing: its words, brackets written as the treebank does);
// `constraint` makes the search's constraint for the model's vocabulary
// (given the model's config with the decode settings in use, and the
// prepared lines it will decode: parsing's tag dictionary lists their
// unseen words by shape);
// `format` turns an output's text into the line written, given its input
// line (parsing: the tree over the line's words). Any may be empty.
struct DecodingHooks {
  std::function<std::string(const std::string& input_line)> prepare;
  // `model_files`: the task files of the model's checkpoint (below).
  std::function<absl::StatusOr<std::unique_ptr<DecodingConstraint>>(
      const config::TaskConfig&, const Tokenizer&, const std::vector<std::string>& inputs,
      const TaskFiles& model_files)>
      constraint;
  std::function<std::string(const config::TaskConfig&, const std::string& input_line,
                            const std::string& text)>
      format;
  // What the checkpoint decoded with keeps for its task
  // (runtime/train/task_files.h): DecodeLines with a TrainedModel sets them
  // from it; empty for the model being trained.
  TaskFiles model_files;
  // Per input line, true where the caller already blanked and reported it
  // (decode's lines over 1 MiB, cut when read), so it gets no second
  // message; shorter than the lines (empty included) means false for the rest.
  std::vector<bool> reported;
  // How many input lines come before these (decode reads its input in
  // chunks, decode.read_lines): messages name line first_line + i + 1, and
  // n-best lists number it first_line + i.
  int64_t first_line = 0;
};

// decode and evaluate (BLEU).
absl::Status RunSeq2SeqDecoding(const TaskContext& context);

// The decode command alone, with a task's hooks.
absl::Status RunDecodeCommand(const TaskContext& context, const DecodingHooks& hooks);

// The evaluate command alone (--model, and --src --ref or --split), scored
// with `metric`.
absl::Status RunEvaluateCommand(const TaskContext& context, const CorpusMetric& metric,
                                const DecodingHooks& hooks = {});

// Checks evaluate's flags before anything is loaded: --model, and either
// both --src and --ref or --split alone; --output must not be --src or --ref
// (by device and inode, whatever the spelling). `inputs` says what --src and
// --ref hold, for the message.
absl::Status CheckEvaluateRequest(const DecodeRequest& request, const std::string& inputs);

// evaluate's --src and --ref files, which must have as many lines. --ref is
// read as tools/bleu reads it (core/metrics/text_lines.h: lines not UTF-8
// are an error naming file:line; trailing whitespace is dropped).
absl::Status ReadEvaluationFiles(const DecodeRequest& request, std::vector<std::string>* sources,
                                 std::vector<std::string>* references);

// --split's corpora: data.valid or data.test of the model's saved config
// (the data it was trained beside, whatever --config says), and the field's
// name for messages. Errors name the split and the checkpoint.
struct EvaluationSplit {
  const google::protobuf::RepeatedPtrField<config::CorpusConfig>* corpora = nullptr;
  std::string field;  // "data.valid" or "data.test".
};
absl::StatusOr<EvaluationSplit> SplitCorpora(const TrainedModel& trained,
                                             const std::string& split);

// The lines of `path` (standard input when empty), each at most 1 MiB: the
// part of a longer line is kept, and too_long says so.
struct InputLines {
  std::vector<std::string> lines;
  std::vector<bool> too_long;
};
absl::StatusOr<InputLines> ReadInputLines(const std::string& path);

class LineReader;  // core/data/line_reader.h

// The same lines a chunk at a time: what decode holds of a long input.
class InputLineSource {
 public:
  static absl::StatusOr<InputLineSource> Open(const std::string& path);
  InputLineSource(InputLineSource&&) noexcept;
  InputLineSource& operator=(InputLineSource&&) noexcept;
  ~InputLineSource();

  // The next lines, at most `max_lines`; none once the input is done.
  absl::StatusOr<InputLines> Next(int64_t max_lines);

 private:
  InputLineSource() = default;
  std::unique_ptr<LineReader> reader_;  // Null: standard input.
};

// `lines` to `path` atomically (standard output when empty).
absl::Status WriteOutputLines(const std::string& path, const std::vector<std::string>& lines);

// The checkpoint's decode settings with the request's overrides: its
// --set=decode.* assignments, then its flags. An assignment the saved
// config takes no value for is InvalidArgument naming it.
absl::StatusOr<config::DecodeConfig> DecodeSettings(const config::TaskConfig& saved,
                                                    const DecodeRequest& request);

// The sources a search takes (each line's subwords and eos, as in training)
// and, per input line, its index among them or -1 for a line that gives an
// empty output (empty, only spaces, not UTF-8 or too long: each reported on
// `log` by input_name:line, except the lines `reported` marks).
struct EncodedLines {
  std::vector<std::vector<int>> sources;
  std::vector<int> source_of;
};
// `max_length` counts subwords with the eos (data.batching.max_length).
// Messages name line first_line + i + 1 of the input for lines[i].
EncodedLines EncodeLines(const Tokenizer& tokenizer, int max_length,
                         const std::vector<std::string>& lines, const std::string& input_name,
                         std::ostream* log, const std::vector<bool>& reported = {},
                         int64_t first_line = 0);

// One output line per input line (n-best: `nbest` lines per input line,
// "INDEX ||| TEXT ||| SCORE" as fairseq and Moses write them). `input_name`
// names the input in messages about bad lines, which go to `log`.
absl::StatusOr<std::vector<std::string>> DecodeLines(TrainedModel& trained,
                                                     const config::DecodeConfig& decode,
                                                     const std::vector<std::string>& lines,
                                                     const std::string& input_name,
                                                     std::ostream* log,
                                                     const DecodingHooks& hooks = {});

// The same with any model in memory (the one being trained, for validation
// BLEU): `tokenizer` is its vocabulary and `config` its config (the longest
// source it takes is data.batching.max_length subwords).
absl::StatusOr<std::vector<std::string>> DecodeLines(IncrementalModel& model,
                                                     const Tokenizer& tokenizer,
                                                     const config::TaskConfig& config,
                                                     const config::DecodeConfig& decode,
                                                     const std::vector<std::string>& lines,
                                                     const std::string& input_name,
                                                     std::ostream* log,
                                                     const DecodingHooks& hooks = {});

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_SEQ2SEQ_DECODING_H_

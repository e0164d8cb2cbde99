#include "tasks/driver/driver.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/config/config_loader.h"
#include "core/cpu_features.h"
#include "core/cuda/runtime.h"
#include "core/data/corpus_format_registry.h"
#include "core/environment_report.h"
#include "core/layer_registry.h"
#include "core/op_registry.h"
#include "core/paths.h"
#include "core/plugin_loader.h"
#include "core/status_macros.h"
#include "core/task_registry.h"
#include "google/protobuf/text_format.h"
#include "layers/decoder_input_hook.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_directory.h"
#include "runtime/train/stop_signal.h"
#include "tasks/common/quantized_model.h"
#include "tasks/common/shortlist_command.h"
#include "tasks/plugin_abi_version.h"

ABSL_FLAG(std::string, config, "",
          "task config: a .pbtxt file or a preset name (ende_base, ende_gettext, ...); task "
          "binaries default to their preset");
ABSL_FLAG(std::string, mode, "",
          "run | validate | train | preprocess | average | quantize | shortlist | plot | "
          "translate (parse, "
          "decode) | "
          "evaluate (or give it as the first "
          "argument; default: run for task binaries, validate for the generic driver)");
ABSL_FLAG(std::string, data, "",
          "read every corpus of the config from this folder instead (a treebank or catalog "
          "root, or the folder of the source and target files: e.g. a copy of "
          "../shared/data/multi30k or ptb_sample)");
ABSL_FLAG(std::string, workdir, "",
          "work directory for checkpoints, logs and the tokenizer (default: data.work_dir)");
ABSL_FLAG(double, minutes, 0, "train: stop after this many minutes (0: no limit)");
ABSL_FLAG(std::string, device, "",
          "train, decode (translate, parse), evaluate and the main job: cpu, cuda, cuda:N or auto "
          "(the first GPU if there is one); sets train.device and decode.device, whose default "
          "is auto");
ABSL_FLAG(std::string, dtype, "",
          "decode/evaluate: f32; bf16 or f16 on a GPU (16-bit activations and caches, f32 "
          "logits); bf16 on the CPU (bf16 products over f32 activations: fast on AMX); sets "
          "decode.dtype, whose default is f32");
ABSL_FLAG(int, max_tokens, 0,
          "decode/evaluate: a batch's budget of source tokens x beam, besides decode.batch_size "
          "sentences (0: the model's decode.max_tokens)");
ABSL_FLAG(int, last, 0, "average: how many of the latest checkpoints (0: from the config)");
ABSL_FLAG(int, best, 0,
          "average: the N checkpoints whose validation ranked best instead of the last ones "
          "(kept by train.keep_best_checkpoints), into <workdir>/checkpoint_average_best");
ABSL_FLAG(std::string, model, "",
          "decode/evaluate: a work directory of train (its averaged, else best, else latest "
          "checkpoint) or a checkpoint directory; several separated by commas decode as one "
          "ensemble (same task and vocabulary)");
ABSL_FLAG(std::string, ensemble_combination, "",
          "decode/evaluate with several --model paths: probability_mean or "
          "log_probability_mean of the members' next-token distributions (empty: the first "
          "model's decode.ensemble_combination)");
ABSL_FLAG(std::string, quantize, "",
          "decode/evaluate: int8 runs the decoder's products with int8 weights (quantized at "
          "load, a scale per row); none: f32 (default: the model's decode.quantize)");
ABSL_FLAG(std::string, shortlist, "",
          "decode/evaluate: a vocabulary shortlist file (the shortlist command's output): each "
          "batch's steps score only the target tokens its sources' entries name, the most "
          "frequent ones and eos; none: the whole vocabulary (default: the model's "
          "decode.shortlist)");
ABSL_FLAG(int, shortlist_frequent, -1,
          "decode/evaluate with --shortlist: the most frequent target tokens every batch takes "
          "(-1: the model's decode.shortlist_frequent)");
ABSL_FLAG(int, shortlist_best, -1,
          "decode/evaluate with --shortlist: the best target tokens each source token adds "
          "(-1: the model's decode.shortlist_best)");
ABSL_FLAG(std::string, input, "", "decode: input file, one sentence a line (default: stdin)");
ABSL_FLAG(std::string, output, "",
          "decode/evaluate: output file (default: stdout); quantize: the int8 model directory; "
          "shortlist: the shortlist file");
ABSL_FLAG(std::string, src, "", "evaluate: source sentences (plain or .gz)");
ABSL_FLAG(std::string, ref, "",
          "evaluate: references (plain or .gz): translations, or gold trees one a line");
ABSL_FLAG(std::string, split, "",
          "evaluate: instead of --src/--ref, the model's own held-out split, valid or test (the "
          "data.valid or data.test its saved config names, as fairseq's --gen-subset)");
ABSL_FLAG(int, beam, 0, "decode/evaluate: beam size (1: greedy; 0: the model's config)");
ABSL_FLAG(double, alpha, -1, "decode/evaluate: length penalty alpha (-1: the model's config)");
ABSL_FLAG(int, nbest, 0, "decode: hypotheses per line (0: the model's config)");
ABSL_FLAG(bool, list, false, "list registered ops, kernels, layers and tasks, then exit");
// Declared for --help only: ExtractRepeatedFlags consumes them before parsing.
ABSL_FLAG(std::string, plugin, "", "shared library to load (repeatable)");
ABSL_FLAG(std::string, set, "", "override one config field: section.field=value (repeatable)");

namespace tfm {
namespace {

absl::StatusOr<TaskMode> ParseMode(const std::string& mode) {
  static const auto* modes = new std::map<std::string, TaskMode>{
      {"validate", TaskMode::kValidate},
      {"train", TaskMode::kTrain},
      {"preprocess", TaskMode::kPreprocess},
      {"average", TaskMode::kAverage},
      {"plot", TaskMode::kPlot},
      {"evaluate", TaskMode::kEvaluate},
      {"decode", TaskMode::kDecode},
      // What users of a translation or parsing task type: the same command.
      {"translate", TaskMode::kDecode},
      {"parse", TaskMode::kDecode},
      {"run", TaskMode::kRun}};
  auto it = modes->find(mode);
  if (it == modes->end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown command '", mode,
        "': expected run, validate, train, preprocess, average, quantize, shortlist, plot, "
        "translate (or "
        "parse, decode) or evaluate"));
  }
  return it->second;
}

}  // namespace

std::string ResolvePreset(const std::string& config, const std::string& default_config) {
  if (config.empty() || absl::EndsWith(config, ".pbtxt") || config.find('/') != std::string::npos) {
    return ResolveUserPath(config);
  }
  // A bare name: a preset beside the default one, or in another task's
  // configs folder (tasks/<task>/configs/<name>.pbtxt).
  std::vector<std::string> candidates;
  const size_t slash = default_config.rfind('/');
  if (slash != std::string::npos) {
    candidates.push_back(absl::StrCat(default_config.substr(0, slash + 1), config, ".pbtxt"));
    const size_t tasks = default_config.rfind("/tasks/");
    if (tasks != std::string::npos) {
      for (const char* task : {"translation", "parsing"}) {
        candidates.push_back(absl::StrCat(default_config.substr(0, tasks), "/tasks/", task,
                                          "/configs/", config, ".pbtxt"));
      }
    }
  }
  for (const std::string& candidate : candidates) {
    if (FILE* file = std::fopen(candidate.c_str(), "r")) {
      std::fclose(file);
      return candidate;
    }
  }
  return ResolveUserPath(config);  // Let the loader name the missing file.
}

std::vector<char*> ExtractRepeatedFlags(int argc, char** argv, DriverOptions* options) {
  const std::vector<std::pair<std::string, std::vector<std::string>*>> repeated = {
      {"plugin", &options->plugins}, {"set", &options->overrides}};
  // Consumes argv[*i] (and its value, for "--flag value") if it is one of the
  // repeated flags.
  auto take = [&](int* i) {
    const std::string arg = argv[*i];
    for (const auto& [flag, values] : repeated) {
      for (const std::string& spelling : {"--" + flag, "-" + flag}) {
        if (absl::StartsWith(arg, spelling + "=")) {
          values->push_back(arg.substr(spelling.size() + 1));
          return true;
        }
        if (arg == spelling && *i + 1 < argc) {
          values->push_back(argv[++*i]);
          return true;
        }
      }
    }
    return false;
  };
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (i == 0 || !take(&i)) rest.push_back(argv[i]);
  }
  return rest;
}

std::vector<char*> ExtractTaskFlags(const std::vector<char*>& args, DriverOptions* options) {
  // Flags that a built-in task declares may take their value as the next
  // argument; a plugin's (not loaded yet) are written --name=value.
  std::set<std::string> declared;
  for (const std::string& task : TaskRegistry().Names()) {
    absl::StatusOr<std::shared_ptr<const TaskDef>> def = TaskRegistry().Find(task);
    if (!def.ok()) continue;
    for (const TaskFlag& flag : (*def)->flags) declared.insert(flag.name);
  }
  const auto is_driver_flag = [](const std::string& name) {
    return absl::FindCommandLineFlag(name) != nullptr ||
           (absl::StartsWith(name, "no") && absl::FindCommandLineFlag(name.substr(2)) != nullptr);
  };
  std::vector<char*> rest;
  bool positional_only = false;  // After "--".
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg = args[i];
    if (i == 0 || positional_only || arg.size() < 2 || arg[0] != '-') {
      rest.push_back(args[i]);
      continue;
    }
    if (arg == "--") positional_only = true;
    const std::string flag = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t equals = flag.find('=');
    const std::string name = flag.substr(0, equals);
    if (name.empty() || is_driver_flag(name)) {
      rest.push_back(args[i]);
      continue;
    }
    if (equals != std::string::npos) {
      options->task_flags[name] = flag.substr(equals + 1);
    } else if (declared.count(name) != 0 && i + 1 < args.size()) {
      options->task_flags[name] = args[++i];
    } else {
      rest.push_back(args[i]);  // Left for absl to report as unknown.
    }
  }
  return rest;
}

std::string TaskFlagsUsage() {
  std::string usage;
  for (const std::string& task : TaskRegistry().Names()) {
    absl::StatusOr<std::shared_ptr<const TaskDef>> def = TaskRegistry().Find(task);
    if (!def.ok() || (*def)->flags.empty()) continue;
    absl::StrAppend(&usage, "\n      ", task, "'s own flags:");
    for (const TaskFlag& flag : (*def)->flags) {
      absl::StrAppend(&usage, "\n        --", flag.name, "=...  ", flag.help);
    }
  }
  return usage;
}

// The task flags given must be `task`'s own.
absl::Status CheckTaskFlags(const TaskDef& task, const std::map<std::string, std::string>& given) {
  for (const auto& [name, value] : given) {
    bool known = false;
    std::vector<std::string> names;
    for (const TaskFlag& flag : task.flags) {
      known = known || flag.name == name;
      names.push_back(absl::StrCat("--", flag.name));
    }
    if (known) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown flag --", name, ": not a flag of the driver nor of task '", task.name, "'",
        names.empty() ? " (which has none of its own)"
                      : absl::StrCat(" (whose own are ", absl::StrJoin(names, ", "), ")")));
  }
  return absl::OkStatus();
}

void ListRegistered(std::ostream& out) {
  // Kernels grouped under their op: "layer_norm  CPU/f32 CUDA/f16 ...".
  std::map<std::string, std::vector<std::string>> kernels;
  for (const std::string& name : KernelRegistry().Names()) {
    const size_t slash = name.find('/');
    kernels[name.substr(0, slash)].push_back(name.substr(slash + 1));
  }
  out << "ops:\n";
  for (const std::string& op : OpRegistry().Names()) {
    out << "  " << op << "  [" << absl::StrJoin(kernels[op], " ") << "]\n";
  }
  out << "layers:\n";
  for (const std::string& layer : LayerRegistry().Names()) out << "  " << layer << "\n";
  out << "tasks:\n";
  for (const std::string& task : TaskRegistry().Names()) out << "  " << task << "\n";
  // What tasks register beside themselves.
  out << "corpus formats:\n";
  for (const std::string& format : CorpusFormatRegistry().Names()) out << "  " << format << "\n";
  out << "decoder input hooks:\n";
  for (const std::string& hook : DecoderInputHookRegistry().Names()) out << "  " << hook << "\n";
  // The CPU and its kernels' instruction set (TFM_CPU_ISA caps it), the BLAS
  // kernels: what was chosen for this machine at run time.
  for (const auto& [label, text] : EnvironmentReport()) out << label << ": " << text << "\n";
  out << "cuda: ";
  if (!cuda::BuiltWithCuda()) {
    out << "not built\n";
    return;
  }
  const int devices = cuda::DeviceCount();
  out << devices << " device(s); " << cuda::LibraryVersions() << "\n";
  for (int i = 0; i < devices; ++i) {
    absl::StatusOr<std::string> name = cuda::DeviceName(i);
    out << "  cuda:" << i << " " << (name.ok() ? *name : name.status().ToString()) << "\n";
  }
}

namespace {

// Flag values that would otherwise be taken in a sense the user did not
// mean. Numeric flags whose default stands for "the config's" (0 or -1): any
// other value out of range is an error, not a silent fall back to the config
// (--beam=-4 or --alpha=nan would decode with settings nobody asked for).
absl::Status CheckFlagValues(const DriverOptions& options) {
  std::vector<std::string> problems;
  // --model=a,,b or a trailing comma: a member lost to a typo would decode
  // as a smaller ensemble without a word. quantize and shortlist take one.
  const std::string& models = options.decode.model;
  if (!models.empty()) {
    const std::vector<std::string> members = absl::StrSplit(models, ',');
    for (const std::string& member : members) {
      if (absl::StripAsciiWhitespace(member).empty()) {
        problems.push_back(absl::StrCat("--model=", models, ": an empty member"));
        break;
      }
    }
    if (members.size() > 1 && (options.mode == "quantize" || options.mode == "shortlist")) {
      problems.push_back(absl::StrCat("--model=", models, ": ", options.mode,
                                      " takes one model, not an ensemble"));
    }
  }
  const DecodeRequest& decode = options.decode;
  if (!std::isfinite(options.minutes) || options.minutes < 0) {
    problems.push_back(
        absl::StrCat("--minutes=", options.minutes, ": must be a number >= 0 (0: no limit)"));
  }
  const auto at_least = [&](const char* flag, double value, double minimum, const char* meaning) {
    if (!(value >= minimum)) {
      problems.push_back(
          absl::StrCat("--", flag, "=", value, ": must be >= ", minimum, " (", meaning, ")"));
    }
  };
  at_least("last", options.average_last, 0, "0: the config's train.average_last_checkpoints");
  at_least("best", options.average_best, 0, "0: average the last checkpoints");
  if (options.average_last > 0 && options.average_best > 0) {
    problems.push_back(absl::StrCat("--last=", options.average_last, " and --best=",
                                    options.average_best, ": average takes one of them"));
  }
  at_least("beam", decode.beam, 0, "1: greedy; 0: the model's decode.beam_size");
  at_least("nbest", decode.nbest, 0, "0: the model's decode.nbest");
  at_least("max_tokens", decode.max_tokens, 0, "0: the model's decode.max_tokens");
  at_least("shortlist_frequent", decode.shortlist_frequent, -1,
           "-1: the model's decode.shortlist_frequent");
  at_least("shortlist_best", decode.shortlist_best, -1, "-1: the model's decode.shortlist_best");
  // -1 (the flag's default) leaves the model's alpha; any other value is used.
  if (decode.alpha != -1 && !(decode.alpha >= 0 && std::isfinite(decode.alpha))) {
    problems.push_back(absl::StrCat("--alpha=", decode.alpha,
                                    ": must be a finite number >= 0 (leave it out for the "
                                    "model's decode.length_penalty_alpha)"));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
}

// Flags that only some commands read: given to another, they would be
// ignored without a word (`translate --split=test` decodes standard input;
// `evaluate --minutes=5` has nothing to time). The commands by the names
// users type; translate, parse and decode are one command.
absl::Status CheckFlagsForCommand(const DriverOptions& options) {
  static const auto* readers = new std::map<std::string, std::set<std::string>>{
      {"split", {"evaluate"}}, {"src", {"evaluate"}}, {"ref", {"evaluate"}},
      {"input", {"decode"}},   {"nbest", {"decode"}}, {"minutes", {"train", "run"}},
      {"last", {"average"}},   {"best", {"average"}},
  };
  const std::string command =
      options.mode == "translate" || options.mode == "parse" ? "decode" : options.mode;
  std::vector<std::string> problems;
  for (const std::string& flag : options.given_flags) {
    const auto it = readers->find(flag);
    if (it == readers->end() || it->second.count(command) > 0) continue;
    std::vector<std::string> names;
    for (const std::string& reader : it->second) {
      names.push_back(reader == "decode" ? "translate/parse/decode" : reader);
    }
    problems.push_back(absl::StrCat("--", flag, " is not read by ", options.mode, " (only by ",
                                    absl::StrJoin(names, " and "), ")"));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
}

}  // namespace

absl::Status RunDriver(const DriverOptions& options, std::ostream& out) {
  TFM_RETURN_IF_ERROR(CheckFlagValues(options));
  TFM_RETURN_IF_ERROR(CheckFlagsForCommand(options));
  TFM_RETURN_IF_ERROR(RegistrationJournal::Get().Check());
  TFM_ASSIGN_OR_RETURN(std::vector<LoadedPlugin> plugins,
                       LoadPlugins(options.plugins, TFM_PLUGIN_ABI_VERSION));
  for (const LoadedPlugin& plugin : plugins) {
    out << "loaded plugin " << plugin.path << ": " << absl::StrJoin(plugin.registered, ", ")
        << "\n";
  }
  if (options.list) {
    ListRegistered(out);  // Also on a CPU we cannot run: it says why.
    return absl::OkStatus();
  }
  // Before any kernel runs: a CPU without AVX2 gets this message, not SIGILL.
  TFM_RETURN_IF_ERROR(CheckCpuSupported());
  // Works on any task's saved model alone: no config, no task to create.
  if (options.mode == "quantize") {
    return QuantizeModelDirectory(options.decode.model, options.decode.output, out);
  }
  if (options.mode == "shortlist") {
    return RunShortlistCommand(options.decode.model, options.decode.output, options.data_dir, out);
  }
  if (options.config.empty()) {
    return absl::InvalidArgumentError("no config: pass --config=FILE.pbtxt (or --list)");
  }
  TFM_ASSIGN_OR_RETURN(TaskMode mode, ParseMode(options.mode));
  TFM_ASSIGN_OR_RETURN(LoadedConfig loaded,
                       LoadTaskConfig(options.config, options.overrides, options.flag_overrides));
  RelocateCorpora(options.data_dir, &loaded);
  absl::StatusOr<std::unique_ptr<Task>> created = CreateTask(loaded.config.task());
  if (!created.ok()) {
    // Most often a plugin's task whose library was not loaded.
    return absl::Status(
        created.status().code(),
        absl::StrCat(loaded.sources.Describe("task"), ": task: ", created.status().message(),
                     plugins.empty() ? "; a plugin's task needs its library: "
                                       "--plugin=PATH/libNAME.so"
                                     : ""));
  }
  std::unique_ptr<Task> task = *std::move(created);
  TFM_ASSIGN_OR_RETURN(std::shared_ptr<const TaskDef> def,
                       TaskRegistry().Find(loaded.config.task()));
  TFM_RETURN_IF_ERROR(CheckTaskFlags(*def, options.task_flags));
  // decode and evaluate run a saved model, with its own saved config: the
  // --config preset's corpora and work directory (the binary's default,
  // often) need not exist here, and the command resolves its device itself.
  const bool runs_saved_model = mode == TaskMode::kDecode || mode == TaskMode::kEvaluate;
  if (!runs_saved_model) {
    TFM_RETURN_IF_ERROR(task->Validate(loaded));
    // validate checks the files a run reads (the corpora, a shortlist), not
    // the devices: a config may be checked on a machine without its GPU.
    TFM_RETURN_IF_ERROR(CheckConfigRunsHere(
        loaded, /*check_devices=*/mode != TaskMode::kPreprocess && mode != TaskMode::kValidate));
  }
  if (mode == TaskMode::kValidate) {
    std::string text;
    google::protobuf::TextFormat::Printer printer;
    printer.SetExpandAny(true);  // A plugin's settings as text, as written.
    printer.PrintToString(loaded.config, &text);
    out << "# " << options.config << " is valid (task '" << loaded.config.task() << "')\n" << text;
  }
  TaskContext context;
  context.config = std::move(loaded);
  context.mode = mode;
  context.log = &out;
  context.work_dir = options.work_dir.empty()
                         ? ResolveUserPath(context.config.config.data().work_dir())
                         : options.work_dir;
  context.time_limit =
      options.minutes > 0 ? absl::Seconds(options.minutes * 60) : absl::InfiniteDuration();
  context.average_last = options.average_last;
  context.average_best = options.average_best;
  context.decode = options.decode;
  context.task_flags = options.task_flags;
  context.program = options.program;
  return task->Run(context);
}

std::string WorkDirConfig(const std::string& mode, const std::string& config_flag,
                          const std::string& work_dir) {
  if (!config_flag.empty() || work_dir.empty() || (mode != "train" && mode != "average")) {
    return "";
  }
  absl::StatusOr<CheckpointEntry> latest = LatestCheckpoint(work_dir);
  if (!latest.ok()) return "";  // A new run, or no readable directory: the preset.
  const std::string config = JoinPath(latest->path, kConfigFile);
  return std::filesystem::exists(config) ? config : "";
}

absl::StatusOr<LoadedPlugin> LoadEnginePlugin(const std::string& path) {
  return LoadPlugin(path, TFM_PLUGIN_ABI_VERSION);
}

int DriverMain(int argc, char** argv, const std::string& default_config) {
  absl::SetProgramUsageMessage(
      "Transformer engine driver. A task binary with no COMMAND runs its main job: train "
      "(--minutes, default 10), average, translate and score the held-out split.\n"
      "  --list                       list registered ops, layers and tasks\n"
      "  [COMMAND] --config=FILE_OR_PRESET [--set=a.b=v] [--workdir=DIR] [--data=DIR]\n"
      "      COMMAND: run | validate | train [--minutes=N] | average [--last=N | --best=N] | plot\n"
      "             | quantize --model=DIR --output=DIR2 (an int8 model directory: int8 "
      "matrices with a scale per row, decoded on the CPU)\n"
      "             | shortlist --model=DIR --output=FILE (a vocabulary shortlist learned "
      "from the model's data.train, for --shortlist=FILE)\n"
      "             | preprocess (data.train tokenized once into <workdir>/train_corpus.bin, "
      "which train then reads: a global shuffle each epoch)\n"
      "             | translate (parse) --model=DIR [--input=F] [--output=F] [--beam=K] "
      "[--alpha=A] "
      "[--nbest=N]\n"
      "               (--model=A,B,... decodes with an ensemble: "
      "[--ensemble_combination=probability_mean|log_probability_mean])\n"
      "               (--quantize=int8: the decoder's products in int8 on the CPU)\n"
      "               (--shortlist=FILE [--shortlist_frequent=N] [--shortlist_best=K]: score "
      "a shortlist's tokens only)\n"
      "             | evaluate --model=DIR (--src=F --ref=F | --split=valid|test) [--beam=K] "
      "[--alpha=A]\n"
      "      a task may take flags of its own (a plugin's: --name=value):" +
      TaskFlagsUsage() +
      "\n  --plugin=LIB.so              load a plugin first (repeatable)"
      "\n  --device=auto|cpu|cuda[:N]   run, train, translate, parse, evaluate: where to train and "
      "decode (train.device, decode.device; default auto)"
      "\n  --dtype=f32|bf16|f16         translate, parse, evaluate: decoding's dtype "
      "(decode.dtype; 16-bit on a GPU)"
      "\n  --max_tokens=N               translate, parse, evaluate: batch by a budget of source "
      "tokens x beam (decode.max_tokens)");
  // --help lists the driver's own flags (absl's default only shows flags
  // defined in a file named like the binary, and there are none).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::StrContains(file, "tasks/driver/");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  DriverOptions options;
  std::vector<char*> rest = ExtractTaskFlags(ExtractRepeatedFlags(argc, argv, &options), &options);
  const std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  if (positional.size() > 2) {
    std::cerr << "error: one command expected, got '" << positional[1] << "' and '" << positional[2]
              << "'\n";
    return 1;
  }
  // After the --set overrides, so that the flag wins over them and the file.
  if (const std::string device = absl::GetFlag(FLAGS_device); !device.empty()) {
    const std::string flag = absl::StrCat("--device=", device);
    options.flag_overrides.push_back({absl::StrCat("train.device=", device), flag});
    options.flag_overrides.push_back({absl::StrCat("decode.device=", device), flag});
    options.decode.device = device;
  }
  if (const std::string dtype = absl::GetFlag(FLAGS_dtype); !dtype.empty()) {
    options.flag_overrides.push_back(
        {absl::StrCat("decode.dtype=", dtype), absl::StrCat("--dtype=", dtype)});
    options.decode.dtype = dtype;
  }
  // A saved model decodes with its own config: its decode section takes the
  // --set=decode.* assignments too (the --config preset's own decode
  // section stays out of it).
  for (const std::string& assignment : options.overrides) {
    if (absl::StartsWith(assignment, "decode.")) options.decode.settings.push_back(assignment);
  }
  // A negative value is refused by RunDriver (CheckFlagValues).
  options.decode.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.mode = positional.size() == 2 ? positional[1] : absl::GetFlag(FLAGS_mode);
  // A task binary with no command runs its main job; the generic driver
  // only validates.
  if (options.mode.empty()) options.mode = default_config.empty() ? "validate" : "run";
  options.program = argv[0];
  options.program = options.program.substr(options.program.rfind('/') + 1);
  options.work_dir = ResolveUserPath(absl::GetFlag(FLAGS_workdir));
  options.config = WorkDirConfig(options.mode, absl::GetFlag(FLAGS_config), options.work_dir);
  if (!options.config.empty()) {
    std::cout << "config: " << options.config
              << " (the work directory's latest checkpoint; --config to run another)\n";
  } else {
    options.config = ResolvePreset(absl::GetFlag(FLAGS_config), default_config);
    if (options.config.empty()) options.config = default_config;
  }
  for (std::string& plugin : options.plugins) plugin = ResolveUserPath(plugin);
  options.list = absl::GetFlag(FLAGS_list);
  options.data_dir = ResolveUserPath(absl::GetFlag(FLAGS_data));
  options.minutes = absl::GetFlag(FLAGS_minutes);
  options.average_last = absl::GetFlag(FLAGS_last);
  options.average_best = absl::GetFlag(FLAGS_best);
  // Each of an ensemble's paths is relative to where the command was run.
  // Empty members are kept (as empty), for RunDriver to refuse.
  std::vector<std::string> model_paths;
  if (!absl::GetFlag(FLAGS_model).empty()) {
    model_paths = absl::StrSplit(absl::GetFlag(FLAGS_model), ',');
  }
  for (std::string& path : model_paths) {
    if (!absl::StripAsciiWhitespace(path).empty()) path = ResolveUserPath(path);
  }
  options.decode.model = absl::StrJoin(model_paths, ",");
  const std::string combination = absl::GetFlag(FLAGS_ensemble_combination);
  if (combination == "probability_mean") {
    options.decode.ensemble_combination = config::DecodeConfig::PROBABILITY_MEAN;
  } else if (combination == "log_probability_mean") {
    options.decode.ensemble_combination = config::DecodeConfig::LOG_PROBABILITY_MEAN;
  } else if (!combination.empty()) {
    std::cerr << "error: --ensemble_combination=" << combination
              << ": expected probability_mean or log_probability_mean\n";
    return 1;
  }
  const std::string quantize = absl::GetFlag(FLAGS_quantize);
  if (quantize == "int8") {
    options.decode.quantize = config::DecodeConfig::INT8;
  } else if (quantize == "none") {
    options.decode.quantize = config::DecodeConfig::NONE;
  } else if (!quantize.empty()) {
    std::cerr << "error: --quantize=" << quantize << ": expected int8 or none\n";
    return 1;
  }
  const std::string shortlist = absl::GetFlag(FLAGS_shortlist);
  options.decode.shortlist = shortlist == "none" ? shortlist : ResolveUserPath(shortlist);
  options.decode.shortlist_frequent = absl::GetFlag(FLAGS_shortlist_frequent);
  options.decode.shortlist_best = absl::GetFlag(FLAGS_shortlist_best);
  options.decode.input = ResolveUserPath(absl::GetFlag(FLAGS_input));
  options.decode.output = ResolveUserPath(absl::GetFlag(FLAGS_output));
  options.decode.source = ResolveUserPath(absl::GetFlag(FLAGS_src));
  options.decode.reference = ResolveUserPath(absl::GetFlag(FLAGS_ref));
  options.decode.split = absl::GetFlag(FLAGS_split);
  options.decode.beam = absl::GetFlag(FLAGS_beam);
  options.decode.alpha = absl::GetFlag(FLAGS_alpha);
  options.decode.nbest = absl::GetFlag(FLAGS_nbest);
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    // (Abseil keeps "given on the command line" private: a flag set to its
    // default changes nothing, so its value is what counts.)
    if (flag->CurrentValue() != flag->DefaultValue()) {
      options.given_flags.push_back(std::string(name));
    }
  }
  absl::Status status = RunDriver(options, std::cout);
  // Training stopped by SIGINT or SIGTERM wrote its checkpoint; the exit
  // status says it was interrupted, as the shell's convention has it.
  if (absl::IsCancelled(status) && StopSignalReceived() != 0) {
    std::cerr << "stopped: " << status.message() << "\n";
    return 128 + StopSignalReceived();
  }
  if (!status.ok()) {
    std::cerr << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tfm

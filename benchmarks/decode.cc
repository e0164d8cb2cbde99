// Translation speed of a trained model, ours against Hugging Face
// transformers' MarianMT `generate`, CTranslate2 and a cached PyTorch beam
// search on the same weights, sources and search settings, on the CPU or a
// GPU:
//
//   bazel run -c opt //benchmarks:decode -- --model=/work/main/work/m30k
//   bazel run -c opt //benchmarks:decode -- --model=DIR --device=cuda
//       --batch_sizes=32,128,512 --lines_at_batch_1=200 --random_base
//
// It translates Multi30k's test_2016_flickr (EN->DE by default) with the
// checkpoint's decode settings (beam 4, alpha 0.6, max length source + 50),
// sentence by sentence (the first --lines_at_batch_1 lines) and in batches
// of each of --batch_sizes sentences sorted by length, and prints
// sentences/s and target tokens/s (output subwords, eos not counted) per
// row, then one ratio per peer: `decode tokens/s ours/huggingface: X`, ...
// (our fastest row over the peer's fastest float32 row; on a GPU the lines
// end in "(cuda)").
//
// The peers (benchmarks/decode_peers.py, in the bench venv) get our
// checkpoint, our SentencePiece pieces and our source ids, so all rows decode
// the same subwords. Checks before timing, each printing `check: PASS` or
// `check: FAIL` with what it compared (any FAIL makes the run exit 1, after
// the timed rows, so that one GPU run still gives every figure):
// - MarianMT's log-probabilities against ours, teacher forced on the
//   references of the first --logprob_check_lines lines (--max_logprob_diff);
// - each float32 peer's batched translations against ours: identical lines
//   counted (float reordering may make a few differ), BLEU against
//   --reference within --max_bleu_gap of ours, and at least --min_agreement
//   of the lines identical for CTranslate2 and the PyTorch peer (both run
//   our search rule), at most --max_disagreement differing for MarianMT.
// Every row first decodes --warmup sentences untimed (the same ones on every
// side); with --passes=N every row runs N times, in turn, and keeps its
// fastest time. On the CPU each peer runs in its own process once per OpenMP
// wait policy of --peer_wait_policies (PASSIVE and ACTIVE: which is faster
// depends on the library and the machine) and each of its rows keeps the
// fastest.
//
//
// Every side ranks hypotheses by --length_penalty (power: steps^alpha, what
// CTranslate2 and Hugging Face compute, so that CTranslate2's float32 lines
// must equal ours on --min_agreement of the lines; gnmt: our default). On
// the CPU, CTranslate2's configurations (back end, packed GEMM, ISA, wait
// policy, compute type, threads) are first timed on --ct2_search_lines lines
// and the fastest of each compute family (float32; int8 or int8_float32)
// runs its rows; a second search at batch 1 (--ct2_search_lines_at_batch_1
// lines) picks the setup of its batch-1 rows. Rows ours_int8 decode with
// the decoder's products in int8 (--quantize=int8 at load), checked
// against ours (BLEU within --int8_max_bleu_gap); with --memory each side's
// peak memory (its own process) and the model's size on disk are printed. On a GPU, rows
// ours_bf16 decode in bf16 (--dtype=bf16), checked against ours (BLEU within
// --bf16_max_bleu_gap). With --shortlist=FILE, rows ours_shortlist and
// ours_int8_shortlist decode with that vocabulary shortlist, checked against
// the same precision without it. Every variant of ours is checked before its
// ratios count. The last lines: `decode tokens/s ours_int8/ours_f32: X`
// (batched), `decode tokens/s ours_int8/ctranslate2_int8: Y`, then the bf16
// and shortlist ratios.
//
// --random_base adds a Transformer-base-sized model with random weights (6+6
// layers, d_model 512, --random_vocab pieces) decoding --random_sentences
// random sources of --random_source_length ids for exactly
// --random_steps steps (end of sentence disabled on every side), at the same
// batch sizes: the same work for everyone whatever the weights.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "benchmarks/random_transformer.h"
#include "core/config/device_setting.h"
#include "core/cpu_features.h"
#include "core/cuda/runtime.h"
#include "core/data/line_reader.h"
#include "core/environment_report.h"
#include "core/metrics/bleu.h"
#include "core/op_profile.h"
#include "core/paths.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "core/thread_pool.h"
#include "ops/fill/fill.h"
#include "runtime/decode/beam_search.h"
#include "runtime/decode/length_penalty.h"
#include "runtime/decode/search.h"
#include "runtime/decode/shortlist_file.h"
#include "tasks/common/quantized_model.h"
#include "tasks/common/seq2seq_decoding.h"
#include "tasks/common/trained_model.h"
#include "tests/util/shell_quote.h"
#include "tools/cpp/runfiles/runfiles.h"

ABSL_FLAG(std::string, model, "work/m30k",
          "A work directory of `train` or a checkpoint (relative: to where bazel runs)");
ABSL_FLAG(std::string, input, "../shared/data/multi30k/test_2016_flickr.en.gz",
          "Source sentences, one a line (relative: to the project root)");
ABSL_FLAG(std::string, reference, "../shared/data/multi30k/test_2016_flickr.de.gz",
          "References of --input, one a line, for the BLEU check (relative: to the project root)");
ABSL_FLAG(std::string, device, "cpu",
          "Where every side decodes: cpu, cuda (= cuda:0), cuda:N or auto");
ABSL_FLAG(int, threads, 2,
          "CPU threads on every side (ours, CTranslate2's intra_threads, torch)");
ABSL_FLAG(std::string, batch_sizes, "32",
          "Sentences per batch of the batched rows, comma-separated (a row per size)");
ABSL_FLAG(int, lines_at_batch_1, 0,
          "Rows at batch 1 translate only the first N lines (0: all)");
ABSL_FLAG(int, beam, 0, "Beam size; 0: the checkpoint's decode section");
ABSL_FLAG(double, alpha, -1, "Length penalty alpha; < 0: the checkpoint's");
ABSL_FLAG(int, max_lines, 0, "Translate only the first N lines (0: all)");
ABSL_FLAG(int, warmup, 16, "Sentences each row decodes untimed first");
ABSL_FLAG(std::string, peers, "default",
          "Peer rows (decode_peers.py: hf_float32, hf_bfloat16, ct2_float32, ct2_int8, torch), "
          "each timed at batch 1 and at every batch size; empty: ours only; default: "
          "ct2_float32,ct2_int8,torch,hf_float32 on the CPU, "
          "hf_float32,hf_bfloat16,torch,ct2_float32 on a GPU");
ABSL_FLAG(std::string, peer_python, "/opt/transformer-bench-venv/bin/python3",
          "Python with torch, transformers and ctranslate2 (tools/setup_bench.sh)");
ABSL_FLAG(double, max_disagreement, 0.2,
          "check: FAIL if more than this share of MarianMT's float32 lines differ from ours");
ABSL_FLAG(double, min_agreement, 0.99,
          "check: FAIL if fewer than this share of CTranslate2's float32 lines (and the PyTorch "
          "peer's) equal ours: both run our search rule (see --length_penalty)");
ABSL_FLAG(std::string, length_penalty, "power",
          "The length penalty every side ranks by (runtime/decode/length_penalty.h): power "
          "(steps^alpha, what CTranslate2, Hugging Face and fairseq compute, so that their "
          "translations can equal ours) or gnmt (((5 + steps) / 6)^alpha, our default, which only "
          "the PyTorch peer can follow)");
ABSL_FLAG(int, ct2_search_lines, 200,
          "CTranslate2's configurations (back end, packed GEMM, ISA, OpenMP wait policy, compute "
          "type, threads) are timed on the first N lines at the first batch size, and the fastest "
          "of each compute family runs its rows; 0: its defaults only (always so on a GPU)");
ABSL_FLAG(int, ct2_search_lines_at_batch_1, 24,
          "CTranslate2's configurations are also timed at batch 1 on the first N lines, and the "
          "fastest of each compute family runs its batch-1 rows (a setup fast in batches may be "
          "slow for one sentence); 0: the batch-1 rows run in the batched rows' setup");
ABSL_FLAG(bool, ours_int8, true,
          "Also time ours with the decoder's products in int8 (decode.quantize INT8, quantized "
          "at load), rows ours_int8, on the CPU");
ABSL_FLAG(bool, ours_bf16, true,
          "Also time ours decoding in bf16 (decode.dtype bf16), rows ours_bf16: on a GPU 16-bit "
          "weights, activations and caches with f32 log-probabilities; on the CPU bf16 products "
          "(ops/bf16_linear) over f32 activations");
ABSL_FLAG(bool, ours_cuda_graphs, true,
          "On a GPU, also time ours with its steps replayed as CUDA graphs (rows ours_graphs: "
          "decode.cuda_graphs; the same translations, checked) against its eager launches");
ABSL_FLAG(double, bf16_max_bleu_gap, 0.3,
          "check: FAIL if ours_bf16's batched BLEU is further than this from ours (f32)");
ABSL_FLAG(double, int8_max_bleu_gap, 0.3,
          "check: FAIL if ours_int8's batched BLEU is further than this from ours (f32)");
ABSL_FLAG(std::string, shortlist, "",
          "A vocabulary shortlist file of the model (the shortlist command's output): adds rows "
          "ours_shortlist and ours_int8_shortlist (ours with the shortlist, f32 and int8) and "
          "checks their BLEU; empty: none");
ABSL_FLAG(int, shortlist_frequent, -1,
          "With --shortlist: frequent targets per batch (-1: the checkpoint's "
          "decode.shortlist_frequent)");
ABSL_FLAG(int, shortlist_best, -1,
          "With --shortlist: targets per source token (-1: the checkpoint's "
          "decode.shortlist_best)");
ABSL_FLAG(double, shortlist_max_bleu_gap, 0.5,
          "check: FAIL if a shortlist row's batched BLEU is further than this from the same "
          "precision's row without it");
ABSL_FLAG(bool, memory, true,
          "Print each side's peak resident memory (its own process decoding the batched rows) "
          "and the model's size on disk, f32 and int8");
ABSL_FLAG(std::string, memory_probe, "",
          "Internal (--memory): f32 or int8: load, decode the batched rows once, print the "
          "process's peak resident memory and exit");
ABSL_FLAG(double, max_bleu_gap, 0.5,
          "check: FAIL if a float32 peer's BLEU is further than this from ours");
ABSL_FLAG(int, logprob_check_lines, 8,
          "Sources whose MarianMT log-probabilities are compared with ours (0: none)");
ABSL_FLAG(double, max_logprob_diff, 1e-4,
          "check: FAIL if a MarianMT log-probability differs from ours by more");
ABSL_FLAG(bool, ignore_eos, false,
          "The trained model too decodes every source to its maximum length on every side (eos "
          "disabled): all outputs of a source have one length, so MarianMT's length penalty "
          "ranks as ours does and its outputs should equal ours");
ABSL_FLAG(int, passes, 1, "Passes over the timed rows; each row keeps its fastest");
ABSL_FLAG(std::string, peer_wait_policies, "PASSIVE,ACTIVE",
          "OMP_WAIT_POLICY values each peer is timed under on the CPU, one process each "
          "('default': the library's own); each peer row keeps its fastest. A GPU run uses "
          "'default' only");
ABSL_FLAG(std::string, ours_inter_threads, "1,2",
          "decode.inter_threads values our batched rows are timed at where the model allows "
          "them (the CPU: batches side by side, each on one thread, as CTranslate2's "
          "inter_threads); each row keeps its fastest. Batch-1 rows (latency) run 1");
ABSL_FLAG(std::string, kv_cache_dtype, "auto",
          "Our trained-model rows' attention key/value caches (decode.kv_cache_dtype): auto (f16 for "
          "ours_int8 on the CPU, else the decoding dtype), f32 or f16");
ABSL_FLAG(bool, profile_ops, false,
          "Print where our rows' time goes, op by op (also with TFM_PROFILE_OPS=1)");
ABSL_FLAG(bool, random_base, false,
          "Also time a Transformer-base-sized model with random weights for a fixed number of "
          "steps (see the file's comment)");
ABSL_FLAG(int, random_vocab, 32000, "--random_base: its vocabulary");
ABSL_FLAG(int, random_sentences, 256, "--random_base: sources decoded by the batched rows");
ABSL_FLAG(std::string, random_batch_sizes, "",
          "--random_base: its batched rows' sizes (empty: --batch_sizes); with more "
          "--random_sentences, batches up to the GPU's best");
ABSL_FLAG(int, random_lines_at_batch_1, 16, "--random_base: sources decoded at batch 1");
ABSL_FLAG(int, random_source_length, 24, "--random_base: ids per source, eos included");
ABSL_FLAG(int, random_steps, 64, "--random_base: steps every hypothesis decodes");

namespace tfm {
namespace {

using Outputs = std::vector<std::vector<int>>;

struct Row {
  std::string side;  // "ours", "ours_int8", "ct2_float32", "hf_bfloat16", ...
  int batch_size = 1;
  double seconds = 0;
  Outputs outputs;
  std::string info;  // A peer's versions and settings.

  int64_t Tokens() const {
    int64_t tokens = 0;
    for (const std::vector<int>& output : outputs) tokens += static_cast<int64_t>(output.size());
    return tokens;
  }
  double TokensPerSecond() const { return Tokens() / seconds; }
};

// How a peer's process runs: its environment (the `env ...` prefix) and the
// decode_peers.py arguments added to the section's command.
struct PeerSetup {
  std::string environment;
  std::string arguments;
  std::string description;  // For the settings lines.
};

// Per peer: the setup of its batched rows, and of its batch-1 rows where
// a search at batch 1 chose one.
struct PeerSetups {
  std::map<std::string, PeerSetup> batched, at_batch_1;
};

// A way of ours to decode beside the default: rows named `side`; `set`
// turns it on (true) and back off (false).
struct OursVariant {
  std::string side;
  std::function<absl::Status(bool on)> set;
};

// Rows ours_graphs: `model`'s steps replayed as CUDA graphs
// (decode.cuda_graphs), against its eager launches.
OursVariant CudaGraphsVariant(Transformer* model) {
  return {"ours_graphs", [model](bool on) -> absl::Status {
            model->SetCudaGraphs(on);
            return absl::OkStatus();
          }};
}

// What one part of the benchmark times: a model and its sources, how ours
// searches them, and the command that runs the peers on the same.
struct Section {
  std::string title;
  IncrementalModel* model = nullptr;
  SearchOptions search;
  Outputs sources;
  std::string peer_command;  // decode_peers.py without --rows.
  int lines_at_batch_1 = 0;  // 0: all.
  // Ours' other ways to decode, each timed in rows of its own after ours'
  // default (f32, the whole vocabulary): ours_int8 (CPU), ours_bf16 (GPU),
  // ours_shortlist, ours_int8_shortlist.
  std::vector<OursVariant> variants;
  // Peers that run in a chosen setup (CTranslate2 after its configuration
  // search) instead of once per --peer_wait_policies value.
  PeerSetups peer_setups;
};

// What the peers need to know of a model beside its model.safetensors.
struct PeerModel {
  std::string checkpoint_dir;
  int encoder_layers = 0, decoder_layers = 0, heads = 0;
  int pad = 0, bos = 0, eos = 0, unk = 0;
  float layer_norm_epsilon = 0;
};

using ::tfm::testing::ShellQuote;

// The CPU's brand string from CPUID (what /proc/cpuinfo calls "model name").
const std::string& CpuModel() { return HostCpuFeatures().brand; }

absl::StatusOr<std::vector<std::string>> ReadLines(const std::string& path, int max_lines) {
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path, 1 << 20));
  std::vector<std::string> lines;
  std::string line;
  bool too_long = false;
  while (max_lines <= 0 || static_cast<int>(lines.size()) < max_lines) {
    TFM_ASSIGN_OR_RETURN(const bool more, reader->Next(&line, &too_long));
    if (!more) break;
    lines.push_back(line);
  }
  return lines;
}

absl::Status WriteIds(const std::string& path, const Outputs& ids) {
  std::ofstream out(path);
  for (const std::vector<int>& line : ids) out << absl::StrJoin(line, " ") << "\n";
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<Outputs> ReadIds(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no peer outputs at ", path));
  Outputs ids;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    ids.emplace_back();
    for (absl::string_view token : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      int id = 0;
      if (!absl::SimpleAtoi(token, &id)) {
        return absl::DataLossError(absl::StrCat(path, ":", number, ": bad id '", token, "'"));
      }
      ids.back().push_back(id);
    }
  }
  return ids;
}

// The sources a row at `batch_size` decodes: the first `lines_at_batch_1`
// at batch 1 (when > 0), else all.
absl::Span<const std::vector<int>> RowSources(const Section& section, int batch_size) {
  size_t count = section.sources.size();
  if (batch_size == 1 && section.lines_at_batch_1 > 0) {
    count = std::min(count, static_cast<size_t>(section.lines_at_batch_1));
  }
  return absl::MakeConstSpan(section.sources.data(), count);
}

// Ours at one batch size: the first --warmup sources untimed, then the
// row's sources. `side` names the row (a variant's, e.g. ours_bf16).
absl::StatusOr<Row> RunOurs(const Section& section, int batch_size,
                            const std::string& side = "ours") {
  std::vector<int> inter_values = {1};
  if (batch_size > 1 && section.model->SearchesBatchesSideBySide()) {
    inter_values.clear();
    for (absl::string_view value :
         absl::StrSplit(absl::GetFlag(FLAGS_ours_inter_threads), ',', absl::SkipEmpty())) {
      int inter = 0;
      if (!absl::SimpleAtoi(value, &inter) || inter < 1) {
        return absl::InvalidArgumentError(absl::StrCat("--ours_inter_threads: bad value '", value,
                                                       "' (positive integers, comma-separated)"));
      }
      inter_values.push_back(inter);
    }
  }
  const absl::Span<const std::vector<int>> sources = RowSources(section, batch_size);
  const size_t warmup = std::min(sources.size(), static_cast<size_t>(absl::GetFlag(FLAGS_warmup)));
  const bool profile = absl::GetFlag(FLAGS_profile_ops) || OpProfilingEnabled();
  std::optional<Row> fastest;
  std::string timings;
  for (const int inter : inter_values) {
    SearchOptions options = section.search;
    options.batch_size = batch_size;
    options.inter_threads = inter;
    BeamSearch search(options);
    TFM_RETURN_IF_ERROR(search.Search(*section.model, sources.subspan(0, warmup)).status());
    if (profile) {
      SetOpProfiling(true);
      ResetOpProfile();
    }
    // The results are on the host when Search returns: a GPU's work is in.
    const absl::Time start = absl::Now();
    TFM_ASSIGN_OR_RETURN(std::vector<NBestList> results, search.Search(*section.model, sources));
    Row row{side, batch_size, absl::ToDoubleSeconds(absl::Now() - start)};
    for (const NBestList& list : results) row.outputs.push_back(list.front().tokens);
    if (profile) {
      std::cout << "where " << side << " at batch " << batch_size << " (inter_threads " << inter
                << ") spends its time, op by op:\n"
                << OpProfileReport(row.seconds) << "\n";
    }
    absl::StrAppendFormat(&timings, "%s%d: %.3f s", timings.empty() ? "" : ", ", inter,
                          row.seconds);
    // Every setting must translate alike (the search promises it).
    if (fastest.has_value() && row.outputs != fastest->outputs) {
      return absl::InternalError(absl::StrCat(side, " at batch ", batch_size, ": inter_threads ",
                                              inter, " translated differently"));
    }
    if (!fastest.has_value() || row.seconds < fastest->seconds) fastest = std::move(row);
  }
  if (inter_values.size() > 1) {
    std::cout << side << " at batch " << batch_size << ", seconds by inter_threads: " << timings
              << "\n";
  }
  return *std::move(fastest);
}

// What `command` (a shell line) prints on stdout; an error if it fails.
absl::StatusOr<std::string> RunCommand(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("cannot run: " + command);
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  if (pclose(pipe) != 0) {
    return absl::InternalError(
        absl::StrCat("failed (a peer: run tools/setup_bench.sh?): ", command));
  }
  return out;
}

// The peer rows `rows` (e.g. "ct2_float32@1,torch@32"), one process. A row
// the peer cannot run here (it prints `skip`, the row and why) is reported
// and left out.
absl::StatusOr<std::vector<Row>> RunPeers(const std::string& command, const std::string& rows) {
  TFM_ASSIGN_OR_RETURN(const std::string out,
                       RunCommand(absl::StrCat(command, " --rows ", rows)));
  // One line per row: row \t batch size \t seconds \t outputs path \t info.
  std::vector<Row> result;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (f.size() == 3 && f[0] == "skip") {
      std::cout << "peer row " << f[1] << " not run: " << f[2] << "\n";
      continue;
    }
    Row row;
    if (f.size() != 5 || !absl::SimpleAtoi(f[1], &row.batch_size) ||
        !absl::SimpleAtod(f[2], &row.seconds)) {
      return absl::DataLossError(absl::StrCat("the peers printed: ", line));
    }
    row.side = f[0].substr(0, f[0].find('@'));
    TFM_ASSIGN_OR_RETURN(row.outputs, ReadIds(f[3]));
    row.info = f[4];
    result.push_back(std::move(row));
  }
  return result;
}

// The lines (0-based) where `peer` differs from `ours`; prints the count.
absl::StatusOr<std::vector<size_t>> DifferingLines(const Row& peer, const Row& ours) {
  if (peer.outputs.size() != ours.outputs.size()) {
    return absl::DataLossError(absl::StrCat(peer.side, " gave ", peer.outputs.size(),
                                            " outputs for ", ours.outputs.size(), " sources"));
  }
  std::vector<size_t> differ;
  for (size_t i = 0; i < ours.outputs.size(); ++i) {
    if (peer.outputs[i] != ours.outputs[i]) differ.push_back(i);
  }
  std::cout << absl::StrFormat("%s at batch %d: %d of %d translations identical to %s, %d differ\n",
                               peer.side, peer.batch_size, ours.outputs.size() - differ.size(),
                               ours.outputs.size(), ours.side, differ.size());
  return differ;
}

// Prints the first `count` of the lines `differ`, ours and the peer's.
absl::Status PrintDifferingLines(const std::vector<size_t>& differ, size_t count,
                                 const Row& peer, const Row& ours, const Tokenizer& tokenizer) {
  for (size_t k = 0; k < differ.size() && k < count; ++k) {
    const size_t i = differ[k];
    TFM_ASSIGN_OR_RETURN(const std::string a, tokenizer.Decode(ours.outputs[i]));
    TFM_ASSIGN_OR_RETURN(const std::string b, tokenizer.Decode(peer.outputs[i]));
    std::cout << absl::StrFormat("  line %d\n    %s: %s\n    %s: %s\n", i + 1, ours.side, a,
                                 peer.side, b);
  }
  return absl::OkStatus();
}

// Corpus BLEU of `outputs` (one per encoded source) against the references
// of the input lines (an input line without a source scores as empty).
absl::StatusOr<double> Bleu(const Outputs& outputs, const EncodedLines& encoded,
                            const Tokenizer& tokenizer,
                            const std::vector<std::string>& references) {
  std::vector<std::string> hypotheses;
  for (int index : encoded.source_of) {
    if (index < 0) {
      hypotheses.emplace_back();
      continue;
    }
    TFM_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(outputs[index]));
    hypotheses.push_back(std::move(text));
  }
  TFM_ASSIGN_OR_RETURN(const BleuScore score, CorpusBleu(hypotheses, {references}));
  return score.score;
}

// The checkpoint's decode settings as the rows use them: beam search, one
// output each, with --beam and --alpha applied; InvalidArgument for bad ones.
absl::StatusOr<SearchOptions> SearchSettings(const TrainedModel& trained) {
  config::DecodeConfig decode = trained.config.decode();
  decode.set_strategy(config::DecodeConfig::BEAM);
  decode.set_nbest(1);
  if (absl::GetFlag(FLAGS_beam) > 0) decode.set_beam_size(absl::GetFlag(FLAGS_beam));
  if (absl::GetFlag(FLAGS_alpha) >= 0) decode.set_length_penalty_alpha(absl::GetFlag(FLAGS_alpha));
  TFM_RETURN_IF_ERROR(CreateSearchStrategy(decode).status());
  return SearchOptions::FromConfig(decode);
}

// A new folder under `parent` (or /tmp) with what the peers read: the
// pieces by id (vocab.txt) and the source ids (sources.txt).
absl::StatusOr<std::string> WritePeerInputs(const std::vector<std::string>& pieces,
                                            const Outputs& sources) {
  char dir_template[] = "/tmp/decode_bench.XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return absl::InternalError("mkdtemp failed");
  const std::string work = dir_template;
  {
    std::ofstream vocab(work + "/vocab.txt");
    for (const std::string& piece : pieces) vocab << piece << "\n";
  }
  TFM_RETURN_IF_ERROR(WriteIds(work + "/sources.txt", sources));
  return work;
}

// The command that runs benchmarks/decode_peers.py on `model` and the
// inputs in `work` with our search settings; RunPeers adds the rows.
absl::StatusOr<std::string> PeerCommand(const char* argv0, const PeerModel& model,
                                        const SearchOptions& search, const std::string& work,
                                        const Device& device, int lines_at_batch_1) {
  std::string error;
  std::unique_ptr<bazel::tools::cpp::runfiles::Runfiles> runfiles(
      bazel::tools::cpp::runfiles::Runfiles::Create(argv0, &error));
  if (runfiles == nullptr) return absl::NotFoundError(absl::StrCat("runfiles: ", error));
  return absl::StrFormat(
      "%s %s --checkpoint %s --work %s --encoder_layers %d --decoder_layers %d --heads %d "
      "--pad %d --bos %d --eos %d --unk %d --beam %d --alpha %.17g --max_length_offset %d "
      "--layer_norm_epsilon %.9g --threads %d --warmup %d --device %s --lines_at_1 %d "
      "--length_penalty %s%s",
      ShellQuote(absl::GetFlag(FLAGS_peer_python)),
      ShellQuote(runfiles->Rlocation("transformer/benchmarks/decode_peers.py")),
      ShellQuote(model.checkpoint_dir), work, model.encoder_layers, model.decoder_layers,
      model.heads, model.pad, model.bos, model.eos, model.unk, search.beam_size,
      search.length_penalty_alpha, search.max_length_offset, model.layer_norm_epsilon,
      absl::GetFlag(FLAGS_threads), absl::GetFlag(FLAGS_warmup), device.ToString(),
      lines_at_batch_1, LengthPenaltyKindName(search.length_penalty),
      search.ignore_eos ? " --ignore_eos" : "");
}

// Prints one check's line; false when it failed.
bool Check(bool pass, const std::string& what) {
  std::cout << "check: " << (pass ? "PASS " : "FAIL ") << what << "\n";
  return pass;
}

// MarianMT's float32 log-probabilities against ours, teacher forced on the
// references (subwords with eos) of the first --logprob_check_lines input
// lines that have both, one sentence at a time (no padding): every
// vocabulary entry at every position. Prints the largest difference and the
// check.
absl::StatusOr<bool> CheckLogProbs(Transformer& model, const EncodedLines& sources,
                                   const EncodedLines& targets, const std::string& peer_command,
                                   const std::string& work) {
  const size_t wanted = static_cast<size_t>(absl::GetFlag(FLAGS_logprob_check_lines));
  std::vector<float> ours_log_probs;
  size_t count = 0, positions = 0;
  {
    std::ofstream pairs(work + "/logprob_inputs.txt");
    for (size_t line = 0; line < sources.source_of.size() && count < wanted; ++line) {
      if (sources.source_of[line] < 0 || targets.source_of[line] < 0) continue;
      ++count;
      Batch batch;
      batch.size = 1;
      batch.source = sources.sources[sources.source_of[line]];
      batch.source_length = static_cast<int>(batch.source.size());
      batch.source_lengths = {batch.source_length};
      batch.target = targets.sources[targets.source_of[line]];
      positions += batch.target.size();
      batch.target_length = static_cast<int>(batch.target.size());
      batch.target_lengths = {batch.target_length};
      TFM_ASSIGN_OR_RETURN(const Tensor log_probs, model.LogProbabilities(batch));
      TFM_ASSIGN_OR_RETURN(const Tensor host, CopyToDevice(log_probs, Device::Cpu()));
      const float* data = host.data<float>();
      ours_log_probs.insert(ours_log_probs.end(), data, data + host.num_elements());
      pairs << absl::StrJoin(batch.source, " ") << "\t" << absl::StrJoin(batch.target, " ")
            << "\n";
    }
  }
  const std::string full = peer_command + " --logprobs";
  if (std::system(full.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("the MarianMT log-probabilities failed: ", full));
  }
  const std::string path = work + "/hf_logprobs.f32";
  std::ifstream in(path, std::ios::binary);
  std::vector<float> theirs(ours_log_probs.size());
  in.read(reinterpret_cast<char*>(theirs.data()),
          static_cast<std::streamsize>(theirs.size() * sizeof(float)));
  if (!in || in.peek() != EOF) {
    return absl::DataLossError(absl::StrCat(path, ": not ", theirs.size(),
                                            " floats (ours' positions x vocabulary)"));
  }
  double worst = 0;
  for (size_t i = 0; i < theirs.size(); ++i) {
    // Both -infinity (a token neither allows) agree.
    if (ours_log_probs[i] == theirs[i]) continue;
    worst = std::max(worst, std::abs(static_cast<double>(ours_log_probs[i]) - theirs[i]));
  }
  const double limit = absl::GetFlag(FLAGS_max_logprob_diff);
  return Check(worst <= limit,
               absl::StrFormat("huggingface logits parity: max |log p ours - log p huggingface| "
                               "= %.3g over %d log-probabilities (%d target positions of %d "
                               "sentences, teacher forced on the references; limit %g)",
                               worst, theirs.size(), positions, count, limit));
}

// The `env ...` prefix that runs a peer under OpenMP wait policy `policy`
// ("default": the library's own).
std::string WaitPolicyEnvironment(const std::string& policy) {
  return policy == "default" ? "env -u OMP_WAIT_POLICY "
                             : absl::StrCat("env OMP_WAIT_POLICY=", ShellQuote(policy), " ");
}

// The command that runs `peer`'s rows (at batch 1 when `at_batch_1`): in
// its chosen setup if it has one, else under `policy`.
std::string PeerProcess(const Section& section, const std::string& peer,
                        const std::string& policy, bool at_batch_1 = false) {
  const std::map<std::string, PeerSetup>& setups =
      at_batch_1 && section.peer_setups.at_batch_1.count(peer) > 0 ? section.peer_setups.at_batch_1
                                                                   : section.peer_setups.batched;
  auto setup = setups.find(peer);
  if (setup == setups.end()) {
    return WaitPolicyEnvironment(policy) + section.peer_command;
  }
  return setup->second.environment + section.peer_command + setup->second.arguments;
}

// Whether a peer runs our search rule exactly (so its float32 lines must
// equal ours but for float rounding): CTranslate2 and the PyTorch peer;
// MarianMT's generate has rules of its own.
bool RunsOurSearchRule(const std::string& peer) {
  return peer == "ct2_float32" || peer == "torch";
}

// The checks before timing: the float32 peers' translations at
// `ours_batched`'s batch size against ours, each peer in its own process
// (in its chosen setup, if any). False when one failed; a failed check
// prints every differing line, a passed one the first 3.
absl::StatusOr<bool> CheckPeersAgree(const Section& section, const std::vector<std::string>& peers,
                                     const Row& ours_batched, const Tokenizer& tokenizer,
                                     const EncodedLines& encoded,
                                     const std::vector<std::string>& references) {
  std::vector<std::string> checked_peers;
  for (const std::string& peer : peers) {
    if (absl::StrContains(peer, "float32") || peer == "torch") checked_peers.push_back(peer);
  }
  if (checked_peers.empty()) return true;
  std::cout << "\nagreement before timing (same sources, batched):\n";
  TFM_ASSIGN_OR_RETURN(const double ours_bleu,
                       Bleu(ours_batched.outputs, encoded, tokenizer, references));
  bool pass = true;
  for (const std::string& name : checked_peers) {
    TFM_ASSIGN_OR_RETURN(
        const std::vector<Row> checked,
        RunPeers(PeerProcess(section, name, "default"),
                 absl::StrCat(name, "@", ours_batched.batch_size)));
    for (const Row& peer : checked) {
      TFM_ASSIGN_OR_RETURN(const std::vector<size_t> differ, DifferingLines(peer, ours_batched));
      TFM_ASSIGN_OR_RETURN(const double bleu, Bleu(peer.outputs, encoded, tokenizer, references));
      const int lines = static_cast<int>(ours_batched.outputs.size());
      const int same = lines - static_cast<int>(differ.size());
      const double gap = absl::GetFlag(FLAGS_max_bleu_gap);
      const bool exact = RunsOurSearchRule(peer.side);
      const double least_same =
          exact ? absl::GetFlag(FLAGS_min_agreement) : 1 - absl::GetFlag(FLAGS_max_disagreement);
      const bool peer_pass = std::abs(bleu - ours_bleu) <= gap && same >= least_same * lines;
      TFM_RETURN_IF_ERROR(PrintDifferingLines(differ, peer_pass ? 3 : differ.size(), peer,
                                              ours_batched, tokenizer));
      pass &= Check(peer_pass,
                    absl::StrFormat("%s float32 vs ours: %d of %d lines identical (%.1f%%, at "
                                    "least %.0f%% required%s); BLEU %.2f vs ours %.2f (within "
                                    "%.2f required)",
                                    peer.side, same, lines, 100.0 * same / lines,
                                    100 * least_same, exact ? ": it runs our search rule" : "",
                                    bleu, ours_bleu, gap));
    }
  }
  return pass;
}

// CTranslate2's CPU back end settings, environment variables it reads once
// per process (src/cpu/backend.cc, cpu_isa.cc of 4.8): which GEMM library
// (Intel MKL by default on Intel CPUs, oneDNN elsewhere), whether MKL's
// weights are packed, and the ISA of its own kernels (AVX2 at most unless
// forced). None is assumed faster: on a Zen 5, MKL forced on with packed
// GEMM ran 2.4 times slower than its defaults.
constexpr const char* kCt2Backends[] = {"", "CT2_USE_MKL=1 ", "CT2_USE_MKL=1 CT2_PACKED_GEMM=0 ",
                                        "CT2_USE_MKL=0 "};
constexpr const char* kCt2Isas[] = {"", "CT2_FORCE_CPU_ISA=AVX512 "};

// What CTranslate2 said it runs (CT2_VERBOSE=1 on stderr, written to
// `log`): its ISA and GEMM back ends, "; "-joined.
std::string Ct2BackendReport(const std::string& log) {
  std::ifstream in(log);
  std::vector<std::string> parts;
  std::string line;
  while (std::getline(in, line)) {
    for (const char* key : {"Selected ISA:", "SGEMM backend:", "GEMM_S8 backend:"}) {
      const size_t at = line.find(key);
      if (at != std::string::npos) parts.push_back(line.substr(at));
    }
  }
  return parts.empty() ? "no back end report in " + log : absl::StrJoin(parts, "; ");
}

// CTranslate2's configurations on the first `lines` sources at
// `batch_size` (decode_peers.py --ct2_search): every back end of
// kCt2Backends x kCt2Isas x wait policy `policies` in a process of its own,
// each trying the compute types and thread settings; prints one line per
// configuration and the fastest (target tokens/s) of each compute family,
// whose setups it returns: "ct2_float32", "ct2_int8".
absl::StatusOr<std::map<std::string, PeerSetup>> SearchCt2Configurations(
    const Section& section, int batch_size, int lines, const std::vector<std::string>& policies,
    const std::string& work) {
  std::cout << absl::StrFormat(
      "\nCTranslate2's configurations: the first %d lines at batch %d, each after the same "
      "%d untimed sentences (timings on a shared machine: compare neighbours only)\n",
      lines, batch_size, absl::GetFlag(FLAGS_warmup));
  struct Best {
    double rate = 0;
    PeerSetup setup;
  };
  std::map<std::string, Best> best;
  int process = 0;
  for (const char* backend : kCt2Backends) {
    for (const char* isa : kCt2Isas) {
      for (const std::string& policy : policies) {
        const std::string environment = WaitPolicyEnvironment(policy) + backend + isa;
        const std::string log =
            absl::StrCat(work, "/ct2_search_", batch_size, "_", process++, ".log");
        TFM_ASSIGN_OR_RETURN(
            const std::string out,
            RunCommand(absl::StrCat(environment, "CT2_VERBOSE=1 ", section.peer_command,
                                    " --max_sources ", lines, " --ct2_search ", batch_size,
                                    " 2>", log)));
        const std::string settings = absl::StrCat(
            backend[0] == '\0' && isa[0] == '\0' ? "defaults " : "", backend, isa,
            "OMP_WAIT_POLICY ", policy);
        const std::string report = Ct2BackendReport(log);
        for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
          const std::vector<std::string> f = absl::StrSplit(line, '\t');
          int inter = 0, intra = 0;
          double seconds = 0, tokens = 0;
          if (f.size() != 7 || f[0] != "ct2config" || !absl::SimpleAtoi(f[3], &inter) ||
              !absl::SimpleAtoi(f[4], &intra) || !absl::SimpleAtod(f[5], &seconds) ||
              !absl::SimpleAtod(f[6], &tokens) || seconds <= 0) {
            return absl::DataLossError(absl::StrCat("the CTranslate2 search printed: ", line));
          }
          const std::string described = absl::StrFormat(
              "%s (reported %s), inter_threads %d, intra_threads %d, %s", f[1], f[2], inter,
              intra, settings);
          std::cout << absl::StrFormat("  %-100s %6.2f s %8.1f tok/s\n    back end: %s\n",
                                       described, seconds, tokens / seconds, report);
          const std::string family = f[1] == "float32" ? "ct2_float32" : "ct2_int8";
          Best& kept = best[family];
          if (tokens / seconds > kept.rate) {
            kept.rate = tokens / seconds;
            kept.setup.environment = environment;
            kept.setup.arguments = absl::StrCat(
                " --ct2_inter_threads ", inter, " --ct2_intra_threads ", intra, " --peak_rss",
                family == "ct2_int8" ? " --ct2_int8_compute_type " + f[1] : "");
            kept.setup.description = absl::StrCat(described, "; ", report);
          }
        }
      }
    }
  }
  std::map<std::string, PeerSetup> setups;
  for (const auto& [family, kept] : best) {
    std::cout << absl::StrFormat(
        "fastest %s at batch %d: %s (%.1f tok/s): its %s run so%s\n", family, batch_size,
        kept.setup.description, kept.rate, batch_size == 1 ? "batch-1 rows" : "rows",
        batch_size == 1 ? "" : " (batch 1: inter_threads 1, intra_threads --threads)");
    setups[family] = kept.setup;
  }
  return setups;
}

// Adds `row` to `rows`, or keeps the faster of it and the row already there
// for the same side and batch size.
void KeepFastest(Row row, std::vector<Row>* rows) {
  for (Row& kept : *rows) {
    if (kept.side == row.side && kept.batch_size == row.batch_size) {
      if (row.seconds < kept.seconds) kept = std::move(row);
      return;
    }
  }
  rows->push_back(std::move(row));
}

// `variant`'s rows at each batch size; the variant is off again after,
// whatever fails.
absl::Status RunVariantRows(const Section& section, const OursVariant& variant,
                            const std::vector<int>& batch_sizes, std::vector<Row>* rows) {
  const auto run = [&]() -> absl::Status {
    TFM_RETURN_IF_ERROR(variant.set(true));
    for (int size : batch_sizes) {
      TFM_ASSIGN_OR_RETURN(Row ours, RunOurs(section, size, variant.side));
      KeepFastest(std::move(ours), rows);
    }
    return absl::OkStatus();
  };
  absl::Status status = run();
  status.Update(variant.set(false));
  return status;
}

// The timed rows: ours at each batch size, then each peer's. Each peer runs
// in its own process per OpenMP wait policy (so no library's spinning
// workers run beside another's rows), and every row keeps its fastest time
// over the policies and the passes (load from other jobs comes and goes, and
// rows run one after another).
absl::StatusOr<std::vector<Row>> RunTimedRows(const Section& section,
                                              const std::vector<int>& batch_sizes,
                                              const std::vector<std::string>& peers,
                                              const std::vector<std::string>& policies) {
  std::vector<Row> rows;
  for (int pass = 0; pass < std::max(1, absl::GetFlag(FLAGS_passes)); ++pass) {
    for (int size : batch_sizes) {
      TFM_ASSIGN_OR_RETURN(Row ours, RunOurs(section, size));
      KeepFastest(std::move(ours), &rows);
    }
    for (const OursVariant& variant : section.variants) {
      TFM_RETURN_IF_ERROR(RunVariantRows(section, variant, batch_sizes, &rows));
    }
    for (const std::string& peer : peers) {
      if (section.peer_setups.batched.count(peer) > 0) {
        // A peer with a chosen setup runs in it alone (its wait policy chosen
        // too); its batch-1 rows in the setup chosen at batch 1, if any.
        std::vector<std::string> single, batched;
        for (int size : batch_sizes) {
          const bool own = size == 1 && section.peer_setups.at_batch_1.count(peer) > 0;
          (own ? single : batched).push_back(absl::StrCat(peer, "@", size));
        }
        for (const bool at_batch_1 : {true, false}) {
          const std::vector<std::string>& list = at_batch_1 ? single : batched;
          if (list.empty()) continue;
          TFM_ASSIGN_OR_RETURN(std::vector<Row> timed,
                               RunPeers(PeerProcess(section, peer, "chosen", at_batch_1),
                                        absl::StrJoin(list, ",")));
          for (Row& row : timed) KeepFastest(std::move(row), &rows);
        }
        continue;
      }
      std::vector<std::string> peer_rows;
      for (int size : batch_sizes) peer_rows.push_back(absl::StrCat(peer, "@", size));
      for (const std::string& policy : policies) {
        TFM_ASSIGN_OR_RETURN(std::vector<Row> timed,
                             RunPeers(PeerProcess(section, peer, policy),
                                      absl::StrJoin(peer_rows, ",")));
        for (Row& row : timed) KeepFastest(std::move(row), &rows);
      }
    }
  }
  return rows;
}

// The machine (and GPU), our build's settings and each peer row's settings
// (its fastest wait policy may differ by batch).
void PrintSettings(const std::vector<Row>& rows, const Device& device) {
  std::cout << absl::StrFormat("\nmachine: %s, nproc %d\n", CpuModel(),
                               std::thread::hardware_concurrency());
  if (device.is_cuda()) {
    absl::StatusOr<cuda::DeviceInfo> info = cuda::GetDeviceInfo(device.index);
    if (info.ok()) {
      std::cout << absl::StrFormat(
          "gpu %s: %s (sm_%d, %d SMs, %.1f GiB), driver API %d; %s\n", device.ToString(),
          info->name, info->compute_capability, info->sm_count,
          info->memory_bytes / double{1 << 30}, info->driver_api_version,
          cuda::LibraryVersions());
    } else {
      std::cout << "gpu " << device.ToString() << ": " << info.status() << "\n";
    }
  }
  for (const auto& [label, text] : EnvironmentReport()) {
    std::cout << "ours " << label << ": " << text << "\n";
  }
  std::cout << absl::StrFormat(
      "ours: %s, ThreadPool %d threads (allocator: the line above); fp32; "
      "key/value caches: %s\n",
      device.ToString(), ThreadPool::Default()->num_threads(),
      absl::GetFlag(FLAGS_kv_cache_dtype) == "auto"
          ? std::string("auto (f16 with int8 or bf16 products on the CPU, else the decoding dtype)")
          : absl::GetFlag(FLAGS_kv_cache_dtype));
  for (const Row& row : rows) {
    if (row.info.empty()) continue;
    std::cout << row.side << " at batch " << row.batch_size << ": " << row.info << "\n";
  }
}

// The name in the ratio lines of a peer row's side, and whether it is the
// peer's float32 (headline) row.
struct PeerName {
  std::string name;
  bool headline;
};
PeerName NameOf(const std::string& side) {
  if (side == "hf_float32") return {"huggingface", true};
  if (side == "hf_bfloat16") return {"huggingface bf16", false};
  if (side == "ct2_float32") return {"ctranslate2", true};
  if (side == "ct2_int8") return {"ctranslate2 int8", false};
  return {side, side == "torch"};
}

// Our fastest row's target tokens/s over each peer side's fastest.
struct Ratio {
  std::string side;
  double value;
};

// The table of `rows` (from RunTimedRows); returns the ratios.
std::vector<Ratio> PrintResults(const std::string& title, const std::vector<Row>& rows) {
  std::cout << "\n" << title << "\n";
  std::cout << absl::StrFormat("%-19s %6s %9s %9s %10s %10s %s\n", "row", "batch", "seconds",
                               "sent/s", "tgt tok", "tgt tok/s", "same as ours (same batch)");
  std::vector<std::pair<std::string, double>> best;  // Side -> fastest tokens/s, in order.
  for (const Row& row : rows) {
    const Row* ours = nullptr;
    for (const Row& r : rows) {
      if (r.side == "ours" && r.batch_size == row.batch_size) ours = &r;
    }
    int same = 0;
    for (size_t i = 0; ours != nullptr && i < row.outputs.size() && i < ours->outputs.size();
         ++i) {
      same += row.outputs[i] == ours->outputs[i];
    }
    std::cout << absl::StrFormat("%-19s %6d %9.2f %9.1f %10d %10.1f %d/%d\n", row.side,
                                 row.batch_size, row.seconds, row.outputs.size() / row.seconds,
                                 row.Tokens(), row.TokensPerSecond(), same,
                                 ours == nullptr ? 0 : ours->outputs.size());
    auto it = std::find_if(best.begin(), best.end(), [&](const auto& b) { return b.first == row.side; });
    if (it == best.end()) {
      best.emplace_back(row.side, row.TokensPerSecond());
    } else {
      it->second = std::max(it->second, row.TokensPerSecond());
    }
  }
  std::vector<Ratio> ratios;
  if (best.empty() || best.front().first != "ours") return ratios;
  for (size_t i = 1; i < best.size(); ++i) {
    // Its own lines: PrintInt8Ratios, PrintShortlistRatios.
    if (absl::StartsWith(best[i].first, "ours_")) continue;
    // No target tokens (a model that ends every output at once) gives no ratio.
    if (best.front().second > 0 && best[i].second > 0) {
      ratios.push_back({best[i].first, best.front().second / best[i].second});
    } else {
      std::cout << "no ratio for " << best[i].first << ": a side decoded no target tokens\n";
    }
  }
  return ratios;
}

// The ratio lines: the peers' float32 rows last (huggingface, ctranslate2,
// torch), the others (bf16, int8: other arithmetic than ours) before them.
void PrintRatios(const std::string& label, const std::vector<Ratio>& ratios,
                 const Device& device) {
  const std::string where = device.is_cuda() ? " (cuda)" : "";
  std::cout << "\nratios" << label
            << ": our fastest row's target tokens/s over the peer's fastest row's\n";
  for (const Ratio& ratio : ratios) {
    if (NameOf(ratio.side).headline) continue;
    std::cout << absl::StrFormat("ours fp32 / %s (not a headline: other arithmetic)%s%s: %.2f\n",
                                 NameOf(ratio.side).name, label, where, ratio.value);
  }
  for (const char* side : {"hf_float32", "ct2_float32", "torch"}) {
    for (const Ratio& ratio : ratios) {
      if (ratio.side != side) continue;
      std::cout << absl::StrFormat("decode tokens/s ours/%s%s%s: %.2f\n", NameOf(side).name,
                                   label, where, ratio.value);
    }
  }
}

// A variant's batched row against the row it changes (`base`) at the same
// batch size: identical lines counted (the first 3 that differ printed) and
// BLEU within `gap`. No check (true) when either row is missing.
absl::StatusOr<bool> CheckVariant(const std::vector<Row>& rows, const std::string& side,
                                  const std::string& base, int batch_size, double gap,
                                  const Tokenizer& tokenizer, const EncodedLines& encoded,
                                  const std::vector<std::string>& references) {
  const auto find = [&](const std::string& name) -> const Row* {
    for (const Row& row : rows) {
      if (row.side == name && row.batch_size == batch_size) return &row;
    }
    return nullptr;
  };
  const Row* variant = find(side);
  const Row* reference = find(base);
  if (variant == nullptr || reference == nullptr) return true;
  std::cout << "\n";
  TFM_ASSIGN_OR_RETURN(const std::vector<size_t> differ, DifferingLines(*variant, *reference));
  TFM_RETURN_IF_ERROR(PrintDifferingLines(differ, 3, *variant, *reference, tokenizer));
  TFM_ASSIGN_OR_RETURN(const double base_bleu,
                       Bleu(reference->outputs, encoded, tokenizer, references));
  TFM_ASSIGN_OR_RETURN(const double bleu, Bleu(variant->outputs, encoded, tokenizer, references));
  const int lines = static_cast<int>(reference->outputs.size());
  // A gap of 0: the variant must give every line as the base does.
  const bool pass = gap == 0.0 ? differ.empty() : std::abs(bleu - base_bleu) <= gap;
  return Check(pass,
               absl::StrFormat("%s vs %s at batch %d: BLEU %.2f vs %.2f (within %.2f required); "
                               "%d of %d lines identical",
                               side, base == "ours" ? "ours f32" : base, batch_size, bleu,
                               base_bleu, gap, lines - static_cast<int>(differ.size()), lines));
}

// The fastest target tokens/s among `side`'s rows (only those at a batch
// size above 1 when `batched`); 0 when there are none.
double FastestRate(const std::vector<Row>& rows, const std::string& side, bool batched) {
  double fastest = 0;
  for (const Row& row : rows) {
    if (row.side == side && (!batched || row.batch_size > 1)) {
      fastest = std::max(fastest, row.TokensPerSecond());
    }
  }
  return fastest;
}

// Each side's mean time per sentence in its batch-1 row.
void PrintLatency(const std::vector<Row>& rows) {
  std::vector<std::string> parts, steps;
  size_t sentences = 0;
  for (const Row& row : rows) {
    if (row.batch_size != 1 || row.outputs.empty()) continue;
    sentences = row.outputs.size();
    parts.push_back(absl::StrFormat("%s %.1f ms", row.side, 1e3 * row.seconds / sentences));
    if (!absl::StartsWith(row.side, "ours")) continue;
    // A step per output token and one for the end of sentence.
    size_t step_count = 0;
    for (const std::vector<int>& output : row.outputs) step_count += output.size() + 1;
    steps.push_back(absl::StrFormat("%s %.3f ms", row.side, 1e3 * row.seconds / step_count));
  }
  if (parts.empty()) return;
  std::cout << absl::StrFormat(
      "latency of one sentence at batch 1 (mean over the batch-1 rows' %d sentences): %s\n",
      sentences, absl::StrJoin(parts, ", "));
  std::cout << "one decoding step at batch 1 (beam rows of one sentence): "
            << absl::StrJoin(steps, ", ") << "\n";
}

// The host's cost of one op that does nothing on `device` (RunOp, the
// output's allocation and, on a GPU, a kernel launch): the floor of a
// step's time per op when it is launch-bound, which a CUDA graph of the
// step would remove. Printed beside the batch-1 step times above; the op
// profile's calls per step give the ops a step runs.
absl::Status PrintEmptyOpCost(const Device& device) {
  constexpr int kWarmup = 200, kCalls = 5000;
  // `calls` fills, then the device's wait.
  const auto fill = [&device](int calls) -> absl::Status {
    for (int i = 0; i < calls; ++i) {
      TFM_RETURN_IF_ERROR(Fill({1}, 0.0, DType::kF32, device).status());
    }
    return device.is_cuda() ? cuda::Synchronize(device.index) : absl::OkStatus();
  };
  TFM_RETURN_IF_ERROR(fill(kWarmup));
  const absl::Time start = absl::Now();
  TFM_RETURN_IF_ERROR(fill(kCalls));
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::cout << absl::StrFormat(
      "an empty op (fill of one float) on %s: %.2f us each over %d calls, launch and "
      "allocation included (what a CUDA graph would save per op of a launch-bound step)\n",
      device.ToString(), 1e6 * seconds / kCalls, kCalls);
  return absl::OkStatus();
}

// "decode tokens/s LABEL: X`note`": `side`'s fastest row over `base`'s
// (rows at a batch size above 1 only when `batched`), when both decoded.
void PrintRateRatio(const std::vector<Row>& rows, const std::string& side,
                    const std::string& base, bool batched, const std::string& label,
                    const std::string& note = "") {
  const double rate = FastestRate(rows, side, batched);
  const double base_rate = FastestRate(rows, base, batched);
  if (rate > 0 && base_rate > 0) {
    std::cout << absl::StrFormat("decode tokens/s %s: %.2f%s\n", label, rate / base_rate, note);
  }
}

// The int8 lines, last: ours_int8 over ours f32 at their fastest batched
// rows, and over CTranslate2's int8 at each side's fastest row.
void PrintInt8Ratios(const std::vector<Row>& rows) {
  PrintRateRatio(rows, "ours_int8", "ours", /*batched=*/true, "ours_int8/ours_f32");
  PrintRateRatio(rows, "ours_int8", "ct2_int8", /*batched=*/false, "ours_int8/ctranslate2_int8");
}

// The CUDA graph lines: ours_graphs over ours (eager launches), at batch 1
// and at their fastest batched rows, where the rows ran.
void PrintGraphRatios(const std::vector<Row>& rows, const std::string& label) {
  for (const bool batched : {false, true}) {
    PrintRateRatio(rows, "ours_graphs", "ours", batched,
                   absl::StrCat("ours_graphs/ours", label, " (cuda)"),
                   batched ? " (batched)" : " (batch 1)");
  }
}

// The bf16 lines: ours_bf16 over ours f32 and over Hugging Face's bf16, at
// their fastest batched rows; on the CPU, where CTranslate2 offers no bf16
// (its CPU compute types are int8, int16 and f32), over its f32 at each
// side's fastest row. `label` names the section.
void PrintBf16Ratios(const std::vector<Row>& rows, const Device& device,
                     const std::string& label = "") {
  const std::string where = label + (device.is_cuda() ? " (cuda)" : "");
  PrintRateRatio(rows, "ours_bf16", "ours", /*batched=*/true, "ours_bf16/ours_f32" + where);
  PrintRateRatio(rows, "ours_bf16", "hf_bfloat16", /*batched=*/true,
                 "ours_bf16/huggingface_bf16" + where);
  PrintRateRatio(rows, "ours_bf16_f32res", "ours", /*batched=*/true,
                 "ours_bf16_f32res/ours_f32" + where);
  if (device.is_cpu()) {
    PrintRateRatio(rows, "ours_bf16", "ct2_float32", /*batched=*/false,
                   "ours_bf16/ctranslate2_f32" + label);
  }
}

// The shortlist lines: each shortlist row over the same precision's row
// without it, and int8 with the shortlist over f32 (fastest batched rows).
void PrintShortlistRatios(const std::vector<Row>& rows) {
  for (const auto& [with, without] : {std::pair<std::string, std::string>{"ours_shortlist", "ours"},
                                      {"ours_int8_shortlist", "ours_int8"}}) {
    PrintRateRatio(rows, with, without, /*batched=*/true, with + "/" + without, " (batched)");
  }
  PrintRateRatio(rows, "ours_int8_shortlist", "ours", /*batched=*/true,
                 "ours_int8_shortlist/ours_f32", " (batched)");
}

// This process's peak resident memory in KiB (VmHWM of /proc/self/status;
// 0 where there is none).
int64_t PeakResidentKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    int64_t kib = 0;
    if (absl::StartsWith(line, "VmHWM:") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(
                             absl::StripSuffix(absl::StripPrefix(line, "VmHWM:"), "kB")),
                         &kib)) {
      return kib;
    }
  }
  return 0;
}

// Ours' peak resident memory in MiB, in a process of its own (this binary
// with `args` and --memory_probe=f32|int8): it loads the checkpoint and
// decodes the batched rows once, as the peers' processes do.
absl::StatusOr<double> OurPeakMemoryMib(const std::vector<std::string>& args, bool int8) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return absl::InternalError("cannot read /proc/self/exe: " + error.message());
  std::string command = ShellQuote(self.string());
  for (size_t i = 1; i < args.size(); ++i) absl::StrAppend(&command, " ", ShellQuote(args[i]));
  absl::StrAppend(&command, " --memory_probe=", int8 ? "int8" : "f32");
  TFM_ASSIGN_OR_RETURN(const std::string out, RunCommand(command));
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    int64_t kib = 0;
    if (absl::ConsumePrefix(&line, "memory_probe\t") && absl::SimpleAtoi(line, &kib)) {
      return kib / 1024.0;
    }
  }
  return absl::DataLossError(absl::StrCat("no memory_probe line from: ", command));
}

// The model's bytes on disk: the f32 checkpoint's model.safetensors, and
// the int8 model directory's that the `quantize` command writes from it
// (written under `scratch` and measured).
struct ModelBytes {
  int64_t f32 = 0;
  int64_t int8 = 0;
};
absl::StatusOr<ModelBytes> OurModelBytes(const std::string& checkpoint_dir,
                                         const std::string& scratch) {
  ModelBytes bytes;
  const auto size_of = [](const std::string& path) -> absl::StatusOr<int64_t> {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error) return absl::NotFoundError(path + ": " + error.message());
    return static_cast<int64_t>(size);
  };
  TFM_ASSIGN_OR_RETURN(bytes.f32, size_of(checkpoint_dir + "/model.safetensors"));
  const std::string int8_dir = scratch + "/int8_model";
  std::ostringstream log;
  TFM_RETURN_IF_ERROR(QuantizeModelDirectory(checkpoint_dir, int8_dir, log));
  TFM_ASSIGN_OR_RETURN(bytes.int8, size_of(int8_dir + "/model.safetensors"));
  return bytes;
}

// 1, then the sizes of `flag`'s list (named `name` in errors).
absl::StatusOr<std::vector<int>> ParseBatchSizes(absl::string_view name, absl::string_view flag) {
  std::vector<int> sizes = {1};
  for (absl::string_view text : absl::StrSplit(flag, ',', absl::SkipEmpty())) {
    int size = 0;
    if (!absl::SimpleAtoi(text, &size) || size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": '", text, "' is not a positive number"));
    }
    if (std::find(sizes.begin(), sizes.end(), size) == sizes.end()) sizes.push_back(size);
  }
  if (sizes.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": none above 1"));
  }
  return sizes;
}

std::vector<std::string> PeerRows(const Device& device) {
  std::string peers = absl::GetFlag(FLAGS_peers);
  if (peers == "default") {
    peers = device.is_cuda() ? "hf_float32,hf_bfloat16,torch,ct2_float32"
                             : "ct2_float32,ct2_int8,torch,hf_float32";
  }
  return absl::StrSplit(peers, ',', absl::SkipEmpty());
}

// --random_base: the base-sized model with random weights, every side
// decoding exactly --random_steps steps; checks that they did.
absl::StatusOr<bool> RunRandomBase(const char* argv0, const Device& device,
                                   const std::vector<int>& batch_sizes,
                                   const std::vector<std::string>& peers,
                                   const std::vector<std::string>& policies,
                                   const PeerSetups& ct2_setups) {
  const int length = absl::GetFlag(FLAGS_random_source_length);
  const int steps = absl::GetFlag(FLAGS_random_steps);
  if (length < 1 || steps < length) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--random_steps (", steps, ") must be at least --random_source_length (", length,
        ", >= 1): the maximum length is the source's plus an offset >= 0"));
  }
  TFM_ASSIGN_OR_RETURN(RandomTransformer random,
                       CreateRandomBaseTransformer(absl::GetFlag(FLAGS_random_vocab), device,
                                                   /*seed=*/1));
  Section section;
  section.title = absl::StrFormat(
      "random base model (%d+%d layers, d_model %d, vocabulary %d, %.1fM parameters): %d "
      "sources of %d ids, exactly %d steps each (eos disabled), beam %d",
      random.config.num_encoder_layers(), random.config.num_decoder_layers(),
      random.config.d_model(), random.vocabulary.size, random.model->NumParameters() / 1e6,
      absl::GetFlag(FLAGS_random_sentences), length, steps, absl::GetFlag(FLAGS_beam) > 0 ? absl::GetFlag(FLAGS_beam) : 4);
  section.model = random.model.get();
  section.search.beam_size = absl::GetFlag(FLAGS_beam) > 0 ? absl::GetFlag(FLAGS_beam) : 4;
  section.search.length_penalty_alpha =
      absl::GetFlag(FLAGS_alpha) >= 0 ? absl::GetFlag(FLAGS_alpha) : 0.6;
  section.search.max_length_offset = steps - length;
  section.search.nbest = 1;
  section.search.ignore_eos = true;
  TFM_ASSIGN_OR_RETURN(section.search.length_penalty,
                       ParseLengthPenaltyKind(absl::GetFlag(FLAGS_length_penalty)));
  // CTranslate2 in the setups its search chose on the trained model.
  section.peer_setups = ct2_setups;
  section.sources = RandomSources(absl::GetFlag(FLAGS_random_sentences), length, random.vocabulary,
                                  /*seed=*/2);
  section.lines_at_batch_1 = absl::GetFlag(FLAGS_random_lines_at_batch_1);
  // bf16 against Hugging Face's bf16 rows: the same arithmetic on both
  // sides, where f32 rows leave the products off the tensor cores.
  if (absl::GetFlag(FLAGS_ours_bf16)) {
    Transformer* const model = random.model.get();
    section.variants.push_back({"ours_bf16", [model](bool on) -> absl::Status {
                                  return model->SetDecodingDType(on ? DType::kBF16 : DType::kF32);
                                }});
  }
  if (absl::GetFlag(FLAGS_ours_cuda_graphs) && device.is_cuda()) {
    section.variants.push_back(CudaGraphsVariant(random.model.get()));
  }
  std::vector<std::string> pieces(random.vocabulary.size);
  for (size_t id = 0; id < pieces.size(); ++id) pieces[id] = absl::StrCat("p", id);
  TFM_ASSIGN_OR_RETURN(const std::string work, WritePeerInputs(pieces, section.sources));
  PeerModel peer_model{work + "/checkpoint",
                       random.config.num_encoder_layers(),
                       random.config.num_decoder_layers(),
                       random.config.num_heads(),
                       random.vocabulary.pad_id,
                       random.vocabulary.bos_id,
                       random.vocabulary.eos_id,
                       random.unk_id,
                       random.config.layer_norm_epsilon()};
  TFM_RETURN_IF_ERROR(WriteWeights(*random.model, peer_model.checkpoint_dir));
  TFM_ASSIGN_OR_RETURN(section.peer_command,
                       PeerCommand(argv0, peer_model, section.search, work, device,
                                   section.lines_at_batch_1));
  std::cout << "\n" << section.title << "\n";
  TFM_ASSIGN_OR_RETURN(const std::vector<Row> rows,
                       RunTimedRows(section, batch_sizes, peers, policies));
  std::filesystem::remove_all(work);
  bool same_work = true;
  int64_t wrong = 0;
  for (const Row& row : rows) {
    for (const std::vector<int>& output : row.outputs) wrong += output.size() != steps;
  }
  same_work = Check(wrong == 0, absl::StrFormat("random base model: every row's every output has "
                                                "exactly %d tokens (%d outputs do not)",
                                                steps, wrong));
  // Graph replays compute what eager steps do: every output the same.
  size_t graphs_differ = 0, graphs_lines = 0;
  for (const Row& row : rows) {
    if (row.side != "ours_graphs") continue;
    for (const Row& ours : rows) {
      if (ours.side != "ours" || ours.batch_size != row.batch_size) continue;
      TFM_ASSIGN_OR_RETURN(const std::vector<size_t> differ, DifferingLines(row, ours));
      graphs_differ += differ.size();
      graphs_lines += ours.outputs.size();
    }
  }
  if (graphs_lines > 0) {
    same_work &= Check(graphs_differ == 0,
                       absl::StrFormat("random base model: ours_graphs gives ours' outputs (%d of "
                                       "%d differ)",
                                       graphs_differ, graphs_lines));
  }
  PrintRatios(" (random base, fixed steps)", PrintResults(section.title, rows), device);
  PrintBf16Ratios(rows, device, " (random base, fixed steps)");
  PrintGraphRatios(rows, " (random base, fixed steps)");
  return same_work;
}

absl::Status Main(const std::vector<std::string>& args) {
  const char* argv0 = args[0].c_str();
  const int threads = absl::GetFlag(FLAGS_threads);
  TFM_ASSIGN_OR_RETURN(const std::vector<int> batch_sizes,
                       ParseBatchSizes("batch_sizes", absl::GetFlag(FLAGS_batch_sizes)));
  const std::string random_sizes_flag = absl::GetFlag(FLAGS_random_batch_sizes);
  TFM_ASSIGN_OR_RETURN(
      const std::vector<int> random_batch_sizes,
      random_sizes_flag.empty() ? batch_sizes
                                : ParseBatchSizes("random_batch_sizes", random_sizes_flag));
  // Before any op runs: the pool reads it once.
  setenv("TFM_NUM_THREADS", absl::StrCat(threads).c_str(), 1);
  TFM_ASSIGN_OR_RETURN(const Device device, ResolveDevice(absl::GetFlag(FLAGS_device)));
  TFM_ASSIGN_OR_RETURN(
      TrainedModel trained,
      LoadTrainedModel(ResolveUserPath(absl::GetFlag(FLAGS_model)), device, &std::cerr));
  TFM_RETURN_IF_ERROR(trained.SetKvCacheDType(absl::GetFlag(FLAGS_kv_cache_dtype)));
  TFM_ASSIGN_OR_RETURN(const SearchOptions search, SearchSettings(trained));
  const std::string input = ResolveDataPath(absl::GetFlag(FLAGS_input));
  TFM_ASSIGN_OR_RETURN(const std::vector<std::string> lines,
                       ReadLines(input, absl::GetFlag(FLAGS_max_lines)));
  const std::string reference_path = ResolveDataPath(absl::GetFlag(FLAGS_reference));
  TFM_ASSIGN_OR_RETURN(const std::vector<std::string> references,
                       ReadLines(reference_path, static_cast<int>(lines.size())));
  if (references.size() != lines.size()) {
    return absl::InvalidArgumentError(absl::StrCat(reference_path, " has ", references.size(),
                                                   " lines, ", input, " ", lines.size()));
  }
  const EncodedLines encoded = EncodeLines(
      trained.tokenizer, trained.config.data().batching().max_length(), lines, input, &std::cerr);
  Section section;
  section.model = trained.model.get();
  section.search = search;
  section.search.ignore_eos = absl::GetFlag(FLAGS_ignore_eos);
  TFM_ASSIGN_OR_RETURN(section.search.length_penalty,
                       ParseLengthPenaltyKind(absl::GetFlag(FLAGS_length_penalty)));
  section.sources = encoded.sources;
  section.lines_at_batch_1 = absl::GetFlag(FLAGS_lines_at_batch_1);
  if (section.sources.empty()) return absl::InvalidArgumentError(input + ": nothing to translate");
  int64_t source_tokens = 0;
  for (const std::vector<int>& s : section.sources) source_tokens += static_cast<int64_t>(s.size());
  const std::string probe = absl::GetFlag(FLAGS_memory_probe);
  if (!probe.empty()) {
    if (probe != "f32" && probe != "int8") {
      return absl::InvalidArgumentError("--memory_probe: '" + probe + "' is not f32 or int8");
    }
    if (probe == "int8") {
      TFM_RETURN_IF_ERROR(trained.SetDecodingPrecision(config::DecodeConfig::INT8, nullptr));
    }
    TFM_RETURN_IF_ERROR(RunOurs(section, batch_sizes[1]).status());
    std::cout << "memory_probe\t" << PeakResidentKib() << "\n";
    return absl::OkStatus();
  }
  const bool int8_rows = absl::GetFlag(FLAGS_ours_int8) && device.is_cpu();
  // Ours' decoder products in int8 (true) or f32.
  std::function<absl::Status(bool int8)> set_int8;
  if (int8_rows) {
    // --quantize=int8 replaces the loaded f32 weights by their int8 rows
    // dequantized: the f32 rows of a later pass (--passes) get the
    // originals back. (A model stored in int8 has no others.)
    auto originals = std::make_shared<std::vector<Tensor>>();
    if (!trained.int8_weights.empty() && !trained.int8_weights.front()) {
      for (Parameter* p : trained.model->Parameters()) {
        TFM_ASSIGN_OR_RETURN(Tensor copy, CopyToDevice(p->value, p->value.device()));
        originals->push_back(std::move(copy));
      }
    }
    set_int8 = [&trained, originals](bool int8) -> absl::Status {
      if (!int8 && !originals->empty()) {
        const std::vector<Parameter*> parameters = trained.model->Parameters();
        for (size_t i = 0; i < parameters.size(); ++i) {
          TFM_RETURN_IF_ERROR(CopyInto((*originals)[i], parameters[i]->value));
        }
        trained.int8_weights.assign(trained.int8_weights.size(), false);
      }
      return trained.SetDecodingPrecision(
          int8 ? config::DecodeConfig::INT8 : config::DecodeConfig::NONE, nullptr);
    };
    section.variants.push_back({"ours_int8", set_int8});
  }
  if (absl::GetFlag(FLAGS_ours_bf16)) {
    section.variants.push_back({"ours_bf16", [&trained](bool on) -> absl::Status {
                                  return trained.SetDecodingDType(on ? "bf16" : "f32");
                                }});
  }
  if (absl::GetFlag(FLAGS_ours_bf16) && device.is_cuda()) {
    // bf16 sublayers around an f32 residual stream (decode.f32_residual;
    // the CPU's bf16 keeps every activation f32 already).
    section.variants.push_back(
        {"ours_bf16_f32res", [&trained](bool on) -> absl::Status {
           return trained.SetDecodingDType(on ? "bf16" : "f32", /*f32_residual=*/on);
         }});
  }

  if (absl::GetFlag(FLAGS_ours_cuda_graphs) && device.is_cuda()) {
    section.variants.push_back(CudaGraphsVariant(trained.model.get()));
  }

  const std::string shortlist_path = absl::GetFlag(FLAGS_shortlist);
  if (!shortlist_path.empty()) {
    const config::DecodeConfig& decode = trained.config.decode();
    const int frequent = absl::GetFlag(FLAGS_shortlist_frequent) >= 0
                             ? absl::GetFlag(FLAGS_shortlist_frequent)
                             : decode.shortlist_frequent();
    const int best = absl::GetFlag(FLAGS_shortlist_best) >= 0 ? absl::GetFlag(FLAGS_shortlist_best)
                                                              : decode.shortlist_best();
    // Loaded once (and checked against the model's vocabulary), as
    // TrainedModel::SetShortlist loads it for --shortlist.
    TFM_ASSIGN_OR_RETURN(VocabularyShortlist loaded,
                         LoadShortlist(ResolveDataPath(shortlist_path), trained.tokenizer,
                                       frequent, best));
    auto shortlist = std::make_shared<const VocabularyShortlist>(std::move(loaded));
    std::cout << absl::StrFormat(
        "shortlist %s: %d frequent targets and %d per source token (rows *_shortlist)\n",
        shortlist_path, frequent, best);
    const auto set_shortlist = [&trained, shortlist](bool on) -> absl::Status {
      return trained.model->SetShortlist(on ? shortlist : nullptr);
    };
    section.variants.push_back({"ours_shortlist", set_shortlist});
    if (set_int8 != nullptr) {
      section.variants.push_back(
          {"ours_int8_shortlist", [set_int8, set_shortlist](bool on) -> absl::Status {
             TFM_RETURN_IF_ERROR(set_int8(on));
             return set_shortlist(on);
           }});
    }
  }

  std::vector<std::string> pieces;
  for (int id = 0; id < trained.tokenizer.vocab_size(); ++id) {
    pieces.push_back(trained.tokenizer.IdToPiece(id));
  }
  TFM_ASSIGN_OR_RETURN(const std::string work, WritePeerInputs(pieces, section.sources));
  const config::ModelConfig& model = trained.config.model();
  const PeerModel peer_model{trained.checkpoint_dir,      model.num_encoder_layers(),
                             model.num_decoder_layers(),  model.num_heads(),
                             trained.tokenizer.pad_id(),  trained.tokenizer.bos_id(),
                             trained.tokenizer.eos_id(),  trained.tokenizer.unk_id(),
                             model.layer_norm_epsilon()};
  TFM_ASSIGN_OR_RETURN(section.peer_command,
                       PeerCommand(argv0, peer_model, section.search, work, device,
                                   section.lines_at_batch_1));
  const std::vector<std::string> peers = PeerRows(device);
  std::vector<std::string> policies = {"default"};
  if (device.is_cpu()) {
    policies = absl::StrSplit(absl::GetFlag(FLAGS_peer_wait_policies), ',', absl::SkipEmpty());
    if (policies.empty()) return absl::InvalidArgumentError("--peer_wait_policies is empty");
  }

  section.title = absl::StrFormat(
      "trained model: %d sentences (%d source subwords with eos) of %s with %s on %s\nbeam %d, "
      "length penalty %s alpha %.2f, max length source + %d%s; batched rows: %s sentences a "
      "batch sorted by length; batch 1: %s; %d sentences untimed first per row",
      section.sources.size(), source_tokens, input, trained.checkpoint_dir, device.ToString(),
      search.beam_size, LengthPenaltyKindName(section.search.length_penalty),
      search.length_penalty_alpha, search.max_length_offset,
      section.search.ignore_eos ? " (eos disabled: every output that long)" : "",
      absl::GetFlag(FLAGS_batch_sizes),
      section.lines_at_batch_1 > 0 ? absl::StrCat("the first ", section.lines_at_batch_1)
                                   : std::string("all"),
      absl::GetFlag(FLAGS_warmup));
  std::cout << section.title << "\n";

  bool pass = true;
  TFM_ASSIGN_OR_RETURN(const Row ours_batched, RunOurs(section, batch_sizes[1]));
  TFM_ASSIGN_OR_RETURN(
      const double ours_bleu, Bleu(ours_batched.outputs, encoded, trained.tokenizer, references));
  std::cout << absl::StrFormat("ours at batch %d: BLEU %.2f against %s\n", batch_sizes[1],
                               ours_bleu, reference_path);
  const bool marian = std::any_of(peers.begin(), peers.end(),
                                  [](const std::string& p) { return absl::StartsWith(p, "hf_"); });
  if (marian && absl::GetFlag(FLAGS_logprob_check_lines) > 0) {
    const EncodedLines targets =
        EncodeLines(trained.tokenizer, trained.config.data().batching().max_length(), references,
                    reference_path, &std::cerr);
    TFM_ASSIGN_OR_RETURN(const bool logprobs_pass, CheckLogProbs(*trained.model, encoded, targets,
                                                                 section.peer_command, work));
    pass &= logprobs_pass;
  }
  const bool ct2 = std::any_of(peers.begin(), peers.end(),
                               [](const std::string& p) { return absl::StartsWith(p, "ct2_"); });
  if (ct2 && device.is_cpu() && absl::GetFlag(FLAGS_ct2_search_lines) > 0) {
    TFM_ASSIGN_OR_RETURN(section.peer_setups.batched,
                         SearchCt2Configurations(section, batch_sizes[1],
                                                 absl::GetFlag(FLAGS_ct2_search_lines), policies,
                                                 work));
    const int lines_at_batch_1 = absl::GetFlag(FLAGS_ct2_search_lines_at_batch_1);
    if (batch_sizes[0] == 1 && lines_at_batch_1 > 0) {
      TFM_ASSIGN_OR_RETURN(section.peer_setups.at_batch_1,
                           SearchCt2Configurations(section, 1, lines_at_batch_1, policies, work));
    }
  }
  TFM_ASSIGN_OR_RETURN(const bool agree, CheckPeersAgree(section, peers, ours_batched,
                                                         trained.tokenizer, encoded, references));
  pass &= agree;
  TFM_ASSIGN_OR_RETURN(const std::vector<Row> rows,
                       RunTimedRows(section, batch_sizes, peers, policies));
  std::error_code no_ct2_model;
  const int64_t ct2_model_bytes = static_cast<int64_t>(
      std::filesystem::file_size(work + "/ct2_model/model.bin", no_ct2_model));
  std::filesystem::remove_all(work);
  PrintSettings(rows, device);
  const std::vector<Ratio> ratios = PrintResults(section.title, rows);
  PrintLatency(rows);
  TFM_RETURN_IF_ERROR(PrintEmptyOpCost(device));
  // Each variant against the rows it changes, at the first batched size.
  const struct {
    const char* side;
    const char* base;
    double gap;
  } variant_checks[] = {
      {"ours_int8", "ours", absl::GetFlag(FLAGS_int8_max_bleu_gap)},
      {"ours_bf16", "ours", absl::GetFlag(FLAGS_bf16_max_bleu_gap)},
      {"ours_bf16_f32res", "ours", absl::GetFlag(FLAGS_bf16_max_bleu_gap)},
      // The same ops on the same inputs: the same translations.
      {"ours_graphs", "ours", 0.0},
      {"ours_shortlist", "ours", absl::GetFlag(FLAGS_shortlist_max_bleu_gap)},
      {"ours_int8_shortlist", "ours_int8", absl::GetFlag(FLAGS_shortlist_max_bleu_gap)},
  };
  for (const auto& check : variant_checks) {
    TFM_ASSIGN_OR_RETURN(const bool variant_pass,
                         CheckVariant(rows, check.side, check.base, batch_sizes[1], check.gap,
                                      trained.tokenizer, encoded, references));
    pass &= variant_pass;
  }
  if (absl::GetFlag(FLAGS_memory) && device.is_cpu()) {
    char scratch[] = "/tmp/decode_bench_int8.XXXXXX";
    if (mkdtemp(scratch) == nullptr) return absl::InternalError("mkdtemp failed");
    const absl::StatusOr<ModelBytes> measured = OurModelBytes(trained.checkpoint_dir, scratch);
    std::filesystem::remove_all(scratch);
    TFM_ASSIGN_OR_RETURN(const ModelBytes bytes, measured);
    std::cout << absl::StrFormat(
        "model on disk: ours f32 %.2f MiB (model.safetensors); ours int8 %.2f MiB (the "
        "`quantize` command's model.safetensors: every matrix int8 with an f32 scale per row, "
        "the shared embedding table once, the rest f32)%s\n",
        bytes.f32 / 1048576.0, bytes.int8 / 1048576.0,
        no_ct2_model ? ""
                     : absl::StrFormat("; ctranslate2 float32 model.bin %.2f MiB",
                                       ct2_model_bytes / 1048576.0));
    TFM_ASSIGN_OR_RETURN(const double f32_mib, OurPeakMemoryMib(args, /*int8=*/false));
    std::string memory = absl::StrFormat("ours f32 %.1f MiB", f32_mib);
    if (int8_rows) {
      TFM_ASSIGN_OR_RETURN(const double int8_mib, OurPeakMemoryMib(args, /*int8=*/true));
      absl::StrAppendFormat(&memory, ", ours int8 %.1f MiB", int8_mib);
    }
    std::cout << "peak resident memory (VmHWM) of a process decoding the batched rows once: "
              << memory << " (this binary loading the checkpoint); the CTranslate2 rows' "
              << "own processes (Python with ctranslate2 and its converted model, both rows "
              << "run) print theirs at the end of their settings lines above\n";
  }

  if (absl::GetFlag(FLAGS_random_base)) {
    TFM_ASSIGN_OR_RETURN(const bool random_pass,
                         RunRandomBase(argv0, device, random_batch_sizes, peers, policies,
                                       section.peer_setups));
    pass &= random_pass;
  }
  // The trained model's ratios last: the headline, then ours_int8's.
  PrintRatios("", ratios, device);
  PrintInt8Ratios(rows);
  PrintBf16Ratios(rows, device);
  PrintGraphRatios(rows, "");
  PrintShortlistRatios(rows);
  if (!pass) return absl::FailedPreconditionError("a check failed (check: FAIL above)");
  return absl::OkStatus();
}

}  // namespace
}  // namespace tfm

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = tfm::Main(std::vector<std::string>(argv, argv + argc));
  if (!status.ok()) {
    std::cout << "check: FAIL " << status.message() << "\n";
    std::cerr << "decode: " << status << "\n";
    return 1;
  }
  return 0;
}

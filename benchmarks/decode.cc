// Translation speed of a trained model, ours against CTranslate2 and a cached
// PyTorch beam search on the same weights, sources and search settings:
//
//   bazel run -c opt //benchmarks:decode -- --model=/work/main/work/m30k
//
// It translates Multi30k's test_2016_flickr (EN->DE by default) with the
// checkpoint's decode settings (beam 4, alpha 0.6, max length source + 50),
// sentence by sentence and in batches of --batch_size sentences sorted by
// length, and prints sentences/s and target tokens/s (output subwords, eos
// not counted) per row, then `decode tokens/s ours/ctranslate2: X` (against
// the fastest float32 CTranslate2 row) and `decode tokens/s ours/torch: Y`.
//
// The peers (benchmarks/decode_peers.py, in the bench venv) get our
// checkpoint, our SentencePiece pieces and our source ids, so all rows decode
// the same subwords. Before timing, the float32 peers' batched translations
// are compared with ours (identical lines counted; float reordering makes a
// few differ, many means a wrong conversion and stops the run). Every row
// first decodes --warmup sentences untimed; with --passes=N every row runs
// N times, in turn, and keeps its fastest time. Each peer runs in its own
// process once per OpenMP wait policy of --peer_wait_policies (PASSIVE and
// ACTIVE: which is faster depends on the library and the machine) and each
// of its rows keeps the fastest.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
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
#include "absl/time/clock.h"
#include "core/cpu_features.h"
#include "core/data/line_reader.h"
#include "core/environment_report.h"
#include "core/op_profile.h"
#include "core/paths.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "runtime/decode/search.h"
#include "tasks/common/seq2seq_decoding.h"
#include "tasks/common/trained_model.h"
#include "tests/util/shell_quote.h"
#include "tools/cpp/runfiles/runfiles.h"

ABSL_FLAG(std::string, model, "work/m30k",
          "A work directory of `train` or a checkpoint (relative: to where bazel runs)");
ABSL_FLAG(std::string, input, "../shared/data/multi30k/test_2016_flickr.en.gz",
          "Source sentences, one a line (relative: to the project root)");
ABSL_FLAG(int, threads, 2, "Threads on every side (ours, CTranslate2's intra_threads, torch)");
ABSL_FLAG(int, batch_size, 32, "Sentences per batch in the batched rows");
ABSL_FLAG(int, beam, 0, "Beam size; 0: the checkpoint's decode section");
ABSL_FLAG(double, alpha, -1, "Length penalty alpha; < 0: the checkpoint's");
ABSL_FLAG(int, max_lines, 0, "Translate only the first N lines (0: all)");
ABSL_FLAG(int, warmup, 16, "Sentences each row decodes untimed first");
ABSL_FLAG(std::string, peers, "ct2_float32,ct2_int8,torch",
          "Peer rows (decode_peers.py), each timed at batch 1 and batched; empty: ours only");
ABSL_FLAG(std::string, peer_python, "/opt/transformer-bench-venv/bin/python3",
          "Python with ctranslate2 and torch (tools/setup_bench.sh)");
ABSL_FLAG(double, max_disagreement, 0.2,
          "Stop if more than this share of a float32 peer's lines differ from ours");
ABSL_FLAG(int, passes, 1, "Passes over the timed rows; each row keeps its fastest");
ABSL_FLAG(std::string, peer_wait_policies, "PASSIVE,ACTIVE",
          "OMP_WAIT_POLICY values each peer is timed under, one process each ('default': the "
          "library's own); each peer row keeps its fastest");
ABSL_FLAG(bool, profile_ops, false,
          "Print where our rows' time goes, op by op (also with TFM_PROFILE_OPS=1)");

namespace tfm {
namespace {

using Outputs = std::vector<std::vector<int>>;

struct Row {
  std::string side;  // "ours", "ct2_float32", ...
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
  while (std::getline(in, line)) {
    ids.emplace_back();
    for (absl::string_view token : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      int id = 0;
      if (!absl::SimpleAtoi(token, &id)) return absl::DataLossError("bad id in " + path);
      ids.back().push_back(id);
    }
  }
  return ids;
}

// Ours at one batch size: the first `warmup` sources untimed, then all.
absl::StatusOr<Row> RunOurs(TrainedModel& trained, config::DecodeConfig decode, int batch_size,
                            const Outputs& sources) {
  decode.set_batch_size(batch_size);
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<SearchStrategy> search, CreateSearchStrategy(decode));
  const size_t warmup = std::min(sources.size(), static_cast<size_t>(absl::GetFlag(FLAGS_warmup)));
  TFM_RETURN_IF_ERROR(
      search->Search(*trained.model, absl::MakeConstSpan(sources.data(), warmup)).status());
  const bool profile = absl::GetFlag(FLAGS_profile_ops) || OpProfilingEnabled();
  if (profile) {
    SetOpProfiling(true);
    ResetOpProfile();
  }
  const absl::Time start = absl::Now();
  TFM_ASSIGN_OR_RETURN(std::vector<NBestList> results, search->Search(*trained.model, sources));
  Row row{"ours", batch_size, absl::ToDoubleSeconds(absl::Now() - start)};
  for (const NBestList& list : results) row.outputs.push_back(list.front().tokens);
  if (profile) {
    std::cout << "where ours at batch " << batch_size << " spends its time, op by op:\n"
              << OpProfileReport(row.seconds) << "\n";
  }
  return row;
}

// The peer rows `rows` (e.g. "ct2_float32@1,torch@batch"), one process.
absl::StatusOr<std::vector<Row>> RunPeers(const std::string& command, const std::string& rows) {
  const std::string full = absl::StrCat(command, " --rows ", rows);
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("cannot run: " + full);
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  if (pclose(pipe) != 0) {
    return absl::InternalError(
        absl::StrCat("the peers failed (run tools/setup_bench.sh?): ", full));
  }
  // One line per row: row \t batch size \t seconds \t outputs path \t info.
  std::vector<Row> result;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
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

// Lines where `peer` differs from `ours`; prints the count and examples.
absl::StatusOr<int> CompareWithOurs(const Row& peer, const Row& ours, const Tokenizer& tokenizer) {
  if (peer.outputs.size() != ours.outputs.size()) {
    return absl::DataLossError(absl::StrCat(peer.side, " gave ", peer.outputs.size(),
                                            " outputs for ", ours.outputs.size(), " sources"));
  }
  std::vector<size_t> differ;
  for (size_t i = 0; i < ours.outputs.size(); ++i) {
    if (peer.outputs[i] != ours.outputs[i]) differ.push_back(i);
  }
  std::cout << absl::StrFormat(
      "%s at batch %d: %d of %d translations identical to ours, %d differ\n", peer.side,
      peer.batch_size, ours.outputs.size() - differ.size(), ours.outputs.size(), differ.size());
  for (size_t k = 0; k < differ.size() && k < 3; ++k) {
    const size_t i = differ[k];
    TFM_ASSIGN_OR_RETURN(const std::string a, tokenizer.Decode(ours.outputs[i]));
    TFM_ASSIGN_OR_RETURN(const std::string b, tokenizer.Decode(peer.outputs[i]));
    std::cout << absl::StrFormat("  line %d\n    ours: %s\n    peer: %s\n", i + 1, a, b);
  }
  return static_cast<int>(differ.size());
}

// The checkpoint's decode settings as the rows use them: beam search, one
// output each, with --beam and --alpha applied.
config::DecodeConfig DecodeSettings(const TrainedModel& trained) {
  config::DecodeConfig decode = trained.config.decode();
  decode.set_strategy(config::DecodeConfig::BEAM);
  decode.set_nbest(1);
  if (absl::GetFlag(FLAGS_beam) > 0) decode.set_beam_size(absl::GetFlag(FLAGS_beam));
  if (absl::GetFlag(FLAGS_alpha) >= 0) decode.set_length_penalty_alpha(absl::GetFlag(FLAGS_alpha));
  return decode;
}

// A new folder with what the peers read: our pieces by id (vocab.txt) and
// the source ids (sources.txt).
absl::StatusOr<std::string> WritePeerInputs(const Tokenizer& tokenizer, const Outputs& sources) {
  char dir_template[] = "/tmp/decode_bench.XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return absl::InternalError("mkdtemp failed");
  const std::string work = dir_template;
  {
    std::ofstream vocab(work + "/vocab.txt");
    for (int id = 0; id < tokenizer.vocab_size(); ++id) vocab << tokenizer.IdToPiece(id) << "\n";
  }
  TFM_RETURN_IF_ERROR(WriteIds(work + "/sources.txt", sources));
  return work;
}

// The command that runs benchmarks/decode_peers.py on our checkpoint and
// the inputs in `work`, with our search settings; RunPeers adds the rows.
absl::StatusOr<std::string> PeerCommand(const char* argv0, const TrainedModel& trained,
                                        const config::DecodeConfig& decode, const std::string& work,
                                        int threads, int batch_size) {
  std::string error;
  std::unique_ptr<bazel::tools::cpp::runfiles::Runfiles> runfiles(
      bazel::tools::cpp::runfiles::Runfiles::Create(argv0, &error));
  if (runfiles == nullptr) return absl::NotFoundError(absl::StrCat("runfiles: ", error));
  const config::ModelConfig& model = trained.config.model();
  return absl::StrFormat(
      "%s %s --checkpoint %s --work %s --encoder_layers %d --decoder_layers %d --heads %d "
      "--bos %d --eos %d --unk %d --beam %d --alpha %g --max_length_offset %d --threads %d "
      "--batch_size %d --warmup %d",
      ShellQuote(absl::GetFlag(FLAGS_peer_python)),
      ShellQuote(runfiles->Rlocation("transformer/benchmarks/decode_peers.py")),
      ShellQuote(trained.checkpoint_dir), work, model.num_encoder_layers(),
      model.num_decoder_layers(), model.num_heads(), trained.tokenizer.bos_id(),
      trained.tokenizer.eos_id(), trained.tokenizer.unk_id(), decode.beam_size(),
      decode.length_penalty_alpha(), decode.max_length_offset(), threads, batch_size,
      absl::GetFlag(FLAGS_warmup));
}

// The check before timing: the float32 peers' batched translations against
// ours (`ours_batched`); too many differing lines mean a wrong conversion.
absl::Status CheckPeersAgree(const std::string& peer_command, const std::vector<std::string>& peers,
                             const Row& ours_batched, const Tokenizer& tokenizer) {
  std::vector<std::string> check_rows;
  for (const std::string& peer : peers) {
    if (!absl::StrContains(peer, "int8")) check_rows.push_back(peer + "@batch");
  }
  if (check_rows.empty()) return absl::OkStatus();
  std::cout << "\nagreement before timing (same sources, batched):\n";
  TFM_ASSIGN_OR_RETURN(std::vector<Row> checked,
                       RunPeers(peer_command, absl::StrJoin(check_rows, ",")));
  for (const Row& peer : checked) {
    TFM_ASSIGN_OR_RETURN(const int differ, CompareWithOurs(peer, ours_batched, tokenizer));
    if (differ > absl::GetFlag(FLAGS_max_disagreement) * ours_batched.outputs.size()) {
      return absl::InternalError(absl::StrCat(peer.side, " disagrees with ours on ", differ,
                                              " lines: the conversion is wrong"));
    }
  }
  return absl::OkStatus();
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

// The timed rows: ours, then each peer, at batch 1 and batched (ours at
// batch 1 first, ours batched second). Each peer runs in its own process
// per OpenMP wait policy (so no library's spinning workers run beside
// another's rows), and every row keeps its fastest time over the policies
// and the passes (load from other jobs comes and goes, and rows run one
// after another).
absl::StatusOr<std::vector<Row>> RunTimedRows(TrainedModel& trained,
                                              const config::DecodeConfig& decode, int batch_size,
                                              const Outputs& sources,
                                              const std::string& peer_command,
                                              const std::vector<std::string>& peers) {
  const std::vector<std::string> policies =
      absl::StrSplit(absl::GetFlag(FLAGS_peer_wait_policies), ',', absl::SkipEmpty());
  if (policies.empty()) return absl::InvalidArgumentError("--peer_wait_policies is empty");
  std::vector<Row> rows;
  for (int pass = 0; pass < std::max(1, absl::GetFlag(FLAGS_passes)); ++pass) {
    for (int size : {1, batch_size}) {
      TFM_ASSIGN_OR_RETURN(Row ours, RunOurs(trained, decode, size, sources));
      KeepFastest(std::move(ours), &rows);
    }
    for (const std::string& peer : peers) {
      for (const std::string& policy : policies) {
        const std::string environment =
            policy == "default" ? "env -u OMP_WAIT_POLICY "
                                : absl::StrCat("env OMP_WAIT_POLICY=", ShellQuote(policy), " ");
        TFM_ASSIGN_OR_RETURN(
            std::vector<Row> peer_rows,
            RunPeers(environment + peer_command, absl::StrCat(peer, "@1,", peer, "@batch")));
        for (Row& row : peer_rows) KeepFastest(std::move(row), &rows);
      }
    }
  }
  return rows;
}

// The machine, our build's settings and each peer row's settings (its
// fastest wait policy may differ by batch).
void PrintSettings(const std::vector<Row>& rows) {
  std::cout << absl::StrFormat("\nmachine: %s, nproc %d\n", CpuModel(),
                               std::thread::hardware_concurrency());
  for (const auto& [label, text] : EnvironmentReport()) {
    std::cout << "ours " << label << ": " << text << "\n";
  }
  std::cout << absl::StrFormat(
      "ours threads: ThreadPool %d; allocator: caching (blocks >= 1 MiB kept) over glibc "
      "malloc; fp32\n",
      ThreadPool::Default()->num_threads());
  for (const Row& row : rows) {
    if (row.info.empty()) continue;
    std::cout << row.side << " at batch " << row.batch_size << ": " << row.info << "\n";
  }
}

// The table of rows (from RunTimedRows) and the ratios of our fastest
// row's target tokens/s over each peer's fastest.
void PrintResults(const std::vector<Row>& rows) {
  std::cout << absl::StrFormat("\n%-12s %6s %9s %9s %10s %10s %s\n", "row", "batch", "seconds",
                               "sent/s", "tgt tok", "tgt tok/s", "same as ours (same batch)");
  double best_ours = 0, best_ct2 = 0, best_int8 = 0, best_torch = 0;
  for (const Row& row : rows) {
    const Row& ours = row.batch_size == 1 ? rows[0] : rows[1];
    int same = 0;
    for (size_t i = 0; i < row.outputs.size() && i < ours.outputs.size(); ++i) {
      same += row.outputs[i] == ours.outputs[i];
    }
    std::cout << absl::StrFormat("%-12s %6d %9.2f %9.1f %10d %10.1f %d/%d\n", row.side,
                                 row.batch_size, row.seconds, row.outputs.size() / row.seconds,
                                 row.Tokens(), row.TokensPerSecond(), same, ours.outputs.size());
    double& best = row.side == "ours"          ? best_ours
                   : row.side == "ct2_float32" ? best_ct2
                   : row.side == "ct2_int8"    ? best_int8
                                               : best_torch;
    best = std::max(best, row.TokensPerSecond());
  }
  std::cout << "\nratios: our fastest row's target tokens/s over the peer's fastest row's\n";
  if (best_int8 > 0) {
    std::cout << absl::StrFormat(
        "ctranslate2 int8 (not a headline: different arithmetic): "
        "ours fp32 / int8 = %.2f\n",
        best_ours / best_int8);
  }
  if (best_ct2 > 0) {
    std::cout << absl::StrFormat("decode tokens/s ours/ctranslate2: %.2f\n", best_ours / best_ct2);
  }
  if (best_torch > 0) {
    std::cout << absl::StrFormat("decode tokens/s ours/torch: %.2f\n", best_ours / best_torch);
  }
}

absl::Status Main(const char* argv0) {
  const int threads = absl::GetFlag(FLAGS_threads);
  const int batch_size = absl::GetFlag(FLAGS_batch_size);
  // Before any op runs: the pool reads it once.
  setenv("TFM_NUM_THREADS", absl::StrCat(threads).c_str(), 1);
  TFM_ASSIGN_OR_RETURN(
      TrainedModel trained,
      LoadTrainedModel(ResolveUserPath(absl::GetFlag(FLAGS_model)), Device::Cpu(), &std::cerr));
  const config::DecodeConfig decode = DecodeSettings(trained);
  const std::string input = ResolveDataPath(absl::GetFlag(FLAGS_input));
  TFM_ASSIGN_OR_RETURN(const std::vector<std::string> lines,
                       ReadLines(input, absl::GetFlag(FLAGS_max_lines)));
  const EncodedLines encoded = EncodeLines(
      trained.tokenizer, trained.config.data().batching().max_length(), lines, input, &std::cerr);
  const Outputs& sources = encoded.sources;
  if (sources.empty()) return absl::InvalidArgumentError(input + ": nothing to translate");
  int64_t source_tokens = 0;
  for (const std::vector<int>& s : sources) source_tokens += static_cast<int64_t>(s.size());

  TFM_ASSIGN_OR_RETURN(const std::string work, WritePeerInputs(trained.tokenizer, sources));
  TFM_ASSIGN_OR_RETURN(const std::string peer_command,
                       PeerCommand(argv0, trained, decode, work, threads, batch_size));
  const std::vector<std::string> peers =
      absl::StrSplit(absl::GetFlag(FLAGS_peers), ',', absl::SkipEmpty());

  std::cout << absl::StrFormat(
      "decoding %d sentences (%d source subwords with eos) of %s with %s\nbeam %d, alpha %.2f, "
      "max length source + %d, batched rows: %d sentences a batch sorted by length; %d "
      "sentences untimed first per row\n",
      sources.size(), source_tokens, input, trained.checkpoint_dir, decode.beam_size(),
      decode.length_penalty_alpha(), decode.max_length_offset(), batch_size,
      absl::GetFlag(FLAGS_warmup));

  TFM_ASSIGN_OR_RETURN(const Row ours_batched, RunOurs(trained, decode, batch_size, sources));
  TFM_RETURN_IF_ERROR(CheckPeersAgree(peer_command, peers, ours_batched, trained.tokenizer));
  TFM_ASSIGN_OR_RETURN(const std::vector<Row> rows,
                       RunTimedRows(trained, decode, batch_size, sources, peer_command, peers));
  std::filesystem::remove_all(work);

  PrintSettings(rows);
  PrintResults(rows);
  return absl::OkStatus();
}

}  // namespace
}  // namespace tfm

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = tfm::Main(argv[0]);
  if (!status.ok()) {
    std::cerr << "decode: " << status << "\n";
    return 1;
  }
  return 0;
}

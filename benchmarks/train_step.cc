// Full training updates (forward, backward, Adam) of the paper's Transformer,
// ours against PyTorch's nn.Transformer at the same sizes, batch, tokens and
// threads, in one run:
//
//   bazel run -c opt //benchmarks:train_step [-- --threads=2 --steps=5]
//   bazel run -c opt //benchmarks:train_step -- --device=cuda --presets=base,paper
//   bazel run -c opt //benchmarks:train_step -- --device=cuda --dtype=bf16
//       --presets=base_25k,big_25k   (one command)
//
// Presets: small (the CPU presets' model at their 4,096-token batch), base
// (the paper's base model and 37k vocabulary at a ~4k-token batch) and paper
// (base at the paper's ~25k target tokens an update: 6 batches accumulated,
// update_freq 6), and for GPUs base_25k and big_25k (the paper's base and
// big models, ~25k target tokens in one batch). Per preset it prints target
// tokens/s and peak memory of both sides (PyTorch eager, and torch.compile
// when it runs there), and last the line `train tokens/s ours/torch: X`
// against the faster PyTorch row. On CUDA, also the model FLOPs utilisation
// of each side (model FLOPs per update / time / the GPU's dense datasheet
// peak for --dtype, beside a large GEMM's rate measured in the same run),
// and last `train MFU ours (cuda): Y%`.
//
// --dtype: f32, or on CUDA bf16 (ours: bf16 compute, f32 master weights;
// PyTorch: autocast to bf16) or f16 (both with dynamic loss scaling from
// 128: ours train.loss_scaling, PyTorch's GradScaler); on the CPU bf16
// (ours: f32 tensors, bf16 products, ops/matmul/gemm_bf16_cpu.h; PyTorch:
// CPU autocast to bf16).
//
// Same work on both sides:
// - the batches are built by the same formula (ids, lengths and padding;
//   benchmarks/train_step_torch.py mirrors BatchIds);
// - dropout at every site nn.Transformer applies it, at the same rate 0.1:
//   embeddings + positions, attention weights, after the ReLU, each
//   sublayer's output before its residual add;
// - the same initial weights: ours are written to a safetensors file and
//   loaded into nn.Transformer (tools/python/ours_to_torch.py);
// - the same update: label-smoothed cross-entropy summed over target tokens
//   and divided by their count, Adam (0.9, 0.98, 1e-9) with the paper's
//   schedule (PyTorch's fused Adam where its build has one).
// Before any timing, both sides compute the first batch's loss from those
// weights with dropout off; they must agree within 1e-4 in f32, 1% in bf16
// and f16 (check: PASS / FAIL; FAIL ends the run). Ours runs in a child process per preset so each
// peak memory is its own.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/deterministic.h"
#include "core/environment_report.h"
#include "core/op_profile.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "runtime/train/adam_optimizer.h"
#include "runtime/train/checkpoint_match.h"
#include "runtime/train/safetensors.h"
#include "runtime/train/trainer.h"
#include "core/allocator.h"
#include "core/config/training_dtype.h"
#include "core/cuda/runtime.h"
#include "core/tensor_copy.h"
#include "benchmarks/device_peak.h"
#include "layers/transformer.h"
#include "ops/cast/cast.h"
#include "ops/fill/fill.h"
#include "ops/matmul/gemm_bf16_cpu.h"
#include "ops/matmul/matmul.h"
#include "ops/random/random.h"
#include "tools/cpp/runfiles/runfiles.h"

ABSL_FLAG(int, threads, 2, "threads on both sides");
ABSL_FLAG(int, steps, 5, "timed updates per side (after 2 warm-up updates); the median counts");
ABSL_FLAG(std::string, presets, "small,base", "which sizes: small (the CPU presets), base, paper");
ABSL_FLAG(std::string, device, "cpu", "cpu or cuda[:N]: where both sides train");
ABSL_FLAG(std::string, dtype, "f32",
          "what both sides compute in: f32, or on CUDA bf16 or f16 (mixed precision)");
ABSL_FLAG(std::string, peer_python, "/opt/transformer-bench-venv/bin/python3",
          "Python with PyTorch (tools/setup_bench.sh)");
ABSL_FLAG(bool, torch_compile, true, "also time torch.compile (a second PyTorch row)");
ABSL_FLAG(bool, profile_ops, false,
          "also print where our update's time goes, op by op (core/op_profile.h), per preset");
ABSL_FLAG(bool, deterministic, false,
          "our side with deterministic kernels (train.deterministic), to measure what they "
          "cost against the fast ones");
ABSL_FLAG(std::string, child, "", "internal: run our side of one preset and print its figures");
ABSL_FLAG(std::string, init_out, "",
          "internal (child): write the initial weights here (safetensors) for the PyTorch side");

namespace tfm {
namespace {

struct Preset {
  std::string name;
  int layers, d_model, d_ff, heads, vocab, batch, source_len, target_len;
  int update_freq = 1;  // Batches accumulated into one update.
};

absl::StatusOr<Preset> Find(absl::string_view name) {
  if (name == "small") return Preset{"small", 3, 256, 1024, 4, 8000, 128, 32, 32};
  if (name == "base") return Preset{"base", 6, 512, 2048, 8, 37000, 96, 48, 48};
  if (name == "paper") return Preset{"paper", 6, 512, 2048, 8, 37000, 96, 48, 48, 6};
  // One batch of 576 x 48 positions: ~24k real target tokens (a GPU's).
  if (name == "base_25k") return Preset{"base_25k", 6, 512, 2048, 8, 37000, 576, 48, 48};
  if (name == "big_25k") return Preset{"big_25k", 6, 1024, 4096, 16, 37000, 576, 48, 48};
  if (name == "big_cpu64") return Preset{"big_cpu64", 6, 1024, 4096, 16, 37000, 64, 48, 48};
  return absl::InvalidArgumentError(absl::StrCat(
      "--presets: unknown preset '", name, "' (small, base, paper, base_25k, big_25k)"));
}

constexpr float kDropout = 0.1f;

constexpr int kPad = 0, kBos = 2, kEos = 3;

// Mirrors batch_ids() of train_step_torch.py: lengths falling from `length`
// to about 3/4 of it down the batch, ids from a fixed formula, EOS last.
void BatchIds(int rows, int length, int vocab, int salt, std::vector<int>* ids,
              std::vector<int>* lengths) {
  ids->assign(static_cast<size_t>(rows) * length, kPad);
  lengths->clear();
  for (int r = 0; r < rows; ++r) {
    const int n = length - (r * (length / 4)) / std::max(1, rows - 1);
    for (int j = 0; j < n - 1; ++j) {
      (*ids)[r * length + j] =
          4 + static_cast<int>((int64_t{r} * 7919 + int64_t{j} * 104729 + salt) % (vocab - 4));
    }
    (*ids)[r * length + n - 1] = kEos;
    lengths->push_back(n);
  }
}

double PeakRssMib() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

config::ModelConfig ModelOf(const Preset& preset, float dropout) {
  config::ModelConfig model;
  model.set_num_encoder_layers(preset.layers);
  model.set_num_decoder_layers(preset.layers);
  model.set_d_model(preset.d_model);
  model.set_d_ff(preset.d_ff);
  model.set_num_heads(preset.heads);
  model.set_d_k(preset.d_model / preset.heads);
  model.set_d_v(preset.d_model / preset.heads);
  // Every site nn.Transformer drops at: residual (and embeddings), attention
  // weights, after the ReLU.
  model.set_dropout(dropout);
  model.set_attention_dropout(dropout);
  model.set_relu_dropout(dropout);
  return model;
}

// The update's batches: batch k's ids use salts 1 + 2k (source) and 2 + 2k
// (target), as train_step_torch.py's.
std::vector<Batch> Batches(const Preset& preset) {
  std::vector<Batch> batches(preset.update_freq);
  for (int k = 0; k < preset.update_freq; ++k) {
    Batch& batch = batches[k];
    batch.size = preset.batch;
    batch.source_length = preset.source_len;
    batch.target_length = preset.target_len;
    BatchIds(preset.batch, preset.source_len, preset.vocab, 1 + 2 * k, &batch.source,
             &batch.source_lengths);
    BatchIds(preset.batch, preset.target_len, preset.vocab, 2 + 2 * k, &batch.target,
             &batch.target_lengths);
  }
  return batches;
}

// Model FLOPs of one update: the matrix products' multiply-adds x 2, and
// backward twice forward's (x 3 in all), over the real (unpadded) tokens;
// embedding lookups, norms and softmaxes left out, as MFU counts. Per
// source token of a row with S source and T target tokens: each encoder
// layer's Q, K, V, O projections (4 d^2), FFN (2 d d_ff) and scores and
// values (2 S d), and each decoder layer's cross-attention K, V (2 d^2).
// Per target token: each decoder layer's self-attention (4 d^2 + 2 T d,
// the whole T x T scores, as the kernels compute them), cross-attention Q,
// O (2 d^2) and scores and values (2 S d), FFN (2 d d_ff), and the output
// projection (d vocab).
double ModelFlopsPerUpdate(const Preset& p, const std::vector<Batch>& batches) {
  const double d = p.d_model, ff = p.d_ff, layers = p.layers, vocab = p.vocab;
  double macs = 0;
  for (const Batch& batch : batches) {
    for (int r = 0; r < batch.size; ++r) {
      const double s = batch.source_lengths[r], t = batch.target_lengths[r];
      macs += layers * s * (4 * d * d + 2 * d * ff + 2 * s * d + 2 * d * d);
      macs += layers * t * (4 * d * d + 2 * t * d + 2 * d * d + 2 * s * d + 2 * d * ff);
      macs += t * d * vocab;
    }
  }
  return 2 * 3 * macs;
}

// The dense rate of an n x n x n `dtype` GEMM (the matmul op, our cuBLASLt
// path) on `device`, TFLOP/s: best of 10 after 3 warm-up runs. On random
// operands: a GPU multiplies constant ones faster (the device notes: 894 on
// zeros against 788 TFLOP/s on random data, H200), not training's rate.
absl::StatusOr<double> MeasureGemmTflops(const Device& device, DType dtype) {
  constexpr int64_t n = 8192;
  TFM_ASSIGN_OR_RETURN(const Tensor a_f32, RandomUniform({n, n}, PhiloxState{1, 0, 0}, -1.0f,
                                                         1.0f, device));
  TFM_ASSIGN_OR_RETURN(const Tensor b_f32, RandomUniform({n, n}, PhiloxState{2, 0, 0}, -1.0f,
                                                         1.0f, device));
  TFM_ASSIGN_OR_RETURN(const Tensor a, Cast(a_f32, dtype));
  TFM_ASSIGN_OR_RETURN(const Tensor b, Cast(b_f32, dtype));
  double best = 0;
  for (int i = 0; i < 13; ++i) {
    TFM_RETURN_IF_ERROR(cuda::Synchronize(device.index));
    const absl::Time start = absl::Now();
    TFM_RETURN_IF_ERROR(MatMul(a, b).status());
    TFM_RETURN_IF_ERROR(cuda::Synchronize(device.index));
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (i >= 3) best = std::max(best, 2.0 * n * n * n / seconds / 1e12);
  }
  return best;
}

// The trainer's options for `dtype`: its compute dtype, with dynamic loss
// scaling for f16 (train.loss_scaling's "auto").
TrainerOptions OptionsFor(DType dtype) {
  TrainerOptions options;
  options.compute_dtype = dtype;
  options.loss_scaling.dynamic = dtype == DType::kF16;
  return options;
}

// Our side of one preset, in this (child) process: the check loss (the
// first batch with dropout off, from the initial weights, which go to
// --init_out), then the timed updates with dropout on. Prints one line
// "ours <params> <target tokens> <median s> <min s> <max s> <peak MiB> <loss> <check loss>".
absl::Status RunOurs(const Preset& preset, const Device& device, DType dtype) {
  const VocabularySpec vocabulary{preset.vocab, kPad, kBos};
  TFM_ASSIGN_OR_RETURN(const InverseSqrtSchedule schedule,
                       InverseSqrtSchedule::Create(preset.d_model, 4000));
  const std::vector<Batch> batches = Batches(preset);
  double check_loss = 0;
  NamedTensors initial;
  {
    // Dropout off: the loss both sides must agree on before timing.
    TFM_ASSIGN_OR_RETURN(std::unique_ptr<Transformer> plain,
                         Transformer::Create(ModelOf(preset, 0.0f), vocabulary, device, 1));
    TFM_ASSIGN_OR_RETURN(AdamOptimizer optimizer,
                         AdamOptimizer::Create(plain->Parameters(), config::AdamConfig(), schedule));
    Trainer trainer(plain.get(), &optimizer, /*batcher=*/nullptr, {}, OptionsFor(dtype), {});
    TFM_ASSIGN_OR_RETURN(Trainer::Gradients gradients,
                         trainer.ComputeGradients({batches[0]}, /*seed=*/1, /*step=*/1));
    check_loss = gradients.stats.loss / gradients.stats.target_tokens;
    for (Parameter* parameter : plain->Parameters()) {
      TFM_ASSIGN_OR_RETURN(Tensor host, CopyToDevice(parameter->value, Device::Cpu()));
      initial.emplace_back(parameter->name, host);
    }
    if (const std::string path = absl::GetFlag(FLAGS_init_out); !path.empty()) {
      TFM_RETURN_IF_ERROR(WriteSafetensors(path, initial));
    }
  }
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<Transformer> transformer,
                       Transformer::Create(ModelOf(preset, kDropout), vocabulary, device, 1));
  NamedTensors parameters;
  for (Parameter* parameter : transformer->Parameters()) {
    parameters.emplace_back(parameter->name, parameter->value);  // Shares the buffer.
  }
  TFM_RETURN_IF_ERROR(AssignTensors(initial, "the dropout-free model's weights", &parameters));
  TFM_ASSIGN_OR_RETURN(AdamOptimizer optimizer,
                       AdamOptimizer::Create(transformer->Parameters(), config::AdamConfig(),
                                             schedule));
  // The trainer's own update (no data stream needed for fixed batches).
  Trainer trainer(transformer.get(), &optimizer, /*batcher=*/nullptr, {}, OptionsFor(dtype), {});
  std::vector<double> seconds, queue_seconds;
  double loss = 0;
  int64_t target_tokens = 0;
  for (const Batch& batch : batches) target_tokens += batch.target_tokens();
  const bool profile = absl::GetFlag(FLAGS_profile_ops);
  for (int step = 1; step <= 2 + absl::GetFlag(FLAGS_steps); ++step) {
    if (profile) {
      SetOpProfiling(step > 2);  // Warm-up updates stay out of the table.
      if (step == 3) ResetOpProfile();
    }
    const absl::Time start = absl::Now();
    // As the trainer runs an update between log lines: nothing read back
    // until it is applied (a non-finite one would be skipped on the device).
    TFM_ASSIGN_OR_RETURN(
        const Trainer::QueuedGradients queued,
        trainer.QueueGradients(batches, static_cast<uint64_t>(step), step));
    TFM_RETURN_IF_ERROR(trainer.ApplyUpdate(step));
    // How long the host took to queue the update: while it is shorter than
    // the device's time, the launches hide behind the device's work and
    // CUDA graphs of the update could not pay.
    if (step > 2) queue_seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    if (device.is_cuda()) TFM_RETURN_IF_ERROR(cuda::Synchronize(device.index));
    if (step > 2) seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    TFM_ASSIGN_OR_RETURN(const Trainer::Gradients gradients, trainer.ReadGradients(queued, step));
    loss = gradients.stats.loss / gradients.stats.target_tokens;
  }
  if (profile) {
    double total = 0;
    for (double s : seconds) total += s;
    std::cout << "where our " << seconds.size() << " timed updates' time goes, op by op:\n"
              << OpProfileReport(total);
  }
  std::sort(seconds.begin(), seconds.end());
  std::sort(queue_seconds.begin(), queue_seconds.end());
  if (device.is_cuda()) {
    std::cout << absl::StrFormat(
        "host time to queue an update (nothing read back): median %.1f ms of the update's %.1f "
        "ms; CUDA graphs of the update pay only where the first nears the second\n",
        1e3 * queue_seconds[queue_seconds.size() / 2], 1e3 * seconds[seconds.size() / 2]);
  }
  double peak_mib = PeakRssMib();
  if (device.is_cuda()) {  // The GPU's: the caching allocator's peak in use.
    TFM_ASSIGN_OR_RETURN(Allocator * allocator, AllocatorFor(device));
    peak_mib = allocator->stats().peak_bytes_in_use / 1048576.0;
  }
  std::cout << absl::StrFormat("ours %d %d %.6f %.6f %.6f %.1f %.4f %.7f\n",
                               transformer->NumParameters(), target_tokens,
                               seconds[seconds.size() / 2], seconds.front(), seconds.back(),
                               peak_mib, loss, check_loss);
  return absl::OkStatus();
}

// Runs `command` and returns its standard output.
absl::StatusOr<std::string> Capture(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError(absl::StrCat("cannot run: ", command));
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) {
    return absl::InternalError(absl::StrCat("exit status ", WEXITSTATUS(status), ": ", command));
  }
  return out;
}

// The last `count` lines of the file at `path` (what there is of them).
std::string LastLines(const std::string& path, int count) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string tail;
  for (size_t i = lines.size() > static_cast<size_t>(count) ? lines.size() - count : 0;
       i < lines.size(); ++i) {
    absl::StrAppend(&tail, "  ", lines[i], "\n");
  }
  return tail;
}

// A flat JSON object's string field ("?" when absent).
std::string JsonString(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": \"");
  if (at == std::string::npos) return "?";
  const size_t begin = at + key.size() + 5;
  return json.substr(begin, json.find('"', begin) - begin);
}

// A flat JSON object's number field.
double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  double value = -1;
  const size_t begin = at + key.size() + 3;
  const size_t end = json.find_first_of(",}", begin);
  (void)absl::SimpleAtod(json.substr(begin, end - begin), &value);
  return value;
}

struct Row {
  std::string side;
  double params = 0, tokens = 0, median = 0, min = 0, max = 0, rss = 0, loss = 0,
         check_loss = 0;
  double tokens_per_second() const { return tokens / median; }
};

absl::Status Main(int argc, char** argv) {
  // Every line out as it is written: gpu_checks.sh pipes this through tee
  // under a timeout, and a killed process loses what a buffer held.
  std::cout << std::unitbuf;
  const int threads = absl::GetFlag(FLAGS_threads);
  TFM_ASSIGN_OR_RETURN(const Device device, Device::Parse(absl::GetFlag(FLAGS_device)));
  TFM_ASSIGN_OR_RETURN(const DType dtype, ParseDType(absl::GetFlag(FLAGS_dtype)));
  if (!CanTrainIn(device.type, dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("--dtype=", DTypeName(dtype), " on ",
                                                   device.ToString(), ": ",
                                                   TrainingDTypesOn(device.type)));
  }
  if (!absl::GetFlag(FLAGS_child).empty()) {
    setenv("TFM_NUM_THREADS", absl::StrCat(threads).c_str(), 1);
    TFM_ASSIGN_OR_RETURN(const Preset preset, Find(absl::GetFlag(FLAGS_child)));
    SetDeterministicKernels(absl::GetFlag(FLAGS_deterministic));
    return RunOurs(preset, device, dtype);
  }
  if (device.is_cuda() && cuda::DeviceCount() <= device.index) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device=", device.ToString(), ": no such GPU here (", cuda::DeviceCount(), " visible)"));
  }
  std::string error;
  std::unique_ptr<bazel::tools::cpp::runfiles::Runfiles> runfiles(
      bazel::tools::cpp::runfiles::Runfiles::Create(argv[0], &error));
  if (runfiles == nullptr) return absl::NotFoundError(absl::StrCat("runfiles: ", error));
  const std::string script = runfiles->Rlocation("transformer/benchmarks/train_step_torch.py");
  const std::string mapping = runfiles->Rlocation("transformer/tools/python/ours_to_torch.py");
  char scratch_template[] = "/tmp/train_step.XXXXXX";
  if (mkdtemp(scratch_template) == nullptr) return absl::InternalError("mkdtemp failed");
  const std::string scratch = scratch_template;
  setenv("TFM_NUM_THREADS", absl::StrCat(threads).c_str(), 1);
  for (const auto& [label, text] : EnvironmentReport()) std::cout << label << ": " << text << "\n";
  std::cout << "threads: " << threads << " on each side; allocator: ours as the allocator line "
            << "above; torch glibc\n";
  // Version, BLAS, CPU kernels (torch >= 2.0 says which), GPU and CUDA.
  const std::string torch_info = absl::StrCat(
      absl::GetFlag(FLAGS_peer_python),
      " -c 'import torch,re; b=re.search(r\"BLAS_INFO=(\\S+)\", torch.__config__.show()); "
      "c=getattr(torch.backends, \"cpu\", None); g=torch.cuda.is_available(); "
      "print(torch.__version__, \"BLAS\", b.group(1).rstrip(\",\") if b else \"?\", "
      "\"cpu capability\", c.get_cpu_capability() if c else \"?\", "
      "(\"gpu \" + torch.cuda.get_device_name() + \" cuda \" + str(torch.version.cuda)) "
      "if g else \"no gpu\")'");
  TFM_ASSIGN_OR_RETURN(const std::string torch_line, Capture(torch_info));
  std::cout << "torch: " << torch_line;
  std::cout << "dtype: " << DTypeName(dtype)
            << (dtype == DType::kF32 ? ""
                : dtype == DType::kBF16 && !device.is_cuda()
                    ? absl::StrCat(" (ours: f32 tensors, the products' inputs rounded to bf16 "
                                   "and summed in f32, kernel ",
                                   Bf16ProductKernelName(), "; torch: CPU autocast bf16)")
                : dtype == DType::kBF16
                    ? " (ours: bf16 compute, f32 master weights; torch: autocast bf16)"
                    : " (ours: f16 compute, f32 master weights, dynamic loss scaling; torch: "
                      "autocast f16, GradScaler)")
            << "\n";
  std::cout << "our kernels: "
            << (absl::GetFlag(FLAGS_deterministic)
                    ? "deterministic (train.deterministic: no float atomics decide an order)"
                    : "the fast ones (train.deterministic off)")
            << "\n";
  // MFU's denominators, on a GPU: the datasheet's dense peak and a large
  // GEMM measured here.
  double peak_tflops = 0, gemm_tflops = 0;
  if (device.is_cuda()) {
    TFM_ASSIGN_OR_RETURN(const bench::DevicePeak peak, bench::MeasureDevicePeak(device.index));
    peak_tflops = peak.GemmPeakGflops(dtype, /*tf32=*/false) / 1e3;
    TFM_ASSIGN_OR_RETURN(gemm_tflops, MeasureGemmTflops(device, dtype));
    std::cout << "gpu: " << peak.info.name << "; " << peak.Summary() << "\n"
              << absl::StrFormat("gpu peak for %s: %.1f TFLOP/s dense (datasheet); an 8192^3 "
                                 "GEMM here: %.1f TFLOP/s (%.0f%% of it)\n",
                                 DTypeName(dtype), peak_tflops, gemm_tflops,
                                 peak_tflops > 0 ? 100 * gemm_tflops / peak_tflops : 0.0);
  }
  double last_mfu = 0;

  double best_ratio = 0;
  std::vector<std::string> summary;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_presets), ',')) {
    TFM_ASSIGN_OR_RETURN(const Preset preset, Find(name));
    std::cout << absl::StrFormat(
        "\n%s: N=%d d_model=%d d_ff=%d h=%d vocab=%d, %d batch(es) of %d x (%d source, %d "
        "target) positions an update, dropout %g at every site, %d timed updates on %s\n",
        preset.name, preset.layers, preset.d_model, preset.d_ff, preset.heads, preset.vocab,
        preset.update_freq, preset.batch, preset.source_len, preset.target_len, kDropout,
        absl::GetFlag(FLAGS_steps), device.ToString());
    std::vector<Row> rows;
    const std::string init = absl::StrCat(scratch, "/", name, "_init.safetensors");
    TFM_ASSIGN_OR_RETURN(const std::string ours_out,
                         Capture(absl::StrCat(argv[0], " --child=", name, " --threads=", threads,
                                              " --steps=", absl::GetFlag(FLAGS_steps),
                                              " --device=", device.ToString(),
                                              " --dtype=", DTypeName(dtype), " --init_out=",
                                              init, " --profile_ops=",
                                              absl::GetFlag(FLAGS_profile_ops),
                                              " --deterministic=",
                                              absl::GetFlag(FLAGS_deterministic))));
    // What our side said before its figures (the op profile, the host's
    // time to queue an update).
    std::cout << ours_out.substr(0, ours_out.rfind("ours "));
    Row ours{"ours"};
    std::vector<std::string> f = absl::StrSplit(ours_out.substr(ours_out.rfind("ours ")), ' ');
    if (f.size() < 9) return absl::InternalError("our side printed: " + ours_out);
    double* fields[] = {&ours.params, &ours.tokens, &ours.median, &ours.min,
                        &ours.max,    &ours.rss,    &ours.loss,   &ours.check_loss};
    for (int i = 0; i < 8; ++i) (void)absl::SimpleAtod(f[i + 1], fields[i]);
    rows.push_back(ours);
    for (bool compiled : {false, true}) {
      if (compiled && !absl::GetFlag(FLAGS_torch_compile)) continue;
      // The peer's stderr, shown when it fails (a compile's reason).
      const std::string errors =
          absl::StrCat(scratch, "/", preset.name, compiled ? "_compiled" : "_eager", ".err");
      // torch.compile is bounded: a slow or stuck compile costs its row, not
      // the run's other rows.
      const std::string command = absl::StrFormat(
          "%s%s %s --threads %d --layers %d --d_model %d --d_ff %d --heads %d --vocab %d "
          "--batch %d --source_len %d --target_len %d --update_freq %d --steps %d --dropout %g "
          "--device %s --dtype %s --init %s --mapping %s%s 2>%s",
          compiled ? "timeout 240 " : "", absl::GetFlag(FLAGS_peer_python), script, threads,
          preset.layers, preset.d_model, preset.d_ff, preset.heads, preset.vocab, preset.batch,
          preset.source_len, preset.target_len, preset.update_freq, absl::GetFlag(FLAGS_steps),
          kDropout, device.is_cuda() ? absl::StrCat("cuda:", device.index) : "cpu",
          DTypeName(dtype), init, mapping, compiled ? " --compile" : "", errors);
      absl::StatusOr<std::string> json = Capture(command);
      if (!json.ok()) {
        std::cout << (compiled ? "torch.compile" : "torch eager")
                  << ": did not run here: " << json.status().message()
                  << "; the end of its stderr:\n"
                  << LastLines(errors, 20);
        continue;
      }
      Row torch{compiled ? "torch.compile" : "torch eager", JsonNumber(*json, "parameters"),
                JsonNumber(*json, "target_tokens"), JsonNumber(*json, "seconds_per_update"),
                JsonNumber(*json, "seconds_min"), JsonNumber(*json, "seconds_max"),
                JsonNumber(*json, "peak_mib"), JsonNumber(*json, "last_loss"),
                JsonNumber(*json, "check_loss")};
      if (!compiled) {
        std::cout << "torch: " << JsonString(*json, "torch_version") << ", adam "
                  << JsonString(*json, "adam") << ", attention "
                  << JsonString(*json, "attention") << "\n";
      }
      rows.push_back(torch);
    }
    // Same weights, same first batch, dropout off: the same loss, or the
    // timings below compare different work.
    // bf16 keeps 8 bits of mantissa, f16 11: the two sides round at
    // different points, so 16-bit losses agree to about a percent.
    const double tolerance = dtype == DType::kF32 ? 1e-4 : 1e-2 * std::abs(ours.check_loss);
    bool agree = rows.size() > 1;
    for (size_t i = 1; i < rows.size(); ++i) {
      const double difference = std::abs(rows[i].check_loss - ours.check_loss);
      std::cout << absl::StrFormat(
          "step-1 loss, dropout off, same weights: ours %.6f, %s %.6f, |difference| %.2e "
          "(at most %.2e)\n",
          ours.check_loss,
          // Its loss is the eager model's, taken before compiling.
          rows[i].side == "torch.compile" ? "torch.compile (its eager model)" : rows[i].side,
          rows[i].check_loss, difference, tolerance);
      agree = agree && difference <= tolerance;
    }
    std::cout << "check: " << (agree ? "PASS" : "FAIL") << "\n";
    if (!agree) {
      return absl::FailedPreconditionError(absl::StrCat(
          preset.name, ": the step-1 losses differ by more than ", tolerance,
          " (or no PyTorch row ran)"));
    }
    std::cout << absl::StrFormat("%-14s %12s %9s %12s %18s %10s %8s\n", "side", "parameters",
                                 "tgt tok", "s/update", "(min..max)", "tgt tok/s",
                                 device.is_cuda() ? "GPU MiB" : "peak MiB");
    for (const Row& row : rows) {
      std::cout << absl::StrFormat("%-14s %12.0f %9.0f %12.3f %8.3f..%-8.3f %10.1f %8.0f\n",
                                   row.side, row.params, row.tokens, row.median, row.min,
                                   row.max, row.tokens_per_second(), row.rss);
    }
    double fastest = 0;
    for (size_t i = 1; i < rows.size(); ++i) {
      if (rows[i].params != ours.params || rows[i].tokens != ours.tokens) {
        return absl::InternalError(absl::StrFormat(
            "%s: %s has %.0f parameters and %.0f target tokens, ours %.0f and %.0f: not the "
            "same work", preset.name, rows[i].side, rows[i].params, rows[i].tokens, ours.params,
            ours.tokens));
      }
      fastest = std::max(fastest, rows[i].tokens_per_second());
    }
    if (fastest <= 0) return absl::UnavailableError("no PyTorch row ran");
    if (device.is_cuda() && peak_tflops > 0) {
      const double flops = ModelFlopsPerUpdate(preset, Batches(preset));
      for (const Row& row : rows) {
        const double tflops = flops / row.median / 1e12;
        std::cout << absl::StrFormat(
            "%s: %s model FLOPs %.3g per update, %.1f TFLOP/s: MFU %.1f%% of the %.0f TFLOP/s "
            "datasheet peak (%.1f%% of the measured GEMM rate)\n",
            preset.name, row.side, flops, tflops, 100 * tflops / peak_tflops, peak_tflops,
            gemm_tflops > 0 ? 100 * tflops / gemm_tflops : 0.0);
      }
      last_mfu = 100 * flops / ours.median / 1e12 / peak_tflops;
    }
    const double ratio = ours.tokens_per_second() / fastest;
    summary.push_back(absl::StrFormat("%s %.2f", preset.name, ratio));
    std::cout << absl::StrFormat("%s: train tokens/s ours/torch (fastest row): %.2f\n",
                                 preset.name, ratio);
    best_ratio = ratio;  // The last preset (base, by default) is the headline.
  }
  std::filesystem::remove_all(scratch);
  std::cout << "\nper preset: " << absl::StrJoin(summary, ", ") << "\n";
  if (device.is_cuda()) {
    std::cout << absl::StrFormat("train tokens/s ours/torch (cuda): %.2f\n", best_ratio);
    std::cout << absl::StrFormat("train MFU ours (cuda): %.1f%%\n", last_mfu);
  } else {
    std::cout << absl::StrFormat("train tokens/s ours/torch: %.2f\n", best_ratio);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace tfm

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = tfm::Main(argc, argv);
  if (!status.ok()) {
    std::cerr << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

// The decode command's line handling and model loading, on a small random
// Transformer saved as training saves it (checkpoint with config and
// vocabulary). Search itself is tested in runtime/decode.
#include "tasks/common/seq2seq_decoding.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/cuda/runtime.h"
#include "core/data/file_io.h"
#include "gtest/gtest.h"
#include "runtime/train/checkpoint.h"
#include "tasks/common/quantized_model.h"
#include "tasks/common/random_model_testing.h"
#include "tasks/common/trained_model.h"
#include "tasks/driver/driver.h"
#include "tests/util/gpu.h"
#include "tests/util/peer_python.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;

// A work directory holding one checkpoint of a 2-layer d_model 32 model
// with a 500-piece vocabulary trained on Multi30k's validation sentences.
class Seq2SeqDecodingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/decoding_work"));
    config::TaskConfig config;
    config.set_task("translation");
    config::TokenizerConfig& tokenizer_config = *config.mutable_data()->mutable_tokenizer();
    tokenizer_config.set_vocab_size(500);
    tokenizer_config.set_seed(7);
    config.mutable_data()->mutable_batching()->set_max_length(24);
    config::ModelConfig& model = *config.mutable_model();
    testing::SetTinyModelShape(model);
    config.mutable_decode()->set_max_length_offset(10);
    // A held-out split of three pairs for evaluate --split.
    valid_source_ = new std::string(absl::StrCat(::testing::TempDir(), "/valid.en"));
    valid_target_ = new std::string(absl::StrCat(::testing::TempDir(), "/valid.de"));
    ASSERT_TRUE(WriteFileAtomically(*valid_source_,
                                    "A man rides a bike.\nTwo dogs play in the snow.\nPeople "
                                    "walk down the street.\n")
                    .ok());
    ASSERT_TRUE(WriteFileAtomically(*valid_target_,
                                    "Ein Mann fährt Fahrrad.\nZwei Hunde spielen im Schnee.\n"
                                    "Leute gehen die Straße entlang.\n")
                    .ok());
    config::CorpusConfig& valid = *config.mutable_data()->add_valid();
    valid.set_name("three_pairs");
    valid.set_format(config::CorpusConfig::PLAIN_TEXT);
    valid.set_source_path(*valid_source_);
    valid.set_target_path(*valid_target_);
    absl::StatusOr<Tokenizer> tokenizer = Tokenizer::TrainOnFiles(
        tokenizer_config,
        {SharedDataPath("multi30k/val.en.gz"), SharedDataPath("multi30k/val.de.gz")});
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    absl::StatusOr<std::string> dir =
        testing::WriteRandomModelCheckpoint(config, *tokenizer, *work_dir_, /*init_seed=*/11);
    ASSERT_TRUE(dir.ok()) << dir.status();
    checkpoint_dir_ = new std::string(*dir);
  }

  static TrainedModel Load() {
    absl::StatusOr<TrainedModel> trained = LoadTrainedModel(*work_dir_, Device::Cpu(), nullptr);
    EXPECT_TRUE(trained.ok()) << trained.status();
    return *std::move(trained);
  }

  static std::string* work_dir_;
  static std::string* checkpoint_dir_;
  static std::string* valid_source_;
  static std::string* valid_target_;
};

std::string* Seq2SeqDecodingTest::work_dir_ = nullptr;
std::string* Seq2SeqDecodingTest::checkpoint_dir_ = nullptr;
std::string* Seq2SeqDecodingTest::valid_source_ = nullptr;
std::string* Seq2SeqDecodingTest::valid_target_ = nullptr;

TEST_F(Seq2SeqDecodingTest, WorkDirectoryAndCheckpointGiveTheSameModel) {
  TrainedModel from_work_dir = Load();
  absl::StatusOr<TrainedModel> from_checkpoint =
      LoadTrainedModel(*checkpoint_dir_, Device::Cpu(), nullptr);
  ASSERT_TRUE(from_checkpoint.ok()) << from_checkpoint.status();
  EXPECT_EQ(from_work_dir.checkpoint_dir, *checkpoint_dir_);
  const std::vector<Parameter*> a = from_work_dir.model->Parameters();
  const std::vector<Parameter*> b = from_checkpoint->model->Parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]->value.ToVector<float>(), b[i]->value.ToVector<float>()) << a[i]->name;
  }
  EXPECT_EQ(from_work_dir.config.model().d_model(), 32);
}

TEST_F(Seq2SeqDecodingTest, MissingEmptyAndCorruptModelsNameThePath) {
  const std::string missing = absl::StrCat(::testing::TempDir(), "/no_such_model");
  absl::StatusOr<TrainedModel> loaded = LoadTrainedModel(missing, Device::Cpu(), nullptr);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), missing)) << loaded.status();

  const std::string empty = absl::StrCat(::testing::TempDir(), "/empty_work_dir");
  ASSERT_TRUE(MakeDirectories(empty).ok());
  loaded = LoadTrainedModel(empty, Device::Cpu(), nullptr);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), "no checkpoint")) << loaded.status();

  // A copy of the checkpoint whose weights file lost its tail.
  const std::string corrupt = absl::StrCat(::testing::TempDir(), "/corrupt_checkpoint");
  ASSERT_EQ(
      std::system(
          absl::StrCat("rm -rf ", corrupt, " && cp -r ", *checkpoint_dir_, " ", corrupt).c_str()),
      0);
  const std::string weights = absl::StrCat(corrupt, "/", kModelFile);
  absl::StatusOr<std::string> bytes = ReadFileToString(weights);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(WriteFileAtomically(weights, bytes->substr(0, bytes->size() / 2)).ok());
  loaded = LoadTrainedModel(corrupt, Device::Cpu(), nullptr);
  EXPECT_FALSE(loaded.ok());
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), kModelFile)) << loaded.status();
}

// Every input line gets exactly one output line in its place; bad lines are
// reported by line number and left empty; a good line's output does not
// depend on the lines around it.
TEST_F(Seq2SeqDecodingTest, BadLinesKeepTheirPlaceAndAreReported) {
  TrainedModel trained = Load();
  std::string long_line;
  for (int i = 0; i < 60; ++i) absl::StrAppend(&long_line, "horse ");
  const std::vector<std::string> lines = {"A man rides a bike.",
                                          "",
                                          "bad \xff\xfe bytes",
                                          long_line,
                                          "Two dogs play in the snow.",
                                          " \t  ",
                                          std::string("A dog\0 runs.", 13)};
  std::ostringstream log;
  config::DecodeConfig decode = trained.config.decode();
  absl::StatusOr<std::vector<std::string>> out =
      DecodeLines(trained, decode, lines, "input.txt", &log);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), lines.size());
  EXPECT_EQ((*out)[1], "");
  EXPECT_EQ((*out)[2], "");
  EXPECT_EQ((*out)[3], "");
  EXPECT_EQ((*out)[5], "");
  EXPECT_EQ((*out)[6], "");
  // Empty and blank lines are reported like the others (README: "an empty,
  // over-long ... or invalid UTF-8 line gives ... a message").
  EXPECT_TRUE(absl::StrContains(log.str(), "input.txt:2: no words (empty or only whitespace)"))
      << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "input.txt:6: no words (empty or only whitespace)"))
      << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "input.txt:3: not valid UTF-8")) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "input.txt:7: a NUL byte")) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "input.txt:4: ")) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "max_length")) << log.str();
  EXPECT_FALSE(absl::StrContains(log.str(), "input.txt:1:")) << log.str();
  for (int i : {0, 4}) {
    absl::StatusOr<std::vector<std::string>> alone =
        DecodeLines(trained, decode, {lines[i]}, "alone", nullptr);
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(alone->front(), (*out)[i]) << lines[i];
  }
}

// The decode command (translate, parse) reports each bad line once, by file
// and line: a line cut at 1 MiB is blanked before decoding and not reported
// again as empty. Read two lines at a time (decode.read_lines), it names the
// same lines of the file, numbers n-best lists by input line, and writes
// the same output.
TEST_F(Seq2SeqDecodingTest, DecodeCommandReportsEachBadLineOnce) {
  const std::string input = absl::StrCat(::testing::TempDir(), "/bad_lines.en");
  ASSERT_TRUE(WriteFileAtomically(
                  input, absl::StrCat("A man rides a bike.\n", std::string((1 << 20) + 10, 'x'),
                                      "\n\n", "   \nTwo dogs play in the snow.\n"))
                  .ok());
  std::vector<std::string> outputs;
  for (const std::string& read_lines : {"", "decode.read_lines=2"}) {
    SCOPED_TRACE(read_lines);
    const std::string output = absl::StrCat(::testing::TempDir(), "/bad_lines", read_lines.size(),
                                            ".de");
    TaskContext context;
    context.mode = TaskMode::kDecode;
    context.decode.model = *work_dir_;
    context.decode.device = "cpu";
    context.decode.input = input;
    context.decode.output = output;
    if (!read_lines.empty()) context.decode.settings = {read_lines};
    ::testing::internal::CaptureStderr();
    const absl::Status status = RunDecodeCommand(context, DecodingHooks{});
    const std::string log = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_TRUE(absl::StrContains(log, absl::StrCat(input, ":2: longer than 1048576 bytes")))
        << log;
    EXPECT_FALSE(absl::StrContains(log, absl::StrCat(input, ":2: no words"))) << log;
    EXPECT_TRUE(absl::StrContains(log, absl::StrCat(input, ":3: no words"))) << log;
    EXPECT_TRUE(absl::StrContains(log, absl::StrCat(input, ":4: no words"))) << log;
    EXPECT_FALSE(absl::StrContains(log, absl::StrCat(input, ":1:"))) << log;
    EXPECT_FALSE(absl::StrContains(log, absl::StrCat(input, ":5:"))) << log;
    EXPECT_TRUE(absl::StrContains(log, "decoded 5 lines")) << log;
    absl::StatusOr<std::string> written = ReadFileToString(output);
    ASSERT_TRUE(written.ok()) << written.status();
    const std::vector<std::string> out = absl::StrSplit(*written, '\n');
    ASSERT_EQ(out.size(), 6u) << *written;  // Five lines, each ending with '\n'.
    EXPECT_EQ(out[1], "");
    EXPECT_EQ(out[2], "");
    EXPECT_EQ(out[3], "");
    EXPECT_NE(out[4], "");
    outputs.push_back(*written);

    // Two hypotheses a line, numbered by the line's place in the input.
    context.decode.beam = 2;
    context.decode.nbest = 2;
    context.decode.output = output + ".nbest";
    ::testing::internal::CaptureStderr();
    ASSERT_TRUE(RunDecodeCommand(context, DecodingHooks{}).ok());
    ::testing::internal::GetCapturedStderr();
    written = ReadFileToString(context.decode.output);
    ASSERT_TRUE(written.ok()) << written.status();
    const std::vector<std::string> nbest = absl::StrSplit(*written, '\n');
    // Lines 1 and 5 two hypotheses each, the three blank ones one empty
    // entry each: seven lines.
    ASSERT_EQ(nbest.size(), 8u) << *written;
    const char* const starts[] = {"0 ||| ", "0 ||| ", "1 |||  ||| 0", "2 |||  ||| 0",
                                  "3 |||  ||| 0", "4 ||| ", "4 ||| "};
    for (int i = 0; i < 7; ++i) EXPECT_TRUE(absl::StartsWith(nbest[i], starts[i])) << *written;
    outputs.push_back(*written);
  }
  EXPECT_EQ(outputs[0], outputs[2]);
  EXPECT_EQ(outputs[1], outputs[3]);
}

// --output naming an input file (however spelled) is refused before the
// model is loaded, naming both flags and the paths; the input is untouched.
TEST_F(Seq2SeqDecodingTest, OutputOverAnInputIsRefused) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/same_file");
  ASSERT_TRUE(MakeDirectories(dir).ok());
  const std::string input = absl::StrCat(dir, "/in.en");
  const std::string text = "A man rides a bike.\n";
  ASSERT_TRUE(WriteFileAtomically(input, text).ok());
  const std::string link = absl::StrCat(dir, "/link.en");
  std::remove(link.c_str());
  ASSERT_EQ(symlink(input.c_str(), link.c_str()), 0);
  TaskContext context;
  context.mode = TaskMode::kDecode;
  context.decode.model = "/no/such/model";  // Not loaded: the paths fail first.
  context.decode.device = "cpu";
  context.decode.input = input;
  for (const std::string& output : {input, absl::StrCat(dir, "/./in.en"), link}) {
    context.decode.output = output;
    const absl::Status status = RunDecodeCommand(context, DecodingHooks{});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_TRUE(absl::StrContains(
        status.message(),
        absl::StrCat("--input=", input, " and --output=", output, " are the same file")))
        << status;
  }
  absl::StatusOr<std::string> kept = ReadFileToString(input);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, text);
  // Another path (existing or not) goes on to load the model.
  context.decode.output = absl::StrCat(dir, "/out.de");
  EXPECT_EQ(RunDecodeCommand(context, DecodingHooks{}).code(), absl::StatusCode::kNotFound);
  // So does a device named on both sides.
  DecodeRequest devices;
  devices.model = "x";
  devices.source = "/dev/null";
  devices.reference = *valid_target_;
  devices.output = "/dev/null";
  EXPECT_TRUE(CheckEvaluateRequest(devices, "files").ok()) << CheckEvaluateRequest(devices, "files");

  // evaluate: --output may be neither --src nor --ref.
  DecodeRequest request;
  request.model = *work_dir_;
  request.source = input;
  request.reference = *valid_target_;
  request.output = absl::StrCat(dir, "/./in.en");
  absl::Status status = CheckEvaluateRequest(request, "files");
  EXPECT_TRUE(absl::StrContains(
      status.message(),
      absl::StrCat("--src=", input, " and --output=", request.output, " are the same file")))
      << status;
  request.output = *valid_target_;
  status = CheckEvaluateRequest(request, "files");
  EXPECT_TRUE(absl::StrContains(status.message(), absl::StrCat("--ref=", *valid_target_)))
      << status;
  request.output = absl::StrCat(dir, "/out.de");
  EXPECT_TRUE(CheckEvaluateRequest(request, "files").ok());
}

// evaluate reads --ref as tools/bleu does (core/metrics/text_lines.h): a
// reference that is not UTF-8 is an error naming file:line, not a line
// scored as something else; trailing whitespace ("\r" included) is dropped.
TEST_F(Seq2SeqDecodingTest, EvaluateReadsReferencesAsTheBleuToolDoes) {
  const std::string reference = absl::StrCat(::testing::TempDir(), "/refs_bad.de");
  ASSERT_TRUE(
      WriteFileAtomically(reference, "Ein Mann fährt Fahrrad.\nZwei \xff Hunde.\nLeute gehen.\n")
          .ok());
  DecodeRequest request;
  request.source = *valid_source_;
  request.reference = reference;
  std::vector<std::string> sources, references;
  absl::Status status = ReadEvaluationFiles(request, &sources, &references);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(
      absl::StrContains(status.message(), absl::StrCat(reference, ":2: line is not valid UTF-8")))
      << status;

  // The whole command stops on it, before any BLEU is printed.
  TaskContext context;
  std::ostringstream log;
  context.log = &log;
  context.decode.model = *work_dir_;
  context.decode.device = "cpu";
  context.decode.source = *valid_source_;
  context.decode.reference = reference;
  status = RunEvaluateCommand(context, BleuMetric());
  EXPECT_TRUE(absl::StrContains(status.message(), absl::StrCat(reference, ":2:"))) << status;
  EXPECT_FALSE(absl::StrContains(log.str(), "BLEU")) << log.str();

  ASSERT_TRUE(
      WriteFileAtomically(reference, "Ein Mann fährt Fahrrad. \r\nZwei Hunde.\t\nLeute gehen.")
          .ok());
  status = ReadEvaluationFiles(request, &sources, &references);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(references,
            (std::vector<std::string>{"Ein Mann fährt Fahrrad.", "Zwei Hunde.", "Leute gehen."}));
}

// evaluate --split=valid decodes the pairs the model's saved config names
// as data.valid, exactly as --src/--ref of the same files would; flags that
// do not fit together, and a split the config lacks, are named.
TEST_F(Seq2SeqDecodingTest, EvaluateSplitReadsTheModelsOwnHeldOutPairs) {
  TaskContext context;
  std::ostringstream log;
  context.log = &log;
  context.decode.model = *work_dir_;
  context.decode.split = "valid";
  context.decode.output = absl::StrCat(::testing::TempDir(), "/split.out");
  absl::Status status = RunEvaluateCommand(context, BleuMetric());
  ASSERT_TRUE(status.ok()) << status;
  context.decode.split.clear();
  context.decode.source = *valid_source_;
  context.decode.reference = *valid_target_;
  context.decode.output = absl::StrCat(::testing::TempDir(), "/files.out");
  status = RunEvaluateCommand(context, BleuMetric());
  ASSERT_TRUE(status.ok()) << status;
  absl::StatusOr<std::string> from_split =
      ReadFileToString(absl::StrCat(::testing::TempDir(), "/split.out"));
  absl::StatusOr<std::string> from_files = ReadFileToString(context.decode.output);
  ASSERT_TRUE(from_split.ok() && from_files.ok());
  EXPECT_EQ(*from_split, *from_files);
  EXPECT_EQ(std::count(from_split->begin(), from_split->end(), '\n'), 3);
  const std::string report = log.str();
  // Both runs decoded the three pairs.
  const size_t first = report.find("3 sentences in");
  ASSERT_NE(first, std::string::npos) << report;
  EXPECT_NE(report.find("3 sentences in", first + 1), std::string::npos) << report;
  EXPECT_NE(report.find("reference:  Zwei Hunde spielen im Schnee."), std::string::npos) << report;

  context.decode.split = "valid";  // With --src and --ref still given.
  status = RunEvaluateCommand(context, BleuMetric());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "one or the other")) << status;
  context.decode.source.clear();
  context.decode.reference.clear();
  context.decode.split = "train";
  status = RunEvaluateCommand(context, BleuMetric());
  EXPECT_TRUE(absl::StrContains(status.message(), "--split=train: expected valid or test"))
      << status;
  context.decode.split = "test";
  status = RunEvaluateCommand(context, BleuMetric());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(status.message(), "has no data.test")) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), *checkpoint_dir_)) << status;
  context.decode.split.clear();
  status = RunEvaluateCommand(context, BleuMetric());
  EXPECT_TRUE(absl::StrContains(status.message(), "--split=valid|test")) << status;
}

// A command that runs a saved model needs only the model and its inputs:
// the --config preset's corpora (here gettext catalogs under a root that is
// not there, as on a machine without the binary's default data, and --data
// pointing somewhere missing) are not checked, nor is its work directory.
TEST_F(Seq2SeqDecodingTest, EvaluateNeedsOnlyTheModelNotThePresetsData) {
  const std::string preset = absl::StrCat(::testing::TempDir(), "/missing_data.pbtxt");
  ASSERT_TRUE(WriteFileAtomically(preset, R"(task: "translation"
data {
  train { format: GETTEXT_MO root: "/no/such/locale" source_lang: "en" target_lang: "de" }
  work_dir: "/no/such/work_dir"
})").ok());
  DriverOptions options;
  options.config = preset;
  options.data_dir = absl::StrCat(::testing::TempDir(), "/no_such_data");
  options.mode = "evaluate";
  options.flag_overrides = {{"decode.device=cpu", "--device=cpu"}};
  options.decode.device = "cpu";
  options.decode.model = *work_dir_;
  options.decode.source = *valid_source_;
  options.decode.reference = *valid_target_;
  std::ostringstream out;
  const absl::Status status = RunDriver(options, out);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(absl::StrContains(out.str(), "3 sentences in")) << out.str();
  EXPECT_TRUE(absl::StrContains(out.str(), "decoding on: cpu, f32")) << out.str();
  // Training still checks its data.
  options.mode = "train";
  EXPECT_EQ(RunDriver(options, out).code(), absl::StatusCode::kNotFound);
}

// --dtype=bf16 on the CPU reaches the model as bf16 products over f32
// activations (with f16 key/value caches under auto), says so and its
// kernel, and decodes every line.
TEST_F(Seq2SeqDecodingTest, Bf16OnTheCpuDecodesWithBf16Products) {
  TaskContext context;
  std::ostringstream log;
  context.log = &log;
  context.decode.device = "cpu";
  context.decode.dtype = "bf16";
  context.decode.model = *work_dir_;
  context.decode.source = *valid_source_;
  context.decode.reference = *valid_target_;
  context.decode.output = absl::StrCat(::testing::TempDir(), "/bf16.out");
  const absl::Status status = RunEvaluateCommand(context, BleuMetric());
  ASSERT_TRUE(status.ok()) << status << "\n" << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "3 sentences in")) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), ", bf16 (f32 activations, bf16 products: kernel "))
      << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "key/value caches in f16")) << log.str();
  absl::StatusOr<std::string> written = ReadFileToString(context.decode.output);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(std::count(written->begin(), written->end(), '\n'), 3) << *written;
}

// --device reaches decoding; a GPU that is not here stops evaluate before
// anything is read, with the flag named as typed (not a --set never written).
TEST_F(Seq2SeqDecodingTest, AMissingGpuStopsEvaluateNamingTheFlag) {
  const std::string missing = absl::StrCat("cuda:", cuda::DeviceCount());
  TaskContext context;
  std::ostringstream log;
  context.log = &log;
  context.decode.model = *work_dir_;
  context.decode.source = "/no/such/source";  // Not read: the device fails first.
  context.decode.reference = "/no/such/reference";
  context.decode.device = missing;
  absl::Status status = RunEvaluateCommand(context, BleuMetric());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(absl::StrContains(status.message(),
                                absl::StrCat("--device=", missing, ": ", missing, " but this")))
      << status;
  context.decode.device = "cpu";
  context.decode.dtype = "f16";
  status = RunEvaluateCommand(context, BleuMetric());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "--dtype=f16: f16 decoding on the CPU: the "
                                                  "CPU has no f16 products"))
      << status;
  context.decode.dtype = "f64";
  status = RunEvaluateCommand(context, BleuMetric());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "--dtype=f64")) << status;
}

// The commands on a GPU: evaluate --device=cuda loads the model there and
// writes the CPU's lines (this random model's next-token choices are
// separated by far more than f32 rounding: all 3 lines must agree).
TEST_F(Seq2SeqDecodingTest, EvaluateOnTheGpuWritesTheCpusLines) {
  TFM_SKIP_WITHOUT_GPU();
  std::vector<std::string> outputs;
  for (const char* device : {"cpu", "cuda"}) {
    TaskContext context;
    std::ostringstream log;
    context.log = &log;
    context.decode.model = *work_dir_;
    context.decode.source = *valid_source_;
    context.decode.reference = *valid_target_;
    context.decode.device = device;
    context.decode.output = absl::StrCat(::testing::TempDir(), "/on_", device, ".out");
    const absl::Status status = RunEvaluateCommand(context, BleuMetric());
    ASSERT_TRUE(status.ok()) << device << ": " << status;
    const std::string chosen = std::string(device) == "cpu" ? "cpu" : "cuda:0";
    EXPECT_TRUE(absl::StrContains(log.str(), absl::StrCat("decoding on: ", chosen)))
        << log.str();
    absl::StatusOr<std::string> written = ReadFileToString(context.decode.output);
    ASSERT_TRUE(written.ok()) << written.status();
    std::printf("evaluate --device=%s:\n%s", device, written->c_str());
    outputs.push_back(*written);
  }
  EXPECT_EQ(outputs[0], outputs[1]);
}

// --max_tokens batches by a token budget: the same lines as batching by
// count, in input order.
TEST_F(Seq2SeqDecodingTest, TokenBudgetGivesTheSameLines) {
  TrainedModel trained = Load();
  const std::vector<std::string> lines = {
      "A man rides a bike.", "Two dogs play in the snow.", "People walk.", "",
      "A woman in a red coat walks down the busy street with her dog.", "Kids."};
  DecodeRequest request;
  request.device = "cpu";
  config::DecodeConfig by_count = *DecodeSettings(trained.config, request);
  absl::StatusOr<std::vector<std::string>> expected =
      DecodeLines(trained, by_count, lines, "in", nullptr);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (int max_tokens : {1, 30, 100}) {
    request.max_tokens = max_tokens;
    const config::DecodeConfig by_tokens = *DecodeSettings(trained.config, request);
    EXPECT_EQ(by_tokens.max_tokens(), max_tokens);
    absl::StatusOr<std::vector<std::string>> output =
        DecodeLines(trained, by_tokens, lines, "in", nullptr);
    ASSERT_TRUE(output.ok()) << output.status();
    EXPECT_EQ(*output, *expected) << "max_tokens " << max_tokens;
  }
}

// A beam wider than the GPU's row top-k holds (2 x 40 + 1 > 64 per row)
// decodes on the CPU, which ranks any count.
TEST_F(Seq2SeqDecodingTest, WideBeamsDecodeOnTheCpu) {
  TrainedModel trained = Load();
  DecodeRequest request;
  request.beam = 40;
  request.nbest = 40;
  const config::DecodeConfig decode = *DecodeSettings(trained.config, request);
  absl::StatusOr<std::vector<std::string>> lines =
      DecodeLines(trained, decode, {"A dog runs.", "Two men play football."}, "x", nullptr);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(lines->size(), 80u);
  // Wider than the vocabulary: refused, not run at that width for nothing.
  request.beam = trained.tokenizer.vocab_size() + 1;
  request.nbest = 1;
  const absl::Status too_wide =
      DecodeLines(trained, *DecodeSettings(trained.config, request), {"A dog runs."}, "x", nullptr)
          .status();
  EXPECT_EQ(too_wide.code(), absl::StatusCode::kInvalidArgument) << too_wide;
  EXPECT_NE(too_wide.message().find("is wider than the model's"), std::string::npos) << too_wide;
}

TEST_F(Seq2SeqDecodingTest, NBestGivesSortedScoresPerLine) {
  TrainedModel trained = Load();
  DecodeRequest request;
  request.beam = 4;
  request.nbest = 3;
  const config::DecodeConfig decode = *DecodeSettings(trained.config, request);
  EXPECT_EQ(decode.beam_size(), 4);
  EXPECT_EQ(decode.strategy(), config::DecodeConfig::BEAM);
  absl::StatusOr<std::vector<std::string>> out =
      DecodeLines(trained, decode, {"A dog runs.", "People walk down the street."}, "x", nullptr);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 6u);
  for (int line = 0; line < 2; ++line) {
    double previous = 1e30;
    for (int k = 0; k < 3; ++k) {
      const std::vector<std::string> fields = absl::StrSplit((*out)[line * 3 + k], " ||| ");
      ASSERT_EQ(fields.size(), 3u) << (*out)[line * 3 + k];
      EXPECT_EQ(fields[0], absl::StrCat(line));
      double score = 0;
      ASSERT_TRUE(absl::SimpleAtod(fields[2], &score)) << fields[2];
      EXPECT_LE(score, previous);
      previous = score;
    }
  }
  request.beam = 1;
  EXPECT_EQ(DecodeSettings(trained.config, request)->strategy(), config::DecodeConfig::GREEDY);
}

// A saved model decodes with its own config: --set=decode.* assignments
// (the request's settings) change its decode section, the flags win over
// them, and an assignment it cannot take is an error naming it. (Before,
// translate --model=DIR --set=decode.inter_threads=2 left them unread.)
TEST(DecodeSettingsTest, SetAssignmentsApplyOverTheSavedDecodeSectionAndFlagsWin) {
  config::TaskConfig saved;
  saved.mutable_decode()->set_beam_size(6);
  saved.mutable_decode()->set_inter_threads(1);
  DecodeRequest request;
  request.settings = {"decode.inter_threads=2", "decode.kv_cache_dtype=f32",
                      "decode.beam_size=3"};
  absl::StatusOr<config::DecodeConfig> decode = DecodeSettings(saved, request);
  ASSERT_TRUE(decode.ok()) << decode.status();
  EXPECT_EQ(decode->inter_threads(), 2);
  EXPECT_EQ(decode->kv_cache_dtype(), "f32");
  EXPECT_EQ(decode->beam_size(), 3);
  request.beam = 5;  // --beam wins over --set=decode.beam_size.
  EXPECT_EQ(DecodeSettings(saved, request)->beam_size(), 5);
  EXPECT_EQ(saved.decode().inter_threads(), 1);  // The saved config itself is left alone.
  request.settings = {"decode.no_such_field=1"};
  const absl::Status bad = DecodeSettings(saved, request).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("decode.no_such_field=1"), std::string::npos) << bad;
}

// --quantize=int8 reaches every member of the model (an ensemble's too),
// says so in the log with the kernel, and decodes every line; the weights
// are then int8 rows (as an int8 model directory's), so a later search
// asking for f32 stays int8 and decodes the same lines.
TEST_F(Seq2SeqDecodingTest, QuantizeInt8DecodesEveryMemberInInt8) {
  const std::vector<std::string> lines = {"A dog runs.", "People walk down the street.",
                                          "Two men play football in the park."};
  absl::StatusOr<TrainedModel> trained =
      LoadTrainedModel(absl::StrCat(*work_dir_, ",", *work_dir_), Device::Cpu(), nullptr);
  ASSERT_TRUE(trained.ok()) << trained.status();
  ASSERT_EQ(trained->ensemble_size(), 2);
  DecodeRequest request;
  const config::DecodeConfig f32 = *DecodeSettings(trained->config, request);
  EXPECT_EQ(f32.quantize(), config::DecodeConfig::NONE);
  absl::StatusOr<std::vector<std::string>> f32_out = DecodeLines(*trained, f32, lines, "x", nullptr);
  ASSERT_TRUE(f32_out.ok()) << f32_out.status();

  request.quantize = config::DecodeConfig::INT8;
  const config::DecodeConfig int8 = *DecodeSettings(trained->config, request);
  EXPECT_EQ(int8.quantize(), config::DecodeConfig::INT8);
  std::ostringstream log;
  absl::StatusOr<std::vector<std::string>> int8_out = DecodeLines(*trained, int8, lines, "x", &log);
  ASSERT_TRUE(int8_out.ok()) << int8_out.status();
  ASSERT_EQ(int8_out->size(), lines.size());
  EXPECT_NE(log.str().find("decoding with int8 weights"), std::string::npos) << log.str();
  EXPECT_EQ(trained->model->decoding_precision(), DecodingPrecision::kInt8);
  EXPECT_EQ(trained->other_members[0]->decoding_precision(), DecodingPrecision::kInt8);
  int same = 0;
  for (size_t i = 0; i < lines.size(); ++i) same += (*int8_out)[i] == (*f32_out)[i];
  std::printf("[ measured ] int8 lines identical to f32: %d of %zu (random model)\n", same,
              lines.size());

  absl::StatusOr<std::vector<std::string>> back = DecodeLines(*trained, f32, lines, "x", nullptr);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *int8_out);
  EXPECT_EQ(trained->model->decoding_precision(), DecodingPrecision::kInt8);
}

// A directory of `quantize`; each test writes its own.
std::string QuantizedCopy(const std::string& from, const std::string& name, std::string* log) {
  const std::string out = absl::StrCat(::testing::TempDir(), "/", name);
  std::ostringstream stream;
  const absl::Status status = QuantizeModelDirectory(from, out, stream);
  EXPECT_TRUE(status.ok()) << status;
  if (log) *log = stream.str();
  return out;
}

// The quantized directory decodes exactly as --quantize=int8 on the f32
// model it came from, with beam search and as an ensemble beside an f32
// model; it refuses a GPU, training and averaging.
TEST_F(Seq2SeqDecodingTest, QuantizedDirectoryDecodesAsQuantizeAtLoad) {
  std::string log;
  const std::string int8_dir = QuantizedCopy(*work_dir_, "int8_model", &log);
  EXPECT_NE(log.find("model size on disk: f32 "), std::string::npos) << log;
  std::printf("[ measured ] %s", log.c_str());
  const std::vector<std::string> lines = {"A dog runs.", "People walk down the street.",
                                          "Two men play football in the park."};
  DecodeRequest request;
  request.beam = 4;
  absl::StatusOr<TrainedModel> f32 = LoadTrainedModel(*work_dir_, Device::Cpu(), nullptr);
  ASSERT_TRUE(f32.ok()) << f32.status();
  request.quantize = config::DecodeConfig::INT8;
  const config::DecodeConfig int8 = *DecodeSettings(f32->config, request);
  absl::StatusOr<std::vector<std::string>> at_load = DecodeLines(*f32, int8, lines, "x", nullptr);
  ASSERT_TRUE(at_load.ok()) << at_load.status();

  absl::StatusOr<TrainedModel> stored = LoadTrainedModel(int8_dir, Device::Cpu(), nullptr);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->model->decoding_precision(), DecodingPrecision::kInt8);
  // The same weights as decoding reads them. The directory's matrices stay
  // int8 rows (made into f32 only to be laid out), but the embedding tables,
  // which lookups read.
  const std::vector<Parameter*> a = f32->model->Parameters(), b = stored->model->Parameters();
  ASSERT_EQ(a.size(), b.size());
  int kept_as_rows = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    absl::StatusOr<Tensor> values = stored->model->DecodingValues(*b[i]);
    ASSERT_TRUE(values.ok()) << values.status();
    EXPECT_EQ(a[i]->value.ToVector<float>(), values->ToVector<float>()) << a[i]->name;
    kept_as_rows += !values->SharesBufferWith(b[i]->value);
  }
  for (const Parameter* table : stored->model->LookupTables()) {
    EXPECT_TRUE(stored->model->DecodingValues(*table)->SharesBufferWith(table->value));
  }
  EXPECT_GT(kept_as_rows, 0);
  std::printf("[ measured ] %d of %zu parameters held as int8 rows\n", kept_as_rows, b.size());
  request.quantize = -1;  // The saved decode.quantize (none): an int8 model stays int8.
  absl::StatusOr<std::vector<std::string>> from_dir =
      DecodeLines(*stored, *DecodeSettings(stored->config, request), lines, "x", nullptr);
  ASSERT_TRUE(from_dir.ok()) << from_dir.status();
  EXPECT_EQ(*from_dir, *at_load);

  absl::StatusOr<TrainedModel> ensemble =
      LoadTrainedModel(absl::StrCat(int8_dir, ",", *work_dir_), Device::Cpu(), nullptr);
  ASSERT_TRUE(ensemble.ok()) << ensemble.status();
  EXPECT_EQ(ensemble->int8_weights, (std::vector<bool>{true, false}));
  absl::StatusOr<std::vector<std::string>> mixed =
      DecodeLines(*ensemble, *DecodeSettings(ensemble->config, request), lines, "x", nullptr);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_EQ(mixed->size(), lines.size());

  if (!cuda::BuiltWithCuda() || cuda::DeviceCount() == 0) return;
  absl::StatusOr<TrainedModel> on_gpu = LoadTrainedModel(int8_dir, Device::Cuda(0), nullptr);
  EXPECT_TRUE(absl::IsFailedPrecondition(on_gpu.status())) << on_gpu.status();
}

TEST_F(Seq2SeqDecodingTest, QuantizedDirectoryRefusesTrainingAveragingAndOverwrites) {
  const std::string int8_dir = QuantizedCopy(*work_dir_, "int8_refusals", nullptr);
  absl::StatusOr<Checkpoint> resume = ReadCheckpoint(int8_dir, CheckpointParts::kAll);
  EXPECT_TRUE(absl::IsFailedPrecondition(resume.status())) << resume.status();
  EXPECT_TRUE(absl::StrContains(resume.status().message(), "resume training")) << resume.status();
  std::ostringstream log;
  // Quantizing again into it replaces it; into another model is refused.
  EXPECT_TRUE(QuantizeModelDirectory(*work_dir_, int8_dir, log).ok());
  const absl::Status over_f32 = QuantizeModelDirectory(int8_dir, *checkpoint_dir_, log);
  EXPECT_TRUE(absl::IsAlreadyExists(over_f32)) << over_f32;
  const absl::Status twice =
      QuantizeModelDirectory(int8_dir, absl::StrCat(::testing::TempDir(), "/twice"), log);
  EXPECT_TRUE(absl::IsFailedPrecondition(twice)) << twice;
}

// Damage in an int8 directory's files is an error naming the file (or the
// tensor), never a silently different model.
TEST_F(Seq2SeqDecodingTest, DamagedQuantizedDirectoriesAreClearErrors) {
  const auto model_file = [](const std::string& dir) { return absl::StrCat(dir, "/", kModelFile); };
  const std::string truncated = QuantizedCopy(*work_dir_, "int8_truncated", nullptr);
  std::filesystem::resize_file(model_file(truncated),
                               std::filesystem::file_size(model_file(truncated)) - 10);
  absl::Status status = LoadTrainedModel(truncated, Device::Cpu(), nullptr).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), model_file(truncated))) << status;

  const std::string flipped = QuantizedCopy(*work_dir_, "int8_flipped", nullptr);
  {
    std::fstream file(model_file(flipped), std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-5, std::ios::end);
    const char byte = static_cast<char>(file.get());
    file.seekp(-5, std::ios::end);
    file.put(static_cast<char>(byte ^ 0x40));
  }
  status = LoadTrainedModel(flipped, Device::Cpu(), nullptr).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), model_file(flipped))) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "CRC-32C")) << status;

  // A file without one scales tensor, under a MANIFEST that matches it.
  absl::StatusOr<Checkpoint> checkpoint =
      ReadCheckpoint(QuantizedCopy(*work_dir_, "int8_source", nullptr), CheckpointParts::kDecoding);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  const std::string dropped = "decoder.layers.0.fc1.weight.scales";
  const size_t before = checkpoint->model.size();
  checkpoint->model.erase(
      std::remove_if(checkpoint->model.begin(), checkpoint->model.end(),
                     [&](const auto& named) { return named.first == dropped; }),
      checkpoint->model.end());
  ASSERT_EQ(checkpoint->model.size(), before - 1);
  const std::string missing = absl::StrCat(::testing::TempDir(), "/int8_missing_scales");
  ASSERT_TRUE(WriteCheckpointTo(missing, *checkpoint).ok());
  status = LoadTrainedModel(missing, Device::Cpu(), nullptr).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), dropped)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), model_file(missing))) << status;
}

}  // namespace
}  // namespace tfm

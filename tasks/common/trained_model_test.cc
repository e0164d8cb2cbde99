// SetDecodingPrecision (--quantize) on small models built here (no
// checkpoint or data: the GPU machine runs this from a bundle).
#include "tasks/common/trained_model.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "runtime/train/checkpoint.h"
#include "tasks/common/quantized_model.h"
#include "tasks/common/random_model_testing.h"
#include "tests/util/gpu.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace {

std::unique_ptr<Transformer> TinyModel(const Device& device) {
  config::ModelConfig model;
  model.set_num_encoder_layers(1);
  model.set_num_decoder_layers(1);
  model.set_d_model(16);
  model.set_d_ff(32);
  model.set_num_heads(2);
  model.set_d_k(8);
  model.set_d_v(8);
  absl::StatusOr<std::unique_ptr<Transformer>> transformer =
      Transformer::Create(model, VocabularySpec{20, 0, 2, 3}, device, 5);
  EXPECT_TRUE(transformer.ok()) << transformer.status();
  return transformer.ok() ? *std::move(transformer) : nullptr;
}

// A tiny random model of `task` over a 40-piece vocabulary trained on 40
// lines line(0), line(1), ..., written as a checkpoint into
// TempDir()/`name` (from Philox stream (init_seed, 0)).
struct WrittenModel {
  config::TaskConfig config;
  Tokenizer tokenizer;
  std::string corpus;  // The lines' file.
  std::string work_dir;
  std::string checkpoint_dir;
};

absl::StatusOr<WrittenModel> WriteTinyModel(const std::string& name, const std::string& task,
                                            const std::function<std::string(int)>& line,
                                            int layers, uint64_t init_seed) {
  const std::string text = absl::StrCat(::testing::TempDir(), "/", name, "_text.txt");
  {
    std::ofstream out(text);
    for (int i = 0; i < 40; ++i) out << line(i) << "\n";
  }
  config::TaskConfig config;
  config.set_task(task);
  config.mutable_data()->mutable_tokenizer()->set_vocab_size(40);
  TFM_ASSIGN_OR_RETURN(Tokenizer tokenizer,
                       Tokenizer::TrainOnFiles(config.data().tokenizer(), {text}));
  testing::SetTinyModelShape(*config.mutable_model(), layers, /*heads=*/2, /*d_model=*/16);
  const std::string work_dir = absl::StrCat(::testing::TempDir(), "/", name);
  TFM_ASSIGN_OR_RETURN(std::string dir, testing::WriteRandomModelCheckpoint(config, tokenizer,
                                                                            work_dir, init_seed));
  return WrittenModel{std::move(config), std::move(tokenizer), text, work_dir, std::move(dir)};
}

// A checkpoint of another task is refused by name where the command says
// its own task (translate_ende on a parsing model decoded trees as if they
// were German); without a task, or with its own, it loads.
TEST(TrainedModelTest, AnotherTasksModelIsRefusedNamingBothTasks) {
  absl::StatusOr<WrittenModel> written = WriteTinyModel(
      "parsing_model", "parsing",
      [](int i) { return absl::StrCat("(S (NP the dog) (VP runs ", i, " times))"); },
      /*layers=*/1, /*init_seed=*/3);
  ASSERT_TRUE(written.ok()) << written.status();
  const std::string& work_dir = written->work_dir;
  // The corpus the tokenizer learnt from: a file, not a model directory.
  const std::string& text = written->corpus;
  const std::string& dir = written->checkpoint_dir;

  const absl::StatusOr<TrainedModel> refused =
      LoadTrainedModel(work_dir, Device::Cpu(), nullptr, "translation");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  const std::string message(refused.status().message());
  EXPECT_NE(message.find(dir), std::string::npos) << message;
  EXPECT_NE(message.find("'parsing' task"), std::string::npos) << message;
  EXPECT_NE(message.find("decodes 'translation' models"), std::string::npos) << message;
  // As an ensemble's second member too.
  EXPECT_FALSE(
      LoadTrainedModel(absl::StrCat(work_dir, ",", work_dir), Device::Cpu(), nullptr, "translation")
          .ok());

  EXPECT_TRUE(LoadTrainedModel(work_dir, Device::Cpu(), nullptr, "parsing").ok());
  EXPECT_TRUE(LoadTrainedModel(work_dir, Device::Cpu(), nullptr).ok());
  // --model naming a file says so.
  EXPECT_NE(ChooseCheckpoint(text, nullptr).status().message().find("a file, not a directory"),
            std::string::npos)
      << ChooseCheckpoint(text, nullptr).status();
}

// A loaded model is built for its checkpoint to fill (CreateForLoading):
// every value is the file's, bit for bit, and no parameter carries a
// gradient buffer (decoding needs none; it was a second copy of the model).
TEST(TrainedModelTest, LoadedModelHoldsTheFilesValuesAndNoGradients) {
  absl::StatusOr<WrittenModel> file = WriteTinyModel(
      "loaded_model", "translation",
      [](int i) { return absl::StrCat("a small house number ", i, " by the river"); },
      /*layers=*/2, /*init_seed=*/11);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<VocabularySpec> vocabulary = ModelVocabulary(file->config, file->tokenizer);
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status();
  absl::StatusOr<std::unique_ptr<Transformer>> written =
      Transformer::Create(file->config.model(), *vocabulary, Device::Cpu(), /*init_seed=*/11);
  ASSERT_TRUE(written.ok()) << written.status();

  absl::StatusOr<TrainedModel> loaded = LoadTrainedModel(file->work_dir, Device::Cpu(), nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const std::vector<Parameter*> expected = (*written)->Parameters();
  const std::vector<Parameter*> got = loaded->model->Parameters();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(got[i]->name);
    EXPECT_EQ(got[i]->name, expected[i]->name);
    EXPECT_EQ(got[i]->value.ToVector<float>(), expected[i]->value.ToVector<float>());
    EXPECT_FALSE(got[i]->grad.defined());
  }
}

// The weights are read one tensor at a time, straight into the model, and
// still checked: a NaN written with intact checksums (by another program,
// or an edit) is refused naming the file and the tensor, not decoded into
// plausible garbage.
TEST(TrainedModelTest, ANonFiniteWeightIsRefusedNamingTheFileAndTensor) {
  absl::StatusOr<WrittenModel> file = WriteTinyModel(
      "nan_model", "translation",
      [](int i) { return absl::StrCat("a red boat number ", i, " on the lake"); },
      /*layers=*/1, /*init_seed=*/17);
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<Checkpoint> checkpoint =
      ReadCheckpoint(file->checkpoint_dir, CheckpointParts::kDecoding);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  ASSERT_GE(checkpoint->model.size(), 4u);
  auto& [name, poisoned] = checkpoint->model[3];  // Read from the file: its own buffer.
  poisoned.data<float>()[0] = std::numeric_limits<float>::infinity();
  const std::string dir = absl::StrCat(::testing::TempDir(), "/nan_model_poisoned");
  ASSERT_TRUE(WriteCheckpointTo(dir, *checkpoint).ok());

  const absl::StatusOr<TrainedModel> loaded = LoadTrainedModel(dir, Device::Cpu(), nullptr);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << loaded.status();
  const std::string message(loaded.status().message());
  EXPECT_NE(message.find(absl::StrCat(dir, "/", kModelFile)), std::string::npos) << message;
  EXPECT_NE(message.find(absl::StrCat("'", name, "' holds 1 non-finite value")), std::string::npos)
      << message;
  EXPECT_TRUE(LoadTrainedModel(file->checkpoint_dir, Device::Cpu(), nullptr).ok());
}

// An int8 model directory's matrices stay int8 rows in the loaded model
// (made into f32 only while a search lays them out), so its parameters hold
// no values for them: a training or evaluation pass, which would read them,
// is refused instead of computing with unfilled memory. The f32 checkpoint
// it came from evaluates.
TEST(TrainedModelTest, AnInt8DirectoryDecodesOnlyItRefusesALossPass) {
  absl::StatusOr<WrittenModel> file = WriteTinyModel(
      "int8_rows_model", "translation",
      [](int i) { return absl::StrCat("a green tree number ", i, " in the garden"); },
      /*layers=*/1, /*init_seed=*/19);
  ASSERT_TRUE(file.ok()) << file.status();
  const std::string int8_dir = absl::StrCat(::testing::TempDir(), "/int8_rows_model_int8");
  std::ostringstream log;
  ASSERT_TRUE(QuantizeModelDirectory(file->checkpoint_dir, int8_dir, log).ok()) << log.str();
  const Batch batch = testing::ToyBatch(/*rows=*/2, /*salt=*/1);

  absl::StatusOr<TrainedModel> f32 = LoadTrainedModel(file->checkpoint_dir, Device::Cpu(), nullptr);
  ASSERT_TRUE(f32.ok()) << f32.status();
  absl::StatusOr<LossStats> evaluated = f32->model->Evaluate(batch);
  EXPECT_TRUE(evaluated.ok()) << evaluated.status();

  absl::StatusOr<TrainedModel> int8 = LoadTrainedModel(int8_dir, Device::Cpu(), nullptr);
  ASSERT_TRUE(int8.ok()) << int8.status();
  const absl::Status refused = int8->model->Evaluate(batch).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find("only as int8 rows"), std::string::npos) << refused;
}

// Every member follows, and the log says so once per change.
TEST(TrainedModelTest, QuantizeInt8ReachesEveryMember) {
  std::unique_ptr<Transformer> first = TinyModel(Device::Cpu()), second = TinyModel(Device::Cpu());
  const std::vector<Transformer*> members = {first.get(), second.get()};
  std::ostringstream log;
  ASSERT_TRUE(SetDecodingPrecision(members, config::DecodeConfig::INT8, &log).ok());
  EXPECT_EQ(first->decoding_precision(), DecodingPrecision::kInt8);
  EXPECT_EQ(second->decoding_precision(), DecodingPrecision::kInt8);
  EXPECT_NE(log.str().find("decoding with int8 weights"), std::string::npos) << log.str();
  ASSERT_TRUE(SetDecodingPrecision(members, config::DecodeConfig::NONE, &log).ok());
  EXPECT_EQ(second->decoding_precision(), DecodingPrecision::kF32);
  EXPECT_NE(log.str().find("decoding with f32 weights"), std::string::npos) << log.str();
}

// The int8 kernels are the CPU's: asking for them with the weights on a GPU
// is an error naming the device, not a silent f32 decode.
TEST(TrainedModelTest, QuantizeInt8WithWeightsOnAGpuIsAnError) {
  TFM_SKIP_WITHOUT_GPU();
  std::unique_ptr<Transformer> cpu = TinyModel(Device::Cpu()), gpu = TinyModel(Device::Cuda(0));
  ASSERT_NE(gpu, nullptr);
  const std::vector<Transformer*> members = {cpu.get(), gpu.get()};
  const absl::Status status = SetDecodingPrecision(members, config::DecodeConfig::INT8, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("weights are on cuda:0"), std::string::npos) << status;
  // Nothing changed: no member is left int8.
  EXPECT_EQ(cpu->decoding_precision(), DecodingPrecision::kF32);
  EXPECT_TRUE(SetDecodingPrecision(members, config::DecodeConfig::NONE, nullptr).ok());
  std::printf("[ measured ] int8 with the weights on cuda:0: %s\n", status.ToString().c_str());
}

}  // namespace
}  // namespace tfm

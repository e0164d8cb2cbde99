#include "runtime/train/training_testing.h"

#include <fstream>

#include "absl/strings/str_cat.h"

namespace tfm {
namespace testing {

namespace {

void WriteLines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  for (const std::string& line : lines) out << line << "\n";
}

}  // namespace

config::DataConfig WriteToyCorpus(const std::string& dir) {
  std::vector<std::string> en, de;
  const char* animals[] = {"dog", "cat", "horse", "bird", "fish", "cow"};
  const char* tiere[] = {"Hund", "Katze", "Pferd", "Vogel", "Fisch", "Kuh"};
  for (int i = 0; i < 60; ++i) {
    en.push_back(absl::StrCat("the ", animals[i % 6], " sees the ", animals[(i / 6) % 6]));
    de.push_back(absl::StrCat("die ", tiere[i % 6], " sieht die ", tiere[(i / 6) % 6]));
  }
  WriteLines(dir + "/train.en", en);
  WriteLines(dir + "/train.de", de);
  WriteLines(dir + "/valid.en", {en[1], en[7], en[13]});
  WriteLines(dir + "/valid.de", {de[1], de[7], de[13]});
  config::DataConfig data;
  for (const char* split : {"train", "valid"}) {
    config::CorpusConfig* corpus =
        std::string(split) == "train" ? data.add_train() : data.add_valid();
    corpus->set_format(config::CorpusConfig::PLAIN_TEXT);
    corpus->set_source_path(absl::StrCat(dir, "/", split, ".en"));
    corpus->set_target_path(absl::StrCat(dir, "/", split, ".de"));
  }
  data.mutable_tokenizer()->set_vocab_size(40);
  data.mutable_batching()->set_max_source_tokens(64);
  data.mutable_batching()->set_max_target_tokens(64);
  return data;
}

}  // namespace testing
}  // namespace tfm

// The first error protobuf's text parser reports, with its line and column:
// what an error about a bad text file names (a config, a checkpoint's
// state.pbtxt), instead of protobuf's own log line or a bare "invalid".
#ifndef TFM_CORE_CONFIG_TEXT_PROTO_ERRORS_H_
#define TFM_CORE_CONFIG_TEXT_PROTO_ERRORS_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/tokenizer.h"

namespace tfm {

// Give it to a parser (TextFormat::Parser::RecordErrorsTo); protobuf counts
// lines and columns from 0, Describe from 1.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!has_error_) {
      has_error_ = true;
      line_ = line + 1;
      column_ = column + 1;
      message_ = message;
    }
  }
  void AddWarning(int, int, const std::string&) override {}

  bool has_error() const { return has_error_; }
  // "file:line:column: what was wrong".
  std::string Describe(const std::string& filename) const {
    return absl::StrCat(filename, ":", line_, ":", column_, ": ", message_);
  }

 private:
  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

}  // namespace tfm

#endif  // TFM_CORE_CONFIG_TEXT_PROTO_ERRORS_H_

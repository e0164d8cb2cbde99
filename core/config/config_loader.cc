#include "core/config/config_loader.h"

#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/config/config_upgrades.h"
#include "core/config/text_proto_errors.h"
#include "core/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace tfm {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::TextFormat;

// Records "file:line" for every field set in the text, keyed by its path.
void RecordSources(const Message& message, const TextFormat::ParseInfoTree& tree,
                   const std::string& prefix, ConfigSources* sources) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const int index = field->is_repeated() ? i : -1;
      const std::string path =
          absl::StrCat(prefix, field->name(), field->is_repeated() ? absl::StrCat("[", i, "]") : "");
      const TextFormat::ParseLocation location = tree.GetLocation(field, index);
      if (location.line >= 0) {
        sources->Set(path, absl::StrCat(sources->file(), ":", location.line + 1));
      }
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const TextFormat::ParseInfoTree* nested = tree.GetTreeForNested(field, index);
        if (nested == nullptr) continue;
        const Message& child = field->is_repeated()
                                   ? reflection->GetRepeatedMessage(message, field, i)
                                   : reflection->GetMessage(message, field);
        RecordSources(child, *nested, path + ".", sources);
      }
    }
  }
}

std::string FieldNames(const Descriptor* descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    names.push_back(descriptor->field(i)->name());
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

std::string ConfigSources::Describe(absl::string_view field_path) const {
  std::string path(field_path);
  while (true) {
    auto it = where_.find(path);
    if (it != where_.end()) return it->second;
    const size_t dot = path.find_last_of('.');
    if (dot == std::string::npos) return file_;
    path.resize(dot);
  }
}

absl::StatusOr<LoadedConfig> ParseTaskConfig(absl::string_view text,
                                             const std::string& filename) {
  LoadedConfig loaded;
  loaded.sources.set_file(filename);
  FirstErrorCollector errors;
  TextFormat::ParseInfoTree tree;
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  // Unknown fields and extensions stay errors (the parser's default): a typo
  // must never be silently ignored.
  if (!parser.ParseFromString(std::string(text), &loaded.config) || errors.has_error()) {
    return absl::InvalidArgumentError(errors.has_error()
                                          ? errors.Describe(filename)
                                          : absl::StrCat(filename, ": invalid config"));
  }
  RecordSources(loaded.config, tree, "", &loaded.sources);
  UpgradeTaskConfig(&loaded.config);
  return loaded;
}

absl::StatusOr<LoadedConfig> LoadTaskConfigFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("cannot open config file '", path, "'"));
  }
  std::stringstream text;
  text << file.rdbuf();
  return ParseTaskConfig(text.str(), path);
}

absl::Status ApplyOverride(absl::string_view assignment, LoadedConfig* loaded,
                           absl::string_view flag) {
  const size_t equals = assignment.find('=');
  if (equals == absl::string_view::npos || equals == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set=", assignment, ": expected section.field=value"));
  }
  const absl::string_view path = assignment.substr(0, equals);
  const std::string value(assignment.substr(equals + 1));
  const std::string origin = flag.empty() ? absl::StrCat("--set=", assignment) : std::string(flag);

  Message* message = &loaded->config;
  const std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (size_t p = 0; p < parts.size(); ++p) {
    absl::string_view name = parts[p];
    int index = -1;
    const size_t bracket = name.find('[');
    if (bracket != absl::string_view::npos) {
      absl::string_view index_text = name.substr(bracket + 1);
      if (!absl::ConsumeSuffix(&index_text, "]") || !absl::SimpleAtoi(index_text, &index) ||
          index < 0) {
        return absl::InvalidArgumentError(absl::StrCat(origin, ": bad index in '", name, "'"));
      }
      name = name.substr(0, bracket);
    }
    const Descriptor* descriptor = message->GetDescriptor();
    const FieldDescriptor* field = descriptor->FindFieldByName(std::string(name));
    if (field == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": ", descriptor->name(), " has no field '", name,
          "'; its fields are: ", FieldNames(descriptor)));
    }
    const Reflection* reflection = message->GetReflection();
    const bool last = p + 1 == parts.size();
    if (index >= 0 && !field->is_repeated()) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": field '", name, "' is not repeated"));
    }
    if (!last) {
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
        return absl::InvalidArgumentError(
            absl::StrCat(origin, ": '", name, "' is a value, not a section"));
      }
      if (field->is_repeated()) {
        const int size = reflection->FieldSize(*message, field);
        if (index < 0 || index > size) {
          return absl::InvalidArgumentError(absl::StrCat(
              origin, ": '", name, "' is repeated (", size,
              " entries): name one as ", name, "[i], or ", name, "[", size,
              "] to append"));
        }
        message = index == size ? reflection->AddMessage(message, field)
                                : reflection->MutableRepeatedMessage(message, field, index);
      } else {
        message = reflection->MutableMessage(message, field);
      }
      continue;
    }
    // The final field: parse the value with the text format's own rules.
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": '", name, "' is a section; set one of its fields: ",
          FieldNames(field->message_type())));
    }
    if (field->is_repeated()) {
      reflection->ClearField(message, field);
      for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        std::string text = absl::StrCat(field->name(), ": ",
                                        field->type() == FieldDescriptor::TYPE_STRING
                                            ? absl::StrCat("\"", absl::CEscape(item), "\"")
                                            : std::string(item));
        std::unique_ptr<Message> scratch(message->New());
        // Errors go to a collector: the message below says it, without
        // protobuf's own log line before it.
        FirstErrorCollector errors;
        TextFormat::Parser parser;
        parser.RecordErrorsTo(&errors);
        if (!parser.MergeFromString(text, scratch.get())) {
          return absl::InvalidArgumentError(
              absl::StrCat(origin, ": '", item, "' is not a valid ", field->type_name()));
        }
        message->MergeFrom(*scratch);
      }
    } else {
      std::string text = value;
      if (field->type() == FieldDescriptor::TYPE_STRING ||
          field->type() == FieldDescriptor::TYPE_BYTES) {
        text = absl::StrCat("\"", absl::CEscape(value), "\"");
      }
      FirstErrorCollector errors;
      TextFormat::Parser parser;
      parser.RecordErrorsTo(&errors);
      if (!parser.ParseFieldValueFromString(text, field, message)) {
        return absl::InvalidArgumentError(absl::StrCat(
            origin, ": '", value, "' is not a valid ", field->type_name(), " for ",
            field->full_name()));
      }
    }
  }
  loaded->sources.Set(std::string(path), origin);
  return absl::OkStatus();
}

absl::StatusOr<LoadedConfig> LoadTaskConfig(const std::string& path,
                                            const std::vector<std::string>& overrides,
                                            const std::vector<FlagOverride>& flag_overrides) {
  TFM_ASSIGN_OR_RETURN(LoadedConfig loaded, LoadTaskConfigFile(path));
  for (const std::string& assignment : overrides) {
    TFM_RETURN_IF_ERROR(ApplyOverride(assignment, &loaded));
  }
  for (const FlagOverride& flag : flag_overrides) {
    TFM_RETURN_IF_ERROR(ApplyOverride(flag.assignment, &loaded, flag.flag));
  }
  UpgradeTaskConfig(&loaded.config);  // Overrides may set deprecated fields too.
  TFM_RETURN_IF_ERROR(ValidateTaskConfig(loaded));
  return loaded;
}

void RelocateCorpora(const std::string& dir, LoadedConfig* loaded) {
  if (dir.empty()) return;
  const std::string where = absl::StrCat("--data=", dir);
  const auto in_dir = [&](const std::string& path) {
    const size_t slash = path.rfind('/');
    return absl::StrCat(dir, "/", slash == std::string::npos ? path : path.substr(slash + 1));
  };
  const auto relocate = [&](const std::string& section,
                            google::protobuf::RepeatedPtrField<config::CorpusConfig>* corpora) {
    for (int i = 0; i < corpora->size(); ++i) {
      config::CorpusConfig& corpus = (*corpora)[i];
      const std::string prefix = absl::StrCat("data.", section, "[", i, "].");
      if (corpus.has_root()) {
        corpus.set_root(dir);
        loaded->sources.Set(prefix + "root", where);
      }
      if (corpus.has_source_path()) {
        corpus.set_source_path(in_dir(corpus.source_path()));
        loaded->sources.Set(prefix + "source_path", where);
      }
      if (corpus.has_target_path()) {
        corpus.set_target_path(in_dir(corpus.target_path()));
        loaded->sources.Set(prefix + "target_path", where);
      }
    }
  };
  config::DataConfig* data = loaded->config.mutable_data();
  relocate("train", data->mutable_train());
  relocate("valid", data->mutable_valid());
  relocate("test", data->mutable_test());
}

}  // namespace tfm

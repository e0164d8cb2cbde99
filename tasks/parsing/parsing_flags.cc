#include "tasks/parsing/parsing_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tfm {
namespace {

constexpr char kTagDictionary[] = "tag_dictionary";
constexpr char kOpenClassTags[] = "open_class_tags";

}  // namespace

void ParsingFlags::ApplyTo(parsing::ParsingConfig* settings) const {
  if (tag_dictionary >= 0) settings->set_tag_dictionary_min_count(tag_dictionary);
  if (open_class_tags >= 0) settings->set_tag_dictionary_open_class(open_class_tags > 0);
}

std::vector<TaskFlag> ParsingFlagDefinitions() {
  return {
      {kTagDictionary,
       "parse/evaluate (models that write tags): words seen this often in training take only "
       "their training tags (0: off; default: the model's tag_dictionary_min_count)"},
      {kOpenClassTags,
       "parse/evaluate, with the tag dictionary: rarer words take their own or open-class tags "
       "only, unseen words those of rare training words of their shape and ending (1: on; 0: "
       "off; default: the model's tag_dictionary_open_class)"},
  };
}

absl::StatusOr<ParsingFlags> ReadParsingFlags(const std::map<std::string, std::string>& given) {
  ParsingFlags flags;
  for (const auto& [name, value] : given) {
    int number = 0;
    const bool whole = absl::SimpleAtoi(value, &number);
    if (name == kTagDictionary && whole) {
      flags.tag_dictionary = number;
    } else if (name == kOpenClassTags && whole && (number == 0 || number == 1)) {
      flags.open_class_tags = number;
    } else if (name == kTagDictionary || name == kOpenClassTags) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", value, ": expected ",
                       name == kTagDictionary ? "a whole number" : "0 or 1"));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": not a flag of the parsing task"));
    }
  }
  return flags;
}

}  // namespace tfm

#include "core/data/corpus_format_registry.h"

#include <utility>

namespace tfm {

Registry<CorpusFormatDef>& CorpusFormatRegistry() {
  static auto* registry = new Registry<CorpusFormatDef>("corpus format");
  return *registry;
}

namespace internal {
CorpusFormatRegistrar::CorpusFormatRegistrar(CorpusFormatDef def) {
  const std::string name = def.name;
  RegisterOrRecordError(CorpusFormatRegistry(), name, std::move(def));
}
}  // namespace internal

}  // namespace tfm

// A name -> entry table shared by the op, kernel, layer and task registries.
#ifndef TFM_CORE_REGISTRY_H_
#define TFM_CORE_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/registration_journal.h"

namespace tfm {

template <typename Entry>
class Registry {
 public:
  // `kind` names the entries in messages: "op", "kernel", "layer", "task".
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  // Adds `entry` under `name` and records it in the journal. AlreadyExists if
  // the name is taken (the first registration stays).
  absl::Status Add(const std::string& name, Entry entry) {
    {
      absl::MutexLock lock(&mu_);
      if (entries_.count(name) != 0) {
        return absl::AlreadyExistsError(
            absl::StrCat(kind_, " '", name, "' is already registered"));
      }
      entries_.emplace(name, std::make_shared<const Entry>(std::move(entry)));
    }
    RegistrationJournal::Get().Record(
        RegistrationEntry{kind_, name, [this, name] { Remove(name); }});
    return absl::OkStatus();
  }

  // NotFound naming the known entries when `name` is not registered.
  absl::StatusOr<std::shared_ptr<const Entry>> Find(absl::string_view name) const {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    std::vector<std::string> known;
    for (const auto& [known_name, unused] : entries_) known.push_back(known_name);
    return absl::NotFoundError(absl::StrCat(
        "unknown ", kind_, " '", name, "'; known ", kind_, "s: ",
        known.empty() ? "(none)" : absl::StrJoin(known, ", ")));
  }

  bool Contains(absl::string_view name) const {
    absl::MutexLock lock(&mu_);
    return entries_.find(name) != entries_.end();
  }

  std::vector<std::string> Names() const {  // Sorted.
    absl::MutexLock lock(&mu_);
    std::vector<std::string> names;
    for (const auto& [name, unused] : entries_) names.push_back(name);
    return names;
  }

  void Remove(const std::string& name) {
    absl::MutexLock lock(&mu_);
    entries_.erase(name);
  }

  const std::string& kind() const { return kind_; }

 private:
  const std::string kind_;
  mutable absl::Mutex mu_;
  // std::less<>: looked up by string_view without building a string (an op
  // call looks up its op and its kernel).
  std::map<std::string, std::shared_ptr<const Entry>, std::less<>> entries_;
};

// Adds to a registry from a static initialiser; failures go to the journal.
template <typename Entry>
void RegisterOrRecordError(Registry<Entry>& registry, const std::string& name, Entry entry) {
  absl::Status status = registry.Add(name, std::move(entry));
  if (!status.ok()) RegistrationJournal::Get().RecordError(std::move(status));
}

#define TFM_UNIQUE_NAME_INNER(prefix, line) prefix##line
#define TFM_UNIQUE_NAME_EXPAND(prefix, line) TFM_UNIQUE_NAME_INNER(prefix, line)
#define TFM_UNIQUE_NAME(prefix) TFM_UNIQUE_NAME_EXPAND(prefix, __COUNTER__)

}  // namespace tfm

#endif  // TFM_CORE_REGISTRY_H_

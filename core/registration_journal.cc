#include "core/registration_journal.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tfm {

// Registration happens during static initialisation and dlopen, which the
// C++ runtime serialises, so the journal needs no lock.
RegistrationJournal& RegistrationJournal::Get() {
  static auto* journal = new RegistrationJournal();
  return *journal;
}

void RegistrationJournal::Record(RegistrationEntry entry) {
  entries_.push_back(std::move(entry));
}

void RegistrationJournal::RecordError(absl::Status error) {
  errors_.push_back(std::move(error));
}

size_t RegistrationJournal::num_entries() const { return entries_.size(); }
size_t RegistrationJournal::num_errors() const { return errors_.size(); }

std::vector<RegistrationEntry> RegistrationJournal::EntriesSince(size_t first) const {
  if (first >= entries_.size()) return {};
  return std::vector<RegistrationEntry>(entries_.begin() + first, entries_.end());
}

std::vector<absl::Status> RegistrationJournal::ErrorsSince(size_t first) const {
  if (first >= errors_.size()) return {};
  return std::vector<absl::Status>(errors_.begin() + first, errors_.end());
}

void RegistrationJournal::RollBack(size_t first, size_t first_error) {
  while (entries_.size() > first) {
    if (entries_.back().undo) entries_.back().undo();
    entries_.pop_back();
  }
  if (errors_.size() > first_error) errors_.resize(first_error);
}

absl::Status RegistrationJournal::Check() const {
  if (errors_.empty()) return absl::OkStatus();
  std::vector<std::string> messages;
  for (const absl::Status& error : errors_) messages.emplace_back(error.message());
  return absl::AlreadyExistsError(
      absl::StrCat("registration failed: ", absl::StrJoin(messages, "; ")));
}

}  // namespace tfm

// A log of everything registered, in order, and of registrations that failed.
//
// Static registrars run before main() (or inside dlopen for plugins) where no
// error can be returned, so they record failures here. The plugin loader reads
// the entries a library added to report and roll them back; main() and the
// tests check that built-in registration produced no errors.
#ifndef TFM_CORE_REGISTRATION_JOURNAL_H_
#define TFM_CORE_REGISTRATION_JOURNAL_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tfm {

struct RegistrationEntry {
  std::string kind;  // "op", "kernel", "layer", "task"
  std::string name;
  std::function<void()> undo;  // Removes the entry again.
};

class RegistrationJournal {
 public:
  static RegistrationJournal& Get();

  void Record(RegistrationEntry entry);
  void RecordError(absl::Status error);

  size_t num_entries() const;
  size_t num_errors() const;
  // Entries and errors recorded since the given counts.
  std::vector<RegistrationEntry> EntriesSince(size_t first) const;
  std::vector<absl::Status> ErrorsSince(size_t first) const;
  // Undoes and forgets entries recorded since `first` and forgets errors
  // recorded since `first_error` (a failed plugin leaves no trace).
  void RollBack(size_t first, size_t first_error);

  // OK, or one error listing every failed registration so far.
  absl::Status Check() const;

 private:
  RegistrationJournal() = default;
  std::vector<RegistrationEntry> entries_;
  std::vector<absl::Status> errors_;
};

}  // namespace tfm

#endif  // TFM_CORE_REGISTRATION_JOURNAL_H_

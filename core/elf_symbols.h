// Reads a constant that a shared library exports, from its file, without
// loading it: dlopen would run the library's static initialisers first, and
// the plugin loader must decide whether they may run at all.
#ifndef TFM_CORE_ELF_SYMBOLS_H_
#define TFM_CORE_ELF_SYMBOLS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tfm {

// The 8-byte value of the exported (dynamic) symbol `symbol` in the 64-bit
// ELF file at `path`, as the library's code would read it. NotFound if the
// library does not export it; FailedPrecondition if the file cannot be
// read, is not a 64-bit ELF file of this machine's byte order, or is
// damaged (truncated tables, a symbol without initialised data).
absl::StatusOr<uint64_t> ReadExportedUint64(const std::string& path, const std::string& symbol);

}  // namespace tfm

#endif  // TFM_CORE_ELF_SYMBOLS_H_

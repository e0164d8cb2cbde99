// A crash prints where it happened: SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT
// and SIGTRAP print the signal and a symbolized stack trace on stderr
// (Abseil's failure signal handler), then the process dies of the same
// signal, so exit codes stay as they were (139 for a segmentation fault).
//
// Why: a crash on a machine we cannot log into (the lent GPU machine, a
// user's cluster node) otherwise leaves only "Segmentation fault" (and a
// test binary's buffered output is lost with it); the trace names the
// library and function. Every binary that links //core:base gets it.
//
// SIGINT and SIGTERM are left to their default or to the trainer's own
// handlers (runtime/train stops at a checkpoint). Sanitizer builds keep the
// sanitizer's report. TFM_CRASH_TRACE=0 turns it off (for a core dump
// taken by an outside handler).
#include <signal.h>

#include "absl/debugging/failure_signal_handler.h"
#include "absl/debugging/symbolize.h"
#include "core/env_setting.h"

namespace tfm {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif
#else
constexpr bool kSanitizerBuild = false;
#endif

const bool kCrashReportInstalled = [] {
  if (kSanitizerBuild || EnvIs("TFM_CRASH_TRACE", "0")) return false;
  absl::InitializeSymbolizer("/proc/self/exe");
  struct sigaction sigterm_before = {};
  sigaction(SIGTERM, nullptr, &sigterm_before);
  absl::FailureSignalHandlerOptions options;
  options.symbolize_stacktrace = true;
  // A handler that hangs (a lock held by the crashed thread) is cut short.
  options.alarm_on_failure_secs = 3;
  absl::InstallFailureSignalHandler(options);
  // Abseil's handler takes SIGTERM too; a terminated process keeps dying
  // (or ignoring it) as it did before.
  sigaction(SIGTERM, &sigterm_before, nullptr);
  return true;
}();

}  // namespace
}  // namespace tfm

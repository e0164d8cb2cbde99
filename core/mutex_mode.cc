// Abseil's Mutex deadlock detector, off in optimised builds.
//
// Debian builds Abseil without NDEBUG, so its Mutex runs in debug mode: every
// Lock and Unlock records the lock in a process-wide graph of lock order
// (under a global lock of its own) and checks it for cycles. An op call takes
// several mutexes (the op and kernel registries, the caching allocator, the
// GEMM plan caches), so the detector cost about 100 ns an op call on a Zen 4
// (benchmarks/op_dispatch.cc), serialised across threads: time the host
// spends before each kernel launch, which a launch-bound GPU step waits for.
//
// Builds with NDEBUG (-c opt: `bazel run`, the benchmarks, the device
// bundle) turn it off at start-up; fastbuild (`bazel test`) keeps it, so the
// tests still catch a lock-order inversion. TFM_MUTEX_DEADLOCK_DETECTION=1
// keeps it in an optimised build too (to chase a hang).

#include "absl/synchronization/mutex.h"
#include "core/env_setting.h"

namespace tfm {
namespace {

#ifdef NDEBUG
const bool kDeadlockDetectionSet = [] {
  if (!EnvIs("TFM_MUTEX_DEADLOCK_DETECTION", "1")) {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  return true;
}();
#endif

}  // namespace
}  // namespace tfm

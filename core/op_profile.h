// Where a step's time goes, op by op: with TFM_PROFILE_OPS=1 in the
// environment, RunOp adds each outermost call's wall time (validation,
// output allocation and the kernel, threads included) to a per-op total;
// with TFM_PROFILE_OPS=sync, RunOp also waits for a GPU op's device before
// its timer stops, so the table holds kernel time instead of launch time
// (the waits slow the run: profile in a pass that is not timed); with
// TFM_PROFILE_OPS=shapes, the same waits and a row per op, dtype and input
// shapes ("linear bf16 27648x1024 4096x1024 4096"), to see which of an
// op's calls (a GEMM's shapes) take the time; OpProfileReport() prints the
// table, largest first. Off, it costs one branch on a cached flag per
// RunOp. Time spent outside ops (layers' bookkeeping, copies made without
// an op) is not in the table: the report gives the ops' share of the wall
// time it is handed, so the rest shows.
#ifndef TFM_CORE_OP_PROFILE_H_
#define TFM_CORE_OP_PROFILE_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace tfm {

// TFM_PROFILE_OPS is read once, at the first call.
bool OpProfilingEnabled();
// Turns profiling on or off regardless of the variable (benchmarks, tests).
void SetOpProfiling(bool enabled);
// Whether outermost GPU ops wait for their device (TFM_PROFILE_OPS=sync):
// while profiling is on; SetOpProfiling(false) then (true) keeps the wait.
// Asking for the wait turns profiling on.
bool OpProfilingSynchronizes();
void SetOpProfilingSynchronizes(bool synchronize);
// Whether rows are per op, dtype and input shapes (TFM_PROFILE_OPS=shapes),
// kept as the wait is; asking for it turns profiling and the wait on.
bool OpProfilingByShape();
void SetOpProfilingByShape(bool by_shape);

// Adds one call of `op` taking `seconds`.
void RecordOpTime(absl::string_view op, double seconds);

// Calls of `op` counted since the last reset (outermost calls; every row
// of the op when rows are by shape).
int64_t OpProfileCalls(absl::string_view op);

// Clears the totals (e.g. after warm-up steps).
void ResetOpProfile();

// "op calls total_ms ms/call share" rows, largest total first, then the sum
// and, when wall_seconds > 0, the ops' share of it.
std::string OpProfileReport(double wall_seconds = 0);

// Times the outermost op on this thread (ops that run ops count once).
class ScopedOpTimer {
 public:
  explicit ScopedOpTimer(absl::string_view op);
  ~ScopedOpTimer();
  // True for the outermost op while profiling: the one whose time counts.
  bool timing() const { return start_ns_ >= 0; }
  // The row this call counts in, instead of the op's name (by shape).
  void set_row(std::string row) { row_ = std::move(row); }
  ScopedOpTimer(const ScopedOpTimer&) = delete;
  ScopedOpTimer& operator=(const ScopedOpTimer&) = delete;

 private:
  absl::string_view op_;
  std::string row_;        // Empty: the op's name.
  int64_t start_ns_ = -1;  // -1: not timing (disabled, or nested).
};

}  // namespace tfm

#endif  // TFM_CORE_OP_PROFILE_H_

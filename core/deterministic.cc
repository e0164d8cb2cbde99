#include "core/deterministic.h"

#include <atomic>

namespace tfm {
namespace {

std::atomic<bool>& Flag() {
  static std::atomic<bool> on{false};
  return on;
}

}  // namespace

void SetDeterministicKernels(bool on) { Flag().store(on, std::memory_order_relaxed); }

bool DeterministicKernels() { return Flag().load(std::memory_order_relaxed); }

}  // namespace tfm

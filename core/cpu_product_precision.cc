#include "core/cpu_product_precision.h"

#include <atomic>

namespace tfm {
namespace {

std::atomic<CpuProductPrecision> precision{CpuProductPrecision::kF32};

}  // namespace

CpuProductPrecision CurrentCpuProductPrecision() {
  return precision.load(std::memory_order_relaxed);
}

ScopedCpuProductPrecision::ScopedCpuProductPrecision(CpuProductPrecision p)
    : previous_(precision.exchange(p)) {}

ScopedCpuProductPrecision::~ScopedCpuProductPrecision() { precision.store(previous_); }

}  // namespace tfm

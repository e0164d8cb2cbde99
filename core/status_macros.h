// Propagation helpers for absl::Status and absl::StatusOr.
#ifndef TFM_CORE_STATUS_MACROS_H_
#define TFM_CORE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TFM_CONCAT_INNER(a, b) a##b
#define TFM_CONCAT(a, b) TFM_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` yields a non-OK status.
#define TFM_RETURN_IF_ERROR(expr)                          \
  do {                                                     \
    ::absl::Status tfm_status_ = (expr);                   \
    if (!tfm_status_.ok()) return tfm_status_;             \
  } while (false)

// `TFM_ASSIGN_OR_RETURN(auto x, Foo());` declares x from an OK StatusOr or
// returns its error.
#define TFM_ASSIGN_OR_RETURN(lhs, expr) \
  TFM_ASSIGN_OR_RETURN_IMPL(TFM_CONCAT(tfm_statusor_, __LINE__), lhs, expr)

#define TFM_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                              \
  if (!statusor.ok()) return statusor.status();        \
  lhs = std::move(statusor).value()

#endif  // TFM_CORE_STATUS_MACROS_H_

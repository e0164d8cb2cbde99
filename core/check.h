// Checks for programming errors (broken invariants inside the engine).
// Errors a user can cause are returned as absl::Status instead.
#ifndef TFM_CORE_CHECK_H_
#define TFM_CORE_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define TFM_CHECK(condition, message)                                      \
  do {                                                                     \
    if (!(condition)) {                                                    \
      std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", __FILE__,      \
                   __LINE__, #condition, message);                         \
      std::abort();                                                        \
    }                                                                      \
  } while (false)

#endif  // TFM_CORE_CHECK_H_

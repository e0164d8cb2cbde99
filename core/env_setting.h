// The rule every on/off switch read from the environment follows (the
// kernels' TFM_* switches that time one path against another on a GPU, the
// crash trace, ...): a switch is its exact value, compared once where it is
// read. Header-only, so that CUDA sources and the libraries below :base can
// include it.
#ifndef TFM_CORE_ENV_SETTING_H_
#define TFM_CORE_ENV_SETTING_H_

#include <cstdlib>
#include <cstring>

namespace tfm {

// Whether environment variable `name` is set to exactly `value`.
inline bool EnvIs(const char* name, const char* value) {
  const char* setting = std::getenv(name);
  return setting != nullptr && std::strcmp(setting, value) == 0;
}

// A switch that is on unless set to "0".
inline bool EnvOnUnlessZero(const char* name) { return !EnvIs(name, "0"); }

}  // namespace tfm

#endif  // TFM_CORE_ENV_SETTING_H_

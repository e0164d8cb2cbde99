// Named attributes of an op call or a layer (eps, seed, transpose flags...).
#ifndef TFM_CORE_ATTRS_H_
#define TFM_CORE_ATTRS_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tfm {

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> values)
      : values_(values) {}

  Attrs& Set(const std::string& name, AttrValue value) {
    values_[name] = std::move(value);
    return *this;
  }
  bool Has(absl::string_view name) const { return values_.find(name) != values_.end(); }

  // The attribute as T, or InvalidArgument naming it if absent or of another
  // type. Integers convert to double implicitly.
  template <typename T>
  absl::StatusOr<T> Get(absl::string_view name) const {
    auto it = values_.find(name);
    if (it == values_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("missing attribute '", name, "'"));
    }
    if (const T* value = std::get_if<T>(&it->second)) return *value;
    if constexpr (std::is_same_v<T, double>) {
      if (const int64_t* value = std::get_if<int64_t>(&it->second)) {
        return static_cast<double>(*value);
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", name, "' has the wrong type"));
  }

  // The attribute as T, `fallback` if absent; wrong types are still errors.
  template <typename T>
  absl::StatusOr<T> GetOr(absl::string_view name, T fallback) const {
    if (!Has(name)) return fallback;
    return Get<T>(name);
  }

  using Map = std::map<std::string, AttrValue, std::less<>>;
  const Map& values() const { return values_; }

 private:
  Map values_;  // std::less<>: found by string_view, no string built.
};

}  // namespace tfm

#endif  // TFM_CORE_ATTRS_H_

#include "tests/util/torch_parity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "tests/util/npy.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace testing {
namespace {

// The driver around a snippet. argv: directory, snippet path, input names,
// output names (comma-separated). Files are <dir>/in_<name>.npy and
// <dir>/out_<name>.npy.
constexpr char kDriver[] = R"py(
import sys, textwrap
import numpy as np
import torch
import torch.nn.functional as F

_dir, _body_path = sys.argv[1], sys.argv[2]
_inputs = [n for n in sys.argv[3].split(',') if n]
_outputs = [n for n in sys.argv[4].split(',') if n]

def grads(outputs, upstream, inputs):
    if torch.is_tensor(outputs):
        outputs, upstream = [outputs], [upstream]
    result = torch.autograd.grad(outputs, inputs, upstream, allow_unused=True)
    return [torch.zeros_like(i) if g is None else g for g, i in zip(result, inputs)]

for _name in _inputs:
    _t = torch.from_numpy(np.load(f'{_dir}/in_{_name}.npy'))
    if _t.is_floating_point():
        _t.requires_grad_(True)
    globals()[_name] = _t

with open(_body_path) as _f:
    exec(compile(textwrap.dedent(_f.read()), 'torch_reference_snippet', 'exec'), globals())

for _name in _outputs:
    if _name not in globals():
        raise SystemExit(f'the snippet did not define output {_name!r}')
    _v = globals()[_name]
    _a = _v.detach().cpu().numpy() if torch.is_tensor(_v) else np.asarray(_v)
    if _a.dtype.kind == 'f':
        _a = _a.astype(np.float32)
    elif _a.dtype != np.int32:
        _a = _a.astype(np.int64)
    np.save(f'{_dir}/out_{_name}.npy', np.ascontiguousarray(_a))
)py";

bool IsIdentifier(const std::string& name) {
  if (name.empty() || absl::ascii_isdigit(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

// A fresh directory under TEST_TMPDIR for one call's files.
absl::StatusOr<std::string> MakeCallDirectory() {
  static std::atomic<int> counter{0};
  const char* root = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(root != nullptr ? root : "/tmp", "/torch_reference_",
                                       getpid(), "_", ++counter);
  if (mkdir(dir.c_str(), 0755) != 0) {
    return absl::InternalError(absl::StrCat("TorchReference: cannot create ", dir));
  }
  return dir;
}

double ToDouble(const Tensor& tensor, int64_t i) {
  switch (tensor.dtype()) {
    case DType::kF32:
      return tensor.data<float>()[i];
    case DType::kF16:
      return static_cast<float>(tensor.data<Half>()[i]);
    case DType::kBF16:
      return static_cast<float>(tensor.data<BFloat16>()[i]);
    case DType::kI32:
      return tensor.data<int32_t>()[i];
    case DType::kI64:
      return static_cast<double>(tensor.data<int64_t>()[i]);
    case DType::kI8:
      return tensor.data<int8_t>()[i];
  }
  return 0;
}

}  // namespace

absl::StatusOr<NamedTensors> TorchReference(const std::string& python_body,
                                            const NamedTensors& inputs,
                                            const std::vector<std::string>& outputs) {
  TFM_ASSIGN_OR_RETURN(std::string dir, MakeCallDirectory());
  std::vector<std::string> input_names;
  for (const auto& [name, tensor] : inputs) {
    if (!IsIdentifier(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("TorchReference: input name '", name, "' is not an identifier"));
    }
    TFM_ASSIGN_OR_RETURN(Tensor host, CopyToDevice(tensor, Device::Cpu()));
    TFM_RETURN_IF_ERROR(WriteNpy(absl::StrCat(dir, "/in_", name, ".npy"), host));
    input_names.push_back(name);
  }
  for (const std::string& name : outputs) {
    if (!IsIdentifier(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("TorchReference: output name '", name, "' is not an identifier"));
    }
  }
  const std::string body_path = absl::StrCat(dir, "/snippet.py");
  {
    std::ofstream body(body_path);
    body << python_body;
    if (!body) return absl::InternalError(absl::StrCat("cannot write ", body_path));
  }
  TFM_RETURN_IF_ERROR(RunPeerPython(kDriver, {dir, body_path, absl::StrJoin(input_names, ","),
                                              absl::StrJoin(outputs, ",")})
                          .status());
  NamedTensors results;
  for (const std::string& name : outputs) {
    TFM_ASSIGN_OR_RETURN(results[name], ReadNpy(absl::StrCat(dir, "/out_", name, ".npy")));
  }
  return results;
}

::testing::AssertionResult AllClose(const Tensor& actual, const Tensor& expected,
                                    const Tolerance& tolerance) {
  if (actual.shape() != expected.shape() || actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure() << "got " << actual.DebugString() << ", expected "
                                         << expected.DebugString();
  }
  absl::StatusOr<Tensor> a = CopyToDevice(actual, Device::Cpu());
  absl::StatusOr<Tensor> e = CopyToDevice(expected, Device::Cpu());
  if (!a.ok() || !e.ok()) {
    return ::testing::AssertionFailure() << "cannot copy to host: " << a.status() << " "
                                         << e.status();
  }
  const int64_t n = a->num_elements();
  const bool integral = a->dtype() == DType::kI32 || a->dtype() == DType::kI64;
  double max_magnitude = 0;
  for (int64_t i = 0; i < n; ++i) max_magnitude = std::max(max_magnitude, std::abs(ToDouble(*e, i)));
  double max_abs = 0, max_rel = 0;
  int64_t worst = -1, failures = 0;
  double worst_excess = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double x = ToDouble(*a, i), y = ToDouble(*e, i);
    double error = std::abs(x - y);
    if (std::isnan(x) || std::isnan(y)) error = std::isnan(x) && std::isnan(y) ? 0 : INFINITY;
    if (x == y) error = 0;  // Equal infinities.
    const double scale = tolerance.relative_to_max ? max_magnitude : std::abs(y);
    const double allowed = integral ? 0 : tolerance.atol + tolerance.rtol * scale;
    max_abs = std::max(max_abs, error);
    if (error > 0) max_rel = std::max(max_rel, error / std::max(scale, 1e-30));
    if (error > allowed) {
      ++failures;
      if (error - allowed > worst_excess) {
        worst_excess = error - allowed;
        worst = i;
      }
    }
  }
  const std::string summary =
      absl::StrCat(actual.DebugString(), ": max abs error ", max_abs, ", max rel error ",
                   max_rel, tolerance.relative_to_max ? " (relative to max |expected| " : "",
                   tolerance.relative_to_max ? absl::StrCat(max_magnitude, ")") : "",
                   "; tolerance atol ", tolerance.atol, " rtol ", tolerance.rtol);
  if (failures == 0) return ::testing::AssertionSuccess() << summary;
  return ::testing::AssertionFailure()
         << summary << "; " << failures << " of " << n << " elements fail, worst at flat index "
         << worst << ": got " << ToDouble(*a, worst) << ", expected " << ToDouble(*e, worst);
}

}  // namespace testing
}  // namespace tfm

#!/bin/bash
# Prints the test targets that hold GPU tests: those whose sources use
# TFM_SKIP_WITHOUT_GPU (tests/util/gpu.h). For tools/device/bundle.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Paths, not labels made from them: bazel query resolves a path to its
# package's label, also for a file in a subfolder of one (tasks/common/*.cc
# belong to //tasks).
files=$(git grep -l TFM_SKIP_WITHOUT_GPU -- '*.cc' | grep -v '^tests/util/gpu')
[[ -n "$files" ]] || exit 0
bazel query --output=label "kind(test, rdeps(//..., set($files), 1))" 2>/dev/null |
  grep -v '_avx2$'  # tfm_isa_test: the AVX-512 variant and the plain one suffice

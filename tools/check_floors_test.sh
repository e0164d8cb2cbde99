#!/bin/bash
# tools/check_floors.py on small fake trees: it names every upward include and
# BUILD dependency with its file and line, exits 1 for them, and passes what
# the rule allows (the same or a lower floor, tests/, tools/, third_party/,
# other repositories, comments).
set -euo pipefail

check="tools/check_floors.py"
root="$TEST_TMPDIR/tree"

write() {  # write PATH, text from standard input
  mkdir -p "$(dirname "$root/$1")"
  cat >"$root/$1"
}

# What the rule allows.
write core/tensor.h <<'X'
#include <vector>
#include "absl/status/status.h"
#include "core/status.h"
#include "third_party/shim.h"
X
write ops/fill/fill.cc <<'X'
#include "core/tensor.h"
#include "ops/fill/fill.h"
#include "tests/util/gpu.h"
X
write plugins/demo/demo.cc <<'X'
#include "benchmarks/machine_peak.h"
#include "tasks/common/trained_model.h"
X
write tests/integration_test.cc <<'X'
#include "plugins/demo/demo.h"
X
write ops/BUILD <<'X'
load("//tools:build_defs.bzl", "tfm_cc_test")
# A comment naming "//tasks:configs" is no dependency.
cc_library(
    name = "fill",
    srcs = ["fill/fill.cc"],
    deps = ["//core", ":other", "@absl//:lib", "//tests/util:gpu"],
    visibility = ["//visibility:public"],
)
X

"$check" "$root" >"$TEST_TMPDIR/clean.txt"
grep -q "^floors: OK (4 files checked" "$TEST_TMPDIR/clean.txt"

# Upward: an include, a proto import, a BUILD dependency and a load.
write core/tensor.cc <<'X'
#include "core/tensor.h"

#include "layers/transformer.h"
X
write core/config/schema.proto <<'X'
syntax = "proto3";
import "tasks/parsing/parsing.proto";
X
write layers/BUILD <<'X'
load("//runtime:defs.bzl", "macro")

cc_test(
    name = "presets_test",
    data = ["//tasks:configs"],
    deps = [
        "//core",
        "//runtime/decode:search",
    ],
)
X

status=0
"$check" "$root" >"$TEST_TMPDIR/out.txt" || status=$?
cat "$TEST_TMPDIR/out.txt"
[[ "$status" == 1 ]] || { echo "expected exit status 1, got $status" >&2; exit 1; }

expect_line() {
  grep -qF -- "$1" "$TEST_TMPDIR/out.txt" || { echo "missing: $1" >&2; exit 1; }
}
expect_line 'core/tensor.cc:3: core (floor 0) includes "layers/transformer.h", on floor layers (2) above it'
expect_line 'core/config/schema.proto:2: core (floor 0) imports "tasks/parsing/parsing.proto", on floor tasks (4)'
expect_line 'layers/BUILD:1: layers (floor 2) loads "//runtime:defs.bzl", on floor runtime (3)'
expect_line 'layers/BUILD:5: layers (floor 2) depends on "//tasks:configs" (in data), on floor tasks (4)'
expect_line 'layers/BUILD:8: layers (floor 2) depends on "//runtime/decode:search" (in deps), on floor runtime (3)'
expect_line 'floors: 5 violation(s) in 7 files checked'
[[ "$(grep -c 'above it$' "$TEST_TMPDIR/out.txt")" == 5 ]]

# Bad use: a folder without floors, and extra arguments.
status=0
"$check" "$TEST_TMPDIR/nothing" 2>"$TEST_TMPDIR/err.txt" || status=$?
[[ "$status" == 2 ]] && grep -q "no floor folder" "$TEST_TMPDIR/err.txt"
status=0
"$check" a b 2>"$TEST_TMPDIR/err.txt" || status=$?
[[ "$status" == 2 ]] && grep -q "usage" "$TEST_TMPDIR/err.txt"
echo PASS

#!/bin/bash
# tools/new_plugin.sh writes exactly plugins/hello/ as checked in (which
# //plugins/hello:hello_plugin_test builds and tests, since Bazel cannot run
# Bazel inside a test), and refuses bad names and existing folders.
set -euo pipefail

script="tools/new_plugin.sh"
root="$TEST_TMPDIR/root"
mkdir -p "$root/plugins"

"$script" hello "$root" >"$TEST_TMPDIR/out.txt"
grep -q "wrote $root/plugins/hello" "$TEST_TMPDIR/out.txt"
diff -r plugins/hello "$root/plugins/hello"
# Nothing else: the temporary folder is gone.
[[ "$(ls -A "$root/plugins")" == "hello" ]]

# The sample's name and message come from NAME.
"$script" my_task2 "$root" >/dev/null
grep -q 'name: "my_task2"' "$root/plugins/my_task2/configs/my_task2.pbtxt"
grep -q 'message MyTask2Config' "$root/plugins/my_task2/my_task2.proto"

expect_failure() {
  local pattern="$1"
  shift
  if "$@" 2>"$TEST_TMPDIR/err.txt"; then
    echo "expected failure: $*" >&2
    exit 1
  fi
  grep -q -- "$pattern" "$TEST_TMPDIR/err.txt" || {
    echo "expected '$pattern' in:" >&2
    cat "$TEST_TMPDIR/err.txt" >&2
    exit 1
  }
}
expect_failure "already exists" "$script" hello "$root"
expect_failure "is not a plugin name" "$script" My-Task "$root"
expect_failure "is not a plugin name" "$script" 1task "$root"
expect_failure "usage" "$script"
echo PASS

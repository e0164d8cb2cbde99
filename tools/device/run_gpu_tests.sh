#!/bin/bash
# On the GPU machine: runs every test binary of the bundle (see
# gpu_test_targets.sh) and prints one summary line per binary, the failures
# in full. Usage: .device_bundle/run_gpu_tests.sh [gtest args...]
# TFM_TEST_WRAPPER runs each binary under a tool, e.g.
#   TFM_TEST_WRAPPER="compute-sanitizer --tool memcheck --error-exitcode 1"
# TFM_TESTS (a regular expression) picks binaries by path, and TFM_TEST_LOGS
# names a folder that keeps every binary's full output.
here="$(cd "$(dirname "$0")" && pwd)"
failed=0
for test in $(grep -E "${TFM_TESTS:-.}" "$here/gpu_tests.txt"); do
  log="$(mktemp)"
  # tfm_isa_test copies read their instruction set from the environment;
  # parity tests against PyTorch need this machine's peer venv: left out.
  isa=""
  [[ "$test" == *_avx512 ]] && isa=avx512
  # As under `bazel test`: TEST_SRCDIR is the binary's runfiles (the test
  # data of @shared_data is there).
  if TEST_SRCDIR="/tmp/bundle/$test.runfiles" TFM_CPU_ISA=$isa "$here/run_bundle.sh" ${TFM_TEST_WRAPPER:-} "$test" --gtest_brief=1 \
       --gtest_filter='-*Torch*:*PyTorch*' "$@" >"$log" 2>&1; then
    # The tool's own verdict (compute-sanitizer's "ERROR SUMMARY") too.
    echo "PASS $test: $(grep -E '^\[  (PASSED|SKIPPED) |(ERROR|RACECHECK) SUMMARY' "$log" | tr -s ' =' | tr '\n' ' ')"
  else
    failed=$((failed + 1))
    echo "FAIL $test"
    sed 's/^/    /' "$log" | tail -60
  fi
  if [[ -n "${TFM_TEST_LOGS:-}" ]]; then
    mkdir -p "$TFM_TEST_LOGS" && mv "$log" "$TFM_TEST_LOGS/$(echo "$test" | tr / _).log"
  fi
  rm -f "$log"
done
echo "gpu tests: $failed binaries failed"
[[ $failed -eq 0 ]]

#!/bin/bash
# On the GPU machine: runs every test binary of the bundle (see
# gpu_test_targets.sh) and prints one summary line per binary as it ends,
# the failures in full. Usage: .device_bundle/run_gpu_tests.sh [gtest args...]
# TFM_TEST_WRAPPER runs each binary under a tool, e.g.
#   TFM_TEST_WRAPPER="compute-sanitizer --tool memcheck --error-exitcode 1"
# TFM_TESTS (a regular expression) picks binaries by path, and TFM_TEST_LOGS
# names a folder that keeps every binary's full output.
# TFM_TEST_JOBS binaries run at once (default 4, 2 under a wrapper): device
# time is what a GPU session is short of, the machine has 16 cores and the
# GPU room for several test processes, and most binaries leave the GPU idle
# between small launches. Each gets its own TEST_TMPDIR, so that files the
# tests write under ::testing::TempDir() never meet.
here="$(cd "$(dirname "$0")" && pwd)"
jobs_max="${TFM_TEST_JOBS:-4}"
[[ -n "${TFM_TEST_WRAPPER:-}" ]] && jobs_max="${TFM_TEST_JOBS:-2}"
results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT

# The longest binaries first (seconds on an H200, 2026-11-28), so that the
# short ones fill in beside them; the rest in gpu_tests.txt's order.
slow_first="ops/embedding/tied_projection_test ops/attention/attention_cuda_test
tests/gpu_decoding_test tests/gpu_training_test ops/attention/cudnn_sdpa_test
tests/exact_resume_test tasks/trained_model_test tasks/seq2seq_decoding_test
tasks/parsing/parsing_decoding_test"
ordered() {
  local all
  all="$(grep -E "${TFM_TESTS:-.}" "$here/gpu_tests.txt")"
  for test in $slow_first; do
    grep -qxF "$test" <<<"$all" && echo "$test"
  done
  grep -vxF -f <(tr ' ' '\n' <<<"$slow_first" | grep .) <<<"$all"
}

# Runs one binary; prints its summary (under a lock, whole) when it ends.
run_one() {
  local test="$1"
  local name
  name="$(echo "$test" | tr / _)"
  local log="$results/$name.log" tmp
  tmp="$(mktemp -d)"
  # tfm_isa_test copies read their instruction set from the environment;
  # parity tests against PyTorch need this machine's peer venv: left out.
  local isa=""
  [[ "$test" == *_avx512 ]] && isa=avx512
  # As under `bazel test`: TEST_SRCDIR is the binary's runfiles (the test
  # data of @shared_data is there).
  local summary
  if TEST_TMPDIR="$tmp" TEST_SRCDIR="/tmp/bundle/$test.runfiles" TFM_CPU_ISA=$isa \
       "$here/run_bundle.sh" ${TFM_TEST_WRAPPER:-} "$test" --gtest_brief=1 \
       --gtest_filter='-*Torch*:*PyTorch*' "$@" >"$log" 2>&1; then
    # The tool's own verdict (compute-sanitizer's "ERROR SUMMARY") too.
    summary="PASS $test: $(grep -E '^\[  (PASSED|SKIPPED) |(ERROR|RACECHECK) SUMMARY' "$log" |
      tr -s ' =' | tr '\n' ' ')"
  else
    touch "$results/$name.failed"
    summary="FAIL $test
$(sed 's/^/    /' "$log" | tail -60)"
  fi
  rm -rf "$tmp"
  (
    flock 9
    echo "$summary"
  ) 9>"$results/print.lock"
}

for test in $(ordered); do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n; done
  run_one "$test" "$@" &
done
wait
failed=$(find "$results" -name '*.failed' | wc -l)
if [[ -n "${TFM_TEST_LOGS:-}" ]]; then
  mkdir -p "$TFM_TEST_LOGS" && find "$results" -name '*.log' -exec mv {} "$TFM_TEST_LOGS/" \;
fi
echo "gpu tests: $failed binaries failed"
[[ $failed -eq 0 ]]

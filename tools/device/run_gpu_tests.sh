#!/bin/bash
# On the GPU machine: runs every test binary of the bundle (see
# gpu_test_targets.sh) and prints one summary line per binary, the failures
# in full. Usage: .device_bundle/run_gpu_tests.sh [gtest args...]
here="$(cd "$(dirname "$0")" && pwd)"
failed=0
for test in $(cat "$here/gpu_tests.txt"); do
  log="$(mktemp)"
  # tfm_isa_test copies read their instruction set from the environment;
  # parity tests against PyTorch need this machine's peer venv: left out.
  isa=""
  [[ "$test" == *_avx512 ]] && isa=avx512
  if TFM_CPU_ISA=$isa "$here/run_bundle.sh" "$test" --gtest_brief=1 \
       --gtest_filter='-*Torch*:*PyTorch*' "$@" >"$log" 2>&1; then
    echo "PASS $test: $(grep -E '^\[  (PASSED|SKIPPED) ' "$log" | tr -s ' ' | tr '\n' ' ')"
  else
    failed=$((failed + 1))
    echo "FAIL $test"
    sed 's/^/    /' "$log" | tail -60
  fi
  rm -f "$log"
done
echo "gpu tests: $failed binaries failed"
[[ $failed -eq 0 ]]

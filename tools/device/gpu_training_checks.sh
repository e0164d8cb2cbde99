#!/bin/bash
# On the GPU machine, after tools/device/bundle.sh --gpu_tests //tasks:translate_ende
# here: every GPU test binary, the GPU training test in full and under
# compute-sanitizer memcheck, then a short Multi30k EN-DE training run on the
# GPU whose checkpoint is decoded on the CPU. Writes logs under $OUT.
#   device run: tools/device/gpu_training_checks.sh   (carry .device_bundle and .gpu_data)
# .gpu_data/multi30k is a copy of ../shared/data/multi30k (the device machine
# has no ../shared).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/gpu_checks}"
mkdir -p "$out"
bundle=.device_bundle
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
echo "== git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

echo "== every GPU test binary"
TFM_TEST_LOGS="$out/test_logs" timeout 240 "$bundle/run_gpu_tests.sh" 2>&1 | tee "$out/gpu_tests.txt"

echo "== gpu_training_test in full"
timeout 120 "$bundle/run_bundle.sh" tests/gpu_training_test 2>&1 | tee "$out/gpu_training_test.log" |
  grep -E 'worst of all|checkpoint from|loss|^\[ *(OK|FAILED|SKIPPED|PASSED) ' | head -40

echo "== memcheck over gpu_training_test"
TFM_TESTS='gpu_training_test' \
  TFM_TEST_WRAPPER="timeout 150 compute-sanitizer --tool memcheck --error-exitcode 7 --print-limit 20" \
  "$bundle/run_gpu_tests.sh" 2>&1 | tee "$out/memcheck.txt"

echo "== Multi30k EN-DE on the GPU (f32, 2 minutes), then decoded on the CPU"
data="$PWD/.gpu_data/multi30k"
work=/tmp/m30k_gpu
rm -rf "$work"
timeout 200 "$bundle/run_bundle.sh" tasks/translate_ende train --device=cuda \
  --config=multi30k_ende_small --data="$data" --workdir="$work" --minutes=2 \
  --set=train.validate_every_minutes=0 --set=train.checkpoint_every_minutes=1 2>&1 |
  tee "$out/train_multi30k_ende_gpu_2min.log" | tail -25
timeout 120 "$bundle/run_bundle.sh" tasks/translate_ende evaluate --model="$work" --split=test \
  --beam=1 2>&1 | tee "$out/evaluate_gpu_checkpoint_on_cpu.log" | tail -4

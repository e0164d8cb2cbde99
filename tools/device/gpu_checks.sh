#!/bin/bash
# On the GPU machine, after tools/device/bundle.sh --gpu_tests //tasks:translate_ende
# here: every GPU test binary, the GPU training test in full and under
# compute-sanitizer memcheck, then a short Multi30k EN-DE training run on the
# GPU whose checkpoint is decoded on the CPU. Writes logs under $OUT.
#   device run: tools/device/gpu_training_checks.sh [STAGE...]   (carry .device_bundle and .gpu_data)
# STAGE: tests, training_test, memcheck, train (default: all, in that order).
# .gpu_data/multi30k is a copy of ../shared/data/multi30k (the device machine
# has no ../shared).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/gpu_checks}"
mkdir -p "$out"
bundle=.device_bundle
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
echo "== git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

stages=" ${*:-tests training_test memcheck train} "
run() { [[ "$stages" == *" $1 "* ]]; }

run tests && echo "== every GPU test binary"
run tests &&
  TFM_TEST_LOGS="$out/test_logs" timeout 240 "$bundle/run_gpu_tests.sh" 2>&1 | tee "$out/gpu_tests.txt"

run training_test && echo "== gpu_training_test in full"
run training_test && timeout 120 "$bundle/run_bundle.sh" tests/gpu_training_test 2>&1 | tee "$out/gpu_training_test.log" |
  grep -E 'worst of all|checkpoint from|loss|^\[ *(OK|FAILED|SKIPPED|PASSED) ' | head -40

run memcheck && echo "== memcheck over gpu_training_test"
run memcheck && TFM_TESTS='gpu_training_test' \
  TFM_TEST_WRAPPER="timeout 150 compute-sanitizer --tool memcheck --error-exitcode 7 --print-limit 20" \
  "$bundle/run_gpu_tests.sh" 2>&1 | tee "$out/memcheck.txt"

run train || exit 0
minutes="${TFM_TRAIN_MINUTES:-3}"
echo "== the main job: Multi30k EN-DE trained on the GPU (f32, $minutes minutes), averaged, test decoded on the CPU"
data="$PWD/.gpu_data/multi30k"
work=/tmp/m30k_gpu
rm -rf "$work" && mkdir -p "$work"
# SentencePiece training segfaulted there once (2026-11-26, from the
# bundle's libsentencepiece): a vocabulary trained here on the same data can
# travel instead; the job loads a work directory's spm.model when it has one.
if [[ -f .gpu_data/multi30k_ende_spm.model ]]; then
  cp .gpu_data/multi30k_ende_spm.model "$work/spm.model"
fi
# The main job: train, average the last checkpoints, decode the test split
# (beam 4) and print BLEU. Validation is off: GPU decoding is not in yet.
timeout $((minutes * 60 + 200)) "$bundle/run_bundle.sh" tasks/translate_ende --device=cuda \
  --config=multi30k_ende_small --data="$data" --workdir="$work" --minutes="$minutes" \
  --set=train.validate_every_minutes=0 --set=train.checkpoint_every_minutes=0 \
  --set=train.checkpoint_every_steps=1000 2>&1 |
  tee "$out/mainjob_multi30k_ende_gpu_${minutes}min.log" | grep -vE '^epoch ' | tail -30

#!/bin/bash
# Everything a session lent a GPU carries to it, made here on a fresh
# checkout (the ignored folders do not survive a session): the bundle of
# opt-built binaries and GPU tests that gpu_checks.sh runs, and .gpu_data
# (the GPU machine has no ../shared): a copy of Multi30k and a vocabulary
# trained here (SentencePiece training once segfaulted there from the
# bundle's library). Then, on the device machine:
#   tools/device/gpu_checks.sh [STAGE...]   carry: .device_bundle .gpu_data
# Takes long on 2 cores (every CUDA kernel and GPU test is compiled with -c
# opt): start it early in the session.
# --decode: only what compare, decode_bench and decode_profile run (20 MB
# against 28), into .device_bundle_decode, for a call that also carries a
# trained model (.gpu_model, 30 MB for the preset's size): the carry limit is
# 64 MiB with the tree. Both bundles can stand side by side, so a session
# needs no build between its calls; such a call sets
# TFM_BUNDLE=.device_bundle_decode for gpu_checks.sh. --parse: the parser
# alone (.device_bundle_parse), for gpu_checks.sh's parse stage.
set -euo pipefail
cd "$(dirname "$0")/../.."

bundle_dir=.device_bundle
if [[ " $* " == *" --decode "* ]]; then
  bundle_dir=.device_bundle_decode
  bundle_args=(//tasks:translate_ende //benchmarks:decode //tools:bleu)
elif [[ " $* " == *" --parse "* ]]; then
  # The parse stage's binary alone, for a call that carries a parser
  # (.gpu_model/wsj) beside it.
  bundle_dir=.device_bundle_parse
  bundle_args=(//tasks:parse_wsj)
else
  bundle_args=(--gpu_tests //tasks:translate_ende //benchmarks:train_step //benchmarks:decode
    //benchmarks:attention //tools:bleu //benchmarks:int8_linear
    //ops/quantized_linear:int8_amx_emulated_test //ops/quantized_linear:quantized_linear_test)
fi
# A bundle built from this tree's code (bundle.sh's source.txt: the checksum
# of source_state.sh and the targets) is kept: a GPU session then starts its
# first call at once instead of after 5 minutes of building. --force rebuilds.
expected_targets="${bundle_args[*]}"
if [[ "${bundle_args[0]}" == --gpu_tests ]]; then
  expected_targets="${bundle_args[*]:1} $(tools/device/gpu_test_targets.sh | paste -sd' ')"
fi
current() {
  [[ -f $bundle_dir/source.txt && -f $bundle_dir/bundle.tar.xz &&
    -f .gpu_data/multi30k_ende_spm.model && -f .gpu_data/multi30k/train.en.gz ]] &&
    [[ "$(grep -v '^commit ' $bundle_dir/source.txt)" == "$(tools/device/source_state.sh | grep -v '^commit ')
targets $expected_targets" ]]
}
if [[ "${FORCE:-}" != 1 && " $* " != *" --force "* ]] && current; then
  echo "prepare_gpu_run: $bundle_dir and .gpu_data are current (built from $(head -1 $bundle_dir/source.txt); the code is the same); --force rebuilds"
  exit 0
fi
TFM_BUNDLE_DIR=$bundle_dir tools/device/bundle.sh "${bundle_args[@]}"

shared="../shared/data/multi30k"
if [[ ! -f "$shared/train.en.gz" ]]; then
  echo "prepare_gpu_run: $shared/train.en.gz: no such file (the Multi30k copy needs ../shared/data)" >&2
  exit 1
fi
rm -rf .gpu_data && mkdir -p .gpu_data/multi30k
cp "$shared"/*.gz .gpu_data/multi30k/
# The vocabulary of the GPU presets (BPE, 8000 pieces, as multi30k_ende_gpu),
# trained once by the preprocess command in a scratch work directory.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
bazel-bin/tasks/translate_ende preprocess --config=multi30k_ende_gpu --data=.gpu_data/multi30k \
  --workdir="$scratch" >"$scratch/preprocess.log" 2>&1 || {
  tail -5 "$scratch/preprocess.log"
  exit 1
}
cp "$scratch/spm.model" .gpu_data/multi30k_ende_spm.model
echo "prepare_gpu_run: carry $bundle_dir and .gpu_data ($(du -sh $bundle_dir .gpu_data |
  awk '{print $2 " " $1}' | paste -sd, -); the device tool's limit is 64 MiB with the tree)"

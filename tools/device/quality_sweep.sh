#!/bin/bash
# A quality run whose settings are chosen on validation within the same
# budget (issue 33: Multi30k EN-DE "trained on the H100 for 5 minutes
# (settings chosen on the validation set), then averaged and scored once"):
#
#   1. The variants of a preset (each a list of --set flags; "" is the preset
#      as it is) train side by side on one device, all for the same minutes,
#      each in its own work directory with the same vocabulary and binary
#      corpus. They share the device: a small model leaves a GPU idle between
#      its launches, and the others fill those gaps, so no variant gets more
#      than the budget of the device and most get less.
#   2. Each variant gives three candidates: the average of its last
#      checkpoints (the `average` command; its last checkpoint where it wrote
#      only one), its best checkpoint by the validation BLEU it printed at
#      each validation (checkpoint_best), and the average of its checkpoints
#      whose validation BLEU ranked best (`average --best`, kept by
#      train.keep_best_checkpoints: a small corpus overfits before the run
#      ends, so the last checkpoints can all lie past the peak). Each is
#      decoded on the validation set with the preset's beam search.
#   3. The candidate with the highest validation BLEU is the model.
#   4. Its length penalty's alpha is chosen on the validation set too: each
#      of --alphas decodes it (the beam stays the preset's), and an alpha
#      replaces the preset's only where its validation BLEU is higher.
#   5. The model decodes the test set, once, with that alpha.
#
# Usage (from the repository root):
#   tools/device/quality_sweep.sh --runner="CMD" --preset=P --data=DIR --root=DIR
#     [--minutes=5] [--device=cuda] [--checkpoint_steps=1000] [--average_last=5] [--keep_best=5]
#     [--vocab=FILE]
#     [--test_src=NAME --test_ref=NAME] [--alphas="0.8 1.0 1.2"] -- VARIANT...
# --runner: the task binary as a command (e.g. "bazel-bin/tasks/translate_ende"
# here, ".device_bundle/run_bundle.sh tasks/translate_ende" on the GPU
# machine). --data: the folder of train/val/test files (val.en.gz, val.de.gz
# and the test pair name the validation and test sets). --vocab: a
# SentencePiece model to use instead of training one.
# Writes ROOT/v1 ... ROOT/vK (work directories, train.log each),
# ROOT/choice.tsv (variant, candidate, validation BLEU; then the chosen
# candidate at each alpha) and ROOT/chosen (a link to the chosen checkpoint
# directory). Exits non-zero when no variant
# left a checkpoint or the test decoding failed.
set -uo pipefail

runner="" preset="" data="" root="" minutes=5 device=cuda checkpoint_steps=1000 average_last=5
# Checkpoints kept for their validation BLEU, and averaged as a candidate
# (0: none).
keep_best=5
vocab=""
# Length-penalty alphas tried on validation besides the preset's (0.6, the
# paper's); fairseq's and Marian's users tune it per task (their lenpen and
# normalize), and on Multi30k's short captions longer outputs may pay.
alphas="0.8 1.0 1.2"
test_src=test_2016_flickr.en.gz test_ref=test_2016_flickr.de.gz
variants=()
in_variants=false
for arg in "$@"; do
  if $in_variants; then
    variants+=("$arg")
    continue
  fi
  case "$arg" in
    --) in_variants=true ;;
    --runner=*) runner="${arg#*=}" ;;
    --preset=*) preset="${arg#*=}" ;;
    --data=*) data="${arg#*=}" ;;
    --root=*) root="${arg#*=}" ;;
    --minutes=*) minutes="${arg#*=}" ;;
    --device=*) device="${arg#*=}" ;;
    --checkpoint_steps=*) checkpoint_steps="${arg#*=}" ;;
    --average_last=*) average_last="${arg#*=}" ;;
    --keep_best=*) keep_best="${arg#*=}" ;;
    --vocab=*) vocab="${arg#*=}" ;;
    --test_src=*) test_src="${arg#*=}" ;;
    --test_ref=*) test_ref="${arg#*=}" ;;
    --alphas=*) alphas="${arg#*=}" ;;
    *) echo "quality_sweep: unknown argument $arg (variants follow --)" >&2; exit 2 ;;
  esac
done
for required in runner preset data root; do
  if [[ -z "${!required}" ]]; then
    echo "quality_sweep: --$required is required" >&2
    exit 2
  fi
done
[[ ${#variants[@]} -eq 0 ]] && variants=("")
for file in val.en.gz val.de.gz "$test_src" "$test_ref"; do
  if [[ ! -f "$data/$file" ]]; then
    echo "quality_sweep: $data/$file: no such file (--data names the corpus folder)" >&2
    exit 2
  fi
done
read -r -a run <<<"$runner"

# The BLEU figure of an evaluate run's output ("BLEU = 37.86 ..."), or
# nothing.
bleu_of() { grep -oE '^BLEU = [0-9.]+' "$1" | tail -1 | grep -oE '[0-9.]+$'; }
# Decodes the validation set with model $1 (more evaluate flags after $2)
# into $2.valid.out, its log in $2.valid.log, and prints its BLEU (nothing
# if it has none).
valid_bleu() {
  local model="$1" out="$2"
  shift 2
  timeout 300 "${run[@]}" evaluate --model="$model" --device="$device" "$@" \
    --src="$data/val.en.gz" --ref="$data/val.de.gz" --output="$out.valid.out" \
    >"$out.valid.log" 2>&1
  bleu_of "$out.valid.log"
}

rm -rf "$root" && mkdir -p "$root"
# One vocabulary and one binary corpus for every variant: the first work
# directory makes them (preprocess trains the vocabulary when none was given).
first="$root/v1"
mkdir -p "$first"
[[ -n "$vocab" ]] && cp "$vocab" "$first/spm.model"
timeout 600 "${run[@]}" preprocess --config="$preset" --data="$data" --workdir="$first" \
  >"$first/preprocess.log" 2>&1 || {
  echo "quality_sweep: preprocess failed (tail of $first/preprocess.log):"
  tail -5 "$first/preprocess.log"
  rm -f "$first/train_corpus.bin"
}

echo "== quality_sweep: ${#variants[@]} variants of $preset, $minutes minutes side by side on $device"
pids=()
for i in "${!variants[@]}"; do
  dir="$root/v$((i + 1))"
  mkdir -p "$dir"
  if [[ "$dir" != "$first" ]]; then
    cp "$first/spm.model" "$dir/" 2>/dev/null
    cp "$first/train_corpus.bin" "$dir/" 2>/dev/null
  fi
  echo "v$((i + 1)): ${variants[$i]:-(the preset as it is)}" | tee "$dir/variant.txt"
  # shellcheck disable=SC2086
  timeout $((minutes * 60 + 300)) "${run[@]}" train --device="$device" --config="$preset" \
    --data="$data" --workdir="$dir" --minutes="$minutes" \
    --set=train.checkpoint_every_minutes=0 --set=train.checkpoint_every_steps="$checkpoint_steps" \
    --set=train.keep_best_checkpoints="$keep_best" ${variants[$i]} >"$dir/train.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || echo "v$((i + 1)): train exited with status $?"
done

printf 'variant\tcandidate\tvalid_bleu\n' >"$root/choice.tsv"
for i in "${!variants[@]}"; do
  dir="$root/v$((i + 1))"
  echo "-- v$((i + 1)): ${variants[$i]:-(the preset as it is)}"
  # The validation curve against minutes, and how far the run got.
  grep -E '^valid \||^stopped|rror' "$dir/train.log" | tail -12
  if ! ls -d "$dir"/checkpoint_0* >/dev/null 2>&1; then
    echo "v$((i + 1)): no checkpoint (tail of train.log):"
    tail -5 "$dir/train.log"
    continue
  fi
  mapfile -t checkpoints < <(ls -d "$dir"/checkpoint_0* | sort)
  count=${#checkpoints[@]}
  last=$((count < average_last ? count : average_last))
  if ((last >= 2)); then
    # --data too: the preset names its corpus relative to the repository,
    # which is not where a bundle's runner starts.
    timeout 300 "${run[@]}" average --config="$preset" --data="$data" --workdir="$dir" \
      --last="$last" \
      >"$dir/average.log" 2>&1 || tail -3 "$dir/average.log"
    candidates=(checkpoint_average checkpoint_best)
  else
    candidates=("$(basename "${checkpoints[count - 1]}")" checkpoint_best)
  fi
  # The best validated ones: as many as were kept, up to keep_best (every
  # validation wrote one; pruning kept the best of them).
  validations=$(grep -c '^valid |' "$dir/train.log")
  best_count=$((validations < keep_best ? validations : keep_best))
  if ((best_count >= 2)); then
    timeout 300 "${run[@]}" average --config="$preset" --data="$data" --workdir="$dir" \
      --best="$best_count" >"$dir/average_best.log" 2>&1 || tail -3 "$dir/average_best.log"
    candidates+=(checkpoint_average_best)
  fi
  for candidate in "${candidates[@]}"; do
    [[ -d "$dir/$candidate" ]] || continue
    bleu=$(valid_bleu "$dir/$candidate" "$dir/$candidate")
    echo "v$((i + 1)) $candidate: validation BLEU ${bleu:-(none: see $dir/$candidate.valid.log)}"
    [[ -n "$bleu" ]] && printf 'v%d\t%s\t%s\n' $((i + 1)) "$candidate" "$bleu" >>"$root/choice.tsv"
  done
done

best=$(tail -n +2 "$root/choice.tsv" | sort -t$'\t' -k3,3gr | head -1)
if [[ -z "$best" ]]; then
  echo "quality_sweep: no candidate was decoded on the validation set"
  exit 1
fi
chosen="$root/$(cut -f1 <<<"$best")/$(cut -f2 <<<"$best")"
ln -sfn "$chosen" "$root/chosen"
echo "== chosen on validation: $(cut -f1,2 <<<"$best" | tr '\t' ' ') (validation BLEU $(cut -f3 <<<"$best")): $chosen"
# The chosen model's alpha, on validation: the preset's unless another
# decodes validation better (a tie keeps the preset's).
alpha_flag=()
best_bleu=$(cut -f3 <<<"$best")
for alpha in $alphas; do
  out="$root/alpha_$alpha"
  bleu=$(valid_bleu "$chosen" "$out" --alpha="$alpha")
  echo "chosen model, alpha $alpha: validation BLEU ${bleu:-(none: see $out.valid.log)}"
  [[ -z "$bleu" ]] && continue
  printf '%s\t%s alpha=%s\t%s\n' "$(cut -f1 <<<"$best")" "$(cut -f2 <<<"$best")" "$alpha" \
    "$bleu" >>"$root/choice.tsv"
  if awk -v a="$bleu" -v b="$best_bleu" 'BEGIN { exit !(a > b) }'; then
    best_bleu=$bleu
    alpha_flag=(--alpha="$alpha")
  fi
done
chosen_alpha="${alpha_flag[*]:-}"
[[ -z "$chosen_alpha" ]] && chosen_alpha="the preset's"
echo "== alpha chosen on validation: $chosen_alpha (validation BLEU $best_bleu)"
# The test set, once, with the chosen model and alpha only.
timeout 300 "${run[@]}" evaluate --model="$chosen" --device="$device" "${alpha_flag[@]}" \
  --src="$data/$test_src" --ref="$data/$test_ref" --output="$root/test.out" \
  >"$root/test.log" 2>&1
grep -E '^BLEU|^nrefs|decoded in' "$root/test.log"
test_bleu=$(bleu_of "$root/test.log")
if [[ -z "$test_bleu" ]]; then
  echo "quality_sweep: the test decoding gave no BLEU (tail of $root/test.log):"
  tail -5 "$root/test.log"
  exit 1
fi
echo "test BLEU of the model chosen on validation: $test_bleu"

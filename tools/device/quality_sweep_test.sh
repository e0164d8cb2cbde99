#!/bin/bash
# tools/device/quality_sweep.sh with a made-up task binary: the candidate
# with the highest validation BLEU over every variant's average, best
# checkpoint and average of its best validated checkpoints is chosen, its length-penalty alpha is chosen on validation
# (a tie keeps the earlier), and only it decodes the test set, once, with
# that alpha; a variant
# whose training fails is reported and the others still count; a variant
# with one checkpoint offers that checkpoint; no model at all, a missing
# flag and a missing data file are errors.
set -euo pipefail

sweep="tools/device/quality_sweep.sh"
dir="$TEST_TMPDIR"
data="$dir/data"
mkdir -p "$data"
for name in val.en.gz val.de.gz test_2016_flickr.en.gz test_2016_flickr.de.gz; do
  : >"$data/$name"
done

# The made-up binary. Its --set=fake.* flags say what a variant yields:
# fake.average, fake.best and fake.average_best (validation BLEU of the
# average, of the best checkpoint and of the average of the best
# validated ones), fake.checkpoints (how many it writes, each after a
# validation), fake.fail (exit 1 before any checkpoint). train keeps its
# arguments in train_args. evaluate prints the BLEU stored with the model
# (the test set scores validation + 1; --alpha=0.8 -0.1, 1.0 and 1.2 +0.4)
# and logs every call with its alpha.
fake="$dir/fake_task"
cat >"$fake" <<'FAKE'
#!/bin/bash
command="$1"; shift
workdir="" model="" src="" data="" average=0 best=0 average_best=0 checkpoints=2 fail=0 alpha=-
best_count=0
for arg in "$@"; do
  case "$arg" in
    --workdir=*) workdir="${arg#*=}" ;;
    --data=*) data="${arg#*=}" ;;
    --model=*) model="${arg#*=}" ;;
    --src=*) src="${arg#*=}" ;;
    --alpha=*) alpha="${arg#*=}" ;;
    --set=fake.average=*) average="${arg#*=fake.average=}" ;;
    --set=fake.best=*) best="${arg#*=fake.best=}" ;;
    --set=fake.average_best=*) average_best="${arg#*=fake.average_best=}" ;;
    --best=*) best_count="${arg#*=}" ;;
    --set=fake.checkpoints=*) checkpoints="${arg#*=fake.checkpoints=}" ;;
    --set=fake.fail=*) fail="${arg#*=fake.fail=}" ;;
  esac
done
# Commands that read the preset's corpus fail without --data, as the real
# binary does where it does not start in the repository (a bundle's runner).
if [[ "$command" =~ ^(preprocess|train|average)$ && -z "$data" ]]; then
  echo "error: p.pbtxt:10: data.train[0]: file '../shared/data/train.en.gz' not found"
  exit 1
fi
case "$command" in
  preprocess)
    echo vocabulary >"$workdir/spm.model"
    echo corpus >"$workdir/train_corpus.bin" ;;
  train)
    [[ -f "$workdir/spm.model" && -f "$workdir/train_corpus.bin" ]] || { echo "error: no corpus"; exit 1; }
    if ((fail)); then echo "error: made-up failure"; exit 1; fi
    echo "$@" >"$workdir/train_args"
    for ((i = 1; i <= checkpoints; i++)); do
      mkdir -p "$workdir/checkpoint_00000000$i"
      echo "$best" >"$workdir/checkpoint_00000000$i/bleu"
      echo "valid | epoch 1 | update $((100 * i)) | bleu $best | elapsed 0:01:00"
    done
    echo "$average" >"$workdir/average_bleu"
    echo "$average_best" >"$workdir/average_best_bleu"
    mkdir -p "$workdir/checkpoint_best" && echo "$best" >"$workdir/checkpoint_best/bleu" ;;
  average)
    if ((best_count > 0)); then
      echo "$best_count" >"$workdir/best_count"
      mkdir -p "$workdir/checkpoint_average_best"
      cp "$workdir/average_best_bleu" "$workdir/checkpoint_average_best/bleu"
    else
      mkdir -p "$workdir/checkpoint_average"
      cp "$workdir/average_bleu" "$workdir/checkpoint_average/bleu"
    fi ;;
  evaluate)
    echo "$model $(basename "$src") $alpha" >>"$(dirname "$0")/evaluations.log"
    bleu=$(cat "$model/bleu")
    [[ "$src" == */test_* ]] && bleu=$(awk "BEGIN { print $bleu + 1 }")
    case "$alpha" in
      0.8) bleu=$(awk "BEGIN { print $bleu - 0.1 }") ;;
      1.0 | 1.2) bleu=$(awk "BEGIN { print $bleu + 0.4 }") ;;
    esac
    echo "BLEU = $bleu 1/2/3/4 (BP = 1.000)" ;;
esac
FAKE
chmod +x "$fake"

run_sweep() { "$sweep" --runner="$fake" --preset=p --data="$data" --root="$dir/root" \
  --minutes=1 --device=cpu "$@"; }

# v2's best checkpoint (31.5) beats v1's average (30.9), the averages of
# the best (30.5, 31.3) and v3's one checkpoint (29.0); v4 fails.
out=$(run_sweep -- "--set=fake.average=30.9 --set=fake.best=30.1 --set=fake.average_best=30.5" \
  "--set=fake.average=31.2 --set=fake.best=31.5 --set=fake.average_best=31.3" \
  "--set=fake.best=29.0 --set=fake.checkpoints=1" "--set=fake.fail=1")
echo "$out"
grep -q "chosen on validation: v2 checkpoint_best (validation BLEU 31.5)" <<<"$out"
# Every variant kept its best 5 validated checkpoints; v1 and v2 (two
# validations each) averaged both, v3 (one) had none to average.
grep -q -- "--set=train.keep_best_checkpoints=5" "$dir/root/v1/train_args"
grep -q "v2 checkpoint_average_best: validation BLEU 31.3" <<<"$out"
[[ "$(cat "$dir/root/v1/best_count")" == 2 ]]
[[ ! -d "$dir/root/v3/checkpoint_average_best" ]]
# Its alpha: 1.0 (31.9; 1.2 ties it and the earlier stays), then the test.
grep -q "chosen model, alpha 0.8: validation BLEU 31.4" <<<"$out"
grep -q "alpha chosen on validation: --alpha=1.0 (validation BLEU 31.9)" <<<"$out"
grep -q "test BLEU of the model chosen on validation: 32.9" <<<"$out"
grep -q "v4: no checkpoint" <<<"$out"
grep -q "v3 checkpoint_000000001: validation BLEU 29.0" <<<"$out"
# The test set was decoded once, by the chosen model at its alpha; each
# variant's candidates on validation (v3: its checkpoint and its best),
# then the chosen one at each alpha.
[[ $(grep -c "test_2016_flickr.en.gz" "$dir/evaluations.log") == 1 ]]
grep -q "^$dir/root/v2/checkpoint_best test_2016_flickr.en.gz 1.0$" "$dir/evaluations.log"
[[ $(grep -c "val.en.gz" "$dir/evaluations.log") == 11 ]]
[[ $(grep -c "^$dir/root/v2/checkpoint_best val.en.gz [0-9]" "$dir/evaluations.log") == 3 ]]
[[ "$(readlink "$dir/root/chosen")" == "$dir/root/v2/checkpoint_best" ]]
[[ $(wc -l <"$dir/root/choice.tsv") == 12 ]]  # A header, 8 candidates, 3 alphas.

# The average of the best validated checkpoints wins where it scores
# highest (the last ones past the peak); --keep_best=0 turns it off.
rm -f "$dir/evaluations.log"
out=$(run_sweep --alphas="0.8" -- \
  "--set=fake.average=30.0 --set=fake.best=30.5 --set=fake.average_best=31.0 --set=fake.checkpoints=3")
grep -q "chosen on validation: v1 checkpoint_average_best (validation BLEU 31.0)" <<<"$out"
[[ "$(cat "$dir/root/v1/best_count")" == 3 ]]
out=$(run_sweep --alphas="0.8" --keep_best=0 -- \
  "--set=fake.average=30.0 --set=fake.best=30.5 --set=fake.average_best=31.0")
grep -q "chosen on validation: v1 checkpoint_best (validation BLEU 30.5)" <<<"$out"
grep -q -- "--set=train.keep_best_checkpoints=0" "$dir/root/v1/train_args"

# Where no alpha beats the preset's, the test decoding takes none.
rm -f "$dir/evaluations.log"
out=$(run_sweep --alphas="0.8" -- "--set=fake.average=30.9 --set=fake.best=30.1")
grep -q "alpha chosen on validation: the preset's (validation BLEU 30.9)" <<<"$out"
grep -q "^$dir/root/v1/checkpoint_average test_2016_flickr.en.gz -$" "$dir/evaluations.log"

# No variant leaves a model: an error, and no test decoding.
rm -f "$dir/evaluations.log"
if out=$(run_sweep -- "--set=fake.fail=1"); then
  echo "expected a failure without any model"; exit 1
fi
grep -q "no candidate was decoded on the validation set" <<<"$out"
[[ ! -f "$dir/evaluations.log" ]]

# Bad arguments.
if out=$("$sweep" --runner="$fake" --data="$data" --root="$dir/root" 2>&1); then exit 1; fi
grep -q -- "--preset is required" <<<"$out"
if out=$("$sweep" --runner="$fake" --preset=p --data="$dir" --root="$dir/root" 2>&1); then exit 1; fi
grep -q "$dir/val.en.gz: no such file" <<<"$out"
if out=$(run_sweep --bogus 2>&1); then exit 1; fi
grep -q "unknown argument --bogus" <<<"$out"
echo PASS

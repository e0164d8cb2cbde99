#!/bin/bash
# tools/compare_translations.py on small files, scoring with //tools:bleu
# (the sandbox's Python has no sacrebleu; where it has, the figures agree):
# the identical-line count, the differing lines, each side's BLEU and the
# difference; mismatched line counts and missing files are errors.
set -euo pipefail

compare="tools/compare_translations.py"
bleu="tools/bleu"
dir="$TEST_TMPDIR"
for i in $(seq 1 30); do
  echo "the quick brown fox jumps over the lazy dog number $i"
done >"$dir/ref"
cp "$dir/ref" "$dir/a"
sed -e '3s/lazy/sleepy/' -e '7s/quick/slow/' "$dir/ref" >"$dir/b"

out="$(python3 "$compare" "$dir/a" "$dir/b" --ref="$dir/ref" --show=1 --bleu="$bleu")"
echo "$out"
grep -q '^identical lines: 28/30 (93.33%)$' <<<"$out"
grep -q '^line 3:$' <<<"$out"
grep -q 'B: the quick brown fox jumps over the sleepy dog number 3' <<<"$out"
grep -q '^\.\.\. and 1 more differing lines$' <<<"$out"
grep -q '^BLEU A: 100.00 ' <<<"$out"
grep -qE '^BLEU B: 9[0-9]\.[0-9]{2} ' <<<"$out"
grep -qE '^BLEU B - A: -[0-9]+\.[0-9]{2} ' <<<"$out"

head -n 5 "$dir/b" >"$dir/short"
if python3 "$compare" "$dir/a" "$dir/short" --ref="$dir/ref" --bleu="$bleu" 2>"$dir/err"; then
  echo "mismatched line counts passed" >&2
  exit 1
fi
grep -q "line counts differ" "$dir/err"
if python3 "$compare" "$dir/a" "$dir/missing" --ref="$dir/ref" --bleu="$bleu" 2>"$dir/err"; then
  echo "a missing file passed" >&2
  exit 1
fi
grep -q "missing" "$dir/err"
echo PASS

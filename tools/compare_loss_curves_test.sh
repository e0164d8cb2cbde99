#!/bin/bash
# tools/compare_loss_curves.py on made-up metrics files: a candidate within
# the tolerance passes though single updates stray further; one that drifts
# away fails, naming the worst window; a missing update and a bad row are
# errors naming the file (and line).
set -euo pipefail

compare="tools/compare_loss_curves.py"
dir="$TEST_TMPDIR"
header="update,epoch,elapsed,loss,nll,valid_loss"
# A falling curve; the candidate alternates +-3% around it (single updates
# over 2%, the means of 10 within it), then the drifting one climbs 1% per
# 10 updates from update 100.
python3 - "$dir" <<'PY'
import sys
d = sys.argv[1]
def write(name, f):
    with open(f"{d}/{name}", "w") as out:
        out.write("update,epoch,elapsed,loss,nll,valid_loss\n")
        for u in range(1, 301):
            out.write(f"{u},1,{u * 0.1:.1f},{f(u):.6f},{f(u) - 0.1:.6f},\n")
            if u % 100 == 0:  # A validation row: no training loss.
                out.write(f"{u},1,{u * 0.1:.1f},,,{f(u):.6f}\n")
base = lambda u: 2.0 + 8.0 / (1 + u / 20)
write("f32.csv", base)
write("close.csv", lambda u: base(u) * (1.03 if u % 2 else 0.97))
write("drift.csv", lambda u: base(u) * (1 + max(0, u - 100) * 0.001))
PY

out="$(python3 "$compare" "$dir/f32.csv" "$dir/close.csv")"
echo "$out"
grep -q '^loss curve check: PASS$' <<<"$out"
grep -qE '^worst single update: [0-9]+, relative difference 0\.030' <<<"$out"

out="$(python3 "$compare" "$dir/f32.csv" "$dir/close.csv" --window=1 || true)"
grep -q '^loss curve check: FAIL$' <<<"$out"

if out="$(python3 "$compare" "$dir/f32.csv" "$dir/drift.csv")"; then
  echo "a drifting curve passed" >&2
  exit 1
fi
echo "$out"
grep -q 'OVER$' <<<"$out"
grep -qE '^worst window: updates 291\.\.300, relative difference of the means 0\.19' <<<"$out"
grep -q '^loss curve check: FAIL$' <<<"$out"

# Errors: exit 2 naming the file (and line).
expect_error() {
  local pattern="$1"
  shift
  set +e
  python3 "$compare" "$@" >/dev/null 2>"$dir/err"
  local status=$?
  set -e
  cat "$dir/err"
  [[ $status -eq 2 ]] || { echo "exit status $status, not 2" >&2; exit 1; }
  grep -q "$pattern" "$dir/err"
}
grep -v '^150,' "$dir/f32.csv" >"$dir/gap.csv"
expect_error 'gap.csv: no loss for 1 of updates 1..300 (first: 150)' "$dir/gap.csv" "$dir/close.csv"
sed '5s/.*/5,1,0.5,oops,1,/' "$dir/f32.csv" >"$dir/bad.csv"
expect_error "bad.csv:5: update '5' or loss 'oops' is not a number" "$dir/f32.csv" "$dir/bad.csv"
expect_error 'cannot read .*absent.csv' "$dir/f32.csv" "$dir/absent.csv"
echo "compare_loss_curves: all checks passed"

#!/bin/bash
# tools/profile_roofline.py on a made-up profile by shape: a product at its
# peak loses nothing, an elementwise op at 40% of the bandwidth loses 60% of
# its time and leads the list, a summed-up variadic row counts its elements;
# a file without profile rows is an error.
set -euo pipefail

roofline="tools/profile_roofline.py"
dir="$TEST_TMPDIR"
cat >"$dir/profile.txt" <<'PROFILE'
where our 1 timed updates' time goes, op by op:
op                                                         calls    total ms    ms/call   share
linear bf16 1000x1000 1000x1000 1000                          10       20.00     2.0000   48.8%
add bf16 1000x1000 1000x1000                                  10       20.00     2.0000   48.8%
multi_tensor_adam f32 510 inputs of 1000000 elements           1        1.00     1.0000    2.4%
all ops                                                                41.00
PROFILE
out="$(python3 "$roofline" "$dir/profile.txt" --peak_tflops=1 --bandwidth_gbs=10)"
echo "$out"
# add: 2 x (1e6 + 1e6) elements x 2 bytes = 8 MB a call, 0.8 ms at 10 GB/s.
grep -qE '^ +20\.00 +8\.00 +12\.00 +4 GB/s  add bf16 1000x1000 1000x1000 \(10 calls, 40% of the roof\)$' <<<"$out"
# linear: 2e9 FLOPs a call, 2 ms at 1 TFLOP/s: at the roof.
grep -qE '^ +20\.00 +20\.00 +0\.00 +1\.0 TFLOP/s  linear bf16 .*\(10 calls, 100% of the roof\)$' <<<"$out"
# adam: 2 x 1e6 x 4 bytes = 8 MB, 0.8 ms.
grep -qE '^ +1\.00 +0\.80 +0\.20 +8 GB/s  multi_tensor_adam f32 510 inputs of 1000000 elements' <<<"$out"
# The largest loss first.
[[ "$(sed -n 3p <<<"$out")" == *"add bf16"* ]]
grep -q '^all rows: 41.00 ms, floor 28.80 ms (70% of the time); products 20.00 ms (49%), the rest 21.00 ms$' <<<"$out"

echo "no rows here" >"$dir/empty.txt"
set +e
python3 "$roofline" "$dir/empty.txt" --peak_tflops=1 --bandwidth_gbs=10 2>"$dir/err"
status=$?
set -e
cat "$dir/err"
[[ $status -eq 2 ]]
grep -q 'empty.txt: no profile rows by shape' "$dir/err"
echo "profile_roofline: all checks passed"

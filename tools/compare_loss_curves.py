#!/usr/bin/env python3
"""Checks that one training run's loss curve follows another's.

  tools/compare_loss_curves.py REFERENCE.csv CANDIDATE.csv [--updates=300]
      [--window=10] [--tolerance=0.02] [--every=25]

For mixed precision against f32 (the GPU training issue's check: bf16
follows the f32 curve within 2% over 300 updates of the Multi30k preset):
two runs of one config from the same seed (the same initial weights, batches
and dropout masks), each logging every update (train.log_every_steps 1), so
their metrics.csv files hold each update's loss. Their trajectories part by
rounding alone; the check is that they stay together.

For every window of --window consecutive updates from update 1 (sliding),
the mean loss of the candidate must be within --tolerance (relative) of the
reference's. --window=1 holds every single update to it. Prints a row every
--every updates, the worst window and the worst single update, then
`loss curve check: PASS` or `FAIL` (exit status 1). Bad input (a missing
file, a row that does not parse, an update missing from either run) is an
error naming the file and line, exit status 2.
"""

import argparse
import csv
import math
import sys


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def read_losses(path):
    """{update: loss} of the rows that have a loss (validation rows do not)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    if not rows:
        fail(f"{path}: empty (no header)")
    header = rows[0]
    for column in ("update", "loss"):
        if column not in header:
            fail(f"{path}:1: no '{column}' column in the header {','.join(header)}")
    update_at, loss_at = header.index("update"), header.index("loss")
    losses = {}
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            fail(f"{path}:{number}: {len(row)} cells, the header has {len(header)}")
        if row[loss_at] == "":
            continue
        try:
            update, loss = int(float(row[update_at])), float(row[loss_at])
        except ValueError:
            fail(f"{path}:{number}: update '{row[update_at]}' or loss '{row[loss_at]}' "
                 "is not a number")
        if not math.isfinite(loss):
            fail(f"{path}:{number}: the loss of update {update} is {row[loss_at]}")
        losses[update] = loss
    return losses


def relative(candidate, reference):
    return abs(candidate - reference) / max(abs(reference), 1e-30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference")
    parser.add_argument("candidate")
    parser.add_argument("--updates", type=int, default=300, help="updates 1..N compared")
    parser.add_argument("--window", type=int, default=10, help="updates per mean")
    parser.add_argument("--tolerance", type=float, default=0.02, help="relative")
    parser.add_argument("--every", type=int, default=25, help="print a row every N updates")
    args = parser.parse_args()
    if args.updates < 1 or not 1 <= args.window <= args.updates or args.every < 1:
        fail("need --updates >= --window >= 1 and --every >= 1")
    reference = read_losses(args.reference)
    candidate = read_losses(args.candidate)
    for path, losses in ((args.reference, reference), (args.candidate, candidate)):
        missing = [u for u in range(1, args.updates + 1) if u not in losses]
        if missing:
            fail(f"{path}: no loss for {len(missing)} of updates 1..{args.updates} (first: "
                 f"{missing[0]}); log every update (train.log_every_steps 1) for "
                 f"--updates={args.updates}")
    ref = [reference[u] for u in range(1, args.updates + 1)]
    cand = [candidate[u] for u in range(1, args.updates + 1)]

    print(f"{'update':>6}  {'reference':>10}  {'candidate':>10}  relative  "
          f"window mean ({args.window} updates) relative")
    worst_window, worst_window_end = 0.0, args.window
    for end in range(args.window, args.updates + 1):
        ref_mean = sum(ref[end - args.window:end]) / args.window
        cand_mean = sum(cand[end - args.window:end]) / args.window
        difference = relative(cand_mean, ref_mean)
        if difference > worst_window:
            worst_window, worst_window_end = difference, end
        if end % args.every == 0 or end == args.updates:
            flag = "" if difference <= args.tolerance else "  OVER"
            print(f"{end:>6}  {ref[end - 1]:>10.5f}  {cand[end - 1]:>10.5f}  "
                  f"{relative(cand[end - 1], ref[end - 1]):>8.4f}  {difference:.4f}{flag}")
    single = [relative(c, r) for c, r in zip(cand, ref)]
    worst_single = max(single)
    print(f"worst window: updates {worst_window_end - args.window + 1}..{worst_window_end}, "
          f"relative difference of the means {worst_window:.4f} (tolerance "
          f"{args.tolerance:g})")
    print(f"worst single update: {single.index(worst_single) + 1}, relative difference "
          f"{worst_single:.4f}")
    passed = worst_window <= args.tolerance
    print(f"loss curve check: {'PASS' if passed else 'FAIL'}")
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Reads an op profile by shape and says which rows fall short of the machine.

  tools/profile_roofline.py PROFILE.txt --peak_tflops=989 --bandwidth_gbs=4168
      [--top=15]

PROFILE.txt holds a table that OpProfileReport printed with rows by shape
(TFM_PROFILE_OPS=shapes: "linear bf16 27648x1024 4096x1024 4096  CALLS
TOTAL_MS MS/CALL SHARE%"; other text around it is skipped), such as the
train_profile stage of tools/device/gpu_checks.sh writes. For each row it
estimates the work of one call:
- products (linear, linear_no_bias, linear_backward[_adding],
  tied_projection[_backward], scaled_dot_product_attention[_backward]):
  their multiply-adds from the shapes, as 2 FLOPs each; attention's scores
  and weighted sum over all key positions (a causal mask would halve them);
  its backward counted as 2.5 forwards;
- every other op: the bytes of its inputs, read once, plus as many written
  (an elementwise op's output is its input's size), at the dtype's size.
From the dense peak and the memory bandwidth it gives each row's floor
(the larger of FLOPs / peak and bytes / bandwidth), its achieved TFLOP/s or
GB/s, and the time above the floor; then the rows that lose the most time,
and the totals. Estimates: a row at 50% of its floor is slow, one at 95%
is not worth a kernel.
"""

import argparse
import math
import re
import sys

DTYPE_BYTES = {"f32": 4, "bf16": 2, "f16": 2, "i32": 4, "i64": 8}
ROW = re.compile(r"^(\S+) (f32|bf16|f16|i32|i64)((?: \S+)*?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+%$")
SUMMED = re.compile(r"^ (\d+) inputs of (\d+) elements$")


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def dims(text):
    if text == "scalar":
        return []
    return [int(d) for d in text.split("x")]


def elements(shape):
    return math.prod(shape) if shape else 1


def product_flops(op, shapes):
    """FLOPs of one call of a product op, or None for other ops."""
    try:
        if op in ("linear", "linear_no_bias"):
            x, w = shapes[0], shapes[1]
            return 2 * elements(x[:-1]) * w[0] * w[1]
        if op in ("linear_backward", "linear_backward_adding"):
            dout, x, w = shapes[0], shapes[1], shapes[2]
            return 4 * elements(x[:-1]) * w[0] * w[1]  # dx and dW.
        if op == "tied_projection":
            h, table = shapes[0], shapes[1]
            return 2 * elements(h[:-1]) * table[0] * table[1]
        if op == "tied_projection_backward":
            h, table = shapes[0], shapes[1]
            return 4 * elements(h[:-1]) * table[0] * table[1]  # dh and dtable.
        if op in ("scaled_dot_product_attention", "scaled_dot_product_attention_backward"):
            q, k = shapes[0], shapes[1]
            forward = 4 * elements(q[:-1]) * k[-2] * q[-1]  # Scores and the weighted sum.
            return forward if op == "scaled_dot_product_attention" else 2.5 * forward
    except IndexError:
        return None
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("--peak_tflops", type=float, required=True,
                        help="dense peak of the profile's dtype (989 for bf16 on an H100/H200)")
    parser.add_argument("--bandwidth_gbs", type=float, required=True,
                        help="memory bandwidth, GB/s (a measured copy rate)")
    parser.add_argument("--top", type=int, default=15, help="rows listed by time lost")
    args = parser.parse_args()
    if args.peak_tflops <= 0 or args.bandwidth_gbs <= 0:
        fail("--peak_tflops and --bandwidth_gbs must be positive")
    try:
        with open(args.profile) as f:
            lines = f.read().splitlines()
    except OSError as e:
        fail(f"cannot read {args.profile}: {e.strerror}")

    rows = []
    for number, line in enumerate(lines, start=1):
        match = ROW.match(line.strip())
        if not match:
            continue
        op, dtype, shape_text, calls, total_ms = match.group(1, 2, 3, 4, 5)
        size = DTYPE_BYTES[dtype]
        summed = SUMMED.match(shape_text)
        try:
            shapes = [] if summed else [dims(t) for t in shape_text.split()]
        except ValueError:
            fail(f"{args.profile}:{number}: a shape that does not parse: {shape_text.strip()}")
        flops = None if summed else product_flops(op, shapes)
        if summed:
            moved = 2 * int(summed.group(2)) * size
        else:
            moved = 2 * sum(elements(s) for s in shapes) * size
        calls, total_ms = int(calls), float(total_ms)
        per_call_s = total_ms / 1e3 / calls
        floor_s = max((flops or 0) / (args.peak_tflops * 1e12), moved / (args.bandwidth_gbs * 1e9))
        rows.append({"row": f"{op} {dtype}{shape_text}", "calls": calls, "total_ms": total_ms,
                     "flops": flops, "bytes": moved, "per_call_s": per_call_s,
                     "floor_ms": floor_s * calls * 1e3})
    if not rows:
        fail(f"{args.profile}: no profile rows by shape (TFM_PROFILE_OPS=shapes) in it")

    for r in rows:
        r["lost_ms"] = max(0.0, r["total_ms"] - r["floor_ms"])
    rows.sort(key=lambda r: r["lost_ms"], reverse=True)
    print(f"peak {args.peak_tflops:g} TFLOP/s, bandwidth {args.bandwidth_gbs:g} GB/s; "
          "floor = max(FLOPs / peak, bytes / bandwidth)")
    print(f"{'ms':>9} {'floor ms':>9} {'lost ms':>9} {'achieved':>16}  row")
    for r in rows[:args.top]:
        if r["flops"]:
            achieved = f"{r['flops'] / r['per_call_s'] / 1e12:8.1f} TFLOP/s"
            share = r["flops"] / r["per_call_s"] / (args.peak_tflops * 1e12)
        else:
            achieved = f"{r['bytes'] / r['per_call_s'] / 1e9:9.0f} GB/s"
            share = r["bytes"] / r["per_call_s"] / (args.bandwidth_gbs * 1e9)
        print(f"{r['total_ms']:9.2f} {r['floor_ms']:9.2f} {r['lost_ms']:9.2f} {achieved:>16}  "
              f"{r['row']} ({r['calls']} calls, {100 * share:.0f}% of the roof)")
    total = sum(r["total_ms"] for r in rows)
    floor = sum(r["floor_ms"] for r in rows)
    products = sum(r["total_ms"] for r in rows if r["flops"])
    print(f"all rows: {total:.2f} ms, floor {floor:.2f} ms ({100 * floor / total:.0f}% of the "
          f"time); products {products:.2f} ms ({100 * products / total:.0f}%), the rest "
          f"{total - products:.2f} ms")


if __name__ == "__main__":
    main()

"""PyTorch side of ops_vs_torch: times the cases the C++ binary hands over.

Usage: torch_ops.py --threads N [--budget_s S --min_reps R --max_reps R]

Reads one case per line on stdin, {"index": i, "spec": {"op": ..., "mode": ...}}
as built by benchmarks/op_cases.cc, and answers each at once, so the binary
can alternate between its own kernels and these (load that comes and goes on
a shared machine then hits both sides alike). Each case is timed like the C++
side (two warm-up calls, the second sizing the repetitions, then the median).
Output, in the protocol of benchmarks/peer_table.h:
    info <key> <value>          (first, once)
    result <index> <median ms>  (one per case read)
Progress goes to stderr.
"""

import argparse
import json
import math
import os
import re
import statistics
import sys
import time


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--budget_s", type=float, default=0.4)
    parser.add_argument("--min_reps", type=int, default=5)
    parser.add_argument("--max_reps", type=int, default=200)
    return parser.parse_args()


ARGS = parse_args()
# Thread pools (OpenMP, MKL) size themselves when torch loads: set them first.
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(ARGS.threads)
GEN = torch.Generator().manual_seed(2017)


def rand(*shape, grad=False):
    """Uniform in [-1, 1), like the C++ side's inputs."""
    tensor = torch.rand(tuple(shape), generator=GEN) * 2 - 1
    return tensor.requires_grad_(grad)


def forward_only(fn):
    """Inference forward: ours records nothing for backward, so neither does torch."""

    def run():
        with torch.no_grad():
            fn()

    return run


def backward_only(fn, inputs, grad_shape):
    """The backward alone: build the graph once, then replay its gradient."""
    out = fn()
    dout = rand(*grad_shape)

    def run():
        torch.autograd.grad(out, inputs, dout, retain_graph=True)

    return run


def forward_backward(fn, inputs, grad_shape):
    dout = rand(*grad_shape)

    def run():
        torch.autograd.grad(fn(), inputs, dout)

    return run


def build(spec):
    """Returns the call to time for one case."""
    op, mode = spec["op"], spec["mode"]
    if op == "linear":
        t, i, o = spec["tokens"], spec["in"], spec["out"]
        x, w, b = rand(t, i, grad=True), rand(o, i, grad=True), rand(o, grad=True)
        fn = lambda: F.linear(x, w, b)
        inputs, grad_shape = (x, w, b), (t, o)
    elif op == "matmul_nt":
        n, d = spec["n"], spec["d"]
        a, b = rand(spec["batch"], n, d, grad=True), rand(spec["batch"], n, d, grad=True)
        fn = lambda: torch.matmul(a, b.transpose(-1, -2))
        inputs, grad_shape = (a, b), (spec["batch"], n, n)
    elif op == "add":
        a, b = rand(spec["tokens"], spec["d"]), rand(spec["tokens"], spec["d"])
        fn = lambda: a + b
    elif op == "add_bias":
        x, bias = rand(spec["tokens"], spec["d"], grad=True), rand(spec["d"], grad=True)
        fn = lambda: x + bias
        inputs, grad_shape = (x, bias), (spec["tokens"], spec["d"])
    elif op == "relu":
        x = rand(spec["tokens"], spec["d"], grad=True)
        fn = lambda: F.relu(x)
        inputs, grad_shape = (x,), (spec["tokens"], spec["d"])
    elif op == "dropout":
        x = rand(spec["tokens"], spec["d"], grad=True)
        fn = lambda: F.dropout(x, spec["p"], training=True)
        inputs, grad_shape = (x,), (spec["tokens"], spec["d"])
    elif op == "layer_norm":
        d = spec["d"]
        x, g, b = rand(spec["tokens"], d, grad=True), rand(d, grad=True), rand(d, grad=True)
        fn = lambda: F.layer_norm(x, (d,), g, b, 1e-5)
        inputs, grad_shape = (x, g, b), (spec["tokens"], d)
    elif op == "embedding":
        vocab, d = spec["vocab"], spec["d"]
        table = rand(vocab, d, grad=True)
        ids = torch.randint(0, vocab, (spec["batch"], spec["len"]), generator=GEN)
        scale = math.sqrt(d)
        # As in the usual PyTorch Transformer: lookup, then scale.
        fn = lambda: F.embedding(ids, table) * scale
        inputs, grad_shape = (table,), (spec["batch"], spec["len"], d)
    elif op == "positional_encoding":
        length, d = spec["len"], spec["d"]
        # The usual PyTorch module: a precomputed sinusoid buffer added to x.
        position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
        pe = torch.zeros(length, d)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        x = rand(spec["batch"], length, d)
        fn = lambda: x + pe[:length]
    elif op == "tied_projection":
        h, table = rand(spec["tokens"], spec["d"], grad=True), rand(spec["vocab"], spec["d"], grad=True)
        fn = lambda: F.linear(h, table)
        inputs, grad_shape = (h, table), (spec["tokens"], spec["vocab"])
    elif op == "attention":
        shape = (spec["batch"], spec["heads"], spec["n"], spec["d"])
        q, k, v = rand(*shape, grad=True), rand(*shape, grad=True), rand(*shape, grad=True)
        causal = spec["causal"]
        fn = lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=causal)
        inputs, grad_shape = (q, k, v), shape
    elif op == "softmax":
        x = rand(*spec["shape"], grad=True)
        fn = lambda: torch.softmax(x, -1)
        inputs, grad_shape = (x,), spec["shape"]
    elif op == "cross_entropy":
        logits = rand(spec["tokens"], spec["vocab"], grad=True)
        targets = torch.randint(0, spec["vocab"], (spec["tokens"],), generator=GEN)
        fn = lambda: F.cross_entropy(logits, targets, reduction="sum",
                                     label_smoothing=spec["epsilon"])
        inputs, grad_shape = (logits,), ()
    elif op == "adam":
        param = torch.nn.Parameter(rand(spec["params"]))
        param.grad = rand(spec["params"])
        # The fastest CPU Adam torch has: the fused kernel where it exists.
        try:
            optimizer = torch.optim.Adam([param], lr=1e-4, betas=(0.9, 0.98), eps=1e-9,
                                         fused=True)
        except (RuntimeError, TypeError):
            optimizer = torch.optim.Adam([param], lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
        fn = optimizer.step
    elif op == "sgemm":
        a, b = rand(spec["m"], spec["k"]), rand(spec["n"], spec["k"])
        fn = lambda: torch.mm(a, b.t())
    else:
        raise ValueError(f"unknown op {op!r}")

    if mode == "fwd":
        return forward_only(fn)
    if mode == "bwd":
        return backward_only(fn, inputs, grad_shape)
    if mode == "fwdbwd":
        return forward_backward(fn, inputs, grad_shape)
    raise ValueError(f"unknown mode {mode!r}")


def median_ms(run):
    """Same policy as the C++ side (TimeMedianMs in ops_vs_torch.cc)."""
    run()
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    reps = max(ARGS.min_reps, min(ARGS.max_reps, math.ceil(ARGS.budget_s / max(first, 1e-9))))
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def blas_info():
    """BLAS_INFO from the build settings, with the MKL version line if any."""
    config = torch.__config__.show()
    match = re.search(r"BLAS_INFO=([^,\s]+)", config)
    blas = match.group(1) if match else "unknown"
    mkl = re.search(r"Math Kernel Library Version ([^\s]+)", config)
    return f"{blas} {mkl.group(1)}" if blas == "mkl" and mkl else blas


def main():
    print(f"info torch_version {torch.__version__}")
    print(f"info blas_info {blas_info()}")
    print(f"info cpu_capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"info mkldnn {torch.backends.mkldnn.is_available()}")
    print(f"info threads {torch.get_num_threads()}", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        ms = median_ms(build(case["spec"]))
        print(f"result {case['index']} {ms:.6f}", flush=True)
        print(f"  torch {case['spec']['op']} {case['spec']['mode']}: {ms:.3f} ms",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

"""PyTorch side of ops_vs_torch: times the cases the C++ binary hands over.

Usage: torch_ops.py --threads N [--budget_s S --min_reps R --max_reps R]
                    [--device cuda [--tf32]]

Reads one case per line on stdin, {"index": i, "spec": {"op": ..., "mode": ...},
"inputs": dir, "save_outputs": bool} as built by benchmarks/op_cases.cc and
ops_vs_torch.cc: the case's inputs are <dir>/<name>.npy, exactly the C++
side's; with save_outputs, the outputs go to <dir>/out_<i>.npy before timing
(the C++ side compares them with its own). With --device cuda a request also
carries "device": "cuda" and "dtype": "f32" or "bf16": the inputs move to the
GPU, floating ones in that dtype (the C++ side wrote them already rounded to
it), and outputs come back as f32. It answers each at once, so the binary
can alternate between its own kernels and these (load that comes and goes on
a shared machine then hits both sides alike). Each case is timed like the C++
side (two warm-up calls, the second sizing the repetitions, then the median;
on the GPU that many calls between two synchronisations, the mean per call).
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
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--tf32", action="store_true",
                        help="f32 matmuls on TF32 tensor cores, as ours with TFM_CUDA_TF32=1")
    return parser.parse_args()


ARGS = parse_args()
# Thread pools (OpenMP, MKL) size themselves when torch loads: set them first.
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(ARGS.threads)
if ARGS.device == "cuda":
    # Set, not assumed: both sides' f32 GEMMs are exact f32 unless asked.
    torch.backends.cuda.matmul.allow_tf32 = ARGS.tf32

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def forward_only(fn):
    """Inference forward: ours records nothing for backward, so neither does torch."""

    def run():
        with torch.no_grad():
            fn()

    return run


def load_inputs(directory, device="cpu", dtype="f32"):
    """The case's inputs as the C++ side wrote them (<name>.npy), in torch's
    own (aligned) memory on `device`; floating ones in `dtype`."""
    tensors = {}
    for entry in os.listdir(directory):
        if entry.endswith(".npy") and not entry.startswith("out_"):
            tensor = torch.from_numpy(np.load(os.path.join(directory, entry))).clone()
            if device != "cpu":
                tensor = tensor.to(device=device, dtype=DTYPES[dtype]
                                   if tensor.is_floating_point() else tensor.dtype)
            tensors[entry[:-4]] = tensor
    return tensors


def build(spec, t):
    """Returns (call to time, call returning the outputs to compare) for one
    case on the inputs `t`; the outputs come in the C++ side's order."""
    op, mode = spec["op"], spec["mode"]
    inputs = ()
    if op == "linear":
        x, w, b = t["x"], t["w"], t["b"]
        fn = lambda: F.linear(x, w, b)
        inputs = (x, w, b)
    elif op == "matmul_nt":
        a, b = t["a"], t["b"]
        fn = lambda: torch.matmul(a, b.transpose(-1, -2))
        inputs = (a, b)
    elif op == "add":
        a, b = t["a"], t["b"]
        fn = lambda: a + b
    elif op == "add_bias":
        x, bias = t["x"], t["bias"]
        fn = lambda: x + bias
        inputs = (x, bias)
    elif op == "relu":
        x = t["x"]
        fn = lambda: F.relu(x)
        inputs = (x,)
    elif op == "dropout":
        x = t["x"]
        fn = lambda: F.dropout(x, spec["p"], training=True)
        inputs = (x,)
    elif op == "layer_norm":
        d = spec["d"]
        x, g, b = t["x"], t["gain"], t["bias"]
        fn = lambda: F.layer_norm(x, (d,), g, b, 1e-5)
        inputs = (x, g, b)
    elif op == "embedding":
        table, ids = t["table"], t["ids"]
        scale = math.sqrt(spec["d"])
        # As in the usual PyTorch Transformer: lookup, then scale.
        fn = lambda: F.embedding(ids, table) * scale
        inputs = (table,)
    elif op == "positional_encoding":
        length, d = spec["len"], spec["d"]
        # The usual PyTorch module: a precomputed sinusoid buffer added to x.
        position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
        pe = torch.zeros(length, d)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        x = t["x"]
        pe = pe.to(device=x.device, dtype=x.dtype)
        fn = lambda: x + pe[:length]
    elif op == "tied_projection":
        h, table = t["h"], t["table"]
        fn = lambda: F.linear(h, table)
        inputs = (h, table)
    elif op == "attention":
        q, k, v = t["q"], t["k"], t["v"]
        causal = spec["causal"]
        fn = lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=causal)
        inputs = (q, k, v)
    elif op == "softmax":
        x = t["x"]
        fn = lambda: torch.softmax(x, -1)
        inputs = (x,)
    elif op == "cross_entropy":
        logits, targets = t["logits"], t["targets"]
        fn = lambda: F.cross_entropy(logits, targets, reduction="sum",
                                     label_smoothing=spec["epsilon"])
        inputs = (logits,)
    elif op == "adam":
        param = torch.nn.Parameter(t["param"])
        param.grad = t["grad"]
        # The fastest CPU Adam torch has: the fused kernel where it exists.
        try:
            optimizer = torch.optim.Adam([param], lr=1e-4, betas=(0.9, 0.98), eps=1e-9,
                                         fused=True)
        except (RuntimeError, TypeError):
            optimizer = torch.optim.Adam([param], lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

        def step_and_read():
            optimizer.step()
            return [param.detach().clone()]

        return optimizer.step, step_and_read
    elif op == "grad_norm":
        return grad_norm(spec, t["grads"])
    elif op == "sgemm":
        a, b = t["a"], t["b"]
        fn = lambda: torch.mm(a, b.t())
    else:
        raise ValueError(f"unknown op {op!r}")

    if mode == "fwd":
        def outputs():
            with torch.no_grad():
                return [fn()]
        return forward_only(fn), outputs
    for tensor in inputs:
        tensor.requires_grad_(True)
    if mode == "bwd":
        # The backward alone: the graph is built once and its gradient replayed.
        out = fn()
        # The C++ side's upstream gradient, or d loss = 1 for a scalar loss.
        dout = t["dout"] if "dout" in t else torch.ones_like(out)
        run = lambda: torch.autograd.grad(out, inputs, dout, retain_graph=True)
        return run, lambda: list(run())
    if mode == "fwdbwd":
        dout = t["dout"]
        run = lambda: torch.autograd.grad(fn(), inputs, dout)
        return run, lambda: list(run())
    raise ValueError(f"unknown mode {mode!r}")


def grad_norm(spec, stacked):
    """torch.nn.utils' global norm (or clipping by it) over the rows of
    `stacked` as separate gradients; returns (call to time, outputs)."""
    grads = [g.clone() for g in stacked.unbind(0)]
    if not spec["clip"]:
        def total():
            if hasattr(torch.nn.utils, "get_total_norm"):
                return torch.nn.utils.get_total_norm(grads, foreach=True)
            return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
        return total, lambda: [total()]
    params = []
    for g in grads:
        p = torch.nn.Parameter(torch.empty_like(g))
        p.grad = g
        params.append(p)
    clip = lambda: torch.nn.utils.clip_grad_norm_(params, spec["max_norm"], foreach=True)

    def clip_and_read():
        norm = clip()
        return [norm, torch.stack([p.grad for p in params])]

    return clip, clip_and_read


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


def cuda_ms(run):
    """Same policy as the C++ side (TimeDeviceMs in ops_vs_torch.cc): two
    warm-ups, one synchronised call sizing the repetitions, then that many
    calls between two synchronisations; the mean per call."""
    run()
    run()
    torch.cuda.synchronize()
    start = time.perf_counter()
    run()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    reps = max(ARGS.min_reps, min(ARGS.max_reps, math.ceil(ARGS.budget_s / max(first, 1e-9))))
    start = time.perf_counter()
    for _ in range(reps):
        run()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / reps * 1e3


def blas_info():
    """BLAS_INFO from the build settings, with the MKL version line if any."""
    config = torch.__config__.show()
    match = re.search(r"BLAS_INFO=([^,\s]+)", config)
    blas = match.group(1) if match else "unknown"
    mkl = re.search(r"Math Kernel Library Version ([^\s]+)", config)
    return f"{blas} {mkl.group(1)}" if blas == "mkl" and mkl else blas


def cuda_info():
    """The GPU and libraries as PyTorch sees them."""
    props = torch.cuda.get_device_properties(0)
    print(f"info torch_cuda {torch.version.cuda}")
    print(f"info torch_cudnn {torch.backends.cudnn.version()}")
    print(f"info device_name {props.name}, sm_{props.major}{props.minor}, "
          f"{props.multi_processor_count} SMs")
    print(f"info allow_tf32 {torch.backends.cuda.matmul.allow_tf32}")


def main():
    print(f"info torch_version {torch.__version__}")
    if ARGS.device == "cuda":
        cuda_info()
    print(f"info blas_info {blas_info()}")
    print(f"info cpu_capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"info mkldnn {torch.backends.mkldnn.is_available()}")
    print(f"info malloc {os.environ.get('LD_PRELOAD') or 'glibc'}")
    print(f"info threads {torch.get_num_threads()}", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        device = case.get("device", "cpu")
        dtype = case.get("dtype", "f32")
        run, outputs = build(case["spec"], load_inputs(case["inputs"], device, dtype))
        if case["save_outputs"]:
            # Before timing: a step of Adam changes its parameters.
            for i, out in enumerate(outputs()):
                np.save(os.path.join(case["inputs"], f"out_{i}.npy"),
                        out.detach().float().cpu().numpy())
        ms = cuda_ms(run) if device == "cuda" else median_ms(run)
        print(f"result {case['index']} {ms:.6f}", flush=True)
        print(f"  torch {case['spec']['op']} {case['spec']['mode']} {dtype}: {ms:.3f} ms",
              file=sys.stderr, flush=True)
        del run, outputs  # Frees the case's tensors (and their GPU memory) before the next.


if __name__ == "__main__":
    main()

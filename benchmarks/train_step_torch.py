"""PyTorch side of //benchmarks:train_step: full training updates of the
paper's Transformer with nn.Transformer, at the sizes the C++ binary gives.

Usage: train_step_torch.py --threads N --layers L --d_model D --d_ff F --heads H
         --vocab V --batch B --source_len S --target_len T --update_freq U --steps K
         --dropout P --device cpu|cuda:N --init OURS.safetensors --mapping ours_to_torch.py
         [--dtype f32|bf16|f16] [--compile]

The model is the paper's: post-norm nn.Transformer (ReLU, dropout P at its
sites: attention weights, after the ReLU, each sublayer's output, and the
embeddings), one embedding matrix shared by source, target and the
pre-softmax projection, scaled by sqrt(d_model), sinusoidal positions,
label-smoothed (0.1) cross-entropy summed over real target tokens and divided
by their count, Adam (0.9, 0.98, 1e-9; fused where this build has it) with
the inverse-square-root schedule. The weights start as ours (--init, mapped
by tools/python/ours_to_torch.py) and the batches are the ones the C++ side
builds (same ids, same padding: see BatchIds), so both sides do the same
work. Before timing: the first batch's loss with dropout off (check_loss).
--dtype bf16 or f16 (CUDA): autocast to that dtype (f32 weights, Adam and
loss), f16 with a GradScaler starting at 128 as ours (fairseq's default).
--dtype bf16 on the CPU: CPU autocast to bf16 (its products run in bf16,
on AMX where oneDNN finds it).
Prints one JSON line: tokens/s, seconds per update, peak memory.
"""

import argparse
import json
import os
import resource
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    for name in ("threads", "layers", "d_model", "d_ff", "heads", "vocab", "batch",
                 "source_len", "target_len", "steps"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--update_freq", type=int, default=1)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--device", default="cpu")
    p.add_argument("--init", required=True)
    p.add_argument("--mapping", required=True)
    p.add_argument("--warmup_updates", type=int, default=2)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--dtype", default="f32", choices=("f32", "bf16", "f16"))
    return p.parse_args()


ARGS = parse_args()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_threads import use_threads  # noqa: E402

use_threads(ARGS.threads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from paper_transformer_torch import PaperTransformer  # noqa: E402

torch.set_num_threads(ARGS.threads)
torch.manual_seed(1)
PAD, BOS, EOS = 0, 2, 3


def batch_ids(rows, length, vocab, salt):
    """Deterministic ids in [4, vocab) with lengths falling from `length` to
    about 3/4 of it down the batch (padding as a length-sorted batch has);
    the last real token is EOS. Mirrors benchmarks/train_step.cc."""
    ids = torch.full((rows, length), PAD, dtype=torch.long)
    lengths = []
    for r in range(rows):
        n = length - (r * (length // 4)) // max(1, rows - 1)
        for j in range(n - 1):
            ids[r, j] = 4 + (r * 7919 + j * 104729 + salt) % (vocab - 4)
        ids[r, n - 1] = EOS
        lengths.append(n)
    return ids, lengths


def make_batch(k, device):
    """Batch k of an update: salts 1 + 2k and 2 + 2k, as the C++ side's."""
    src, _ = batch_ids(ARGS.batch, ARGS.source_len, ARGS.vocab, 1 + 2 * k)
    tgt, _ = batch_ids(ARGS.batch, ARGS.target_len, ARGS.vocab, 2 + 2 * k)
    tgt_in = torch.cat([torch.full((ARGS.batch, 1), BOS), tgt[:, :-1]], dim=1)
    tgt_in[tgt_in == EOS] = PAD  # The decoder never reads the final EOS.
    return [t.to(device) for t in (src, tgt, tgt_in, src == PAD, tgt == PAD)]


def load_ours(model):
    """Our initial weights (--init) into the model, by the shared mapping."""
    from safetensors.torch import load_file
    namespace = {}
    with open(ARGS.mapping) as f:
        exec(f.read(), namespace)  # tools/python/ours_to_torch.py
    ours = load_file(ARGS.init)
    model.core.load_state_dict(namespace["torch_state_dict"](ours, ARGS.layers), strict=True)
    with torch.no_grad():
        model.embed.weight.copy_(ours["encoder.embed_tokens.weight"])


def make_adam(params, device):
    """PyTorch's fastest Adam here: fused, else foreach (multi-tensor)."""
    for kind in ("fused", "foreach"):
        try:
            opt = torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9, **{kind: True})
            if kind == "fused":  # Some builds accept the flag and fail at the first step.
                probe = [torch.zeros(1, device=device, requires_grad=True)]
                torch.optim.Adam(probe, lr=1.0, fused=True).step()
            return opt, kind
        except (RuntimeError, TypeError):
            continue
    return torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9), "for-loop"


def autocast(device):
    """Mixed precision for --dtype bf16 or f16; a no-op context for f32."""
    import contextlib
    if ARGS.dtype == "f32":
        return contextlib.nullcontext()
    return torch.autocast(device.type,
                          dtype=torch.bfloat16 if ARGS.dtype == "bf16" else torch.float16)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main():
    device = torch.device(ARGS.device)
    batches = [make_batch(k, device) for k in range(ARGS.update_freq)]
    causal = torch.triu(torch.ones(ARGS.target_len, ARGS.target_len, dtype=torch.bool),
                        1).to(device)
    tokens = sum(int((b[1] != PAD).sum()) for b in batches)
    src_tokens = sum(int((b[0] != PAD).sum()) for b in batches)

    model = PaperTransformer(ARGS.vocab, ARGS.d_model, ARGS.heads, ARGS.layers, ARGS.d_ff,
                             ARGS.dropout, PAD, max(ARGS.source_len, ARGS.target_len) + 1)
    load_ours(model)
    model.to(device)
    params = sum(p.numel() for p in model.parameters())

    # The check: batch 0's loss from our weights, dropout off, before timing.
    model.eval()
    if device.type == "cpu" and ARGS.dtype != "f32":
        # nn.Transformer's inference fast path (eval mode, no grad) takes no
        # CPU autocast ("expected scalar type Float but found BFloat16");
        # the timed updates train, where it is never used.
        torch.backends.mha.set_fastpath_enabled(False)
    with torch.no_grad(), autocast(device):
        src, tgt, tgt_in, src_pad, tgt_pad = batches[0]
        logits = model(src, tgt_in, src_pad, tgt_pad, causal)
        check_loss = float(F.cross_entropy(logits.reshape(-1, ARGS.vocab).float(),
                                           tgt.reshape(-1), ignore_index=PAD,
                                           label_smoothing=0.1, reduction="sum")
                           ) / int((tgt != PAD).sum())

    opt, adam_kind = make_adam(list(model.parameters()), device)
    warmup = 4000
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: ARGS.d_model ** -0.5 * min((s + 1) ** -0.5, (s + 1) * warmup ** -1.5))
    step_fn = model
    if ARGS.compile:
        step_fn = torch.compile(model)
    scaler = (torch.cuda.amp.GradScaler(init_scale=128.0, growth_interval=2000)
              if ARGS.dtype == "f16" else None)

    def update():
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for src, tgt, tgt_in, src_pad, tgt_pad in batches:
            with autocast(device):
                logits = step_fn(src, tgt_in, src_pad, tgt_pad, causal)
                loss = F.cross_entropy(logits.reshape(-1, ARGS.vocab).float(), tgt.reshape(-1),
                                       ignore_index=PAD, label_smoothing=0.1, reduction="sum")
            if scaler is not None:
                scaler.scale(loss / tokens).backward()
            else:
                (loss / tokens).backward()
            total = total + loss.detach()
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        sched.step()
        return total

    model.train()
    for _ in range(ARGS.warmup_updates):
        update()
    sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(ARGS.steps):
        start = time.perf_counter()
        loss = update()
        sync(device)
        times.append(time.perf_counter() - start)
    loss = float(loss) / tokens
    times.sort()
    median = times[len(times) // 2]
    print(json.dumps({
        "torch_version": torch.__version__,
        "compiled": ARGS.compile,
        "dtype": ARGS.dtype,
        "parameters": params,
        "target_tokens": tokens,
        "source_tokens": src_tokens,
        "seconds_per_update": median,
        "seconds_min": times[0],
        "seconds_max": times[-1],
        "target_tokens_per_second": tokens / median,
        "peak_mib": (torch.cuda.max_memory_allocated(device) / 2 ** 20 if device.type == "cuda"
                     else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0),
        "last_loss": loss,
        "check_loss": check_loss,
        "adam": adam_kind,
        "attention": ("scaled_dot_product_attention" if hasattr(F, "scaled_dot_product_attention")
                      else "matmul + softmax"),
    }))


if __name__ == "__main__":
    main()

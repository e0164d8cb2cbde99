"""PyTorch side of //benchmarks:train_step: full training updates of the
paper's Transformer with nn.Transformer, at the sizes the C++ binary gives.

Usage: train_step_torch.py --threads N --layers L --d_model D --d_ff F --heads H
         --vocab V --batch B --source_len S --target_len T --steps K [--compile]

The model is the paper's: post-norm nn.Transformer (ReLU, dropout 0.1), one
embedding matrix shared by source, target and the pre-softmax projection,
scaled by sqrt(d_model), sinusoidal positions, label-smoothed (0.1)
cross-entropy summed over real target tokens and divided by their count, Adam
(0.9, 0.98, 1e-9) with the inverse-square-root schedule. The batch is the one
the C++ side builds (same ids, same padding: see BatchIds), so both sides do
the same work. Prints one JSON line: tokens/s, seconds per update, peak RSS.
"""

import argparse
import json
import math
import os
import resource
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    for name in ("threads", "layers", "d_model", "d_ff", "heads", "vocab", "batch",
                 "source_len", "target_len", "steps"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--warmup_updates", type=int, default=2)
    p.add_argument("--compile", action="store_true")
    return p.parse_args()


ARGS = parse_args()
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

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


def sinusoid(length, d):
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float32)
    angle = pos / torch.pow(10000.0, i / d)
    table = torch.zeros(length, d)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


class PaperTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        d = ARGS.d_model
        self.embed = nn.Embedding(ARGS.vocab, d, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, 0, d ** -0.5)
        self.core = nn.Transformer(d, ARGS.heads, ARGS.layers, ARGS.layers, ARGS.d_ff,
                                   dropout=0.1, layer_norm_eps=1e-6, batch_first=True)
        # The paper's post-norm model has no final norms; nn.Transformer adds them.
        self.core.encoder.norm = None
        self.core.decoder.norm = None
        self.drop = nn.Dropout(0.1)
        self.register_buffer("pe", sinusoid(max(ARGS.source_len, ARGS.target_len) + 1, d))
        self.scale = math.sqrt(d)

    def embed_positions(self, ids):
        return self.drop(self.embed(ids) * self.scale + self.pe[: ids.shape[1]])

    def forward(self, src, tgt_in, src_pad, tgt_pad, causal):
        h = self.core(self.embed_positions(src), self.embed_positions(tgt_in), tgt_mask=causal,
                      src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                      memory_key_padding_mask=src_pad)
        return F.linear(h, self.embed.weight)  # The tied pre-softmax projection.


def main():
    src, _ = batch_ids(ARGS.batch, ARGS.source_len, ARGS.vocab, 1)
    tgt, _ = batch_ids(ARGS.batch, ARGS.target_len, ARGS.vocab, 2)
    tgt_in = torch.cat([torch.full((ARGS.batch, 1), BOS), tgt[:, :-1]], dim=1)
    tgt_in[tgt_in == EOS] = PAD  # The decoder never reads the final EOS.
    src_pad, tgt_pad = src == PAD, tgt == PAD
    causal = torch.triu(torch.ones(ARGS.target_len, ARGS.target_len, dtype=torch.bool), 1)
    tokens = int((tgt != PAD).sum())
    src_tokens = int((src != PAD).sum())

    model = PaperTransformer()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    warmup = 4000
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: ARGS.d_model ** -0.5 * min((s + 1) ** -0.5, (s + 1) * warmup ** -1.5))
    step_fn = model
    if ARGS.compile:
        step_fn = torch.compile(model)

    def update():
        opt.zero_grad(set_to_none=True)
        logits = step_fn(src, tgt_in, src_pad, tgt_pad, causal)
        loss = F.cross_entropy(logits.reshape(-1, ARGS.vocab), tgt.reshape(-1),
                               ignore_index=PAD, label_smoothing=0.1, reduction="sum")
        (loss / tokens).backward()
        opt.step()
        sched.step()
        return float(loss.detach()) / tokens

    model.train()
    for _ in range(ARGS.warmup_updates):
        update()
    times = []
    for _ in range(ARGS.steps):
        start = time.perf_counter()
        loss = update()
        times.append(time.perf_counter() - start)
    times.sort()
    median = times[len(times) // 2]
    print(json.dumps({
        "torch_version": torch.__version__,
        "compiled": ARGS.compile,
        "parameters": params,
        "target_tokens": tokens,
        "source_tokens": src_tokens,
        "seconds_per_update": median,
        "seconds_min": times[0],
        "seconds_max": times[-1],
        "target_tokens_per_second": tokens / median,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "last_loss": loss,
    }))


if __name__ == "__main__":
    main()

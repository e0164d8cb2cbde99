"""A plain PyTorch nn.Transformer trained as our multi30k_ende_small preset
trains: the peer of the README's Multi30k quality comparison, on the same
machine, for the same minutes. benchmarks/multi30k_vs_torch.sh runs both.

  multi30k_torch.py --spm WORK/spm.model [--pair ende] [--minutes 45]
      [--threads 2] [--seed 1] [--data ../shared/data/multi30k]

The same work as ours: the same corpus and SentencePiece vocabulary (our
run's spm.model, so both sides see the same pieces), the preset's model
(3 + 3 post-norm layers, d_model 256, d_ff 1024, 4 heads, dropout 0.2, one
embedding table shared by source, target and the output projection, scaled
by sqrt(d_model), sinusoidal positions), batches of up to 4096 source and
4096 target tokens, label smoothing 0.1, Adam (0.9, 0.98, 1e-9) with the
preset's schedule (warmup 500, lr_scale 0.7), validation BLEU (greedy, the
first 500 sentences of val) every 4 minutes of the run, checkpoints every 2
minutes and the last 5 averaged, then test_2016_flickr with beam 4, GNMT
length penalty 0.6 and at most source + 50 tokens, scored as sacreBLEU
scores (13a, case-sensitive). Needs torch, sentencepiece and sacrebleu
(tools/setup_bench.sh installs them in the benchmark venv).
"""

import argparse
import copy
import gzip
import os
import random
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--spm", required=True, help="SentencePiece model (our run's spm.model)")
    p.add_argument("--data", default="../shared/data/multi30k")
    p.add_argument("--pair", default="ende", choices=("ende", "enfr"))
    p.add_argument("--minutes", type=float, default=45)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max_tokens", type=int, default=4096)
    p.add_argument("--max_length", type=int, default=128)
    p.add_argument("--validate_every_minutes", type=float, default=4)
    p.add_argument("--validate_sentences", type=int, default=500)
    p.add_argument("--checkpoint_every_minutes", type=float, default=2)
    p.add_argument("--average", type=int, default=5)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--alpha", type=float, default=0.6)
    p.add_argument("--test_lines", type=int, default=1000)
    return p.parse_args()


ARGS = parse_args()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_threads import use_threads  # noqa: E402

use_threads(ARGS.threads)

import sacrebleu  # noqa: E402
import sentencepiece  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from paper_transformer_torch import PaperTransformer  # noqa: E402

torch.set_num_threads(ARGS.threads)
torch.manual_seed(ARGS.seed)
random.seed(ARGS.seed)

SP = sentencepiece.SentencePieceProcessor(model_file=ARGS.spm)
PAD, BOS, EOS = SP.pad_id(), SP.bos_id(), SP.eos_id()
VOCAB = SP.get_piece_size()
D_MODEL, D_FF, HEADS, LAYERS, DROPOUT = 256, 1024, 4, 3, 0.2
WARMUP, LR_SCALE = 500, 0.7


def read_lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def corpus(split):
    target = ARGS.pair[2:]
    return (read_lines(f"{ARGS.data}/{split}.en.gz"), read_lines(f"{ARGS.data}/{split}.{target}.gz"))


def encode(lines):
    return [ids + [EOS] for ids in SP.encode(lines)]


def batches_of(pairs):
    """Length-sorted batches of at most max_tokens source and target tokens
    (padded), in a shuffled order: each epoch's."""
    order = list(range(len(pairs)))
    random.shuffle(order)
    order.sort(key=lambda i: (len(pairs[i][0]), len(pairs[i][1])))
    batches, current, longest_src, longest_tgt = [], [], 0, 0
    for i in order:
        src, tgt = pairs[i]
        s, t = max(longest_src, len(src)), max(longest_tgt, len(tgt))
        if current and (s * (len(current) + 1) > ARGS.max_tokens or
                        t * (len(current) + 1) > ARGS.max_tokens):
            batches.append(current)
            current, s, t = [], len(src), len(tgt)
        current.append(i)
        longest_src, longest_tgt = s, t
    if current:
        batches.append(current)
    random.shuffle(batches)
    return batches


def pad(rows, first=None):
    length = max(len(r) for r in rows) + (first is not None)
    out = torch.full((len(rows), length), PAD, dtype=torch.long)
    for i, r in enumerate(rows):
        ids = ([first] if first is not None else []) + r
        out[i, :len(ids)] = torch.tensor(ids)
    return out


def make_model():
    model = PaperTransformer(VOCAB, D_MODEL, HEADS, LAYERS, D_FF, DROPOUT, PAD, 1024)
    # Our tables start at N(0, 1 / d_model): rows times sqrt(d_model) have unit scale.
    nn.init.normal_(model.embed.weight, 0.0, D_MODEL ** -0.5)
    return model


def causal_mask(length):
    return torch.triu(torch.ones(length, length, dtype=torch.bool), 1)


def decode(model, memory, src, tgt_in):
    return model.decode(memory, tgt_in, src == PAD, tgt_in == PAD, causal_mask(tgt_in.shape[1]))


def rate(step):
    return LR_SCALE * D_MODEL ** -0.5 * min(step ** -0.5, step * WARMUP ** -1.5)


@torch.no_grad()
def greedy(model, sources):
    model.eval()
    out = []
    for start in range(0, len(sources), 64):
        src = pad(sources[start:start + 64])
        memory = model.encode(src, src == PAD)
        tokens = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
        done = torch.zeros(src.shape[0], dtype=torch.bool)
        for _ in range(src.shape[1] + 50):
            logits = decode(model, memory, src, tokens)[:, -1]
            next_token = logits.argmax(-1).masked_fill(done, PAD)
            tokens = torch.cat([tokens, next_token[:, None]], 1)
            done |= next_token == EOS
            if done.all():
                break
        for row in tokens[:, 1:].tolist():
            if EOS in row:
                row = row[:row.index(EOS)]
            out.append([t for t in row if t != PAD])
    model.train()
    return out


@torch.no_grad()
def beam_search(model, sources):
    """Beam search as ours (runtime/decode/beam_search.h): each step keeps the
    best `beam` unfinished extensions of a sentence's hypotheses; one that
    ends (end of sentence, or at source length + 50 tokens) is finished and
    ranked by its log-probability over GNMT's ((5 + length) / 6)^alpha
    (end of sentence counted); a sentence is done with `beam` finished."""
    model.eval()
    out = []
    k = ARGS.beam
    for start in range(0, len(sources), 32):
        chunk = sources[start:start + 32]
        src = pad(chunk)
        n = src.shape[0]
        limits = [len(s) - 1 + 50 for s in chunk]  # Source tokens (no end of sentence) + 50.
        memory = model.encode(src, src == PAD).repeat_interleave(k, 0)
        src_k = src.repeat_interleave(k, 0)
        rows = [[BOS] for _ in range(n * k)]
        scores = torch.full((n, k), -1e9)
        scores[:, 0] = 0.0  # One hypothesis to begin with.
        finished = [[] for _ in range(n)]
        for step in range(1, max(limits) + 1):
            live = [len(finished[i]) < k and step <= limits[i] for i in range(n)]
            if not any(live):
                break
            tokens = torch.tensor(rows, dtype=torch.long)
            log_probs = F.log_softmax(decode(model, memory, src_k, tokens)[:, -1].float(), -1)
            candidates = (scores.view(-1, 1) + log_probs).view(n, -1)
            top_scores, top_ids = candidates.topk(2 * k + 1, dim=1)
            new_rows, new_scores = [], torch.full((n, k), -1e9)
            for i in range(n):
                kept = 0
                if live[i]:
                    for score, flat in zip(top_scores[i].tolist(), top_ids[i].tolist()):
                        if score <= -1e8 or kept == k:
                            break
                        beam, token = divmod(flat, VOCAB)
                        row = rows[i * k + beam]
                        if token == EOS or step == limits[i]:
                            if len(finished[i]) < k:
                                penalty = ((5 + step) / 6) ** ARGS.alpha
                                hypothesis = row[1:] + ([] if token == EOS else [token])
                                finished[i].append((score / penalty, hypothesis))
                            continue
                        new_rows.append(row + [token])
                        new_scores[i, kept] = score
                        kept += 1
                while kept < k:  # Dead rows keep the shapes.
                    new_rows.append(rows[i * k] + [PAD])
                    kept += 1
            rows, scores = new_rows, new_scores
        for i in range(n):
            best = max(finished[i])[1] if finished[i] else rows[i * k][1:]
            out.append([t for t in best if t not in (PAD, EOS)])
    model.train()
    return out


def bleu(hypotheses, references):
    return sacrebleu.corpus_bleu([SP.decode(h) for h in hypotheses], [references]).score


def average(states):
    mean = copy.deepcopy(states[-1])
    for key in mean:
        if mean[key].is_floating_point():
            mean[key] = sum(s[key] for s in states) / len(states)
    return mean


def main():
    train_src, train_tgt = corpus("train")
    valid_src, valid_tgt = corpus("val")
    test_src, test_tgt = corpus("test_2016_flickr")
    pairs = [(s, t) for s, t in zip(encode(train_src), encode(train_tgt))
             if len(s) <= ARGS.max_length and len(t) <= ARGS.max_length]
    valid_ids = encode(valid_src[:ARGS.validate_sentences])
    model = make_model()
    print(f"torch {torch.__version__}, {ARGS.threads} threads; {len(pairs)} training pairs, "
          f"vocabulary {VOCAB}; {sum(p.numel() for p in model.parameters())} parameters",
          flush=True)
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    start = time.time()
    budget = ARGS.minutes * 60
    next_validation = ARGS.validate_every_minutes * 60
    next_checkpoint = ARGS.checkpoint_every_minutes * 60
    checkpoints, step, epoch = [], 0, 0
    while time.time() - start < budget:
        epoch += 1
        for batch in batches_of(pairs):
            elapsed = time.time() - start
            if elapsed >= budget:
                break
            if elapsed >= next_validation:
                score = bleu(greedy(model, valid_ids), valid_tgt[:ARGS.validate_sentences])
                print(f"valid | epoch {epoch} | update {step} | bleu {score:.2f} | elapsed "
                      f"{elapsed / 60:.1f} min", flush=True)
                while next_validation <= time.time() - start:
                    next_validation += ARGS.validate_every_minutes * 60
            if elapsed >= next_checkpoint:
                checkpoints = (checkpoints + [copy.deepcopy(model.state_dict())])[-ARGS.average:]
                next_checkpoint += ARGS.checkpoint_every_minutes * 60
            src = pad([pairs[i][0] for i in batch])
            tgt = pad([pairs[i][1] for i in batch])
            tgt_in = pad([pairs[i][1][:-1] for i in batch], first=BOS)
            step += 1
            for group in opt.param_groups:
                group["lr"] = rate(step)
            logits = decode(model, model.encode(src, src == PAD), src, tgt_in)
            tokens = int((tgt != PAD).sum())
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1), ignore_index=PAD,
                                   label_smoothing=0.1, reduction="sum")
            opt.zero_grad(set_to_none=True)
            (loss / tokens).backward()
            opt.step()
            if step % 100 == 0:
                print(f"epoch {epoch} | update {step} | loss {loss.item() / tokens:.3f} | elapsed "
                      f"{(time.time() - start) / 60:.1f} min", flush=True)
    checkpoints = (checkpoints + [copy.deepcopy(model.state_dict())])[-ARGS.average:]
    print(f"stopped at update {step} after {(time.time() - start) / 60:.1f} minutes; averaging "
          f"the last {len(checkpoints)} checkpoints", flush=True)
    model.load_state_dict(average(checkpoints))
    lines = ARGS.test_lines
    score = bleu(beam_search(model, encode(test_src[:lines])), test_tgt[:lines])
    print(f"test_2016_flickr BLEU {score:.2f} ({lines} sentences, beam {ARGS.beam}, alpha "
          f"{ARGS.alpha})", flush=True)


if __name__ == "__main__":
    main()

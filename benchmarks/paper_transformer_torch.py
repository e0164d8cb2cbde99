"""The paper's Transformer in PyTorch, as the benchmarks' PyTorch sides build
it (train_step_torch.py, multi30k_torch.py): post-norm nn.Transformer
(ReLU, dropout at its sites: attention weights, after the ReLU, each
sublayer's output, and the embeddings), one embedding table shared by
source, target and the pre-softmax projection, scaled by sqrt(d_model), and
sinusoidal positions. No final encoder or decoder norm: the paper's
post-norm model has none (nn.Transformer adds them)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoid(length, d):
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float32)
    angle = pos / torch.pow(10000.0, i / d)
    table = torch.zeros(length, d)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


class PaperTransformer(nn.Module):
    def __init__(self, vocab, d_model, heads, layers, d_ff, dropout, pad, max_positions):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=pad)
        self.core = nn.Transformer(d_model, heads, layers, layers, d_ff, dropout=dropout,
                                   layer_norm_eps=1e-6, batch_first=True)
        self.core.encoder.norm = None
        self.core.decoder.norm = None
        self.drop = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoid(max_positions, d_model))
        self.scale = math.sqrt(d_model)

    def embed_positions(self, ids):
        return self.drop(self.embed(ids) * self.scale + self.pe[: ids.shape[1]])

    def encode(self, src, src_pad):
        return self.core.encoder(self.embed_positions(src), src_key_padding_mask=src_pad)

    def decode(self, memory, tgt_in, src_pad, tgt_pad, causal):
        h = self.core.decoder(self.embed_positions(tgt_in), memory, tgt_mask=causal,
                              tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        return F.linear(h, self.embed.weight)  # The tied pre-softmax projection.

    def forward(self, src, tgt_in, src_pad, tgt_pad, causal):
        return self.decode(self.encode(src, src_pad), tgt_in, src_pad, tgt_pad, causal)

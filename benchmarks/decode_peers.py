"""Peers of //benchmarks:decode: Hugging Face transformers' MarianMT
`generate`, CTranslate2 and a cached PyTorch beam search translating the same
sources with the same weights as ours.

Usage: decode_peers.py --checkpoint DIR --work DIR --encoder_layers N
         --decoder_layers N --heads H --pad P --bos B --eos E --unk U --beam K
         --alpha A --max_length_offset M --layer_norm_epsilon X --threads T
         --warmup W [--device cpu|cuda|cuda:N] [--ignore_eos]
         [--length_penalty gnmt|power] [--lines_at_1 N] [--max_sources N]
         [--ct2_int8_compute_type T] [--ct2_inter_threads N]
         [--ct2_intra_threads N] [--peak_rss] --rows ROW[,ROW...]
       decode_peers.py ... --logprobs   (then no --rows: see below)
       decode_peers.py ... --ct2_search N   (then no --rows: see below)

--work holds what the C++ side wrote: vocab.txt (our SentencePiece pieces, one
a line, by id) and sources.txt (each source's ids, eos last, one a line).
ROW is PEER@N: PEER one of hf_float32, hf_bfloat16 (MarianMT built from our
weights: marian_from_ours.py), ct2_float32, ct2_int8, torch; N the batch
size (1: sentence by sentence, on the first --lines_at_1 sources when that
is > 0; else N sentences at a time, sorted by length as ours batches). Each
row decodes the first W sources untimed, then its sources once, timed; its
outputs go to <work>/<row>.txt (ids, one line per source, in input order)
and one line to stdout: row, batch size, seconds, outputs path and what ran,
tab-separated. A row that cannot run on this machine (CTranslate2 without
its CUDA libraries) prints `skip`, the row and why instead. Messages go to
stderr. --ignore_eos: every side decodes exactly max length steps (eos
forbidden), so all do the same work whatever the weights. --max_sources N:
only the first N sources. --peak_rss: each row's info ends with the
process's peak resident memory so far (VmHWM), for a process that runs one
row.

Search settings: the length penalty every side ranks by is steps^alpha
(--length_penalty power, the eos counted: CTranslate2 divides by
len(hypothesis with its eos)^alpha before it strips the eos, Hugging Face by
(generated tokens with the eos)^alpha) or GNMT's ((5 + steps) / 6)^alpha
(--length_penalty gnmt; only the PyTorch peer can follow it). CTranslate2's
and ours stop a sentence when `beam` hypotheses ended among the first `beam`
candidates of a step (MarianMT: early_stopping=True), so with the power
penalty both rank and stop alike.

CTranslate2's rows: ct2_float32 and ct2_int8 (compute type
--ct2_int8_compute_type: int8 or int8_float32). At batch 1 one sentence at a
time with inter_threads 1 and intra_threads --threads (a sentence's
latency); batched rows with --ct2_inter_threads and --ct2_intra_threads (0:
--threads); with inter_threads > 1 the batches go in asynchronously, so that
several run at once, as CTranslate2's own translate_file does. Its back end
(CT2_USE_MKL, CT2_PACKED_GEMM, CT2_FORCE_CPU_ISA) comes from the caller's
environment.

--ct2_search N: CTranslate2's configurations in this process's environment,
on the first --max_sources sources at batch N: each compute type of
float32, int8, int8_float32, with inter_threads 1 and intra_threads
--threads, and (N > 1) inter_threads --threads with intra_threads 1; one line each:
`ct2config`, compute type asked, compute type CTranslate2 reports,
inter_threads, intra_threads, seconds, target tokens, tab-separated.

--logprobs: MarianMT's float32 log-probabilities for the pairs in
<work>/logprob_inputs.txt (source ids TAB target ids, eos last, one pair a
line), each pair alone, teacher forced: [target length, vocabulary] floats per
pair, concatenated, to <work>/hf_logprobs.f32; the C++ side compares them
with ours.

The model is ours (checkpoint/model.safetensors, fairseq's parameter names):
post-norm layers, ReLU, sinusoidal positions interleaved as in the paper
(sin at even, cos at odd dimensions; given to CTranslate2 as a position
table, since its built-in table puts all sines before all cosines), one
embedding matrix for source, target and the output projection, scaled by
sqrt(d_model), the checkpoint's layer norm epsilon (--layer_norm_epsilon).
"""

import argparse
import json
import math
import os
import struct
import sys
import time


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--work", required=True)
    for name in ("encoder_layers", "decoder_layers", "heads", "pad", "bos", "eos", "unk", "beam",
                 "max_length_offset", "threads", "warmup"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--alpha", type=float, required=True)
    p.add_argument("--layer_norm_epsilon", type=float, required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--ignore_eos", action="store_true")
    p.add_argument("--lines_at_1", type=int, default=0)
    p.add_argument("--max_sources", type=int, default=0)
    p.add_argument("--length_penalty", choices=("gnmt", "power"), default="gnmt")
    p.add_argument("--ct2_int8_compute_type", default="int8")
    p.add_argument("--ct2_inter_threads", type=int, default=1)
    p.add_argument("--ct2_intra_threads", type=int, default=0)
    p.add_argument("--ct2_search", type=int, default=0)
    p.add_argument("--peak_rss", action="store_true")
    p.add_argument("--rows", default="")
    p.add_argument("--logprobs", action="store_true")
    return p.parse_args()


ARGS = parse_args()
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)
# OMP_WAIT_POLICY comes from the caller (benchmarks/decode.cc tries each
# peer under several and keeps its fastest): which one is faster depends on
# the library and the machine. On a quiet AMD EPYC (family 25) CTranslate2
# decoded 5 times faster at batch 1 with spinning workers (ACTIVE) than with
# PASSIVE; PyTorch was faster with PASSIVE; on 2 cores shared with builds
# both ran 5 to 10 times slower spinning.
WAIT_POLICY = os.environ.get("OMP_WAIT_POLICY", "library default")

import numpy as np  # noqa: E402

MAX_POSITIONS = 1024


def read_safetensors(path):
    with open(path, "rb") as f:
        header_size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise SystemExit("%s: %s is %s, not F32" % (path, name, info["dtype"]))
        begin, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], dtype=np.float32).reshape(info["shape"])
    return tensors


def position_table(length, d_model):
    """The paper's table as ours computes it (ops/positional_encoding: angles
    position * exp(-log(10000) * 2i / d) in double, then f32)."""
    pos = np.arange(length, dtype=np.float64)[:, None]
    i = np.arange(d_model)
    angle = pos * np.exp(-np.log(10000.0) * (2.0 * (i // 2)) / d_model)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)


def batches(sources, batch_size):
    """Index lists: sorted by length (ties in input order), as ours batches."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    return [order[b:b + batch_size] for b in range(0, len(order), batch_size)]


def timed(translate, sources):
    """translate(sources) after translate(the first --warmup) untimed. Every
    peer's outputs reach the host (.tolist()) before translate returns, so a
    GPU's work is inside the time."""
    translate(sources[:ARGS.warmup])
    start = time.perf_counter()
    outputs = translate(sources)
    return outputs, time.perf_counter() - start


def max_steps(members, sources):
    """Ours allows each sentence source length + offset steps; the peers take
    one limit per call: the longest member's (the cut almost never binds;
    with --ignore_eos all sources have one length)."""
    return max(len(sources[i]) for i in members) + ARGS.max_length_offset


def torch_device_report(torch):
    """The GPU, its driver and the CUDA and cuBLAS versions torch runs with."""
    if not ARGS.device.startswith("cuda"):
        return "cpu, threads %d" % torch.get_num_threads()
    index = torch.device(ARGS.device).index or 0
    driver = "unknown"
    try:
        import subprocess
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i",
             str(index)], capture_output=True, text=True, timeout=20).stdout.strip() or driver
    except (OSError, subprocess.SubprocessError):
        pass
    cublas = "unknown"
    try:
        cublas = str(torch._C._cuda_getCompiledVersion()) + " (compiled)"
    except AttributeError:
        pass
    return "%s, driver %s, CUDA %s, cuBLAS with torch's CUDA %s, TF32 matmul %s" % (
        torch.cuda.get_device_name(index), driver, torch.version.cuda, cublas,
        torch.backends.cuda.matmul.allow_tf32)


# --- Hugging Face transformers: MarianMT generate -----------------------------

def hf_model(weights, dtype_name):
    import torch
    import transformers
    from marian_from_ours import build_marian

    model = build_marian(
        weights, encoder_layers=ARGS.encoder_layers, decoder_layers=ARGS.decoder_layers,
        heads=ARGS.heads, pad=ARGS.pad, bos=ARGS.bos, eos=ARGS.eos,
        layer_norm_epsilon=ARGS.layer_norm_epsilon,
        positions=position_table(MAX_POSITIONS, weights["encoder.embed_tokens.weight"].shape[1]),
        torch=torch, transformers=transformers)
    return model.to(device=ARGS.device, dtype=getattr(torch, dtype_name))


def run_hf(dtype_name, batch_size, sources, weights):
    import torch
    import transformers

    torch.set_num_threads(ARGS.threads)
    model = hf_model(weights, dtype_name)

    def translate(sources):
        outputs = [None] * len(sources)
        for members in batches(sources, batch_size):
            length = max(len(sources[i]) for i in members)
            ids = torch.full((len(members), length), ARGS.pad, dtype=torch.long)
            mask = torch.zeros((len(members), length), dtype=torch.long)
            for row, i in enumerate(members):
                ids[row, :len(sources[i])] = torch.tensor(sources[i])
                mask[row, :len(sources[i])] = 1
            steps = max_steps(members, sources)
            generated = model.generate(
                input_ids=ids.to(ARGS.device), attention_mask=mask.to(ARGS.device),
                num_beams=ARGS.beam, do_sample=False, length_penalty=ARGS.alpha,
                max_new_tokens=steps, min_new_tokens=steps if ARGS.ignore_eos else 0,
                early_stopping=True, num_return_sequences=1, decoder_start_token_id=ARGS.bos,
                eos_token_id=ARGS.eos, pad_token_id=ARGS.pad, use_cache=True).tolist()
            for i, out in zip(members, generated):
                out = out[1:]  # The decoder start token.
                if ARGS.eos in out:
                    out = out[:out.index(ARGS.eos)]
                while out and out[-1] == ARGS.pad:  # Beams that ended early.
                    out.pop()
                outputs[i] = out
        return outputs

    with torch.inference_mode():
        outputs, seconds = timed(translate, sources)
    info = "transformers %s MarianMTModel.generate, torch %s, %s, num_beams %d, length " \
           "penalty steps^%g (its own), early_stopping True, eager attention default, %s" % (
               transformers.__version__, torch.__version__, dtype_name, ARGS.beam, ARGS.alpha,
               torch_device_report(torch))
    return outputs, seconds, info


def write_hf_logprobs(weights):
    """--logprobs: see the module's doc."""
    import torch

    torch.set_num_threads(ARGS.threads)
    model = hf_model(weights, "float32")
    path = os.path.join(ARGS.work, "logprob_inputs.txt")
    with open(path) as f:
        pairs = [[[int(t) for t in side.split()] for side in line.split("\t")]
                 for line in f.read().splitlines()]
    with open(os.path.join(ARGS.work, "hf_logprobs.f32"), "wb") as out, torch.inference_mode():
        for source, target in pairs:
            decoder_input = [ARGS.bos] + target[:-1]
            logits = model(input_ids=torch.tensor([source], device=ARGS.device),
                           decoder_input_ids=torch.tensor([decoder_input],
                                                          device=ARGS.device)).logits
            log_probs = torch.log_softmax(logits[0].float(), dim=-1)
            out.write(log_probs.cpu().numpy().astype(np.float32).tobytes())


# --- CTranslate2 --------------------------------------------------------------

def ct2_model_dir(weights, pieces):
    """Builds the model through CTranslate2's spec API, saved in float32 (int8
    is the same model quantized when loaded with compute_type="int8")."""
    import ctranslate2
    from ctranslate2.specs import common_spec, transformer_spec

    out = os.path.join(ARGS.work, "ct2_model")
    if os.path.exists(os.path.join(out, "model.bin")):
        return out
    relu = common_spec.Activation.RELU
    encoder = transformer_spec.TransformerEncoderSpec(
        ARGS.encoder_layers, ARGS.heads, pre_norm=False, activation=relu)
    decoder = transformer_spec.TransformerDecoderSpec(
        ARGS.decoder_layers, ARGS.heads, pre_norm=False, activation=relu)
    spec = transformer_spec.TransformerSpec(encoder, decoder)
    table = weights["encoder.embed_tokens.weight"]
    positions = position_table(MAX_POSITIONS, table.shape[1])

    def linear(spec_linear, prefixes):
        spec_linear.weight = np.concatenate([weights[p + ".weight"] for p in prefixes])
        spec_linear.bias = np.concatenate([weights[p + ".bias"] for p in prefixes])

    def norm(spec_norm, prefix):
        spec_norm.gamma = weights[prefix + ".weight"]
        spec_norm.beta = weights[prefix + ".bias"]

    def attention(spec_attention, prefix, self_attention):
        p = prefix + "."
        if self_attention:
            linear(spec_attention.linear[0], [p + "q_proj", p + "k_proj", p + "v_proj"])
        else:
            linear(spec_attention.linear[0], [p + "q_proj"])
            linear(spec_attention.linear[1], [p + "k_proj", p + "v_proj"])
        linear(spec_attention.linear[-1], [p + "out_proj"])

    def ffn(spec_ffn, prefix):
        norm(spec_ffn.layer_norm, prefix + ".final_layer_norm")
        linear(spec_ffn.linear_0, [prefix + ".fc1"])
        linear(spec_ffn.linear_1, [prefix + ".fc2"])

    encoder.embeddings[0].weight = table
    encoder.position_encodings.encodings = positions
    for i, layer in enumerate(encoder.layer):
        prefix = "encoder.layers.%d" % i
        attention(layer.self_attention, prefix + ".self_attn", True)
        norm(layer.self_attention.layer_norm, prefix + ".self_attn_layer_norm")
        ffn(layer.ffn, prefix)
    decoder.embeddings.weight = table
    decoder.position_encodings.encodings = positions
    decoder.projection.weight = table
    for i, layer in enumerate(decoder.layer):
        prefix = "decoder.layers.%d" % i
        attention(layer.self_attention, prefix + ".self_attn", True)
        norm(layer.self_attention.layer_norm, prefix + ".self_attn_layer_norm")
        attention(layer.attention, prefix + ".encoder_attn", False)
        norm(layer.attention.layer_norm, prefix + ".encoder_attn_layer_norm")
        ffn(layer.ffn, prefix)

    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)
    spec.config.bos_token = pieces[ARGS.bos]
    spec.config.eos_token = pieces[ARGS.eos]
    spec.config.unk_token = pieces[ARGS.unk]
    spec.config.decoder_start_token = pieces[ARGS.bos]
    spec.config.add_source_eos = False  # Our sources carry their eos already.
    spec.config.layer_norm_epsilon = ARGS.layer_norm_epsilon
    spec.validate()
    spec.optimize(quantization="float32")
    os.makedirs(out, exist_ok=True)
    spec.save(out)
    print("ctranslate2 %s: model built from the spec API in %s" % (ctranslate2.__version__, out),
          file=sys.stderr)
    return out


def ct2_threads(batch_size):
    """(inter_threads, intra_threads) of a CTranslate2 row: see the module's doc."""
    if batch_size == 1 or ARGS.device != "cpu":
        return 1, ARGS.threads
    return ARGS.ct2_inter_threads, ARGS.ct2_intra_threads or ARGS.threads


def ct2_translate(translator, batch_size, inter_threads, sources, pieces, index):
    """translate(sources) for timed(): batches as ours, each with its own
    maximum length; with several inter_threads all batches are submitted
    before the first result is awaited."""
    def translate(sources):
        tokens = [[pieces[t] for t in s] for s in sources]
        outputs = [None] * len(sources)
        pending = []
        for members in batches(sources, batch_size):
            steps = max_steps(members, sources)
            results = translator.translate_batch(
                [tokens[i] for i in members], beam_size=ARGS.beam, length_penalty=ARGS.alpha,
                # Ours may end with eos at the first step (unless --ignore_eos).
                min_decoding_length=steps if ARGS.ignore_eos else 0,
                max_decoding_length=steps, asynchronous=inter_threads > 1)
            pending.append((members, results))
        for members, results in pending:
            for i, result in zip(members, results):
                if inter_threads > 1:
                    result = result.result()
                outputs[i] = [index[p] for p in result.hypotheses[0]]
        return outputs
    return translate


def ct2_search(weights, pieces, sources):
    """--ct2_search: see the module's doc."""
    import ctranslate2

    model_dir = ct2_model_dir(weights, pieces)
    index = {piece: i for i, piece in enumerate(pieces)}
    # At batch 1 only one batch is ever in flight: inter_threads > 1 would idle.
    settings = [(1, ARGS.threads)] + (
        [(ARGS.threads, 1)] if ARGS.threads > 1 and ARGS.ct2_search > 1 else [])
    for compute_type in ("float32", "int8", "int8_float32"):
        for inter_threads, intra_threads in settings:
            translator = ctranslate2.Translator(model_dir, device="cpu",
                                                compute_type=compute_type,
                                                inter_threads=inter_threads,
                                                intra_threads=intra_threads)
            outputs, seconds = timed(ct2_translate(translator, ARGS.ct2_search, inter_threads,
                                                   sources, pieces, index), sources)
            print("\t".join(["ct2config", compute_type, translator.compute_type,
                             str(inter_threads), str(intra_threads), repr(seconds),
                             str(sum(len(o) for o in outputs))]), flush=True)
            del translator


def run_ct2(compute_type, batch_size, sources, weights, pieces):
    try:
        import ctranslate2
    except ImportError as error:
        return None, 0.0, "ctranslate2 is not installed for %s: %s" % (sys.executable, error)

    device, _, index = ARGS.device.partition(":")
    inter_threads, intra_threads = ct2_threads(batch_size)
    try:
        translator = ctranslate2.Translator(ct2_model_dir(weights, pieces), device=device,
                                            device_index=int(index or 0),
                                            compute_type=compute_type,
                                            inter_threads=inter_threads,
                                            intra_threads=intra_threads)
    except (RuntimeError, ValueError) as error:
        if device == "cpu":
            raise
        # Its wheels link CUDA 12's libraries; a machine with only CUDA 13's
        # cannot load them.
        return None, 0.0, "ctranslate2 %s on %s: %s (CUDA devices it sees: %d)" % (
            ctranslate2.__version__, ARGS.device, str(error).replace("\n", " "),
            ctranslate2.get_cuda_device_count())
    index = {piece: i for i, piece in enumerate(pieces)}
    outputs, seconds = timed(
        ct2_translate(translator, batch_size, inter_threads, sources, pieces, index), sources)
    backend = ", ".join("%s %s" % (var, os.environ[var])
                        for var in ("CT2_USE_MKL", "CT2_PACKED_GEMM", "CT2_FORCE_CPU_ISA")
                        if var in os.environ) or "its default back end"
    info = "ctranslate2 %s, %s, compute type %s, inter_threads %d, intra_threads %d, %s, " \
           "OMP_WAIT_POLICY %s, length penalty steps^%g" % (
               ctranslate2.__version__, ARGS.device, translator.compute_type, inter_threads,
               intra_threads, backend, WAIT_POLICY, ARGS.alpha)
    return outputs, seconds, info


# --- PyTorch ------------------------------------------------------------------

class TorchModel:
    """Our Transformer in plain torch functions, for inference with caches."""

    def __init__(self, weights, torch):
        self.torch = torch
        self.F = torch.nn.functional
        self.device = torch.device(ARGS.device)
        self.w = {k: torch.from_numpy(v.copy()).to(self.device) for k, v in weights.items()}
        self.table = self.w["encoder.embed_tokens.weight"]
        self.d_model = self.table.shape[1]
        self.heads = ARGS.heads
        self.scale = math.sqrt(self.d_model)
        self.positions = torch.from_numpy(position_table(MAX_POSITIONS,
                                                         self.d_model)).to(self.device)

    def linear(self, x, name):
        return self.F.linear(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def norm(self, x, name):
        return self.F.layer_norm(x, (self.d_model,), self.w[name + ".weight"],
                                 self.w[name + ".bias"], ARGS.layer_norm_epsilon)

    def split(self, x):  # [n, t, d] -> [n, h, t, d / h]
        n, t, _ = x.shape
        return x.view(n, t, self.heads, -1).transpose(1, 2)

    def merge(self, x):  # [n, h, t, d / h] -> [n, t, d]
        n, _, t, _ = x.shape
        return x.transpose(1, 2).reshape(n, t, self.d_model)

    def ffn(self, x, prefix):
        h = self.F.relu(self.linear(x, prefix + ".fc1"))
        return self.norm(x + self.linear(h, prefix + ".fc2"), prefix + ".final_layer_norm")

    def encode(self, ids, mask):
        """ids [n, L]; mask [n, 1, 1, L] True where a real token (or None)."""
        x = self.F.embedding(ids, self.table) * self.scale + self.positions[:ids.shape[1]]
        for i in range(ARGS.encoder_layers):
            p = "encoder.layers.%d" % i
            q, k, v = (self.split(self.linear(x, p + ".self_attn." + n))
                       for n in ("q_proj", "k_proj", "v_proj"))
            a = self.F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = self.norm(x + self.linear(self.merge(a), p + ".self_attn.out_proj"),
                          p + ".self_attn_layer_norm")
            x = self.ffn(x, p)
        return x

    def cross_keys_values(self, memory):
        return [tuple(self.split(self.linear(memory, "decoder.layers.%d.encoder_attn.%s" % (i, n)))
                      for n in ("k_proj", "v_proj"))
                for i in range(ARGS.decoder_layers)]

    def step(self, last, position, cache, cross, mask):
        """last [rows] ids at `position`; cache: per layer [k, v] of the
        earlier steps, extended here. Returns log-probabilities [rows, V]."""
        x = (self.F.embedding(last, self.table) * self.scale + self.positions[position])[:, None]
        for i in range(ARGS.decoder_layers):
            p = "decoder.layers.%d" % i
            q, k, v = (self.split(self.linear(x, p + ".self_attn." + n))
                       for n in ("q_proj", "k_proj", "v_proj"))
            if cache[i] is not None:
                k = self.torch.cat([cache[i][0], k], 2)
                v = self.torch.cat([cache[i][1], v], 2)
            cache[i] = [k, v]
            a = self.F.scaled_dot_product_attention(q, k, v)
            x = self.norm(x + self.linear(self.merge(a), p + ".self_attn.out_proj"),
                          p + ".self_attn_layer_norm")
            q = self.split(self.linear(x, p + ".encoder_attn.q_proj"))
            a = self.F.scaled_dot_product_attention(q, cross[i][0], cross[i][1], attn_mask=mask)
            x = self.norm(x + self.linear(self.merge(a), p + ".encoder_attn.out_proj"),
                          p + ".encoder_attn_layer_norm")
            x = self.ffn(x, p)
        log_probs = self.F.log_softmax(self.F.linear(x[:, 0], self.table), dim=-1)
        if ARGS.ignore_eos:
            log_probs[:, ARGS.eos] = -math.inf
        return log_probs


def length_penalty(steps):
    """Ours (runtime/decode/length_penalty.h) of --length_penalty."""
    if ARGS.length_penalty == "power":
        return float(steps) ** ARGS.alpha if steps >= 1 else 1.0
    return ((5.0 + steps) / 6.0) ** ARGS.alpha


def torch_beam_search(model, sources):
    """Ours (runtime/decode/beam_search.h) step for step: the best 2 * beam
    extensions per sentence, an eos among the first beam finishes, a sentence
    stops when beam hypotheses finished, when its best finished score beats
    what any live one can reach, or at source length + max_length_offset."""
    torch = model.torch
    device = model.device
    beam, eos = ARGS.beam, ARGS.eos
    n = len(sources)
    length = max(len(s) for s in sources)
    ids = torch.zeros(n, length, dtype=torch.long)
    for i, s in enumerate(sources):
        ids[i, :len(s)] = torch.tensor(s)
    ids = ids.to(device)
    lengths = torch.tensor([len(s) for s in sources])
    mask = None
    if int(lengths.min()) < length:
        mask = (torch.arange(length)[None] < lengths[:, None])[:, None, None].to(device)
    memory = model.encode(ids, mask)
    # Each row of a sentence's beam sees the sentence's keys and values.
    cross = [(k.repeat_interleave(beam, 0), v.repeat_interleave(beam, 0))
             for k, v in model.cross_keys_values(memory)]
    row_mask = None if mask is None else mask.repeat_interleave(beam, 0)
    cache = [None] * ARGS.decoder_layers
    active = list(range(n))
    max_length = [len(s) + ARGS.max_length_offset for s in sources]
    row_log_probs = torch.full((n * beam,), -math.inf, device=device)
    row_log_probs[::beam] = 0.0
    tokens = [[] for _ in range(n * beam)]
    last = torch.full((n * beam,), ARGS.bos, dtype=torch.long, device=device)
    finished = [[] for _ in range(n)]
    step = 0
    while active:
        step += 1
        log_probs = model.step(last, step - 1, cache, cross, row_mask)
        vocab = log_probs.shape[1]
        totals = (row_log_probs[:, None] + log_probs).view(len(active), beam * vocab)
        values, indices = totals.topk(2 * beam, dim=1)
        values, indices = values.tolist(), indices.tolist()
        next_groups, next_rows, next_tokens, next_lp, next_last = [], [], [], [], []
        for g, s in enumerate(active):
            kept = []
            done = finished[s]
            for rank, (lp, index) in enumerate(zip(values[g], indices[g])):
                if lp == -math.inf:
                    break
                row, token = g * beam + index // vocab, index % vocab
                if token != eos:
                    if len(kept) < beam:
                        kept.append((lp, row, token))
                elif rank < beam:
                    done.append((lp / length_penalty(step), tokens[row]))
            stop = not kept or len(done) >= beam
            if not stop and step >= max_length[s]:
                for lp, row, token in kept:
                    done.append((lp / length_penalty(step), tokens[row] + [token]))
                stop = True
            elif not stop and done:
                stop = max(d[0] for d in done) >= kept[0][0] / length_penalty(max_length[s])
            if stop:
                continue
            next_groups.append(g)
            for i in range(beam):
                lp, row, token = kept[i] if i < len(kept) else (-math.inf, g * beam, eos)
                next_rows.append(row)
                next_tokens.append(tokens[row] + [token] if i < len(kept) else tokens[row])
                next_lp.append(lp)
                next_last.append(token)
        if not next_groups:
            break
        rows = torch.tensor(next_rows, device=device)
        cache = [[k.index_select(0, rows), v.index_select(0, rows)] for k, v in cache]
        if len(next_groups) < len(active):  # Sentences left: their rows go.
            kept_rows = torch.tensor([g * beam + i for g in next_groups for i in range(beam)],
                                     device=device)
            cross = [(k.index_select(0, kept_rows), v.index_select(0, kept_rows))
                     for k, v in cross]
            if row_mask is not None:
                row_mask = row_mask.index_select(0, kept_rows)
        active = [active[g] for g in next_groups]
        tokens = next_tokens
        row_log_probs = torch.tensor(next_lp, device=device)
        last = torch.tensor(next_last, device=device)
    # Best score first, ties by fewer tokens then smaller ids (BetterHypothesis).
    return [min(done, key=lambda d: (-d[0], len(d[1]), d[1]))[1] for done in finished]


def run_torch(batch_size, sources, weights):
    import torch

    torch.set_num_threads(ARGS.threads)
    model = TorchModel(weights, torch)

    def translate(sources):
        outputs = [None] * len(sources)
        for members in batches(sources, batch_size):
            for i, out in zip(members, torch_beam_search(model, [sources[i] for i in members])):
                outputs[i] = out
        return outputs

    with torch.inference_mode():
        outputs, seconds = timed(translate, sources)
    info = "torch %s, fp32, eager, KV cache per layer (torch.cat per step, index_select on " \
           "reorder), SDPA, %s, ISA %s, OMP_WAIT_POLICY %s, length penalty %s" % (
               torch.__version__, torch_device_report(torch),
               torch.backends.cpu.get_cpu_capability(), WAIT_POLICY, ARGS.length_penalty)
    return outputs, seconds, info


def needs_weights(peers):
    """Whether this process must read the checkpoint: not when it only runs
    CTranslate2 rows on the model converted before (so their peak memory is
    CTranslate2's, not that of our weights in numpy too)."""
    converted = os.path.exists(os.path.join(ARGS.work, "ct2_model", "model.bin"))
    return ARGS.logprobs or not converted or any(not p.startswith("ct2_") for p in peers)


def peak_rss():
    """The process's peak resident memory (VmHWM of /proc/self/status)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return "peak RSS %.1f MiB" % (int(line.split()[1]) / 1024.0)
    return "peak RSS unknown"


def main():
    peers = ["ct2_"] if ARGS.ct2_search else [r.partition("@")[0] for r in ARGS.rows.split(",")]
    weights = None
    if needs_weights(peers):
        weights = read_safetensors(os.path.join(ARGS.checkpoint, "model.safetensors"))
    with open(os.path.join(ARGS.work, "vocab.txt"), encoding="utf-8") as f:
        # One piece a line, by id; the file ends with a newline.
        pieces = f.read().split("\n")[:-1]
    if weights is not None:
        pieces = pieces[:weights["encoder.embed_tokens.weight"].shape[0]]
    with open(os.path.join(ARGS.work, "sources.txt")) as f:
        sources = [[int(t) for t in line.split()] for line in f.read().splitlines()]
    if ARGS.max_sources > 0:
        sources = sources[:ARGS.max_sources]
    if ARGS.logprobs:
        write_hf_logprobs(weights)
        return
    if ARGS.ct2_search > 0:
        ct2_search(weights, pieces, sources)
        return
    for row in ARGS.rows.split(","):
        peer, _, batching = row.partition("@")
        if not batching.isdigit() or int(batching) < 1:
            raise SystemExit("row %s: PEER@BATCH_SIZE expected" % row)
        batch_size = int(batching)
        row_sources = sources
        if batch_size == 1 and ARGS.lines_at_1 > 0:
            row_sources = sources[:ARGS.lines_at_1]
        if peer.startswith("hf_"):
            outputs, seconds, info = run_hf(peer[3:], batch_size, row_sources, weights)
        elif peer == "ct2_int8":
            outputs, seconds, info = run_ct2(ARGS.ct2_int8_compute_type, batch_size, row_sources,
                                             weights, pieces)
        elif peer.startswith("ct2_"):
            outputs, seconds, info = run_ct2(peer[4:], batch_size, row_sources, weights, pieces)
        elif peer == "torch":
            outputs, seconds, info = run_torch(batch_size, row_sources, weights)
        else:
            raise SystemExit("unknown row " + row)
        if outputs is None:
            print("\t".join(["skip", row, info]), flush=True)
            continue
        if ARGS.peak_rss:
            info += ", " + peak_rss()
        path = os.path.join(ARGS.work, row.replace("@", "_") + ".txt")
        with open(path, "w") as f:
            f.write("".join(" ".join(map(str, out)) + "\n" for out in outputs))
        print("\t".join([row, str(batch_size), repr(seconds), path, info]), flush=True)


if __name__ == "__main__":
    main()

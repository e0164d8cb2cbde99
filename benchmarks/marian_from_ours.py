"""Hugging Face transformers' MarianMTModel holding our Transformer's weights.

Why MarianMT: it is the post-norm encoder-decoder Transformer of the paper in
transformers (ReLU feed-forward, one embedding matrix shared by source, target
and the output projection, scaled by sqrt(d_model), sinusoidal positions), so
`generate` runs our model as users of that library run theirs. Where its
defaults differ from ours, this sets them to ours:
- positions: its table puts all sines before all cosines; ours interleaves
  them (sin at even, cos at odd dimensions), so our table is copied into its
  embed_positions weights;
- LayerNorm epsilon: its layers build nn.LayerNorm with the default 1e-5;
  every one is set to ours (model.layer_norm_epsilon, 1e-6 by default);
- final_logits_bias: zero (ours has no output bias);
- pad, eos and decoder start ids: ours (the decoder starts with our bos).
What stays its own: the beam search's length penalty is len^alpha (ours is
GNMT's ((5 + len) / 6)^alpha) and its stopping rule, so a few outputs differ.
"""

# Our parameter names (fairseq's) are MarianMT's under "model."; the embedding
# table is ours under one name and the projection is tied to it.
_SHARED_TABLE = "encoder.embed_tokens.weight"


def build_marian(weights, *, encoder_layers, decoder_layers, heads, pad, bos, eos,
                 layer_norm_epsilon, positions, torch, transformers):
    """weights: our checkpoint's tensors by name (numpy float32); positions:
    our position table [max_positions, d_model] (numpy float32). Returns the
    MarianMTModel in float32 on the CPU, in eval mode."""
    if "decoder.embed_tokens.weight" in weights:
        raise SystemExit("marian_from_ours: the checkpoint has separate target embeddings "
                         "(share_embeddings false); MarianMT here shares one table")
    table = weights[_SHARED_TABLE]
    vocab, d_model = table.shape
    d_ff = weights["encoder.layers.0.fc1.weight"].shape[0]
    config = transformers.MarianConfig(
        vocab_size=vocab, decoder_vocab_size=vocab, d_model=d_model,
        encoder_layers=encoder_layers, decoder_layers=decoder_layers,
        encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_ffn_dim=d_ff, decoder_ffn_dim=d_ff, activation_function="relu",
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        max_position_embeddings=positions.shape[0], scale_embedding=True,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
        pad_token_id=pad, eos_token_id=eos, bos_token_id=bos, decoder_start_token_id=bos,
        forced_eos_token_id=None)
    model = transformers.MarianMTModel(config)
    state = {"model.shared.weight": table,
             "model.encoder.embed_tokens.weight": table,
             "model.decoder.embed_tokens.weight": table,
             "lm_head.weight": table,
             "model.encoder.embed_positions.weight": positions,
             "model.decoder.embed_positions.weight": positions,
             "final_logits_bias": torch.zeros(1, vocab).numpy()}
    for name, value in weights.items():
        if name != _SHARED_TABLE:
            state["model." + name] = value
    theirs = model.state_dict()
    unknown = sorted(set(state) - set(theirs))
    missing = sorted(set(theirs) - set(state))
    if unknown or missing:
        raise SystemExit("marian_from_ours: names do not match MarianMT's: ours without a place "
                         "%s, theirs without a value %s" % (unknown, missing))
    for name, value in state.items():
        if tuple(theirs[name].shape) != tuple(value.shape):
            raise SystemExit("marian_from_ours: %s is %s in ours, %s in MarianMT" %
                             (name, tuple(value.shape), tuple(theirs[name].shape)))
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()},
                          strict=True)
    norms = 0
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.eps = layer_norm_epsilon
            norms += 1
    expected_norms = 2 * encoder_layers + 3 * decoder_layers
    if norms != expected_norms:
        raise SystemExit("marian_from_ours: %d LayerNorms in MarianMT, %d in ours (a layout "
                         "this conversion does not know)" % (norms, expected_norms))
    return model.eval()

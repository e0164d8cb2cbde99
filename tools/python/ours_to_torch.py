"""Our Transformer's parameter names -> torch.nn.Transformer's state_dict.

One mapping for every place that loads our weights into nn.Transformer (the
whole-model parity test, tests/transformer_parity_test.cc, and the PyTorch
side of benchmarks/train_step): q/k/v projections concatenate into
in_proj_*, fc1/fc2 are linear1/linear2, the norms are numbered in sublayer
order, and with pre-norm the stacks' final norms are encoder.norm and
decoder.norm. Plain Python (no torch import), so a caller may exec it.
"""


def ours_to_torch(layers, pre=False):
    """{torch name: [our names]} (several: concatenated along dim 0)."""
    mapping = {}
    for side in ('encoder', 'decoder'):
        attention = [('self_attn', 'self_attn')]
        norms = ['self_attn_layer_norm']
        if side == 'decoder':
            attention.append(('encoder_attn', 'multihead_attn'))
            norms.append('encoder_attn_layer_norm')
        norms.append('final_layer_norm')
        for i in range(layers):
            o = f'{side}.layers.{i}.'
            for kind in ('weight', 'bias'):
                for ours, theirs in attention:
                    mapping[f'{o}{theirs}.in_proj_{kind}'] = [
                        f'{o}{ours}.{p}_proj.{kind}' for p in 'qkv']
                    mapping[f'{o}{theirs}.out_proj.{kind}'] = [f'{o}{ours}.out_proj.{kind}']
                mapping[f'{o}linear1.{kind}'] = [f'{o}fc1.{kind}']
                mapping[f'{o}linear2.{kind}'] = [f'{o}fc2.{kind}']
                for j, norm in enumerate(norms):
                    mapping[f'{o}norm{j + 1}.{kind}'] = [f'{o}{norm}.{kind}']
        if pre:
            for kind in ('weight', 'bias'):
                mapping[f'{side}.norm.{kind}'] = [f'{side}.layer_norm.{kind}']
    return mapping


def torch_state_dict(ours, layers, pre=False):
    """nn.Transformer's state_dict from `ours` ({our name: tensor})."""
    import torch
    return {t: torch.cat([ours[n] for n in names])
            for t, names in ours_to_torch(layers, pre).items()}

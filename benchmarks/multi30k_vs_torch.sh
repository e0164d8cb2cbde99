#!/usr/bin/env bash
# The README's Multi30k quality comparison, rerun on this machine by one
# command: our main job on multi30k_ende_small, then a plain PyTorch
# nn.Transformer of the same size, data, vocabulary (our run's spm.model),
# batch and schedule (benchmarks/multi30k_torch.py), the same minutes each,
# one after the other so that neither shares the cores. Prints both
# validation-BLEU curves (greedy, 500 sentences, every 4 minutes) and both
# test BLEU (test_2016_flickr, the last 5 checkpoints averaged, beam 4).
#
#   benchmarks/multi30k_vs_torch.sh [MINUTES (45)] [OUT (/tmp/multi30k_vs_torch)]
#
# Needs the benchmark venv (sudo tools/setup_bench.sh: torch, sentencepiece,
# sacrebleu); PEER_PYTHON picks another Python.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${1:-45}"
OUT="${2:-/tmp/multi30k_vs_torch}"
PEER_PYTHON="${PEER_PYTHON:-/opt/transformer-bench-venv/bin/python3}"

bazel build -c opt //tasks:translate_ende
rm -rf "${OUT}"
mkdir -p "${OUT}"
echo "== ours: translate_ende --config=multi30k_ende_small --minutes=${MINUTES} ($(date -u '+%F %T') UTC)"
bazel-bin/tasks/translate_ende --config=multi30k_ende_small --minutes="${MINUTES}" \
  --workdir="${OUT}/ours" 2>&1 | tee "${OUT}/ours.log"
echo "== PyTorch: benchmarks/multi30k_torch.py --minutes ${MINUTES} ($(date -u '+%F %T') UTC)"
"${PEER_PYTHON}" benchmarks/multi30k_torch.py --spm "${OUT}/ours/spm.model" \
  --minutes "${MINUTES}" --threads "$(nproc)" 2>&1 | tee "${OUT}/torch.log"

echo
echo "== validation BLEU (greedy, 500 sentences) by time"
echo "-- ours:"
grep '^valid' "${OUT}/ours.log" | sed 's/.*bleu \([0-9.]*\).*elapsed \([0-9:]*\).*/  \2  \1/'
echo "-- PyTorch:"
grep '^valid' "${OUT}/torch.log" | sed 's/.*bleu \([0-9.]*\) | elapsed \([0-9.]*\) min.*/  \2 min  \1/'
echo "== test_2016_flickr BLEU"
echo "  ours:    $(grep '^BLEU = ' "${OUT}/ours.log" | head -1)"
echo "  PyTorch: $(grep 'test_2016_flickr BLEU' "${OUT}/torch.log" | head -1)"

#!/usr/bin/env bash
# Creates the venv of the benchmarks' peers: PyPI's torch (MKL, AVX2 kernels,
# oneDNN), a faster CPU peer than Debian's python3-torch, for ops_vs_torch,
# train_step and decode; CTranslate2 for decode; and Hugging Face
# transformers (MarianMT's generate, decode's peer that users run) with
# safetensors (our checkpoints' format, read by the peers); sentencepiece and
# sacrebleu for the Multi30k training comparison (multi30k_vs_torch.sh). Only the benchmarks use
# it; neither the engine nor `bazel test` ever needs it. The Linux wheel pulls the CUDA packages too
# (about 3 GB); they are unused here.
#
#   sudo tools/setup_bench.sh            # idempotent; re-running checks and exits
#   VENV=/elsewhere tools/setup_bench.sh  # another location (then pass
#                                         # --peer_python=/elsewhere/bin/python3)
set -euo pipefail

VENV="${VENV:-/opt/transformer-bench-venv}"
TORCH_VERSION="2.15.0"
CTRANSLATE2_VERSION="4.8.5"
TRANSFORMERS_VERSION="5.23.0"
SAFETENSORS_VERSION="0.8.0"
SENTENCEPIECE_VERSION="0.2.0"
SACREBLEU_VERSION="2.4.3"
PYTHON=/usr/bin/python3

if [[ "$(id -u)" -ne 0 && "${VENV}" == /opt/* ]]; then
  echo "setup_bench.sh: run as root to write ${VENV} (or set VENV=...)" >&2
  exit 1
fi

# python3-venv for the venv; libjemalloc2 for ops_vs_torch's second PyTorch
# run under a caching malloc (LD_PRELOAD), as PyTorch's tuning guide advises.
if ! "${PYTHON}" -c 'import venv, ensurepip' 2>/dev/null ||
   [[ ! -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ]]; then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "setup_bench.sh: run as root to install python3-venv and libjemalloc2" >&2
    exit 1
  fi
  apt-get update
  apt-get install -y python3-venv libjemalloc2
fi

if [[ ! -x "${VENV}/bin/python3" ]]; then
  "${PYTHON}" -m venv "${VENV}"
fi

# pip is a no-op when the pinned versions are already there.
installed="$("${VENV}/bin/python3" -c 'import torch; print(torch.__version__.split("+")[0])' \
  2>/dev/null || true)"
if [[ "${installed}" != "${TORCH_VERSION}" ]] || ! "${VENV}/bin/python3" -c 'import numpy' 2>/dev/null; then
  "${VENV}/bin/pip" install --upgrade pip
  "${VENV}/bin/pip" install "torch==${TORCH_VERSION}" numpy
fi
installed="$("${VENV}/bin/python3" -c 'import ctranslate2; print(ctranslate2.__version__)' \
  2>/dev/null || true)"
if [[ "${installed}" != "${CTRANSLATE2_VERSION}" ]]; then
  "${VENV}/bin/pip" install "ctranslate2==${CTRANSLATE2_VERSION}"
fi

installed="$("${VENV}/bin/python3" -c \
  'import transformers, safetensors; print(transformers.__version__, safetensors.__version__)' \
  2>/dev/null || true)"
if [[ "${installed}" != "${TRANSFORMERS_VERSION} ${SAFETENSORS_VERSION}" ]]; then
  "${VENV}/bin/pip" install "transformers==${TRANSFORMERS_VERSION}" \
    "safetensors==${SAFETENSORS_VERSION}"
fi

# benchmarks/multi30k_torch.py: the PyTorch side of the Multi30k comparison
# reads our SentencePiece model and scores as sacreBLEU does.
installed="$("${VENV}/bin/python3" -c \
  'import sentencepiece, sacrebleu; print(sentencepiece.__version__, sacrebleu.__version__)' \
  2>/dev/null || true)"
if [[ "${installed}" != "${SENTENCEPIECE_VERSION} ${SACREBLEU_VERSION}" ]]; then
  "${VENV}/bin/pip" install "sentencepiece==${SENTENCEPIECE_VERSION}" \
    "sacrebleu==${SACREBLEU_VERSION}"
fi

"${VENV}/bin/python3" - <<'PY'
import re
import ctranslate2
import safetensors
import torch
import transformers
blas = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
print(f"bench venv ready: torch {torch.__version__}, BLAS {blas.group(1) if blas else 'unknown'}, "
      f"CPU capability {torch.backends.cpu.get_cpu_capability()}; "
      f"ctranslate2 {ctranslate2.__version__}; transformers {transformers.__version__}, "
      f"safetensors {safetensors.__version__}")
PY

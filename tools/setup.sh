#!/usr/bin/env bash
# One-command setup on a fresh Debian 12 machine (run as root or with sudo).
# Installs everything the build needs from Debian's packages, creates the
# Python environment used only by tests and benchmark peers, and reports the
# toolchain it found. Safe to run again: it only adds what is missing.
set -euo pipefail

VENV=/opt/transformer-venv
# Debian packages the build and tests need.
PACKAGES=(
  bazel-bootstrap bazel-platforms bazel-rules-java     # Bazel 4.2 and its rules
  g++ pkg-config git ca-certificates
  libabsl-dev libprotobuf-dev protobuf-compiler        # Abseil, Protocol Buffers
  libsentencepiece-dev sentencepiece                   # tokenizer
  libgtest-dev libgmock-dev libbenchmark-dev           # tests and benchmarks
  libopenblas-dev libopenblas0-pthread                 # the CPU BLAS
  zlib1g-dev
  libopenmpi-dev openmpi-bin                           # data-parallel training (mpirun)
  python3 python3-venv python3-pip python3-torch python3-numpy  # parity peers
  python3-sentencepiece                                # BPE-dropout's peer: SampleEncode
  gettext                                              # msgfmt, for .mo test files
)
# PyPI packages for test and benchmark peers only (never needed by the engine).
# safetensors and tensorboard read back the trainer's checkpoints and event
# files in runtime/train's interop tests.
PYPI_PACKAGES=(sacrebleu==2.4.3 safetensors==0.4.5 tensorboard==2.18.0)

SUDO=""
if [[ "$(id -u)" != 0 ]]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "setup: run as root or install sudo" >&2; exit 1
  fi
fi

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q || { echo "setup: apt-get update failed" >&2; exit 1; }
  if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    # Name the packages that could not be installed.
    for package in "${missing[@]}"; do
      if ! apt-cache show "$package" >/dev/null 2>&1; then
        echo "setup: Debian package '$package' is not available from the configured sources" >&2
      fi
    done
    echo "setup: apt-get install failed for: ${missing[*]}" >&2
    exit 1
  fi
else
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
fi

# The Python environment for peers: Debian's python3 (which has python3-torch)
# plus PyPI packages.
if [[ ! -x "$VENV/bin/python3" ]]; then
  echo "setup: creating $VENV"
  $SUDO /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
for requirement in "${PYPI_PACKAGES[@]}"; do
  name="${requirement%%==*}"
  if ! "$VENV/bin/python3" -c "import importlib.metadata as m, sys; sys.exit(m.version('$name') != '${requirement##*==}')" 2>/dev/null; then
    $SUDO "$VENV/bin/pip" install -q --disable-pip-version-check "$requirement" ||
      { echo "setup: pip install $requirement failed" >&2; exit 1; }
  fi
done

# Report the toolchain.
echo "setup: toolchain"
echo "  bazel:    $(dpkg-query -W -f='${Version}' bazel-bootstrap)"
echo "  g++:      $(g++ -dumpfullversion)"
echo "  protoc:   $(protoc --version)"
echo "  abseil:   $(pkg-config --modversion absl_base)"
echo "  openblas: $(pkg-config --modversion openblas)"
echo "  open mpi: $(pkg-config --modversion ompi-c)"
echo "  python:   $("$VENV/bin/python3" -c 'import sys, torch, sacrebleu; print(sys.version.split()[0], "torch", torch.__version__, "sacrebleu", sacrebleu.__version__)')"
CUDA_PATH="${CUDA_PATH:-/usr/local/cuda}"
if [[ -x "$CUDA_PATH/bin/nvcc" ]]; then
  echo "  cuda:     $("$CUDA_PATH/bin/nvcc" --version | tail -1) at $CUDA_PATH (kernels built for sm_80, sm_90)"
else
  echo "  cuda:     not found at $CUDA_PATH: CUDA kernels are left out of the build"
fi
if [[ ! -d "$(dirname "$0")/../../shared/data" ]]; then
  echo "setup: warning: ../shared/data (test corpora) not found beside the project" >&2
fi
echo "setup: done. Next: bazel test //..."

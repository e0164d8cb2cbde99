#!/bin/bash
# On the GPU machine: unpacks .device_bundle/bundle.tar.xz into /tmp/bundle,
# puts its libraries and the machine's CUDA libraries (the CUDA toolkit or
# the pip wheels PyTorch brought) on LD_LIBRARY_PATH, and runs "$@" there.
#   .device_bundle/run_bundle.sh ops/fill/fill_test --gtest_brief=1
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# Unpacked once, under a lock and into a folder renamed into place when
# whole: commands started side by side (tools/device/quality_sweep.sh) wait
# for the first one's unpacking instead of running a half-written bundle.
# Unpacked again when the archive is not the one unpacked (its checksum in
# /tmp/bundle/.stamp): a warm machine keeps /tmp between calls, and a
# bundle rebuilt in between must not run the old binaries.
exec 9>/tmp/bundle.lock
flock 9 2>/dev/null
stamp="$(md5sum <"$here/bundle.tar.xz" | cut -d' ' -f1)"
if [[ ! -d /tmp/bundle || "$(cat /tmp/bundle/.stamp 2>/dev/null)" != "$stamp" ]]; then
  rm -rf /tmp/bundle /tmp/bundle.partial && mkdir -p /tmp/bundle.partial &&
    tar -C /tmp/bundle.partial -xJf "$here/bundle.tar.xz" &&
    echo "$stamp" >/tmp/bundle.partial/.stamp && mv /tmp/bundle.partial /tmp/bundle ||
    exit 1
fi
flock -u 9 2>/dev/null
exec 9>&-
if [[ -z "${TFM_CUDA_LIBS:-}" ]]; then
  dirs=""
  for soname in libcudart.so.13 libcublasLt.so.13 libcublas.so.13 libcudnn.so.9 libnccl.so.2; do
    found="$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt /usr/local/lib \
               -name "$soname" 2>/dev/null | head -1)"
    [[ -n "$found" ]] && dirs="$dirs:$(dirname "$found")"
  done
  export TFM_CUDA_LIBS="${dirs#:}"
fi
export LD_LIBRARY_PATH="/tmp/bundle/lib:$TFM_CUDA_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd /tmp/bundle && exec "$@"

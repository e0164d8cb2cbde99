#!/bin/bash
# Packs opt-built binaries for the lent GPU machine, which has no Bazel and
# none of Debian's libraries: tools/device/bundle.sh TARGET... writes
# .device_bundle/bundle.tar.xz ($TFM_BUNDLE_DIR/ where set; git ignores the folder; name it in the device
# tool's `carry`). There, tools/device/run_bundle.sh unpacks it and runs a
# command with the libraries found. Kept small: the carry limit is 64 MiB.
#
# Layout inside the archive (mirrors bazel-bin so $ORIGIN-relative links of
# test binaries to _solib_k8 keep working):
#   <package>/<target>            the binary
#   <package>/<target>.runfiles/  its runfiles (dereferenced; the peer Python
#                                 environment of this machine left out)
#   _solib_k8/                    our shared libraries (dynamic-mode tests)
#   lib/                          the system libraries they need, except
#                                 glibc (libc, libm, libpthread, libdl, librt:
#                                 they must match the machine's ld.so),
#                                 libstdc++/libgcc and CUDA's own (the GPU
#                                 machine has newer ones)
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ $# -gt 0 ]] || { echo "usage: $0 [--gpu_tests] //pkg:target..." >&2; exit 2; }
# --gpu_tests adds every test target that holds GPU tests (gpu_test_targets.sh);
# run them there with .device_bundle/run_gpu_tests.sh.
if [[ "$1" == "--gpu_tests" ]]; then
  shift
  set -- "$@" $(tools/device/gpu_test_targets.sh)
fi
# Read before the build: an edit or commit during it must not be recorded as
# built.
source_state="$(tools/device/source_state.sh)"
bazel build -c opt "$@"
bin="$(bazel info -c opt bazel-bin 2>/dev/null)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
cp -rL "$bin/_solib_k8" "$stage/" 2>/dev/null || true
declare -A libs
# The system libraries `file` needs (ldd), less glibc, libstdc++/libgcc,
# CUDA's and our own.
system_deps() {
  ldd "$1" 2>/dev/null | awk '$3 ~ /^\// {print $3}' |
    grep -v -E '/usr/local/cuda|/lib(c|m|pthread|dl|rt|util|resolv)\.so|/libstdc\+\+|/libgcc_s|ld-linux|/_solib_k8/'
}
for label in "$@"; do
  path="${label#//}"; path="${path/://}"
  mkdir -p "$stage/$(dirname "$path")"
  cp -L "$bin/$path" "$stage/$path"
  if [[ -d "$bin/$path.runfiles" ]]; then
    cp -rL "$bin/$path.runfiles" "$stage/$path.runfiles"
    find "$stage/$path.runfiles" -depth -name peer_python_env -exec rm -rf {} +
  fi
  while read -r lib; do libs["$lib"]=1; done < <(system_deps "$bin/$path")
done
# dlopen()ed at run time, so no binary's ldd names their dependencies: our
# own shared libraries in the runfiles (the SentencePiece wrapper, whose
# libsentencepiece and libsentencepiece_train must be this machine's
# version: a missing libsentencepiece_train let the GPU machine's own, of
# another version, crash every vocabulary training there, 2026-11-28),
# OpenBLAS (ops/blas) and jemalloc (the benchmarks' caching-malloc peer).
while read -r so; do
  while read -r lib; do libs["$lib"]=1; done < <(system_deps "$so")
done < <(find "$stage" -name '*.so' -type f)
ldconfig -p >"$stage/ldcache"
for extra in libopenblas.so.0 libjemalloc.so.2; do
  found="$(awk -v n="$extra" '$1 == n {print $NF; exit}' "$stage/ldcache")"
  [[ -z "$found" ]] && continue
  libs["$found"]=1
  while read -r lib; do libs["$lib"]=1; done < <(system_deps "$found")
done
rm "$stage/ldcache"
for lib in "${!libs[@]}"; do cp -L "$lib" "$stage/lib/"; done
# Runfiles repeat the binaries and our shared libraries (dereferenced):
# identical files become hard links, which tar stores once.
declare -A first_copy
while read -r sum file; do
  if [[ -n "${first_copy[$sum]:-}" ]]; then
    ln -f "${first_copy[$sum]}" "$file"
  else
    first_copy[$sum]="$file"
  fi
done < <(find "$stage" -type f -size +64k -print0 | xargs -0 md5sum | sort)
out="${TFM_BUNDLE_DIR:-.device_bundle}"
mkdir -p "$out"
# xz -9e: its 64 MiB dictionary also spans the binaries that share most of
# their code (translate_ende and benchmarks/decode), which the default
# level's 8 MiB does not: the decode bundle 19.7 MB instead of 25.2 (a call
# carries it beside a 30 MB model within 64 MiB), about a minute more here.
tar -C "$stage" -cf - . | xz -9e >"$out/bundle.tar.xz"
cp tools/device/run_bundle.sh tools/device/run_gpu_tests.sh "$out/"
printf '%s\n' "$@" | grep -E '_test(_avx512)?$' | sed -e 's|^//||' -e 's|:|/|' \
  >"$out/gpu_tests.txt" || true
# What the bundle was built from, so a later session can tell whether it is
# current (prepare_gpu_run.sh) and the GPU log says which code ran.
printf '%s\ntargets %s\n' "$source_state" "$*" >"$out/source.txt"
echo "bundle: $(du -h "$out/bundle.tar.xz" | cut -f1) for $# targets in $out"

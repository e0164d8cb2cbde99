#!/bin/bash
# The algorithmic plugin's problems, each trained for a budget of minutes
# with the generic driver and evaluated on its generated test split
# (exact-sequence accuracy). Logs: benchmarks/results/algorithmic_<problem>.log.
# Usage: benchmarks/algorithmic.sh [MINUTES] [PROBLEM...]   (default: 3 reverse sort add)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-3}"
shift || true
problems=("${@:-reverse sort add}")
problems=(${problems[@]})
bazel build -c opt //tools:transformer //plugins/algorithmic:libalgorithmic_plugin.so
driver=bazel-bin/tools/transformer
plugin="$PWD/bazel-bin/plugins/algorithmic/libalgorithmic_plugin.so"
for problem in "${problems[@]}"; do
  config="plugins/algorithmic/configs/$problem.pbtxt"
  work="${TMPDIR:-/tmp}/algorithmic_bench/$problem"
  log="benchmarks/results/algorithmic_$problem.log"
  rm -rf "$work"
  {
    echo "# $(date -u +%FT%TZ) on $(nproc) cores ($(uname -n)); git $(git rev-parse --short HEAD)"
    echo "\$ $driver --plugin=$plugin train --config=$config --workdir=$work --minutes=$minutes"
    "$driver" --plugin="$plugin" train --config="$config" --workdir="$work" --minutes="$minutes" 2>&1 |
      tr '\r' '\n' | grep -v '^\s*$' || true
    echo "\$ $driver --plugin=$plugin evaluate --config=$config --model=$work --src=$work/data/test.src --ref=$work/data/test.tgt"
    "$driver" --plugin="$plugin" evaluate --config="$config" --model="$work" \
      --src="$work/data/test.src" --ref="$work/data/test.tgt" 2>&1
  } | tee "$log"
done

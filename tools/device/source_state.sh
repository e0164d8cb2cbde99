#!/bin/bash
# Prints what a bundle is built from: the commit, and a checksum of the code
# (every tracked file's blob at HEAD, the uncommitted diff, untracked files'
# names and contents; ignored build folders left out). Documents (*.md,
# benchmarks/results/) are left out of the checksum: they change no binary,
# and a session's last commit is often its results. bundle.sh records this
# in .device_bundle/source.txt before building; prepare_gpu_run.sh keeps a
# bundle whose `code` line is the tree's.
set -euo pipefail
cd "$(dirname "$0")/../.."
code=(-- . ':(exclude)*.md' ':(exclude)benchmarks/results')
echo "commit $(git rev-parse HEAD)"
echo "code $({
  git ls-tree -r HEAD | grep -vE $'\t(.*\\.md|benchmarks/results/.*)$'
  git diff HEAD "${code[@]}"
  git ls-files --others --exclude-standard -z "${code[@]}" | xargs -0 -r md5sum
} | md5sum | cut -d' ' -f1)"

#!/usr/bin/env bash
# Downloads, verifies and unpacks the WMT14 data of "Attention Is All You
# Need" for full-scale training (no test needs it):
#   en-de: Europarl v7 + Common Crawl + News Commentary v9 (~4.5M pairs)
#   en-fr: the above + UN corpus + 10^9 French-English corpus (~36M pairs)
#   valid: newstest2013 (plain text); test: newstest2014 (SGML, read by the
#   engine's WMT_SGML corpus format).
#
# Checksums: the archives are verified against a file you supply, in
# `sha256sum` format ("<sha256>  <archive name>", one line per archive that
# --list-archives prints). The project ships no hashes: take them from a
# source you trust (or from a first download you have vetted) so a changed
# or corrupted archive is caught, never silently used.
#
# Usage:
#   tools/prepare_wmt14.sh --list-archives --pair en-de
#   tools/prepare_wmt14.sh --pair en-de --out /data/wmt14 --checksums wmt14.sha256
#       [--downloads DIR]   (archives already downloaded there are reused)
#
# Output in --out/<pair>/: train.<src>, train.<tgt> (aligned plain text,
# checked line by line), valid.<src>, valid.<tgt>, test.<src>.sgm,
# test.<tgt>.sgm, and corpus.pbtxt with the matching CorpusConfig entries.
set -euo pipefail

die() { echo "prepare_wmt14: $*" >&2; exit 1; }

pair="" out="" checksums="" downloads="" list_only=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --pair) pair="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --checksums) checksums="$2"; shift 2 ;;
    --downloads) downloads="$2"; shift 2 ;;
    --list-archives) list_only=1; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

case "$pair" in
  en-de) lang=de ;;
  en-fr) lang=fr ;;
  *) die "--pair must be en-de or en-fr" ;;
esac

# Archive URLs on the WMT sites (statmt.org), as listed on the WMT14
# translation task page.
urls=(
  "https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz"
  "https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz"
  "https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz"
  "https://www.statmt.org/wmt14/dev.tgz"
  "https://www.statmt.org/wmt14/test-full.tgz"
)
if [[ "$lang" == fr ]]; then
  urls+=(
    "https://www.statmt.org/wmt13/training-parallel-un.tgz"
    "https://www.statmt.org/wmt10/training-giga-fren.tar"
  )
fi

if [[ "$list_only" == 1 ]]; then
  for url in "${urls[@]}"; do echo "${url##*/}  $url"; done
  exit 0
fi
[[ -n "$out" ]] || die "--out is required"
[[ -n "$checksums" ]] || die "--checksums is required: a sha256sum file for the archives of --list-archives"
[[ -r "$checksums" ]] || die "cannot read checksum file $checksums"
checksums="$(cd "$(dirname "$checksums")" && pwd)/$(basename "$checksums")"

dest="$out/$pair"
downloads="${downloads:-$out/downloads}"
mkdir -p "$dest" "$downloads"

# 1. Download what is missing, then verify every archive.
for url in "${urls[@]}"; do
  name="${url##*/}"
  grep -qE "^[0-9a-f]{64}[ *]+$name\$" "$checksums" || die "$checksums has no sha256 line for $name"
  if [[ ! -s "$downloads/$name" ]]; then
    echo "downloading $url"
    curl -fL --retry 3 -o "$downloads/$name.part" "$url" || die "download of $url failed"
    mv "$downloads/$name.part" "$downloads/$name"
  fi
  (cd "$downloads" && grep -E "^[0-9a-f]{64}[ *]+$name\$" "$checksums" | sha256sum --check --strict --quiet) \
    || die "checksum mismatch for $downloads/$name (delete it to download again)"
done

# 2. Unpack.
work="$downloads/unpacked"
mkdir -p "$work"
for url in "${urls[@]}"; do
  name="${url##*/}"
  stamp="$work/.$name.done"
  [[ -e "$stamp" ]] && continue
  echo "unpacking $name"
  tar -xf "$downloads/$name" -C "$work"
  touch "$stamp"
done

# Finds a file by name anywhere under the unpacked archives (their folder
# layouts differ between years).
find_one() {
  local found
  found="$(find "$work" -name "$1" -type f | sort | head -n 1)"
  [[ -n "$found" ]] || die "no $1 in the unpacked archives"
  echo "$found"
}

# Prints a file, decompressing .gz.
cat_text() { if [[ "$1" == *.gz ]]; then gzip -dc "$1"; else cat "$1"; fi; }

# 3. Training text: concatenate the parts, each checked for alignment.
parts=("europarl-v7.$lang-en" "commoncrawl.$lang-en" "news-commentary-v9.$lang-en")
[[ "$lang" == fr ]] && parts+=("undoc.2000.fr-en" "giga-fren.release2.fixed")
: > "$dest/train.en.tmp"
: > "$dest/train.$lang.tmp"
for part in "${parts[@]}"; do
  if [[ "$part" == giga-fren* ]]; then
    en="$(find_one "$part.en.gz")"; xx="$(find_one "$part.fr.gz")"
  else
    en="$(find_one "$part.en")"; xx="$(find_one "$part.$lang")"
  fi
  n_en="$(cat_text "$en" | wc -l)"; n_xx="$(cat_text "$xx" | wc -l)"
  [[ "$n_en" == "$n_xx" ]] || die "$en has $n_en lines but $xx has $n_xx"
  echo "$part: $n_en pairs"
  cat_text "$en" >> "$dest/train.en.tmp"
  cat_text "$xx" >> "$dest/train.$lang.tmp"
done
mv "$dest/train.en.tmp" "$dest/train.en"
mv "$dest/train.$lang.tmp" "$dest/train.$lang"

# 4. newstest2013 (valid, plain text) and newstest2014 (test, SGML).
cp "$(find_one newstest2013.en)" "$dest/valid.en"
cp "$(find_one "newstest2013.$lang")" "$dest/valid.$lang"
cp "$(find_one "newstest2014-${lang}en-src.en.sgm")" "$dest/test.en.sgm"
cp "$(find_one "newstest2014-${lang}en-ref.$lang.sgm")" "$dest/test.$lang.sgm"

cat > "$dest/corpus.pbtxt" <<PBTXT
# DataConfig corpora for WMT14 $pair, written by tools/prepare_wmt14.sh.
train { name: "wmt14_$pair" format: PLAIN_TEXT source_path: "$dest/train.en" target_path: "$dest/train.$lang" }
valid { name: "newstest2013" format: PLAIN_TEXT source_path: "$dest/valid.en" target_path: "$dest/valid.$lang" }
test { name: "newstest2014" format: WMT_SGML source_path: "$dest/test.en.sgm" target_path: "$dest/test.$lang.sgm" }
PBTXT
echo "done: $(wc -l < "$dest/train.en") training pairs in $dest"

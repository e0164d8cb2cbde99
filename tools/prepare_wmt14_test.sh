#!/usr/bin/env bash
# Runs tools/prepare_wmt14.sh offline on small fake archives with the real
# archive names and layouts: checks checksum enforcement, the alignment
# check and the output files.
set -euo pipefail

tool="$(pwd)/tools/prepare_wmt14.sh"
tmp="${TEST_TMPDIR:-$(mktemp -d)}/wmt14"
rm -rf "$tmp"
mkdir -p "$tmp/src" "$tmp/dl"
cd "$tmp/src"

mkdir -p training test-full dev
printf 'Resumption of the session\nI declare\n' > training/europarl-v7.de-en.en
printf 'Wiederaufnahme der Sitzung\nIch erkläre\n' > training/europarl-v7.de-en.de
printf 'crawl one\n' > commoncrawl.de-en.en
printf 'Kriechen eins\n' > commoncrawl.de-en.de
printf 'news one\nnews two\nnews three\n' > training/news-commentary-v9.de-en.en
printf 'Nachricht eins\nNachricht zwei\nNachricht drei\n' > training/news-commentary-v9.de-en.de
printf 'dev en\n' > dev/newstest2013.en
printf 'dev de\n' > dev/newstest2013.de
printf '<doc docid="d"><seg id="1">a &amp; b</seg></doc>\n' > test-full/newstest2014-deen-src.en.sgm
printf '<doc docid="d"><seg id="1">a &amp; b</seg></doc>\n' > test-full/newstest2014-deen-ref.de.sgm
tar -czf "$tmp/dl/training-parallel-europarl-v7.tgz" training/europarl-v7.de-en.*
tar -czf "$tmp/dl/training-parallel-commoncrawl.tgz" commoncrawl.de-en.*
tar -czf "$tmp/dl/training-parallel-nc-v9.tgz" training/news-commentary-v9.de-en.*
tar -czf "$tmp/dl/dev.tgz" dev
tar -czf "$tmp/dl/test-full.tgz" test-full
(cd "$tmp/dl" && sha256sum *.tgz) > "$tmp/good.sha256"

fail() { echo "FAIL: $*" >&2; exit 1; }

# No checksum file: refused before anything is downloaded.
if "$tool" --pair en-de --out "$tmp/out" --downloads "$tmp/dl" 2> "$tmp/err"; then
  fail "ran without --checksums"
fi
grep -q -- "--checksums is required" "$tmp/err" || fail "unclear error: $(cat "$tmp/err")"

# A wrong hash: refused, naming the archive.
# Flip the first hex digit of the first archive's hash.
awk 'NR == 1 { $1 = (substr($1, 1, 1) == "0" ? "1" : "0") substr($1, 2) } { print $1 "  " $2 }' \
  "$tmp/good.sha256" > "$tmp/bad.sha256"
if "$tool" --pair en-de --out "$tmp/out" --downloads "$tmp/dl" --checksums "$tmp/bad.sha256" 2> "$tmp/err"; then
  fail "accepted wrong checksums"
fi
grep -q "checksum mismatch" "$tmp/err" || fail "unclear error: $(cat "$tmp/err")"

# Good hashes: the corpus is assembled.
"$tool" --pair en-de --out "$tmp/out" --downloads "$tmp/dl" --checksums "$tmp/good.sha256" > "$tmp/log"
[[ "$(wc -l < "$tmp/out/en-de/train.en")" == 6 ]] || fail "train.en should have 6 lines"
[[ "$(wc -l < "$tmp/out/en-de/train.de")" == 6 ]] || fail "train.de should have 6 lines"
[[ "$(head -n 1 "$tmp/out/en-de/train.de")" == "Wiederaufnahme der Sitzung" ]] || fail "europarl first"
grep -q 'format: WMT_SGML' "$tmp/out/en-de/corpus.pbtxt" || fail "no corpus.pbtxt"
[[ -s "$tmp/out/en-de/test.de.sgm" && -s "$tmp/out/en-de/valid.de" ]] || fail "no test/valid"

# Misaligned parts: refused, naming both files and counts.
printf 'extra line\n' >> training/news-commentary-v9.de-en.en
tar -czf "$tmp/dl/training-parallel-nc-v9.tgz" training/news-commentary-v9.de-en.*
(cd "$tmp/dl" && sha256sum *.tgz) > "$tmp/good.sha256"
rm -rf "$tmp/dl/unpacked"
if "$tool" --pair en-de --out "$tmp/out2" --downloads "$tmp/dl" --checksums "$tmp/good.sha256" \
    > /dev/null 2> "$tmp/err"; then
  fail "accepted misaligned files"
fi
grep -q "has 4 lines but .* has 3" "$tmp/err" || fail "unclear error: $(cat "$tmp/err")"
echo PASS

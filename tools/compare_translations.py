#!/usr/bin/env python3
"""Compares two translations of one source, line by line, and scores both.

  tools/compare_translations.py A.txt B.txt --ref=REF.txt [--show=20] [--bleu=PATH]

For checking one decoding against another (evaluate --device=cuda against
--device=cpu, bf16 against f32): prints how many lines are identical, the
first --show differing lines (line number, A, B), and the BLEU of each
against the reference, with the difference. BLEU is sacrebleu's when the
module imports; otherwise the project's own sacreBLEU-exact binary
(//tools:bleu: --bleu=PATH, else bazel-bin/tools/bleu or a `bleu` found
beside this script or on PATH). Plain or .gz files, one segment a line.
Exit status 2 on bad input (missing files, different line counts, no BLEU).
"""

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="\n") as f:
            return [line.rstrip("\r\n") for line in f]
    except OSError as error:
        fail(f"{path}: {error.strerror or error}")
    except UnicodeDecodeError as error:
        fail(f"{path}: not UTF-8 ({error})")


def find_bleu_binary(given):
    if given:
        return given if os.access(given, os.X_OK) else None
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "..", "bazel-bin", "tools", "bleu"),
                      os.path.join(here, "bleu")):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("bleu")


def bleu_scorer(binary_flag, ref_path, references):
    """A function (hypothesis path, its lines) -> BLEU, and what computes it."""
    try:
        import sacrebleu  # pylint: disable=import-outside-toplevel
        return (lambda _, hypotheses: sacrebleu.corpus_bleu(hypotheses, [references]).score,
                f"sacrebleu {sacrebleu.__version__}")
    except ImportError:
        pass
    binary = find_bleu_binary(binary_flag)
    if binary is None:
        fail(f"no BLEU: sacrebleu does not import and no //tools:bleu binary was found "
                 "(build it with `bazel build -c opt //tools:bleu`, or pass --bleu=PATH)")

    def score(path, _):
        result = subprocess.run([binary, f"--ref={ref_path}", f"--hyp={path}"],
                                capture_output=True, text=True, check=False)
        match = re.search(r"^BLEU = *([0-9.]+)", result.stdout, re.MULTILINE)
        if result.returncode != 0 or match is None:
            fail(f"{binary} failed on {path}:\n{result.stdout}{result.stderr}")
        return float(match.group(1))

    return score, binary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="first translation (e.g. the CPU's)")
    parser.add_argument("b", help="second translation (e.g. the GPU's)")
    parser.add_argument("--ref", required=True, help="the reference translation")
    parser.add_argument("--show", type=int, default=20, help="differing lines to print")
    parser.add_argument("--bleu", default="", help="path of the //tools:bleu binary")
    args = parser.parse_args()

    a, b, ref = read_lines(args.a), read_lines(args.b), read_lines(args.ref)
    if not len(a) == len(b) == len(ref):
        fail(f"line counts differ: {args.a} {len(a)}, {args.b} {len(b)}, {args.ref} {len(ref)}")
    differing = [i for i in range(len(a)) if a[i] != b[i]]
    identical = len(a) - len(differing)
    share = 100.0 * identical / len(a) if a else 100.0
    print(f"identical lines: {identical}/{len(a)} ({share:.2f}%)")
    for i in differing[:args.show]:
        print(f"line {i + 1}:\n  A: {a[i]}\n  B: {b[i]}")
    if len(differing) > args.show:
        print(f"... and {len(differing) - args.show} more differing lines")

    score, source = bleu_scorer(args.bleu, args.ref, ref)
    scores = [score(args.a, a), score(args.b, b)]
    print(f"BLEU A: {scores[0]:.2f}  ({args.a})")
    print(f"BLEU B: {scores[1]:.2f}  ({args.b})")
    print(f"BLEU B - A: {scores[1] - scores[0]:+.2f}  (scored by {source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

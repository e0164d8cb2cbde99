#!/usr/bin/env python3
"""Checks that every floor of the engine uses only the floors below it.

    tools/check_floors.py [ROOT]

The floors, from the ground up (tools/README.md, "The floor check"):

    core (0) -> ops (1) -> layers (2) -> runtime (3) -> tasks (4)
    -> plugins, benchmarks (5)

A source file under a floor may include (`#include "X/..."`, a proto's
`import "X/..."`) and a BUILD or .bzl file under a floor may name (`//X...`)
only its own floor and those below. tests/, tools/ and third_party/ are no
floor: they may use anything, and any floor may use them (third_party is the
ground's glue, tests/util the helpers every floor's tests share, tools/ the
Bazel macros every BUILD loads). Nothing is exempt and there is no list of
tolerated violations: each one is printed with its file, line and what it
names, and the exit status is 1 while any remains.

ROOT defaults to the source tree this script lives in (following symbolic
links, so that a Bazel test's runfile finds the real tree).
"""

import io
import os
import re
import sys
import tokenize

# The rank of each floor; a floor may use floors of lower or equal rank.
FLOOR_RANKS = {
    "core": 0,
    "ops": 1,
    "layers": 2,
    "runtime": 3,
    "tasks": 4,
    "plugins": 5,
    "benchmarks": 5,
}

SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh", ".inc", ".proto")
# `#include "core/tensor.h"` and a proto's `import "core/config/x.proto";`.
INCLUDE_PATTERN = re.compile(r'^\s*(#\s*include|import)\s+"([^"]+)"')
# A label in this repository (not `@repo//...`): `//tasks:configs`, `//ops/fill`.
LABEL_PATTERN = re.compile(r"^//([^/:\"]+)")


def floor_of(relative_path):
    """The floor a path (relative to the root, '/'-separated) lies on, or None."""
    top = relative_path.split("/", 1)[0]
    return top if top in FLOOR_RANKS else None


def is_build_file(name):
    return name in ("BUILD", "BUILD.bazel") or name.endswith(".bzl")


class Violation:
    def __init__(self, path, line, floor, used_floor, what):
        self.path = path
        self.line = line
        self.floor = floor
        self.used_floor = used_floor
        self.what = what

    def __str__(self):
        return "%s:%d: %s (floor %d) %s, on floor %s (%d) above it" % (
            self.path, self.line, self.floor, FLOOR_RANKS[self.floor], self.what,
            self.used_floor, FLOOR_RANKS[self.used_floor])


def upward(floor, used_floor):
    return used_floor is not None and FLOOR_RANKS[used_floor] > FLOOR_RANKS[floor]


def check_source(path, relative, floor):
    violations = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            match = INCLUDE_PATTERN.match(line)
            if not match:
                continue
            keyword, included = match.groups()
            used = floor_of(included)
            if upward(floor, used):
                verb = "imports" if keyword == "import" else "includes"
                violations.append(Violation(relative, number, floor, used,
                                            '%s "%s"' % (verb, included)))
    return violations


def build_labels(path):
    """(line, attribute, label) for each string label of a BUILD or .bzl file.

    Starlark is Python's syntax, so Python's tokenizer finds the strings and
    skips comments; the attribute is the last `name =` seen before the string
    (`deps`, `data`, ...), or `load` for a load statement.
    """
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    labels = []
    attribute = "?"
    previous = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP and token.string == "=" and previous is not None \
                    and previous.type == tokenize.NAME:
                attribute = previous.string
            elif token.type == tokenize.OP and token.string == "(" and previous is not None \
                    and previous.type == tokenize.NAME and previous.string == "load":
                attribute = "load"
            elif token.type == tokenize.STRING:
                # The string's value: strip an optional prefix and the quotes.
                literal = token.string.lstrip("rbuRBU")
                quote = literal[:3] if literal[:3] in ('"""', "'''") else literal[0]
                value = literal[len(quote):-len(quote)]
                if LABEL_PATTERN.match(value):
                    labels.append((token.start[0], attribute, value))
            if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                previous = token
    except (tokenize.TokenError, IndentationError, SyntaxError) as error:
        raise ValueError("%s: cannot be read as Starlark: %s" % (path, error))
    return labels


def check_build(path, relative, floor):
    violations = []
    for line, attribute, label in build_labels(path):
        used = floor_of(LABEL_PATTERN.match(label).group(1))
        if upward(floor, used):
            what = 'loads "%s"' % label if attribute == "load" else \
                'depends on "%s" (in %s)' % (label, attribute)
            violations.append(Violation(relative, line, floor, used, what))
    return violations


def check_tree(root):
    """(violations, number of files checked) for the floors under root."""
    violations = []
    checked = 0
    for floor in sorted(FLOOR_RANKS):
        top = os.path.join(root, floor)
        if not os.path.isdir(top):
            continue
        # os.walk does not follow symbolic links to folders (bazel-* output).
        for folder, subfolders, files in os.walk(top):
            subfolders.sort()
            for name in sorted(files):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, root).replace(os.sep, "/")
                if is_build_file(name):
                    violations += check_build(path, relative, floor)
                elif name.endswith(SOURCE_SUFFIXES):
                    violations += check_source(path, relative, floor)
                else:
                    continue
                checked += 1
    return violations, checked


def default_root():
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        sys.stderr.write("usage: %s [ROOT]\n" % argv[0])
        return 2
    root = argv[1] if len(argv) == 2 else default_root()
    if not any(os.path.isdir(os.path.join(root, floor)) for floor in FLOOR_RANKS):
        sys.stderr.write("%s: no floor folder (%s) under %s\n" %
                         (argv[0], ", ".join(sorted(FLOOR_RANKS)), root))
        return 2
    try:
        violations, checked = check_tree(root)
    except ValueError as error:
        sys.stderr.write("%s\n" % error)
        return 2
    for violation in violations:
        print(violation)
    order = "core 0 < ops 1 < layers 2 < runtime 3 < tasks 4 < plugins, benchmarks 5"
    if violations:
        print("floors: %d violation(s) in %d files checked; a file may include, and a BUILD "
              "may depend on, only its own floor and those below (%s)" %
              (len(violations), checked, order))
        return 1
    print("floors: OK (%d files checked; %s)" % (checked, order))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

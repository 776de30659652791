#!/usr/bin/env python3
"""lint-checks.py: a test line `check DESC A && B` asserts A only (check's own
status is what && sees), so every check over several conditions must use the
harness's `all`/`any`. Lists the offending lines of the shell suites; exit 1
when there is one."""
import glob
import os
import sys

SRC = os.environ.get("SRC", os.path.join(os.path.dirname(__file__), ".."))


def toplevel_op(line):
    """Whether line has && or || outside quotes and $(...)."""
    quote, depth, j = None, 0, 0
    while j < len(line):
        c = line[j]
        if quote:
            if c == "\\" and quote == '"':
                j += 2
                continue
            if c == quote:
                quote = None
            elif quote == '"' and line[j:j + 2] == "$(":
                depth += 1
                j += 1
            elif quote == '"' and c == ")" and depth:
                depth -= 1
        elif c in "'\"":
            quote = c
        elif line[j:j + 2] == "$(":
            depth += 1
            j += 1
        elif c == ")" and depth:
            depth -= 1
        elif line[j:j + 2] in ("&&", "||") and depth == 0:
            return True
        j += 1
    return False


bad = []
for f in sorted(glob.glob(os.path.join(SRC, "tests/e2e/*.sh")) +
                glob.glob(os.path.join(SRC, "tests/conformance/*.sh"))):
    lines = open(f).read().split("\n")
    i = 0
    while i < len(lines):
        start, logical = i, lines[i]
        while logical.endswith("\\") and i + 1 < len(lines):
            i += 1
            logical = logical[:-1] + " " + lines[i].strip()
        while logical.rstrip().endswith(("&&", "||")) and i + 1 < len(lines):
            i += 1
            logical += " " + lines[i].strip()
        if logical.lstrip().startswith("check ") and toplevel_op(logical):
            bad.append(f"{os.path.relpath(f, SRC)}:{start + 1}: {logical.strip()[:120]}")
        i += 1
for b in bad:
    print(b)
print(f"lint-checks: {len(bad)} check(s) asserting only their first condition"
      if bad else "lint-checks: every check asserts all its conditions")
sys.exit(1 if bad else 0)

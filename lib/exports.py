#!/usr/bin/env python3
"""exports.py HEADER... [-o MAP | --list]: the names libsonde's public headers
declare (functions, and extern data), as a linker version script that exports
those and hides every other symbol, or as a list (--list, one a line).

A declaration is a statement at file scope of a header: a prototype (not a
typedef, not a static inline function, whose body is skipped) or an extern
object. Comments, preprocessor lines and struct/enum/union bodies are not
declarations.
"""
import re
import sys

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    lines, cont, cplusplus = [], False, False
    for line in text.split("\n"):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            cplusplus = "__cplusplus" in line
            continue
        # extern "C" { ... } between #ifdef __cplusplus lines: not a scope
        if cplusplus and line.strip() in ('extern "C" {', "}"):
            continue
        lines.append(line)
    return " ".join(lines)


def statements(text):
    """File-scope statements; a function body ends its statement and is dropped."""
    out, cur, depth, i = [], [], 0, 0
    while i < len(text):
        c = text[i]
        if c == "{":
            if depth == 0 and "".join(cur).rstrip().endswith(")"):
                # a function defined here (static inline): skip its body
                d = 1
                i += 1
                while i < len(text) and d:
                    d += {"{": 1, "}": -1}.get(text[i], 0)
                    i += 1
                cur = []
                continue
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == ";" and depth == 0:
            out.append(" ".join("".join(cur).split()))
            cur = []
            i += 1
            continue
        if depth == 0 or c in "{}":
            cur.append(c)
        i += 1
    return out


def names(text):
    found = []
    for s in statements(strip(text)):
        if not s or s.startswith(("typedef", "static")) or "{}" in s:
            continue
        paren = s.find("(")
        if paren >= 0 and s[paren + 1:].lstrip().startswith("*"):
            m = IDENT.search(s[paren + 1:].lstrip()[1:])  # extern T (*name)(...)
            name = m.group(0) if m and s.startswith("extern") else None
        elif paren >= 0:
            idents = IDENT.findall(s[:paren])  # T name(...)
            name = idents[-1] if idents else None
        elif s.startswith("extern"):
            idents = IDENT.findall(re.sub(r"\[[^\]]*\]", "", s.split("=")[0]))
            name = idents[-1]
        else:
            name = None
        if name and name not in ("__attribute__", "extern", "const"):
            found.append(name)
    return found


def main(argv):
    out, listing, headers = None, False, []
    it = iter(argv)
    for a in it:
        if a == "-o":
            out = next(it)
        elif a == "--list":
            listing = True
        else:
            headers.append(a)
    syms = sorted({n for h in headers for n in names(open(h).read())})
    if listing:
        text = "".join(n + "\n" for n in syms)
    else:
        text = ("/* libsonde exports its public API only: the names include/sonde/ declares "
                "(lib/exports.py) */\n{\n  global:\n" + "".join(f"    {n};\n" for n in syms) +
                "  local:\n    *;\n};\n")
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
"""layering.py: what may include what (docs/ARCHITECTURE.md), checked over the
tree; TAP out, exit 1 on a violation.

    lib/collectors/NAME/  one collector: the library, lib/engines/ and proto/,
                          never another collector
    lib/engines/NAME/     a shared engine: the library, other engines, proto/;
                          never a collector
    runtime/              code inside the target: proto/, the public headers
                          (include/sonde/) and runtime/ itself
    src/, python/         the CLI and the binding: the public headers, proto/
                          and their own folder; the library's insides only as
                          listed in ALLOWED below, each to be removed

Each rule is also checked on a copy of the tree with a violation planted in
it: the check must fail there.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.abspath(os.environ.get("SRC", os.path.join(os.path.dirname(__file__), "..")))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# Includes of the library's insides from src/ and python/ that are there today.
# The list only shrinks: a new one fails the check.
ALLOWED = {
    ("python/sonde/_cpu.c", "lib/grow.h"),
    ("python/sonde/_cpu.c", "lib/u64map.h"),
    ("python/sonde/_pymem.c", "lib/u64map.h"),
    ("python/sonde/_sample.c", "lib/u64map.h"),
}


def sources(root, top):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if f.endswith((".c", ".h", ".cc")):
                yield os.path.relpath(os.path.join(d, f), root)


def resolve(root, path, name):
    """The file an #include "name" in path finds: its own folder first, then the
    folders meson adds (the tree's root, include/, lib/ for the binding and
    tests). None for a header that is not the tree's (config.h, a skeleton)."""
    for d in (os.path.dirname(path), "", "include", "lib"):
        cand = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def part(path):
    """('collector', NAME), ('engine', NAME), or the top folder."""
    p = path.split("/")
    if p[:2] == ["lib", "collectors"]:
        return ("collector", p[2] if len(p) > 3 else os.path.splitext(p[2])[0])
    if p[:2] == ["lib", "engines"]:
        return ("engine", p[2])
    if p[0] == "lib":
        return ("lib", None)
    return (p[0], None)


def violations(root):
    bad = []
    for top in ("lib", "runtime", "src", "python"):
        for path in sources(root, top):
            text = open(os.path.join(root, path), errors="replace").read()
            for name in INCLUDE.findall(text):
                tgt = resolve(root, path, name)
                if tgt is None:
                    continue
                me, it = part(path), part(tgt)
                why = None
                if me[0] == "collector" and it[0] == "collector" and it != me:
                    why = "a collector includes another collector"
                elif me[0] == "engine" and it[0] == "collector":
                    why = "an engine includes a collector"
                elif me[0] == "lib" and it[0] == "collector":
                    why = "the library's core includes a collector"
                elif me[0] == "runtime" and it[0] not in ("runtime", "proto", "include"):
                    why = "a runtime includes something but proto/ and the public headers"
                elif me[0] in ("src", "python") and it[0] not in (me[0], "proto", "include"):
                    if (path, tgt) not in ALLOWED:
                        why = f"{me[0]}/ includes the library's insides"
                if why:
                    bad.append(f"{path}: #include \"{name}\" ({tgt}): {why}")
    return bad


n = 0
failed = False


def report(ok, desc, detail=()):
    global n, failed
    n += 1
    print(f"{'ok' if ok else 'not ok'} {n} - {desc}")
    for d in detail:
        print(f"# {d}")
    failed |= not ok


def exported(lib):
    """The names a shared library exports (defined dynamic symbols)."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    return {f[2] for f in (l.split() for l in out.splitlines())
            if len(f) == 3 and f[1] in "TDBRVWiu" and "@" not in f[2]}


def undeclared(names, api):
    return sorted(n for n in names if n not in api)


here = violations(SRC)
report(not here, "the tree keeps its layers (collectors, engines, proto, runtime, CLI, binding)",
       here)

# each rule fails on a planted violation
PLANTS = [
    ("lib/collectors/time.c", '#include "trace/collector.c"\n',
     "a collector includes another collector"),
    ("lib/engines/calltree/calltrace.c", '#include "../../collectors/memory/memory.h"\n',
     "an engine includes a collector"),
    ("lib/session.c", '#include "collectors/sched/sched.h"\n',
     "the library's core includes a collector"),
    ("runtime/memory/memory.c", '#include "../../lib/u64map.h"\n',
     "a runtime includes something but proto/ and the public headers"),
    ("src/cmd-show.c", '#include "../lib/json.h"\n', "src/ includes the library's insides"),
    ("python/sonde/_views.c", '#include "strmap.h"\n', "python/ includes the library's insides"),
]
with tempfile.TemporaryDirectory() as tmp:
    for top in ("lib", "runtime", "src", "python", "proto", "include"):
        shutil.copytree(os.path.join(SRC, top), os.path.join(tmp, top),
                        ignore=shutil.ignore_patterns("*.py", "*.yaml", "*.md", "*.build"))
    for path, line, why in PLANTS:
        f = os.path.join(tmp, path)
        old = open(f).read()
        open(f, "w").write(line + old)
        found = [v for v in violations(tmp) if v.startswith(path + ":") and why in v]
        open(f, "w").write(old)
        report(bool(found), f"a planted violation is caught: {why} ({path})")

# libsonde exports its API only: what include/sonde/ declares (lib/exports.py)
sys.path.insert(0, os.path.join(SRC, "lib"))
import exports  # noqa: E402

api = {x for h in sorted(os.listdir(os.path.join(SRC, "include/sonde"))) if h.endswith(".h")
       for x in exports.names(open(os.path.join(SRC, "include/sonde", h)).read())}
lib = os.path.join(os.environ.get("BUILD", os.path.join(SRC, "build")), "lib/libsonde.so")
if not os.path.exists(lib) or not shutil.which("nm"):
    n += 1
    print(f"ok {n} - libsonde exports its API only # SKIP no {lib} or no nm to read it")
else:
    extra = undeclared(exported(lib), api)
    report(not extra, f"libsonde exports its API only ({len(api)} names the public headers "
           "declare)", [f"exported, not in include/sonde/: {x}" for x in extra[:40]])
report(undeclared({"sonde_profile__new", "expr_parse"}, api) == ["expr_parse"],
       "a planted export outside the API is caught (expr_parse)")

print(f"1..{n}")
sys.exit(1 if failed else 0)

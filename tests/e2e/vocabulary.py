#!/usr/bin/env python3
"""vocabulary.py SONDE DOC: every short option in every command's and
collector's --help is a row of docs/cli.md's table of short options, and a
letter has one meaning outside the rows marked as a peer's. TAP on stdout."""
import re
import subprocess
import sys

sonde, doc = sys.argv[1], sys.argv[2]


def helptext(*args):
    r = subprocess.run([sonde, *args, "--help"], capture_output=True, text=True)
    return r.stdout + r.stderr


top = helptext()
commands = sorted(set(re.findall(r"^  ([a-z]+) ", top, re.M)))
collectors = ["time", "memory", "trace", "counters", "python", "sample", "system", "sched",
              "power"]
seen = {}  # (short, long) -> where
for c in commands:
    for s, l in re.findall(r"^ +-([A-Za-z]),? +--([a-z-]+)", helptext(c), re.M):
        seen.setdefault((s, l), []).append(c)
for c in collectors:
    for s, l in re.findall(r"^ +-([A-Za-z]),? +--([a-z-]+)", helptext("collect", c), re.M):
        seen.setdefault((s, l), []).append("collect " + c)

rows = re.findall(r"^\| `-([A-Za-z])` \| `--([a-z-]+)[^`]*` \| ([^|]*) \|$", open(doc).read(), re.M)
table = {(s, l) for s, l, _ in rows}
n = 0


def tap(ok, what):
    global n
    n += 1
    print(("ok" if ok else "not ok") + f" {n} - {what}")


missing = sorted(k for k in seen if k not in table)
tap(len(seen) > 20 and len(commands) > 10,
    f"--help of {len(commands)} commands and {len(collectors)} collectors: {len(seen)} short options")
tap(not missing, "every short option is in docs/cli.md's table" +
    "".join(f"; -{s} --{l} ({', '.join(seen[(s, l)])}) is not" for s, l in missing))
own = {}
for s, l, where in rows:
    if "*peer's*" not in where:
        own.setdefault(s, set()).add(l)
twice = {s: ls for s, ls in own.items() if len(ls) > 1}
tap(not twice, "outside the peers' families, a short option means one thing" +
    "".join(f"; -{s}: {', '.join(sorted(ls))}" for s, ls in twice.items()))
stale = sorted(k for k in table if k not in seen and k[0] not in "hqv")
tap(not stale, "every row of the table is an option sonde has" +
    "".join(f"; -{s} --{l} is not" for s, l in stale))
print(f"1..{n}")

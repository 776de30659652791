#!/bin/sh
# The bounds collector against the real iteration counts of the same code:
# tests/programs/b-loops.c, analysed as a source and run with several inputs.
# A bound below a real count is a bug; counted loops are bounded exactly; a
# loop it cannot bound (a list walk, a data-dependent partition) says so.
. "$SRC/tests/e2e/lib.sh"

SRCFILE="$SRC/tests/programs/b-loops.c"
run collect bounds -s "$SRCFILE" -o b.json
if [ "$rc" = 3 ]; then
	skip "the bounds of b-loops.c" "libclang cannot be loaded here: $err"
	finish
	exit 0
fi
check "collect bounds: exit 0" [ "$rc" = 0 ]
check "a profile of type bound, valid" all "jq -e '.header.type == \"bound\"' b.json" 'validate b.json'
check "20 loops in 13 functions, 2 unbounded" \
	jq -e '.stats.bounds | .loops == 20 and .functions == 13 and .unbounded == 2' b.json
check "each loop's uid names its function, source, line and column" \
	jq -e '[.resource_type_map[] | select(.subtype == "local")] | all(. as $r | $r.function and
		$r.source and $r.line > 0 and $r.column > 0 and ($r.uid | startswith($r.function + ":")))' b.json

# every total bound against the counts of real runs
cat >check.py <<'PY'
import json, subprocess, sys
prog, prof = sys.argv[1], json.load(open(sys.argv[2]))
loops = {r["line"]: r for r in prof["resource_type_map"].values() if r["subtype"] == "total"}
exact = {"counted", "down", "nested", "sequence", "steps", "countdown", "flow"}
bad = []
for n, m, k in [(0, 0, 0), (1, 1, 1), (7, 3, 2), (20, 9, 5), (33, 0, 40)]:
    out = subprocess.run([prog, str(n), str(m), str(k)], capture_output=True, text=True).stdout
    real = {int(a): int(b) for a, b in (l.split() for l in out.split("\n") if l)}
    for line, r in loops.items():
        got = real.get(line, 0)
        if r["bound"].startswith("unbounded"):
            continue
        expr = r["bound"].replace("/", "//")
        env = {"max": max, "n": n, "m": m, "k": k}
        b = eval(expr, {"__builtins__": {}}, env)
        if b < got:
            bad.append(f"{r['function']} line {line}: bound {r['bound']} = {b} < {got} real (n={n} m={m} k={k})")
        if r["function"] in exact and b != got:
            bad.append(f"{r['function']} line {line}: bound {b} != {got} real, a counted loop")
print("\n".join(bad) if bad else "every bound holds")
sys.exit(1 if bad else 0)
PY
check "every total bound is at least the real count, exactly it for counted loops (5 inputs)" \
	python3 check.py "$PROGS/b-loops" b.json
check "classes: counted O(n), nested, triangle and bubble (j + 1 < n - i) O(n^2), down O(n)" \
	jq -e '[.resource_type_map[] | select(.subtype == "function")] | map({(.function): .class}) |
		add | .counted == "O(n)" and .nested == "O(n^2)" and .triangle == "O(n^2)" and
		.bubble == "O(n^2)" and
		.down == "O(n)" and .countdown == "O(n)"' b.json
check "values followed from the parameters: a limit set from n, a counter a loop grew (2 * max(0, n + 2), exact)" \
	jq -e '[.resource_type_map[] | select(.function == "flow" and .subtype == "total")] |
		map(.bound) | sort == ["2 * max(0, n + 2)", "max(0, n + 2)"]' b.json
check "a loop draining what its enclosing loop adds is bounded over the call (amortized: max(0, n))" \
	jq -e '[.resource_type_map[] | select(.function == "amortized" and .loop == "while")] |
		all(.bound == "max(0, n)")' b.json
check "a list walk is unbounded, and says why (no counter)" \
	jq -e '[.resource_type_map[] | select(.function == "walk" and .subtype == "local")][0].bound |
		startswith("unbounded: a for loop without its start")' b.json
check "a partition loop whose step is inside an if is unbounded, not guessed" \
	jq -e '[.resource_type_map[] | select(.function == "partition" and .subtype == "local")][0] |
		.class == "unbounded" and (.bound | test("stepped exactly once"))' b.json
check "the table names the functions and classes" all 'has "$err" "triangle"' 'has "$err" "O(n^2)"'

# bad input
printf 'int f(int n) { for (int i = 0; i < n; i++) return oops; }\n' >bad.c
run collect bounds -s bad.c -o x.json
check "a source that does not parse: exit 1, the compiler's message, no profile" \
	all '[ "$rc" = 1 ]' 'has "$err" "bad.c:1"' '[ ! -e x.json ]'
run collect bounds -o x.json
check "no source: exit 2" [ "$rc" = 2 ]
# libclang would read a device without end (24 GB before the OOM killer): refused first
printf '#include "/dev/zero"\nint f(void) { return 0; }\n' >zero.c
mkfifo fifo.h && printf '#include "fifo.h"\n' >inc.h && printf '#include "inc.h"\nint g;\n' >fifo.c
run collect bounds -s zero.c -o x.json
check "an include of a device: exit 1, file and line named, no profile" \
	all '[ "$rc" = 1 ]' 'has "$err" "zero.c:1: includes .*/dev/zero.*not a regular file"' '[ ! -e x.json ]'
run collect bounds -s fifo.c -o x.json
check "... of a FIFO, through another include" \
	all '[ "$rc" = 1 ]' 'has "$err" "inc.h:1: includes .*fifo.h.*not a regular file"' '[ ! -e x.json ]'
# a macro doubling itself 30 times: 2^30 initialisers, far past the analysis's 2 GiB
{ echo '#define A0 1,'; for i in $(seq 30); do echo "#define A$i A$((i - 1)) A$((i - 1))"; done
  echo 'int a[] = {A30};'; } >bomb.c
run collect bounds -s bomb.c -o x.json
check "a source that expands past the analysis's 2 GiB: exit 1, said, no profile" \
	all '[ "$rc" = 1 ]' 'has "$err" "2 GiB"' '[ ! -e x.json ]'
run collect bounds -s missing.c
check "a source that is not there: exit 1" all '[ "$rc" = 1 ]' 'has "$err" "missing.c"'
mkdir -p tree/sub && cp "$SRCFILE" tree/sub/a.c && printf 'void z(void) {}\n' >tree/b.c
run collect bounds -d tree -o d.json
check "-d DIR: every .c file below it" jq -e '.stats.bounds.files == 2 and .stats.bounds.loops == 20' d.json
finish

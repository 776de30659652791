#!/bin/sh
# analysis-scale.sh - the analysis side at scale: a profile of 1 000 000
# measured resources (Perun's sense: one record per measurement; here 1000
# functions x 1000 calls with sizes, stored as columns) and a memory profile of
# 10 000 distinct stacks. Measures load (show table), regression (postprocess),
# the scatter plot (show scatter), the HTML report of both and the flame graph
# of the stacks (show flamegraph); prints the medians of ROUNDS runs, the total
# of the first four against the 1 s target and the peak resident memory
# against 1 GiB. Then the same four steps at each of SIZES calls per function
# (default 100, 1000 and 5000: 10^5, 10^6 and 5*10^6 values), so that the
# trend shows: the total and its cost per value at each size (the report of
# the values alone). With DISTINCT=1,
# then a profile of 1 000 000
# distinct resources (one value each, ~100 MB): its table, a bar chart and the
# report, each against 5 s and 1 GiB.
# Usage: [DISTINCT=1] [SIZES="N ..."] bench/analysis-scale.sh [BUILD] [ROUNDS]
set -eu
BUILD=${1:-build}
ROUNDS=${2:-5}
SONDE=$(realpath "$BUILD/src/sonde")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"

SIZES=${SIZES:-100 1000 5000}
python3 - "$TMP" 1000 $SIZES <<'PY'
import json, random, sys
d = sys.argv[1]
random.seed(7)
head = lambda t, u: {"format_version": 1, "origin": None,
    "header": {"type": t, "cmd": "generated", "args": [], "workload": "", "units": u},
    "collector_info": {"name": "generated", "params": {}}, "machine": {}, "metadata": {},
    "stats": {"runs": 1, "warnings": []}, "models": [], "postprocessors": []}
def values(n, path):
    """1000 functions of n calls each: amount a + b x^2 with 5 % noise"""
    random.seed(7)
    rtm, res = {}, {}
    for f in range(1000):
        k = "f%d#0" % f
        rtm[k] = {"uid": "f%d" % f, "type": "mixed", "subtype": "time"}
        xs = [1 + (i % 500) for i in range(n)]
        a, b = random.uniform(10, 100), random.uniform(0.1, 2)
        res[k] = {"amount": [round(a + b * x * x * (1 + random.gauss(0, 0.05)), 1) for x in xs],
                  "structure-unit-size": xs}
    doc = head("mixed", {"mixed": "ns", "structure-unit-size": "elements"})
    doc["resource_type_map"], doc["resources"] = rtm, res
    json.dump(doc, open(path, "w"))
for n in sorted(set(int(a) for a in sys.argv[2:])):
    values(n, "%s/big-%d.json" % (d, n))
random.seed(7)
names = ["fn%d" % i for i in range(400)]
rtm, res = {}, {}
for s in range(10000):
    depth = 4 + s % 12
    stack = ["main"] + [names[(s * 7 + k * 13 + (s >> k)) % 400] for k in range(depth)]
    k = "s%d#0" % s
    rtm[k] = {"uid": stack[-1], "type": "memory", "subtype": "malloc",
              "trace": [{"function": f, "source": "", "line": 0, "module": "x"} for f in reversed(stack)],
              "summary": {"count": 1 + s % 50, "bytes": 64 * (1 + s % 97), "freed": 0, "leaked": 0,
                          "leaked_bytes": 0, "temporary": 0, "peak_bytes": 0}}
    res[k] = {"amount": [64 * (1 + s % 97)]}
doc = head("memory", {"memory": "B"})
doc["resource_type_map"], doc["resources"] = rtm, res
json.dump(doc, open(d + "/stacks.json", "w"))
PY
cp "$TMP/big-1000.json" "$TMP/big.json"
echo "profiles: big.json $(du -h "$TMP/big.json" | cut -f1) (1 000 000 values of 1000 uids), stacks.json $(du -h "$TMP/stacks.json" | cut -f1) (10 000 stacks)"

# step NAME COMMAND...: run under /usr/bin/time, append ns and peak KiB
step() {
	name=$1
	shift
	t0=$(now)
	/usr/bin/time -f "%M" -o "$TMP/rss" "$@" >/dev/null 2>&1
	t1=$(now)
	echo $((t1 - t0)) >>"$TMP/$name.ns"
	cat "$TMP/rss" >>"$TMP/$name.kb"
}
r=0
while [ $r -lt "$ROUNDS" ]; do
	cp "$TMP/big.json" "$TMP/work.json"
	step load "$SONDE" show "$TMP/work.json" table
	step regression "$SONDE" postprocess "$TMP/work.json" regression
	step scatter "$SONDE" show "$TMP/work.json" scatter -o "$TMP/scatter.svg"
	step flamegraph "$SONDE" show "$TMP/stacks.json" flamegraph -o "$TMP/flame.svg"
	step report "$SONDE" report "$TMP/work.json" "$TMP/stacks.json" -o "$TMP/report.html"
	r=$((r + 1))
done
total=0
peak=0
# the total: issue 25's four steps (load, regression, scatter, report); the
# flame graph of the stacks is shown beside them
for s in load regression scatter report flamegraph; do
	ms=$(($(median "$TMP/$s.ns" | cut -d. -f1) / 1000000))
	kb=$(sort -n "$TMP/$s.kb" | tail -1)
	[ $s = flamegraph ] || total=$((total + ms))
	[ "$kb" -gt "$peak" ] && peak=$kb
	printf '%-11s %6d ms   peak %5d MiB\n' "$s" "$ms" $((kb / 1024))
done
echo "report: $(du -h "$TMP/report.html" | cut -f1), flame.svg: $(du -h "$TMP/flame.svg" | cut -f1), $(grep -c '<g class="f"' "$TMP/flame.svg") frames drawn"
printf 'total      %6d ms, load + regression + scatter + report (target <= 1000 ms: %s)   peak %d MiB (target < 1024 MiB: %s)\n' \
	"$total" "$([ $total -le 1000 ] && echo met || echo missed)" $((peak / 1024)) \
	"$([ $peak -lt 1048576 ] && echo met || echo missed)"

# the trend: the four steps at each size (the 1 000 000 of above among them)
echo "the four steps (load + regression + scatter + report) at each size, $ROUNDS rounds, medians:"
for n in $SIZES; do
	rm -f "$TMP"/s-*.ns "$TMP"/s-*.kb
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		cp "$TMP/big-$n.json" "$TMP/work.json"
		step s-load "$SONDE" show "$TMP/work.json" table
		step s-regression "$SONDE" postprocess "$TMP/work.json" regression
		step s-scatter "$SONDE" show "$TMP/work.json" scatter -o "$TMP/scatter.svg"
		step s-report "$SONDE" report "$TMP/work.json" -o "$TMP/report.html"
		r=$((r + 1))
	done
	total=0
	peak=0
	for s in load regression scatter report; do
		total=$((total + $(median "$TMP/s-$s.ns" | cut -d. -f1) / 1000000))
		kb=$(sort -n "$TMP/s-$s.kb" | tail -1)
		[ "$kb" -gt "$peak" ] && peak=$kb
	done
	awk -v n="$n" -v t="$total" -v p="$peak" -v s="$(du -h "$TMP/big-$n.json" | cut -f1)" 'BEGIN {
		printf "  %8d values (%5s): %6d ms, %6.1f ns a value, peak %5d MiB\n", n * 1000, s, t,
			t * 1e6 / (n * 1000), p / 1024 }'
done

[ "${DISTINCT:-0}" = 1 ] || exit 0
python3 - "$TMP" <<'PY'
import json, random, sys
random.seed(7)
rtm, res = {}, {}
for f in range(1000000):
    k = "f%d#0" % f
    rtm[k] = {"uid": "f%d" % f, "type": "mixed", "subtype": "time"}
    res[k] = {"amount": [round(random.uniform(10, 1000), 1)]}
json.dump({"format_version": 1, "origin": None,
           "header": {"type": "mixed", "cmd": "generated", "args": [], "workload": "",
                      "units": {"mixed": "ns"}},
           "collector_info": {"name": "generated", "params": {}}, "machine": {}, "metadata": {},
           "stats": {"runs": 1, "warnings": []}, "models": [], "postprocessors": [],
           "resource_type_map": rtm, "resources": res}, open(sys.argv[1] + "/dist.json", "w"))
PY
echo "distinct.json: $(du -h "$TMP/dist.json" | cut -f1) (1 000 000 resources of one value)"
r=0
while [ $r -lt "$ROUNDS" ]; do
	step dtable "$SONDE" show "$TMP/dist.json" table
	step dbars "$SONDE" show "$TMP/dist.json" bars -o "$TMP/bars.svg"
	step dreport "$SONDE" report "$TMP/dist.json" -o "$TMP/dist.html"
	r=$((r + 1))
done
for s in dtable dbars dreport; do
	ms=$(($(median "$TMP/$s.ns" | cut -d. -f1) / 1000000))
	kb=$(sort -n "$TMP/$s.kb" | tail -1)
	printf '%-11s %6d ms (target <= 5000 ms: %s)   peak %5d MiB (target < 1024 MiB: %s)\n' \
		"${s#d}" "$ms" "$([ $ms -le 5000 ] && echo met || echo missed)" $((kb / 1024)) \
		"$([ "$kb" -lt 1048576 ] && echo met || echo missed)"
done

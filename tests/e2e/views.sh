#!/bin/sh
# End to end: postprocessors, checks, drawn views and the HTML report, the
# drawn files opened in headless chromium (tests/browser/open.js).
. "$(dirname "$0")/lib.sh"

# --- postprocess: a trace profile with sizes from sonde_trace_size() ---
run collect trace -q -o calls.json -- "$PROGS/t-calls"
check "trace profile collected" [ "$rc" -eq 0 ]
run postprocess calls.json regression
check "regression: exit 0" [ "$rc" -eq 0 ]
check "regression: each best model's coefficients with units, as the scatter's legend" \
	has "$out" "sized time: [a-z]*: y = [^,]*, b0 = [-0-9.]* [nµm]*s, .*R² = [0-9.]*, over \[10, 50\] (full)"
check "regression: models stored" [ "$(jq '[.models[] | select(.postprocessor == "regression")] | length' calls.json)" -gt 0 ]
check "regression: one best model per uid" jq_eq calls.json '[.models[] | select(.best)] | group_by(.uid) | map(length) | max' 1
check "regression: coefficients with confidence intervals" jq_eq calls.json '[.models[] | .coeffs[0] | has("ci_low") and has("ci_high")] | all' true
check "regression: the postprocessor is recorded" jq_eq calls.json '.postprocessors[-1].name' regression
check "regression: the profile still validates" validate calls.json
run postprocess calls.json moving-average --average ema --decay span=5 -o smooth.json
check "moving-average -o: the original is untouched" jq_eq calls.json '[.models[] | select(.postprocessor == "moving-average")] | length' 0
check "moving-average -o: curves written" jq_eq smooth.json '[.models[] | select(.model == "moving_average") | (.x | length) == (.y | length)] | all' true
run postprocess smooth.json regressogram --buckets 4
check "regressogram: at most 4 buckets" jq_eq smooth.json '[.models[] | select(.model == "regressogram") | .x | length <= 4] | all' true
run postprocess smooth.json kernel-regression --estimator local-linear --bandwidth silverman
check "kernel-regression: stored with its bandwidth" jq_eq smooth.json '[.models[] | select(.model == "kernel") | .bandwidth > 0] | all' true
check "postprocessed profile validates" validate smooth.json
run postprocess calls.json nonsense
check "unknown postprocessor: exit 2" [ "$rc" -eq 2 ]
check "unknown postprocessor: one line" [ "$(printf '%s\n' "$err" | grep -c .)" -le 2 ]
cp calls.json before.json
run postprocess calls.json regression --per nothing
check "missing column: exit 3" [ "$rc" -eq 3 ]
check "missing column: says which" has "$err" "'nothing'"
check "missing column: the profile is unchanged" cmp -s calls.json before.json
run postprocess calls.json regression --decay span=0
check "bad --decay: exit 2" [ "$rc" -eq 2 ]

# --- check: the same command, slower ---
# check's verdicts on known figures: a profile collected here, its wall times
# then set to 6 known runs (about 10 ms) and, for the slower one, three times
# those; live sleeps on a loaded machine could stretch any run and leave the
# test unsure, which is no failure of check's
X=0.01 run collect time -q -r 6 -o fast-live.json -- sh -c 'sleep $X'
known() { # FILE FACTOR: fast-live.json with its real times set
	jq --argjson f "$2" '(.resource_type_map | to_entries[] | select(.value.subtype == "real") | .key) as $k
		| .resources[$k].amount = ([10.1, 10.3, 9.9, 10.2, 10.0, 10.4] | map(. * 1e6 * $f | floor))' \
		fast-live.json >"$1"
}
known fast.json 1 && known slow.json 3
run check fast.json slow.json
check "check slower: exit 4" [ "$rc" -eq 4 ]
check "check slower: real time is a severe degradation" has "$out" "severe degradation"
run check slow.json fast.json --format json
check "check faster: json on stdout" [ -n "$out" ]
printf '%s\n' "$out" >check.json
check "check json: real time is an optimization" jq_eq check.json '.pairs[0].results[] | select(.subtype == "real") | .verdict' "severe optimization"
check "check json: the ratio's interval lies below 1" jq_eq check.json '.pairs[0].results[] | select(.subtype == "real") | .ratio_ci95[1] < 1' true
check "check json: Welch's test decided" jq_eq check.json '.pairs[0].results[] | select(.subtype == "real") | .method' welch
run check fast.json fast.json
check "check against itself: exit 0, no change" [ "$rc" -eq 0 ]
run check fast.json calls.json
check "time against trace: exit 2" [ "$rc" -eq 2 ]
check "time against trace: one line naming both collectors" \
	sh -c "[ \"\$(printf '%s\n' \"\$1\" | grep -c .)\" = 1 ] && printf '%s' \"\$1\" | grep -q 'a time profile.*a trace profile'" _ "$err"

# --- check of trace profiles: each function's total and self time ---
jq '(.resource_type_map[] | select(.uid == "fib") | .summary) |= (.total *= 1.68 | .self *= 1.68)' \
	calls.json >slower.json
run check calls.json slower.json --format json
check "trace check: a function 68 % slower is a degradation (exit 4)" [ "$rc" -eq 4 ]
printf '%s\n' "$out" >tcheck.json
check "trace check: fib's total time, severe degradation" \
	jq_eq tcheck.json '.pairs[0].results[] | select(.uid == "fib" and .subtype == "total") | .verdict' "severe degradation"
check "trace check: by the totals" \
	jq_eq tcheck.json '.pairs[0].results[] | select(.uid == "fib" and .subtype == "self") | .method' totals
check "trace check: main's self time did not change" \
	jq_eq tcheck.json '.pairs[0].results[] | select(.uid == "main" and .subtype == "self") | .verdict' "no change"

# --- check: what the data cannot tell is "not enough data", never "no change" ---
amounts_profile() { # FILE V...: a Perun time profile whose real times are V...
	f=$1
	shift
	i=0
	recs=""
	for v in "$@"; do
		i=$((i + 1))
		recs="$recs${recs:+,}{\"uid\": \"./b\", \"type\": \"time\", \"subtype\": \"real\", \"order\": $i, \"amount\": $v}"
	done
	printf '{"origin": "%s", "header": {"type": "time", "cmd": "./b", "workload": "", "params": "", "units": {"time": "s"}}, "collector_info": {"name": "time", "params": {}}, "postprocessors": [], "global": {"timestamp": 1, "resources": [%s]}}\n' \
		1111111111111111111111111111111111111111 "$recs" >"$f"
}
amounts_profile one-a.json 1.0
amounts_profile one-b.json 1.02
run check one-a.json one-b.json --format json
check "one sample a side: exit 0" [ "$rc" = 0 ]
printf '%s\n' "$out" >one.json
check "one sample a side, 2 % apart: not enough data, not no change" \
	jq_eq one.json '.pairs[0].results[0].verdict' "not enough data"
check "... counted in the JSON" jq_eq one.json .not_enough_data 1
run check one-a.json one-b.json --strict
check "--strict: a result that cannot be judged fails (exit 4)" [ "$rc" = 4 ]
check "... and the text says so" has "$out" "could not be judged"
amounts_profile flat-a.json 5 5 5
amounts_profile flat-b.json 5 5 5
amounts_profile flat-c.json 6 6 6
run check flat-a.json flat-b.json --format json
check "samples that never vary, equal: no change" jq_eq /dev/stdin '.pairs[0].results[0].verdict' "no change" <<EOT
$out
EOT
run check flat-a.json flat-c.json --format json
check "samples that never vary, 20 % apart: a certain degradation (exit 4)" \
	sh -c '[ "$1" = 4 ] && printf "%s" "$2" | jq -e ".pairs[0].results[0].verdict == \"degradation\"" >/dev/null' _ "$rc" "$out"

# --- check of Perun's profiles by the models stored in them ---
perun_models() { # FILE MODEL1 R2_1 MODEL2 R2_2: a Perun profile with two models of ./bench
	cat >"$1" <<EOT
{"origin": "1111111111111111111111111111111111111111",
 "header": {"type": "time", "cmd": "./bench", "workload": "", "params": "", "units": {"time": "s"}},
 "collector_info": {"name": "time", "params": {}}, "postprocessors": [],
 "global": {"timestamp": 1, "resources": [
   {"uid": "./bench", "type": "time", "subtype": "real", "order": 1, "amount": 1.0},
   {"uid": "./bench", "type": "time", "subtype": "real", "order": 2, "amount": 1.1}]},
 "models": [
   {"uid": "./bench", "model": "$2", "method": "full", "r_square": $3, "x_start": 1, "x_end": 100,
    "coeffs": [{"name": "b0", "value": 1.0}, {"name": "b1", "value": 2.0}]},
   {"uid": "./bench", "model": "$4", "method": "full", "r_square": $5, "x_start": 1, "x_end": 100,
    "coeffs": [{"name": "b0", "value": 1.0}, {"name": "b1", "value": 0.5}]}]}
EOT
}
perun_models pbase.json linear 0.99 constant 0.4
perun_models ptarget.json linear 0.93 quadratic 0.98
run check pbase.json ptarget.json -m best-model-order --format json
check "Perun's models, best-model-order: exit 4" [ "$rc" -eq 4 ]
printf '%s\n' "$out" >pcheck.json
check "Perun's models: the best (highest R²) goes linear -> quadratic" \
	jq_eq pcheck.json '.pairs[0].results[0].detail' "linear -> quadratic"
run check pbase.json ptarget.json
check "Perun's models: the default method uses them too (exit 4)" [ "$rc" -eq 4 ]
perun_models plow.json linear 0.93 quadratic 0.85
run check pbase.json plow.json -m best-model-order
check "Perun's models: under R² 0.9 no change of order counts (exit 0)" [ "$rc" -eq 0 ]
run check fast.json
check "check with one argument: exit 2" [ "$rc" -eq 2 ]
run check fast.json no-such-thing
check "check with an unknown name: exit 1, one line" [ "$rc" -eq 1 ]

# --- check between commits, as a CI gate ---
mkdir repo && cd repo && git init -q . && echo a >a && git add a && git commit -qm one
"$SONDE" init >/dev/null
# 10 ms against 100 ms: a run that a busy machine delays by tens of ms (the
# sanitize build beside a compile) leaves the two apart
X=0.01 "$SONDE" collect time -q -r 8 -- sh -c 'sleep $X' >/dev/null 2>"$WORK/gate.err"
c1=$?
"$SONDE" add 0@p >/dev/null 2>>"$WORK/gate.err"
a1=$?
echo b >b && git add b && git commit -qm two
X=0.1 "$SONDE" collect time -q -r 8 -- sh -c 'sleep $X' >/dev/null 2>>"$WORK/gate.err"
c2=$?
"$SONDE" add 0@p >/dev/null 2>>"$WORK/gate.err"
a2=$?
run check HEAD~1 HEAD
check "check HEAD~1 HEAD: exit 4 on the slower commit (collect, add: $c1 $a1, $c2 $a2; check: $rc, $(grep -m1 ' real ' "$WORK/.out" | tr -s ' ')$(cat "$WORK/gate.err" "$WORK/.err" | head -c 200 | tr '\n' ' '))" [ "$rc" -eq 4 ]
run check HEAD HEAD~1
check "check HEAD HEAD~1: real time is an optimization" has "$out" "optimization"
cd ..

# --- drawn views of a memory profile whose names must stay text ---
python3 - <<'PY'
import json
frames = ['main', '<script>alert(1)</script>', 'a&b"c', "it's", 'parse', 'emit']
rtm, res = {}, {}
for i in range(60):
    stack = [frames[(i + k) % len(frames)] for k in range(1 + i % 5)]
    key = "site%d#0" % i
    rtm[key] = {"uid": stack[0], "type": "memory", "subtype": "malloc",
                "trace": [{"function": f, "source": "", "line": 0, "module": "x"} for f in stack],
                "summary": {"count": i + 1, "bytes": 100 * (i + 1), "freed": 0, "leaked": 0,
                            "leaked_bytes": 0, "temporary": 0, "peak_bytes": 0}}
    res[key] = {"amount": [16 * (j + 1) for j in range(i % 7 + 1)],
                "timestamp": [1000 * (i * 7 + j) for j in range(i % 7 + 1)],
                "snapshot": [j for j in range(i % 7 + 1)]}
doc = {"format_version": 1, "origin": None,
       "header": {"type": "memory", "cmd": "<b>x</b> & y", "args": [], "workload": "",
                  "units": {"memory": "B", "time": "ns"}},
       "collector_info": {"name": "memory", "params": {}}, "machine": {}, "metadata": {},
       "stats": {"runs": 1, "warnings": []}, "resource_type_map": rtm, "resources": res,
       "models": [], "postprocessors": []}
json.dump(doc, open("evil.json", "w"))
doc["resource_type_map"]["site0#0"]["summary"]["bytes"] = 90000
json.dump(doc, open("evil2.json", "w"))
PY
run show evil.json flamegraph -o flame.svg
check "flamegraph: exit 0" [ "$rc" -eq 0 ]
check "flamegraph: names escaped in the SVG" has "$(cat flame.svg)" '&lt;script&gt;alert(1)&lt;/script&gt;'
check "flamegraph: no raw injected tag" [ "$(grep -c '<script>alert' flame.svg)" -eq 0 ]
check "flamegraph: well-formed XML" python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse('flame.svg')"
run show evil.json bars --per uid --func sum -o bars.svg
check "bars: exit 0" [ "$rc" -eq 0 ]
run show evil.json flow --per snapshot --by uid --stacked -o flow.svg
check "flow: exit 0" [ "$rc" -eq 0 ]
run show calls.json scatter -o scatter.svg
check "scatter: exit 0" [ "$rc" -eq 0 ]
check "scatter: the fitted models are drawn" [ "$(grep -c 'class="model' scatter.svg)" -gt 0 ]
run show evil.json diff evil2.json -o diff.svg
check "diff: exit 0" [ "$rc" -eq 0 ]
check "diff: the table shows the grown frame" has "$out" "function (inclusive)"
for f in bars.svg flow.svg scatter.svg diff.svg; do
	check "$f: well-formed XML" python3 -c "import xml.dom.minidom; xml.dom.minidom.parse('$f')"
done
run show fast.json flamegraph
check "flamegraph of a time profile: exit 3" [ "$rc" -eq 3 ]
run show fast.json bars --of nothing
check "bars of a missing column: exit 3" [ "$rc" -eq 3 ]
run report evil.json evil2.json calls.json -o report.html
check "report: exit 0" [ "$rc" -eq 0 ]
check "report: prints its path" has "$out" "report.html"
check "report: no external reference" [ "$(grep -Eci '(src|href)="(https?:)?//' report.html)" -eq 0 ]
run export calls.json --format json -o exported.json
check "export json: the same profile" jq_eq exported.json '.models | length' "$(jq '.models | length' calls.json)"

# --- the real browser ---
ART="${BUILD:-$SRC/build}/tests/artifacts"
mkdir -p "$ART"
cat >spec.json <<JSON
[
 {"file": "flame.svg", "expect": {"svg.sonde-flame g.f": 6}, "zoom": true, "search": "parse",
  "texts": ["<script>alert(1)</script>", "a&b\"c"], "screenshot": "$ART/flame.png"},
 {"file": "diff.svg", "expect": {"svg.sonde-flame g.f": 6}, "zoom": true, "screenshot": "$ART/diff.png"},
 {"file": "bars.svg", "expect": {"g.bar rect": 3}, "texts": ["<script>alert(1)</script>"], "screenshot": "$ART/bars.png"},
 {"file": "flow.svg", "expect": {"g.series path": 2}, "screenshot": "$ART/flow.png"},
 {"file": "scatter.svg", "expect": {"g.points circle": 3, "g.model path": 1}, "screenshot": "$ART/scatter.png"},
 {"file": "report.html", "expect": {"table.facts": 3, "table.summary tbody tr": 3, "svg.sonde-flame": 2,
  "svg.sonde-chart": 3, "table.check tbody tr": 2, "section.comparison": 1},
  "zoom": true, "texts": ["<script>alert(1)</script>", "a&b\"c", "<b>x</b> & y"],
  "screenshot": "$ART/report.png"}
]
JSON
if browser "views in chromium" spec.json; then
	check "screenshots kept in $ART" [ -s "$ART/report.png" ]
fi

# pprof exports in speedscope (from npm, its own page): a trace profile and a
# CPU sample profile open through its Browse button without an error, and its
# Sandwich view shows each function's total and self time as sonde show does
# (speedscope prints two decimals: within half the last). The functions of at
# least 1 % of the profile's time: speedscope draws only the rows on screen.
speedscope_spec() { # CSV of sonde show: the [total, self] of each function
	awk -F, 'NR > 1 { gsub(/"/, "", $1); t[$1] = $(NF - 1 + off) + 0; f[$1] = $(NF + off) + 0;
		if (t[$1] > max) max = t[$1] }
	END { sep = ""; for (k in t) if (t[k] >= max / 100) {
		printf "%s\"%s\": [%d, %d]", sep, k, t[k], f[k]; sep = ", " } }' off="$1"
}
run collect trace -q -o ss-trace.json -- "$PROGS/cf-recurse"
run export ss-trace.json -f pprof -o ss-trace.pb.gz
# trace CSV: function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns (total, self 3 from the end)
trace_rows=$("$SONDE" show ss-trace.json --format csv | speedscope_spec -3)
spec_items="{\"file\": \"ss-trace.pb.gz\", \"speedscope\": {$trace_rows}}"
if "$SONDE" collect sample -q -o ss-sample.json -- "$PROGS/k-burn" >/dev/null 2>ss-sample.err; then
	run export ss-sample.json -f pprof -o ss-sample.pb.gz
	# sample CSV: function,samples,total_ns,self_ns
	sample_rows=$("$SONDE" show ss-sample.json --format csv | speedscope_spec 0)
	spec_items="$spec_items, {\"file\": \"ss-sample.pb.gz\", \"speedscope\": {$sample_rows}}"
else
	skip "a sample profile in speedscope" "perf_event sampling is not available here: $(tail -1 ss-sample.err)"
fi
echo "[$spec_items]" >ss-spec.json
check "speedscope: the functions to compare are read from sonde show" \
	jq -e '[.[].speedscope | length] | all(. > 0)' ss-spec.json
browser "pprof exports in speedscope" ss-spec.json || true

# make run's own report (the same three profiles of the bundled example) and a C
# timer's: in Chromium, every bar is its table's value and is drawn to scale
E=$BUILD/examples
if [ -x "$E/sort-traced" ] && [ -x "$E/timer" ]; then
	"$SONDE" collect time -q -r 5 -o mr-time.json -- "$E/sort" 200000 &&
		"$SONDE" collect memory -q -o mr-memory.json -- "$E/sort" 200000 >/dev/null &&
		"$SONDE" collect trace -q -o mr-trace.json -- "$E/sort-traced" 20000 >/dev/null &&
		"$SONDE" report mr-trace.json mr-memory.json mr-time.json -o mr.html >/dev/null &&
		"$E/timer" 8 mr-timer.json >/dev/null && "$SONDE" report mr-timer.json -o mr-timer.html >/dev/null
	check "make run's report and a timer's report written" sh -c '[ -s mr.html ] && [ -s mr-timer.html ]'
	printf '[{"file": "%s", "bars": true}, {"file": "%s", "bars": true}]\n' "$PWD/mr.html" \
		"$PWD/mr-timer.html" >mr-spec.json
	browser "report bars against the tables in chromium" mr-spec.json
else
	skip "make run's report in chromium" "the examples are not built"
fi
finish

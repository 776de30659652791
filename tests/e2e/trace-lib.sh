# trace-lib.sh - what the trace collector's tests share (both engines), sourced after lib.sh.

# calls FILE FUNC: the calls of FUNC recorded in a trace profile
calls() { jq -r --arg f "$2" '[.resource_type_map[] | select(.uid == $f) | .summary.calls] | add // 0' "$1"; }
# parent FILE FUNC: the functions whose contexts call FUNC, sorted, joined by ','
parent() {
	jq -r --arg f "$2" '.trace as $t | [$t.contexts[] as $c | select($t.functions[$c[2]].name == $f)
		| ($t.contexts[] | select(.[0] == $c[1]) | $t.functions[.[2]].name) // "-"] | unique | join(",")' "$1"
}

# nested FILE: the Perfetto export's slices nest per thread (none crosses its parent)
nested() {
	python3 - "$1" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
stacks = {}
for e in ev:  # in file order: by thread, then start
    st = stacks.setdefault((e["pid"], e["tid"]), [])
    while st and e["ts"] >= st[-1] - 1e-6:
        st.pop()
    if st and e["ts"] + e["dur"] > st[-1] + 1e-6:
        sys.exit("slice %s crosses its parent" % e["name"])
    st.append(e["ts"] + e["dur"])
PY
}

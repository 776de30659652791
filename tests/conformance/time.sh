#!/bin/sh
# Conformance of sonde's statistics of timings with hyperfine's, on the same
# samples: hyperfine times a command (its JSON export keeps every run), the
# runs go into a profile (Perun's list-of-records form, seconds), and `sonde
# show -f json` must give hyperfine's mean, σ, median, min and max, and flag
# outliers exactly when hyperfine warns of them (its rule: |x - median| / MAD
# above 14.826; sonde counts none when the MAD is 0, where hyperfine divides by
# machine epsilon — a case real timings do not meet).
. "$SRC/tests/conformance/lib.sh"
need_peer hyperfine

# same NAME RUNS COMMAND...: hyperfine's figures and sonde's on hyperfine's runs
same() {
	name=$1 runs=$2
	shift 2
	if ! hyperfine -N --runs "$runs" --style basic --export-json h.json "$*" >h.out 2>&1; then
		not_ok "$name: hyperfine failed"
		sed 's/^/# /' h.out
		return
	fi
	/usr/bin/python3 - h.json prof.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
recs = [{"uid": r["command"], "type": "time", "subtype": "real", "order": i + 1, "amount": t}
        for i, t in enumerate(r["times"])]
json.dump({"origin": "0" * 40,
           "header": {"type": "time", "cmd": r["command"], "workload": "", "params": "",
                      "units": {"time": "s"}},
           "collector_info": {"name": "time", "params": {}}, "postprocessors": [],
           "global": {"timestamp": 0, "resources": recs}}, open(sys.argv[2], "w"))
PY
	"$SONDE" show prof.json --format json >s.json 2>s.err
	/usr/bin/python3 - h.json s.json h.out >cmp.out 2>&1 <<'PY'
import json, math, sys
h = json.load(open(sys.argv[1]))["results"][0]
s = json.load(open(sys.argv[2]))["rows"][0]
warned = any(w in open(sys.argv[3]).read() for w in ("outliers were detected", "significantly slower"))
bad = 0
for k in ("mean", "stddev", "median", "min", "max"):
    ok = math.isclose(h[k], s[k], rel_tol=1e-9, abs_tol=1e-12)
    print(f"  {k}: hyperfine {h[k]:.9g}, sonde {s[k]:.9g}" + ("" if ok else "  <- differs"))
    bad += not ok
ok = warned == (s["outliers"] > 0)
print(f"  outliers: hyperfine {'warns' if warned else 'says nothing'}, sonde counts {s['outliers']}"
      + ("" if ok else "  <- differs"))
sys.exit(1 if bad or not ok else 0)
PY
	if [ $? = 0 ]; then ok "$name: the same statistics and outliers as hyperfine"; else not_ok "$name: sonde and hyperfine differ"; fi
	sed 's/^/# /' cmp.out
}

head -c 2000000 /dev/urandom >data.bin
same "python3 -c pass, 30 runs" 30 /usr/bin/python3 -c pass
same "gzip of 2 MB, 20 runs" 20 gzip -c -1 data.bin
same "true, 100 runs" 100 /bin/true
same "sleep 0.01, 20 runs" 20 /bin/sleep 0.01
finish

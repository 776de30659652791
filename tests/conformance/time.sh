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

# measured: each times the same command, in turns (5 rounds of RUNS runs), and
# their best rounds agree (what load does is add time: the best round is the
# one it touched least). Wall time on a timer's length (a run's
# wall time, from before the target's start to its reaping: hyperfine -N
# spawns it itself, sonde through sonde-spawn, which reports the clone's
# time); CPU time (user + sys, both from wait4) on CPU work, whose wall time
# the tests beside it move by 20 % between rounds. CPU time moves with the
# load too (gzip's best rounds were 64 and 75 ms under a make test), so for it
# each round's two figures, taken one after the other, are compared, and the
# median of the five ratios is the answer.
# measured NAME WHAT TOLERANCE-PCT RUNS COMMAND...: WHAT is wall (medians), least (the
# fastest run's wall time) or cpu (means);
# TOLERANCE-PCT is one figure (either way) or BELOW:ABOVE.
# Load moves the two tools' figures apart (two busy loops here took /bin/true's
# least from 1.7 to 3.9 ms and sonde / hyperfine from 0.95 to 0.82): when the
# figures disagree while some task waited for a CPU over a quarter of the time
# (/proc/pressure/cpu), the comparison runs again, three times at most, and
# ends in a SKIP that says so if the machine stayed busy.
measured() {
	name=$1 what=$2 tol=$3 runs=$4
	shift 4
	for attempt in 1 2 3; do
		w0=$(cpu_waited) t0=$(date +%s%N)
		measured_once "$@"
		busy=$(busy_since "$w0" "$t0")
		if [ "$agree" = 1 ]; then
			ok "$label"
			return
		fi
		[ -n "$busy" ] && [ "$busy" -gt 250 ] || break
		echo "# attempt $attempt disagreed while a task waited for a CPU $busy ‰ of the time: $label"
	done
	if [ -n "$busy" ] && [ "$busy" -gt 250 ]; then
		skip "$label" "the machine was busy: a task waited for a CPU $busy ‰ of the time"
	else
		not_ok "$label${busy:+ (a task waited for a CPU $busy ‰ of the time)}"
	fi
}

# measured_once COMMAND...: five rounds; sets agree (1 or 0) and label
measured_once() {
	if [ "$what" = wall ]; then
		hq='.results[0].median * 1e9'
		sq='[.rows[] | select(.subtype == "real")][0].median'
	elif [ "$what" = least ]; then
		hq='.results[0].min * 1e9'
		sq='[.rows[] | select(.subtype == "real")][0].min'
	else
		hq='(.results[0].user + .results[0].system) * 1e9'
		sq='[.rows[] | select(.subtype == "user" or .subtype == "sys") | .mean] | add'
	fi
	: >hm.txt
	: >sm.txt
	# a line a round in each file, "-" where the tool measured nothing, so the
	# rounds stay paired
	for _ in 1 2 3 4 5; do
		v=$(hyperfine -N --runs "$runs" --style none --export-json hm.json "$*" >/dev/null 2>&1 &&
			jq "$hq" hm.json) || v=
		echo "${v:--}" >>hm.txt
		v=$("$SONDE" collect time -q -r "$runs" -o sm.json -- "$@" >/dev/null 2>&1 &&
			"$SONDE" show sm.json --format json | jq "$sq") || v=
		echo "${v:--}" >>sm.txt
	done
	h=$(grep -v '^-$' hm.txt | sort -g | sed -n 1p | awk '{ printf "%.0f", $1 }')
	m=$(grep -v '^-$' sm.txt | sort -g | sed -n 1p | awk '{ printf "%.0f", $1 }')
	agree=0
	if [ -z "$h" ] || [ -z "$m" ]; then
		label="$name: measured by both (hyperfine: ${h:-none}, sonde: ${m:-none})"
		return
	fi
	lo=${tol%%:*} hi=${tol#*:}
	if [ "$what" = cpu ]; then # the median round's sonde / hyperfine
		r=$(paste hm.txt sm.txt | awk '$1 != "-" && $2 != "-" && $1 > 0 { print $2 / $1 }' | sort -g |
			awk '{ r[NR] = $1 } END { if (NR) printf "%.3f", NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2 }')
		label="$name: the cpu time sonde measures is hyperfine's (sonde / hyperfine ${r:-none} in the median of 5 rounds, within -$lo/+$hi %; best rounds $m ns and $h ns)"
		awk -v r="${r:-0}" -v l="$lo" -v u="$hi" 'BEGIN { exit !(r >= 1 - l / 100 && r <= 1 + u / 100) }' &&
			agree=1
		return
	fi
	label="$name: the $what time sonde measures is hyperfine's ($m ns, hyperfine's $h ns, within -$lo/+$hi %)"
	awk -v a="$m" -v b="$h" -v l="$lo" -v u="$hi" 'BEGIN { exit !(a >= b * (1 - l / 100) && a <= b * (1 + u / 100)) }' &&
		agree=1
}
measured "sleep 0.1, measured by each" wall 3 6 /bin/sleep 0.1
measured "gzip of 2 MB, measured by each" cpu 15 10 gzip -c -1 data.bin
# The fastest run of an empty program (0.85-1.7 ms on these VMs) shows what
# each tool adds to a run (the medians of runs this short move by 10 % between
# rounds). sonde's reads 2-11 % under hyperfine's: hyperfine's clock starts
# before its own posix_spawn, sonde's in sonde-spawn just before the clone, and
# what hyperfine adds moves between runs (its least 1.77-1.91 ms against
# sonde's 1.66-1.70 on a quiet VM). So sonde may read up to 20 % under (a clock
# started after the exec would read most of the run less) and at most 3 % over:
# a sonde-spawn started afresh for each run read 7-8 % over (the new process
# counted as busy, so the kernel moved the target to the other CPU at its exec,
# and the run's end waited for sonde's idle CPU to wake).
# Under a sanitizer sonde's own work around each run is slower (it read 4 %
# over hyperfine's on a quiet VM): what sonde adds is the release build's claim.
san=$(opt b_sanitize)
if [ -n "$san" ] && [ "$san" != none ]; then
	skip "true, measured by each: the least time sonde measures is hyperfine's" \
		"this build is sanitized ($san): what sonde adds to a run is measured in a release build"
else
	measured "true, measured by each" least 20:3 200 /bin/true
fi
finish

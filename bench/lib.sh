# lib.sh - helpers the benchmark scripts share (sourced).
now() { date +%s%N; }
# wall COMMAND...: the wall time of a whole command, in ns (its output discarded)
wall() { t0=$(now); "$@" >/dev/null 2>&1; t1=$(now); echo $((t1 - t0)); }
# median FILE: the median of the numbers in FILE, one per line
median() { sort -n "$1" | awk 'BEGIN { OFMT = "%.15g" } {v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# collect_round WALLFILE RUNFILE COLLECTOR CMD...: `sonde collect COLLECTOR`
# of CMD into $TMP/p.json; the command's wall time (ns) appended to WALLFILE,
# the run alone as the profile times it (less sonde's own time) to RUNFILE
collect_round() {
	_cr_wall=$1 _cr_run=$2 _cr_what=$3 # the scripts' own variables stay untouched
	shift 3
	rm -f "$TMP/p.json"
	wall "$SONDE" collect "$_cr_what" -q -o "$TMP/p.json" -- "$@" >>"$_cr_wall"
	jq '.stats.duration_ns - .stats.overhead.sonde_ns' "$TMP/p.json" >>"$_cr_run"
}

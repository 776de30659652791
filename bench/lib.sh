# lib.sh - helpers the benchmark scripts share (sourced).
now() { date +%s%N; }
# wall COMMAND...: the wall time of a whole command, in ns (its output discarded)
wall() { t0=$(now); "$@" >/dev/null 2>&1; t1=$(now); echo $((t1 - t0)); }
# median FILE: the median of the numbers in FILE, one per line
median() { sort -n "$1" | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

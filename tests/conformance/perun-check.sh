#!/bin/sh
# Conformance of sonde check's Perun methods with Perun's definitions:
# perun-check.py computes them the way Perun's code does, with the same
# libraries (numpy's polyfit, scipy's linregress and MAD, pandas' quantiles),
# from the same two profiles, and every verdict must be sonde's. Perun itself
# is not a Debian package. Profiles: the exclusive times of a program whose
# one function got ten times slower (trace), and the regression models of an
# allocation that went from linear to quadratic in the size and back (memory,
# exact bytes).
. "$SRC/tests/conformance/lib.sh"
REF="/usr/bin/python3 $SRC/tests/conformance/perun-check.py"
if ! /usr/bin/python3 -c 'import numpy, scipy, pandas' 2>/dev/null; then
	echo "1..0 # SKIP python3-numpy, python3-scipy or python3-pandas is missing (scripts/install-deps installs them)"
	exit 0
fi

# agree NAME METHOD BASELINE TARGET [CUTOFF]: Perun's verdicts are sonde's
agree() {
	name=$1 method=$2 b=$3 t=$4 cut=${5:-0}
	$REF "$method" "$b" "$t" "$cut" | sort >ref.txt
	"$SONDE" check "$b" "$t" --method "$method" --cutoff "$cut" --format json >chk.json
	jq -r '.pairs[0].results[] | select(.subtype != "self, all functions") |
		[.uid, .verdict] + (if .detail | test(", (constant|linear|quadratic|unknown) change")
		then [.detail | capture(", (?<k>[a-z]+) change").k] else [] end) | @tsv' \
		chk.json | sort >sonde.txt
	if [ -s ref.txt ] && diff ref.txt sonde.txt >diff.txt; then
		ok "$name: $(wc -l <ref.txt) verdicts, each Perun's"
	else
		not_ok "$name: sonde's verdicts differ from Perun's"
		sed 's/^/# /' diff.txt
	fi
}

# exclusive-time-outliers on two runs of t-work, function 7 slowed in the second
"$SONDE" collect trace -q -o a.json -- "$PROGS/t-work" 0
"$SONDE" collect trace -q -o b.json -- "$PROGS/t-work" 7
agree "exclusive-time-outliers" exclusive-time-outliers a.json b.json
agree "exclusive-time-outliers, cutoff 5 %" exclusive-time-outliers a.json b.json 5
check "... with the cutoff, the slowed function is the only one, a severe degradation" \
	sh -c 'jq -e "[.pairs[0].results[] | select(.subtype == \"self\" and
		.verdict != \"no change\")] | map(.uid + \": \" + .verdict) ==
		[\"work_7: severe degradation\"]" chk.json'
agree "exclusive-time-outliers, a profile against itself" exclusive-time-outliers a.json a.json

# the regression methods on memory profiles of three commits
export HOME="$WORK/home"
unset SONDE_CONFIG XDG_CONFIG_HOME
mkdir -p repo "$HOME"
cd repo || exit 1
git init -q
git config user.name t && git config user.email t@t
profile() {
	alloc_prog "$1"
	cc -O0 -g -o prog prog.c && git add prog.c && git commit -qm "$1" &&
		"$SONDE" run matrix -q && ls .sonde/objects/"$(git rev-parse HEAD)"/*.json
}
"$SONDE" init >/dev/null
"$SONDE" config set cmds "[./prog]"
"$SONDE" config set generators.workload "[{id: n, type: integer, min_range: 100, max_range: 1000, step: 100}]"
"$SONDE" config set workloads "[n]"
"$SONDE" config set collectors "[memory]"
"$SONDE" config set postprocessors "[{name: regression, params: {per: structure-unit-size}}]"
"$SONDE" config set profiles.register_after_run true
p1=$(profile "n * 64")
p2=$(profile "n * n")
p3=$(profile "n * 80")
for m in linear-regression polynomial-regression; do
	agree "$m: linear to quadratic" $m "$p1" "$p2"
	agree "$m: quadratic to linear" $m "$p2" "$p3"
	agree "$m: a profile against itself" $m "$p1" "$p1"
done
"$SONDE" check "$p1" "$p2" --method local-statistics --format json >chk.json
check "local-statistics: linear to quadratic, every interval changed, a degradation" \
	sh -c 'jq -e "[.pairs[0].results[] | select(.uid | startswith(\"keep:\"))][0] |
		.verdict == \"degradation\" and (.detail | test(\"20 of 20 intervals changed\"))" chk.json'
"$SONDE" check "$p1" "$p1" --method local-statistics --format json >chk.json
check "local-statistics: a profile against itself, no change anywhere" \
	sh -c 'jq -e "[.pairs[0].results[].verdict] | unique == [\"no change\"]" chk.json'
finish

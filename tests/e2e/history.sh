#!/bin/sh
# History checks: three commits of a program, the second making its
# allocation quadratic in the size; `sonde run matrix` (an integer generator,
# the regression, registered after each run) on each; `sonde check all`
# finds the degradation at the second commit with the model change, `check
# head` compares the third with its nearest ancestor, and `sonde log` shows
# what each commit's check found. Allocated bytes are exact, so the verdicts
# are not at the mercy of a loaded machine.
. "$SRC/tests/e2e/lib.sh"

export HOME="$WORK/home"
unset SONDE_CONFIG XDG_CONFIG_HOME
mkdir -p repo "$HOME"
cd repo || exit 1
git init -q
version() {
	alloc_prog "$1"
	git add prog.c && git commit -qm "$2"
}
"$SONDE" init >/dev/null
"$SONDE" config set cmds "[./prog]"
"$SONDE" config set execute.pre_run "[cc -O0 -g -o prog prog.c]"
"$SONDE" config set generators.workload "[{id: n, type: integer, min_range: 100, max_range: 1000, step: 100}]"
"$SONDE" config set workloads "[n]"
"$SONDE" config set collectors "[memory]"
"$SONDE" config set postprocessors "[{name: regression, params: {per: structure-unit-size}}]"
"$SONDE" config set profiles.register_after_run true

version "n * 64" linear
run run matrix
check "commit 1 (linear): the matrix runs, its profile registered" all '[ "$rc" = 0 ]' \
	'"$SONDE" log | grep -q "1 profile .*linear"'
run check head
check "check head on the first commit: no ancestor to compare with, said, exit 1" \
	all '[ "$rc" = 1 ]' 'has "$err" "no ancestor"'
version "n * n" quadratic
"$SONDE" run matrix -q
echo notes >README && git add README && git commit -qm docs
"$SONDE" run matrix -q
c2=$(git rev-parse --short=12 HEAD~1)

run check head
check "check head on commit 3 (a docs change): compared with commit 2, no degradation, exit 0" \
	all '[ "$rc" = 0 ]' "has \"\$out\" \"commit $c2\"" 'has "$out" "0 degradations found"'
run check all
check "check all: a degradation in the history, exit 4" [ "$rc" = 4 ]
check "... at commit 2: the allocation went from linear to quadratic" \
	sh -c 'printf "%s\n" "$1" | sed -n "/^commit $2\$/,/^commit $2:/p" |
		grep "keep:.*malloc.*severe degradation.*best-model-order: linear -> quadratic"' \
	_ "$out" "$c2"
check "... commit 2 has degradations, commit 3 none" \
	all "has \"\$out\" \"commit $c2: 2 degradations\"" \
	"has \"\$out\" \"commit $(git rev-parse --short=12 HEAD): 0 degradations\""
run log
check "sonde log: each commit's check (no baseline, degradations, none)" \
	all 'printf "%s\n" "$out" | grep -q "2 degradations .*quadratic"' \
	'printf "%s\n" "$out" | grep -q "no degradation .*docs"' \
	'printf "%s\n" "$out" | grep -q "no baseline .*linear"'
run check all --format json
check "check all --format json: each pair names its baseline's commit" \
	sh -c 'printf "%s" "$1" | jq -e "[.pairs[].baseline_commit] | length == 2 and all(length == 40)"' \
	_ "$out"
# the configuration's strategies pick the methods (Perun's names too)
"$SONDE" config set degradation.strategies "[{collector: memory, method: average_amount_threshold}, {method: integral}]"
run check all --format json
check "degradation.strategies: the first that matches judges (Perun's average_amount_threshold)" \
	sh -c 'printf "%s" "$1" | jq -e "[.pairs[].method] | unique == [\"average-amount\"]"' _ "$out"
"$SONDE" config set degradation.apply all
run check all --format json
check "degradation.apply all: every strategy that matches judges each pair" \
	sh -c 'printf "%s" "$1" | jq -e "[.pairs[].method] == [\"average-amount\", \"integral\",
		\"average-amount\", \"integral\"]"' _ "$out"
run check all --method welch --format json
check "--method overrides the strategies" \
	sh -c 'printf "%s" "$1" | jq -e "[.pairs[].method] | unique == [\"welch\"]"' _ "$out"
"$SONDE" config set degradation.strategies "[{method: local_statistics}]"
run check all --format json
check "Perun's local_statistics by name: every interval of commit 2 changed" \
	sh -c 'printf "%s" "$1" | jq -e "[.pairs[].method] | unique == [\"local-statistics\"]" &&
		printf "%s" "$1" | jq -e "[.pairs[].results[] | select(.detail // \"\" |
		test(\"20 of 20 intervals changed\"))] | length == 2"' _ "$out"
"$SONDE" config set degradation.strategies "[{method: cachegrind_regression}]"
run check all
check "a method sonde does not have: exit 2, named" \
	all '[ "$rc" = 2 ]' 'has "$err" "cachegrind_regression"'
"$SONDE" config set degradation.strategies "[]"

# -c: a parent without profiles gets them first, on a worktree of its own (a
# profile the commit itself holds at its top is its file, not a baseline)
"$SONDE" collect time -q -r 1 -o committed.json -- /bin/true
echo more >>README && git add README committed.json && git commit -qm "docs 2"
c4=$(git rev-parse --short=12 HEAD)
echo more >>README && git add README && git commit -qm "docs 3"
"$SONDE" run matrix -q
total() { "$SONDE" log | awk '{ s += $2 } END { print s + 0 }'; }
before=$(total)
run check head -c
check "check head -c: only the baseline run's profile registered, not the commit's committed.json" \
	[ "$(total)" = $((before + 1)) ]
check "check head -c: the parent's baselines collected on a worktree of it, then compared" \
	all '[ "$rc" = 0 ]' "has \"\$err\" \"collecting the baselines of $c4\"" \
	"has \"\$out\" \"commit $c4\"" 'has "$out" "0 degradations found"'
check "... registered for the parent, and the worktree gone" \
	all '"$SONDE" log | grep -q "^$c4 *1 profile"' \
	'[ "$(git worktree list | wc -l)" = 1 ]'

# -c with a textfile generator: the worktree's runs read the repository's
# files, so their command lines are the repository's and pair
"$SONDE" config set cmds "[wc]"
"$SONDE" config set args "[-l]"
"$SONDE" config set generators.workload "[{id: lines, type: textfile, min_lines: 100, max_lines: 300, step: 100}]"
"$SONDE" config set workloads "[lines]"
"$SONDE" config set postprocessors "[]"
echo more >>README && git add README && git commit -qm "docs 4"
c5=$(git rev-parse --short=12 HEAD)
echo more >>README && git add README && git commit -qm "docs 5"
"$SONDE" run matrix -q
run check head -c
check "check head -c, textfile workloads: the parent's baselines pair with the commit's profiles" \
	all '[ "$rc" = 0 ]' "has \"\$out\" \"commit $c5\"" '! has "$err" "no ancestor"' \
	"\"\$SONDE\" log | grep -q \"^$c5 *1 profile\""
"$SONDE" config set cmds "[./prog]"
"$SONDE" config set args "[]"

# a time profile over a generator's sizes: one resource per metric and size,
# one model per metric, so one verdict per metric
mkdir "$WORK/sizes" && cd "$WORK/sizes" && git init -q || exit 1
alloc_prog "n * 64" && git add prog.c && git commit -qm one
"$SONDE" init >/dev/null
"$SONDE" config set cmds "[./prog]"
"$SONDE" config set execute.pre_run "[cc -O0 -g -o prog prog.c]"
"$SONDE" config set generators.workload "[{id: n, type: integer, min_range: 100, max_range: 1000, step: 100}]"
"$SONDE" config set workloads "[n]"
"$SONDE" config set collectors "[{name: time, params: {repeat: 2}}]"
"$SONDE" config set postprocessors "[{name: regression}]"
"$SONDE" config set profiles.register_after_run true
"$SONDE" run matrix -q
alloc_prog "n * 65" && git commit -qam two
"$SONDE" run matrix -q
run check head --method integral --format json
check "check head on a time profile over 10 sizes: one verdict per metric, not one per size" \
	sh -c 'printf "%s" "$1" | jq -e "[.pairs[0].results[] | select(.subtype == \"real\")] |
		length == 1 and .[0].workload == null and (.[0].method | startswith(\"integral\"))"' \
	_ "$out"
cd "$WORK/repo" || exit 1

# two command lines of one program
"$SONDE" collect time -q -r 3 -o a.json -- ./prog 100
"$SONDE" collect time -q -r 3 -o b.json -- ./prog 200
run check a.json b.json --format json
check "two command lines: without --pair their runs do not meet (not in baseline)" \
	sh -c 'printf "%s" "$1" | jq -e "[.pairs[0].results[] | select(.subtype == \"real\")] |
		map(.verdict) | index(\"not in baseline\") != null"' _ "$out"
run check --pair a.json b.json --format json
check "--pair: they meet under the baseline's command, and are judged" \
	sh -c 'printf "%s" "$1" | jq -e "[.pairs[0].results[] | select(.subtype == \"real\")] |
		length == 1 and .[0].uid == \"./prog 100\" and .[0].n_target == 3 and
		.[0].n_baseline == 3"' _ "$out"
run check head nope
check "check head with a revision that is not one: exit 1, one line" \
	all '[ "$rc" = 1 ]' '[ "$(printf "%s\n" "$err" | wc -l)" = 1 ]'

# A history with a merge: a side branch from commit 1, the quadratic change on
# main, then the merge. `check all` compares each commit with its own
# ancestors only: the side branch's commit is never paired with main's.
mkdir "$WORK/merge" && cd "$WORK/merge" || exit 1
git init -q
"$SONDE" init >/dev/null
"$SONDE" config set cmds "[./prog]"
"$SONDE" config set execute.pre_run "[cc -O0 -g -o prog prog.c]"
"$SONDE" config set generators.workload "[{id: n, type: integer, min_range: 100, max_range: 1000, step: 300}]"
"$SONDE" config set workloads "[n]"
"$SONDE" config set collectors "[memory]"
"$SONDE" config set postprocessors "[{name: regression, params: {per: structure-unit-size}}]"
"$SONDE" config set profiles.register_after_run true
version "n * 64" linear
"$SONDE" run matrix -q
git checkout -q -b side && echo side >SIDE && git add SIDE && git commit -qm side
"$SONDE" run matrix -q
git checkout -q - && version "n * n" quadratic
"$SONDE" run matrix -q
git merge -q --no-edit side
"$SONDE" run matrix -q
run check all --format json
printf '%s' "$out" | jq -r '.pairs[] | [.baseline_commit, .target] | @tsv' >pairs.tsv
check "a merge history: 3 pairs, each baseline an ancestor of its target's commit" \
	sh -c '[ "$(wc -l <pairs.tsv)" = 3 ] && while IFS="	" read -r b t; do
		c=$(jq -r .origin "$t") && git merge-base --is-ancestor "$b" "$c" || exit 1
	done <pairs.tsv'
finish

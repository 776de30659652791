#!/bin/sh
# Batches: sonde config (the store's file over the user's), sonde run job and
# sonde run matrix (generators, postprocessors, failing jobs, parallel jobs),
# in a scratch git repository.
. "$SRC/tests/e2e/lib.sh"

export HOME="$WORK/home" SONDE_CONFIG="$WORK/home/user.yaml"
unset XDG_CONFIG_HOME VISUAL EDITOR
mkdir -p repo "$HOME"
cd repo || exit 1
git init -q
cat >prog.c <<'EOF'
#include <stdlib.h>
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100, i, j;
	volatile long s = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < 3000; j++)
			s += j;
	return 0;
}
EOF
git add prog.c && git commit -qm one

# ---- config ------------------------------------------------------------------------------------
run config set cmds "[./prog]"
check "config set outside a store: exit 1, says sonde init" all '[ "$rc" = 1 ]' 'has "$err" "sonde init"'
"$SONDE" init >/dev/null
run config set cmds "[./prog]"
check "config set: exit 0, the store's file written" all '[ "$rc" = 0 ]' '[ -f .sonde/config.yaml ]'
"$SONDE" config --user set cmds "[./other]"
"$SONDE" config --user set format.output_profile_template "%collector%-%workload%"
"$SONDE" config set format.output_profile_template "%collector%-%cmd%-%workload%"
run config get cmds
check "get: the lists of both files gathered, the store's first" [ "$out" = "- ./prog
- ./other" ]
run config get format.output_profile_template
check "get: the store's scalar wins over the user's" [ "$out" = "%collector%-%cmd%-%workload%" ]
run config --user get format.output_profile_template
check "--user get: the user's own" [ "$out" = "%collector%-%workload%" ]
run config set collectors.0.name time
run config set collectors.0.params.repeat 3
check "a numeric part makes a list: collectors is a list of one mapping" \
	all 'grep -q "^- name: time" .sonde/config.yaml' \
	'[ "$("$SONDE" config get collectors.0.params.repeat)" = 3 ]'
run config set collectors.5.name x
check "an index past a list's end: exit 2" [ "$rc" = 2 ]
run config get nothing.here
check "an unset key: exit 1, one line" all '[ "$rc" = 1 ]' '[ "$(printf "%s\n" "$err" | wc -l)" = 1 ]'
run config set note "'007'"
run config get note
check "a quoted value stays a string ('007'), and reads back as written" \
	all '[ "$out" = 007 ]' "grep -q '\"007\"' .sonde/config.yaml"
cp .sonde/config.yaml before.yaml
printf 'cmds: [1,\n' >"$WORK/broken.yaml"
SONDE_CONFIG="$WORK/broken.yaml" run config show
check "a user file that is not YAML: exit 2, file:line:column" \
	all '[ "$rc" = 2 ]' 'has "$err" "broken.yaml:2:1"'
# 100 000 nested [ took libyaml 22 s before the depth could be refused: refused first
{ printf 'cmds: '; head -c 100000 /dev/zero | tr '\0' '['; } >"$WORK/deep.yaml"
t0=$(date +%s)
SONDE_CONFIG="$WORK/deep.yaml" run config show
check "100 000 nested [: exit 2, the 65th level's place said, at once ($(($(date +%s) - t0)) s)" \
	all '[ "$rc" = 2 ]' 'has "$err" "deep.yaml:1:70: nested deeper than 64 levels"'
{ echo "cmds: # [[[["; for i in $(seq 20); do echo "  - \"[[[[ {{{{\""; done
  echo "  - '[[[[{{{{'"; echo "  - x # [[[["; } >"$WORK/quoted.yaml"
SONDE_CONFIG="$WORK/quoted.yaml" run config show
check "brackets inside quotes and comments are not levels" '[' "$rc" = 0 ']'
cat >"$WORK/ed-good" <<'EOF'
#!/bin/sh
printf '# a comment the edit keeps\nexecute:\n  pre_run: [cc -O0 -o prog prog.c]\n' >>"$1"
EOF
cat >"$WORK/ed-bad" <<'EOF'
#!/bin/sh
printf 'cmds: [\n' >"$1"
EOF
chmod +x "$WORK/ed-good" "$WORK/ed-bad"
EDITOR="$WORK/ed-bad" run config edit
check "edit into invalid YAML: exit 1, the file unchanged, the edit kept aside" \
	all '[ "$rc" = 1 ]' 'cmp -s before.yaml .sonde/config.yaml' 'has "$err" "kept in"'
EDITOR="$WORK/ed-good" run config edit
check "edit into valid YAML: kept as written, comments and all" \
	all '[ "$rc" = 0 ]' 'grep -q "a comment the edit keeps" .sonde/config.yaml'
run config get execute.pre_run.0
check "and read back" [ "$out" = "cc -O0 -o prog prog.c" ]
rm -f "$SONDE_CONFIG"

# ---- run job -----------------------------------------------------------------------------------
cc -O0 -o prog prog.c
run run job -b ./prog -c time --cp repeat=3 -w 2000
check "run job: exit 0" [ "$rc" = 0 ]
check "a progress line and a table" all 'has "$err" "\[1/1\] ok"' 'has "$out" "collector"'
p=$(ls .sonde/jobs/time-prog-2000*.json 2>/dev/null | head -1)
check "the profile, named by the template, in the store's jobs/" all '[ -n "$p" ]' '[ -f "$p" ]'
check "3 runs of ./prog with the workload 2000 recorded, valid" \
	all "jq -e '.header.workload == \"2000\" and .stats.runs == 3' \"\$p\"" 'validate "$p"'
run run job -c time
check "run job without -b: exit 2" [ "$rc" = 2 ]
run run matrix -b ./prog
check "run matrix with job options: exit 2" [ "$rc" = 2 ]

# ---- run matrix: a generator of sizes, a postprocessor ------------------------------------------
"$SONDE" config set generators.workload "[{id: sizes, type: integer, min_range: 1000, max_range: 9000, step: 2000}]"
"$SONDE" config set workloads "[sizes]"
"$SONDE" config set postprocessors "[{name: regression}]"
rm -f .sonde/jobs/*
run run matrix
check "run matrix: exit 0" [ "$rc" = 0 ]
check "pre_run ran first" has "$err" "pre_run: cc -O0"
set -- .sonde/jobs/*.json
np=$#
m=$1
check "the generator's five sizes make one profile" all '[ "$np" = 1 ]' '[ -f "$m" ]'
check "... its structure-unit-size the sizes 1000..9000" \
	jq_eq "$m" '[.resources[]."structure-unit-size"[]] | unique | @csv' '1000,3000,5000,7000,9000'
check "... and the regression's models in it (real time grows with the size)" \
	jq -e '[.models[] | select(.best and .subtype == "real")] | length == 1' "$m"
check "the matrix's profile is valid" validate "$m"
"$SONDE" config set profile_for_each_workload true
rm -f .sonde/jobs/*
run run matrix
check "profile_for_each_workload: five profiles" [ "$(ls .sonde/jobs | wc -l)" = 5 ]
"$SONDE" config set profile_for_each_workload false

# ---- a failing job among good ones ---------------------------------------------------------------
"$SONDE" config set cmds "[./prog, ./missing]"
"$SONDE" config set postprocessors "[]"
rm -f .sonde/jobs/*
mkdir -p "$WORK/tmp"
TMPDIR="$WORK/tmp" && export TMPDIR
run run matrix
unset TMPDIR
check "one job fails: exit 1" [ "$rc" = 1 ]
check "... only the failed job's log is left (in TMPDIR), the good one's removed" \
	all '[ "$(ls "$WORK/tmp" | grep -c "^sonde-run-")" = 1 ]' 'has "$err" "$WORK/tmp/sonde-run-"'

check "... the failed job is named, with why (its command was not found)" \
	all 'has "$err" "1 of 2 jobs failed: 2 (collect"' 'has "$err" "exit 127"'
check "... and the good job's profile is kept" [ "$(ls .sonde/jobs | wc -l)" = 1 ]
"$SONDE" config set cmds "[./prog]"
"$SONDE" config set execute.pre_run "[exit 3]"
run run matrix
check "a failing pre_run: exit 1, no job run" all '[ "$rc" = 1 ]' 'has "$err" "no job was run"'
"$SONDE" config set execute.pre_run "[]"
"$SONDE" config set generators.workload "[{id: sizes, type: external}]"
run run matrix
check "a generator type sonde does not know: exit 2, says which" \
	all '[ "$rc" = 2 ]' 'has "$err" "external"'
"$SONDE" config set generators.workload "[{id: lines, type: textfile, min_lines: 100, max_lines: 300, step: 100, max_chars: 50}]"
rm -f .sonde/jobs/*
run run job -b wc -a -l -w lines -c time --cp repeat=1
check "a textfile generator: one profile over its files, each run's size its lines" \
	all '[ "$rc" = 0 ]' \
	"jq -e '.header.workload == \"100,200,300\" and
		([.resources[].\"structure-unit-size\"[]] | unique == [100, 200, 300])' .sonde/jobs/*.json"
check "... the files in the store's workloads/, as many lines as their names say, 50 characters at most" \
	all '[ "$(wc -l <.sonde/workloads/lines/200.txt)" = 200 ]' \
	'[ "$(wc -l <.sonde/workloads/lines/100.txt)" = 100 ]' \
	'[ "$(wc -L <.sonde/workloads/lines/300.txt)" -le 50 ]'
"$SONDE" config set generators.workload "[{id: str, type: string, min_len: 5, max_len: 15, step: 5}]"
rm -f .sonde/jobs/* lens.txt
run run job -b sh -a "-c 'printf \"%s %s\\n\" \"\${#0}\" \"\$0\" >>lens.txt'" -w str -c time --cp repeat=1
check "a string generator: one profile, each run's size the length of the string the command got" \
	all '[ "$rc" = 0 ]' \
	"jq -e '.header.workload == \"5,10,15\" and
		([.resources[].\"structure-unit-size\"[]] | unique == [5, 10, 15])' .sonde/jobs/*.json" \
	'[ "$(cut -d" " -f1 lens.txt | sort -nu | tr "\n" ,)" = "5,10,15," ]' \
	'[ "$(sort -u lens.txt | wc -l)" = 3 ]' \
	'! grep -qv "^[0-9]* [A-Za-z0-9]*$" lens.txt'
# Perun's own keys: a string's step_len, a text file's min_rows, max_rows and
# randomize_rows, and profile_for_each_workload on the generator
"$SONDE" config set generators.workload "[{id: str, type: string, min_len: 2, max_len: 12, step_len: 5, profile_for_each_workload: true}]"
rm -f .sonde/jobs/* lens.txt
run run job -b sh -a "-c 'printf \"%s\\n\" \"\${#0}\" >>lens.txt'" -w str -c time --cp repeat=1
check "a string generator with Perun's step_len 5 and profile_for_each_workload on it: 2, 7, 12, a profile each" \
	all '[ "$rc" = 0 ]' '[ "$(sort -nu lens.txt | tr "\n" ,)" = "2,7,12," ]' \
	'[ "$(ls .sonde/jobs | wc -l)" = 3 ]'
"$SONDE" config set generators.workload "[{id: rows, type: textfile, min_lines: 10, max_lines: 20, step: 10, min_rows: 30, max_rows: 35, randomize_rows: false}]"
rm -f .sonde/jobs/*
run run job -b wc -a -l -w rows -c time --cp repeat=1
check "a textfile generator with Perun's max_rows 35 and randomize_rows false: every line 35 characters" \
	all '[ "$rc" = 0 ]' '[ "$(awk "{ print length(\$0) }" .sonde/workloads/rows/20.txt | sort -u)" = 35 ]' \
	'[ "$(wc -l <.sonde/workloads/rows/20.txt)" = 20 ]'
"$SONDE" config set generators.workload "[{id: str, type: string, min_len: 2, max_len: 12, stepp: 5}]"
run run job -b echo -w str -c time
check "a generator key sonde does not know: exit 2, naming it and the keys there are" \
	all '[ "$rc" = 2 ]' 'has "$err" "unknown key '"'"'stepp'"'"'"' 'has "$err" "step_len"'
"$SONDE" config set vcs.url ../ 2>/dev/null
"$SONDE" config set degradation.bogus 1 2>config-set.err
run run job -b true -c time --cp repeat=1
check "configuration keys sonde does not read: a warning each, Perun's said to be Perun's" \
	all '[ "$rc" = 0 ]' 'has "$err" "unknown configuration key '"'"'degradation.bogus'"'"'"' \
	'has "$err" "'"'"'vcs'"'"' is a key of Perun'"'"'s configuration"' \
	'has "$(cat config-set.err)" "degradation.bogus"'
"$SONDE" config set degradation "{}" 2>/dev/null
"$SONDE" config set vcs "{}" 2>/dev/null
cat >gen.sh <<'EOF'
#!/bin/sh
mkdir -p inputs
for n in 10 40 20; do seq "$n" >"inputs/in_$n.txt"; done
echo skipped >inputs/in_x.txt
EOF
chmod +x gen.sh
"$SONDE" config set generators.workload "[{id: ext, type: external, generator: ./gen.sh, output_dir: inputs, file_format: 'in_{n}.txt'}]"
rm -f .sonde/jobs/*
run run job -b wc -a -l -w ext -c time --cp repeat=1
check "an external generator: run once, its files (in_10, in_20, in_40) one profile, sizes from the names" \
	all '[ "$rc" = 0 ]' 'has "$err" "generator .ext.: ./gen.sh"' \
	"jq -e '.header.workload == \"10,20,40\" and
		([.resources[].\"structure-unit-size\"[]] | unique == [10, 20, 40])' .sonde/jobs/*.json"
cat >gen2.sh <<'EOF'
#!/bin/sh
mkdir -p imgs
for w in 10 20; do for h in 3 5; do seq $((w * h)) >"imgs/img_${w}x${h}.txt"; done; done
EOF
chmod +x gen2.sh
"$SONDE" config set generators.workload "[{id: img, type: external, external_generator: ./gen2.sh, output_dir: imgs, file_format: 'img_<w>x<h>.txt', delimiters: '<>'}]"
rm -f .sonde/jobs/*
run run job -b wc -a -l -w img -c time --cp repeat=1
check "an external generator of two fields (Perun's keys): one profile, a run per file, each row with its w and h" \
	all '[ "$rc" = 0 ]' \
	"jq -e '.header.workload == \"10:3,10:5,20:3,20:5\" and
		([.resources[] | [.\"structure-unit-size\"[0], .w[0], .h[0]]] | unique ==
		 [[10, 10, 3], [10, 10, 5], [20, 20, 3], [20, 20, 5]])' .sonde/jobs/*.json"
check "... the profile is valid" validate .sonde/jobs/*.json
"$SONDE" config set generators.workload "[{id: ext, type: external, generator: 'true', output_dir: inputs, file_format: 'none_{n}.txt'}]"
run run job -b wc -w ext -c time
check "an external generator that makes no file of its format: exit 1, said" \
	all '[ "$rc" = 1 ]' 'has "$err" "made no file"'
"$SONDE" config set generators.workload "[{id: lines, type: textfile, min_lines: 100, max_lines: 300, step: 100, max_chars: 50}]"
cp .sonde/workloads/lines/300.txt first.txt
"$SONDE" run job -q -b wc -a -l -w lines -c time --cp repeat=1
check "... the same text every batch (the command's input does not change between commits)" \
	cmp -s first.txt .sonde/workloads/lines/300.txt

# ---- parallel jobs make the profiles serial jobs make --------------------------------------------
cd "$WORK" && mkdir par && cd par || exit 1
"$SONDE" init >/dev/null
run run job -b "$PROGS/t-sizes" -c trace -w 300 -w 600 -w 900 -w 1200 --jobs 4
check "4 trace jobs, 4 at a time: exit 0" [ "$rc" = 0 ]
check "... trace runs beside other jobs: no note that it must run alone" \
	sh -c "! printf '%s' \"\$1\" | grep -q 'run alone'" - "$err"
for f in .sonde/jobs/*.json; do
	jq -c '[.header.workload, ([.resources["work#0"].amount | length])]' "$f"
done | sort >par.txt
rm -f .sonde/jobs/*
run run job -b "$PROGS/t-sizes" -c trace -w 300 -w 600 -w 900 -w 1200
for f in .sonde/jobs/*.json; do
	jq -c '[.header.workload, ([.resources["work#0"].amount | length])]' "$f"
done | sort >ser.txt
check "... the same calls as one at a time (work: 300, 600, 900, 1200 calls)" \
	cmp -s par.txt ser.txt
check "... and they are what the program makes" \
	[ "$(cut -d, -f2 par.txt | tr -d '[]' | sort -n | tr '\n' ' ')" = "300 600 900 1200 " ]
run run job -b "$PROGS/t-sizes" -c time --cp repeat=2 -w 100 -w 200 --jobs 2
check "time jobs with --jobs 2: they run alone, and it says why" \
	all '[ "$rc" = 0 ]' 'has "$err" "run alone"'

# ---- init --template -------------------------------------------------------------------------
cd "$WORK" && mkdir tpl && cd tpl || exit 1
mkdir bin && cp "$WORK/repo/prog" bin/prog && printf 'all:\n' >Makefile && echo text >notes.sh &&
	chmod +x notes.sh
run init --template master
check "init --template master: exit 0, the programs built here found" \
	all '[ "$rc" = 0 ]' 'has "$out" "1 program found"'
check "... its configuration: the ELF program (not the script), make first, time and memory, registered" \
	all '[ "$("$SONDE" config get cmds)" = "- ./bin/prog" ]' \
	'[ "$("$SONDE" config get execute.pre_run.0)" = make ]' \
	'[ "$("$SONDE" config get collectors.1.name)" = memory ]' \
	'[ "$("$SONDE" config get profiles.register_after_run)" = true ]'
cp .sonde/config.yaml before.yaml
run init --template user
check "a second init: the configuration there is left as it is" \
	all '[ "$rc" = 0 ]' 'cmp -s before.yaml .sonde/config.yaml' 'has "$out" "left as it is"'
run init --template nope
check "an unknown template: exit 2" [ "$rc" = 2 ]

# ---- registered after the run ------------------------------------------------------------------
cd "$WORK/repo" || exit 1
"$SONDE" config set generators.workload "[{id: sizes, type: integer, min_range: 1000, max_range: 3000, step: 1000}]"
"$SONDE" config set profiles.register_after_run true
rm -f .sonde/jobs/*
run run matrix
check "register_after_run: exit 0, the profile registered for HEAD" \
	all '[ "$rc" = 0 ]' '"$SONDE" log | head -1 | grep -q " 1 profile"'

# ---- args: split as a shell splits, nothing substituted ------------------------------------------
printf '#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a"; done >>"%s/args.out"\n' "$WORK" >say.sh
chmod +x say.sh
"$SONDE" config set profiles.register_after_run false
"$SONDE" config set generators "{}"
"$SONDE" config set cmds "[./say.sh]"
"$SONDE" config set args "['\$HOME \"two words\" *.c ~']"
"$SONDE" config set workloads "[w]"
"$SONDE" config set collectors "[time]"
rm -f "$WORK/args.out"
run run matrix
check "config args: quotes group words, and \$HOME, globs and ~ stay as written (docs/config.md)" \
	all '[ "$rc" = 0 ]' \
	'[ "$(cat "$WORK/args.out" | head -4 | tr "\n" "|")" = "\$HOME|two words|*.c|~|" ]'
finish

#!/bin/sh
# Bad input: one clear line, a documented exit code, and nothing partial left.
. "$SRC/tests/e2e/lib.sh"

run collect time -r 1 -- ./no-such-command
check "missing command: exit 127" [ "$rc" = 127 ]
check "missing command: says so" has "$err" "cannot execute './no-such-command': command not found"
check "missing command: no profile" [ -z "$(ls ./*.json 2>/dev/null)" ]
run collect time -r 1 -- no-such-command-in-path
check "missing command in PATH: exit 127" [ "$rc" = 127 ]
printf 'x' >notexec
run collect time -r 1 -- ./notexec
check "not executable: exit 126" [ "$rc" = 126 ]
check "not executable: no profile" [ -z "$(ls ./*.json 2>/dev/null)" ]

run collect time -r -1 -- /bin/true
check "-r -1: exit 2" [ "$rc" = 2 ]
check "-r -1: one clear line" has "$err" "invalid value '-1' for '-r'"
check "-r -1: points at help" has "$err" "try 'sonde collect --help'"
run collect time -r abc -- /bin/true
check "-r abc: exit 2" [ "$rc" = 2 ]
check "-r abc: message" has "$err" "expected an integer"
run collect nosuch -- /bin/true
check "unknown collector: exit 2" [ "$rc" = 2 ]
check "unknown collector: message" has "$err" "unknown collector 'nosuch'"
run collect tim -- true
check "a collector's name mistyped: exit 2, and the near one named" \
	all '[ "$rc" = 2 ]' 'has "$err" "did you mean '"'"'time'"'"'"'
mkdir quiet && git -C quiet init -q
run init -q quiet
check "init -q: the store made, nothing printed" all '[ "$rc" = 0 ]' '[ -z "$out$err" ]' '[ -d quiet/.sonde ]'
run collect time --parameter 'n=' -- /bin/true
check "bad parameter: exit 2" [ "$rc" = 2 ]
run collect time -r 1
check "no command: exit 2" [ "$rc" = 2 ]
run frobnicate
check "unknown command: exit 2" [ "$rc" = 2 ]

printf '{\n  "format_version": 1,\n  "header": {,}\n}\n' >bad.json
run show bad.json
check "malformed JSON: exit 1" [ "$rc" = 1 ]
check "malformed JSON: line and column" has "$err" "'bad.json' is not valid JSON: line 3, column"
printf '{"format_version": 99, "header": {"type": "time"}}' >new.json
run show new.json
check "newer format: exit 3" [ "$rc" = 3 ]
check "newer format: says upgrade" has "$err" "format_version 99 is newer than this sonde reads (1)"
# fields of the wrong type: refused on load, once, for every command (a number
# as header.type crashed `show ... counters` and `report`)
printf '{"format_version": 1, "header": {"type": 5}, "resources": {}}' >typed.json
for c in "show typed.json" "show typed.json counters" "show typed.json memory" "report typed.json -o t.html" \
	"export typed.json --format csv" "check typed.json typed.json"; do
	# shellcheck disable=SC2086
	run $c
	check "header.type a number: '$c' exits 1 with one line" \
		sh -c '[ "$0" = 1 ] && [ "$(printf "%s\n" "$1" | grep -c .)" = 1 ]' "$rc" "$err"
done
check "... naming the field" has "$err" "header.type is not a string"
printf '{"format_version": 1, "header": {"type": "time"}, "stats": {"warnings": [7]}, "resources": {}}' >typed2.json
run show typed2.json
check "a warning that is not an object: exit 1, named" sh -c '[ "$0" = 1 ]' "$rc"
check "... named" has "$err" "stats.warnings.0. is not"
run show /dev/zero
check "a device as a profile: exit 1 at once, one line" sh -c '[ "$0" = 1 ] && [ "$(printf "%s\n" "$1" | grep -c .)" = 1 ]' "$rc" "$err"
printf '{\n "format_version": 1,\n "header": {"type": "time", "cmd": "a long command line here" oops}\n}\n' >ctx.json
run show ctx.json
check "a JSON error quotes the text around it" has "$err" 'long command line here" oops}'
run show missing.json
check "missing profile: exit 1" [ "$rc" = 1 ]
check "missing profile: message" has "$err" "cannot read 'missing.json': No such file or directory"

# an unwritable output directory: refused before running, nothing written
mkdir ro && chmod 555 ro
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$SONDE" collect time -r 1 -o ro/p.json \
		-- /bin/true >/dev/null 2>.err
	rc=$?
	check "unwritable directory: exit 1" [ "$rc" = 1 ]
	check "unwritable directory: message" grep -q "cannot write the profile to 'ro/p.json'" .err
	check "unwritable directory: nothing written" [ -z "$(ls -A ro)" ]
elif [ "$(id -u)" != 0 ]; then
	run collect time -r 1 -o ro/p.json -- /bin/true
	check "unwritable directory: exit 1" [ "$rc" = 1 ]
	check "unwritable directory: nothing written" [ -z "$(ls -A ro)" ]
else
	skip "unwritable directory" "root without setpriv cannot be denied"
fi

# a full disk: a 64 KiB tmpfs; the profile cannot fit, nothing partial remains
mkdir full
if mount -t tmpfs -o size=64k tmpfs full 2>/dev/null; then
	dd if=/dev/zero of=full/filler bs=4k count=15 2>/dev/null
	run collect time -q -r 400 -o full/p.json -- "$PROGS/s-exit"
	check "full disk: exit 1" [ "$rc" = 1 ]
	check "full disk: says why, before running the command" \
		all 'has "$err" "No space left on device"' 'has "$err" "the command was not run"'
	check "full disk: no partial profile" [ "$(ls -A full)" = filler ]
	umount full
	# room at the start, none at the end (the command filled it): the profile
	# is saved in TMPDIR, not lost, and where is said
	mount -t tmpfs -o size=2m tmpfs full && mkdir -p tmp
	TMPDIR="$WORK/tmp" && export TMPDIR
	run collect time -q -r 1 -o full/p.json -- sh -c 'cat /dev/zero >full/fill 2>/dev/null; true'
	unset TMPDIR
	check "a disk filled by the run: exit 1, the profile saved in TMPDIR and said" \
		all '[ "$rc" = 1 ]' 'has "$err" "saved as .*/tmp/p.json. instead"' \
		"jq -e '.resources | length > 0' tmp/p.json" '[ ! -e full/p.json ]'
	umount full
else
	skip "full disk" "cannot mount a tmpfs here (needs root)"
	skip "full disk: says why" "cannot mount a tmpfs here (needs root)"
	skip "full disk: no partial profile" "cannot mount a tmpfs here (needs root)"
	skip "a disk filled by the run" "cannot mount a tmpfs here (needs root)"
fi

# a target that fails: recorded, profile still written, exit 1
run collect time -q -r 3 -o fail.json -- "$PROGS/s-exit" 3
check "failing target: exit 1" [ "$rc" = 1 ]
check "failing target: message" has "$err" "exited with status 3 in run 1"
check "failing target: profile written" jq_eq fail.json .stats.exit_status.code 3
check "failing target: stopped after the failure" jq_eq fail.json .stats.runs 1
run collect time -q -r 3 --ignore-failure -o ign.json -- "$PROGS/s-exit" 3
check "--ignore-failure: exit 0" [ "$rc" = 0 ]
check "--ignore-failure: 3 runs" jq_eq ign.json .stats.failed_runs 3
check "--ignore-failure: warned" jq_eq ign.json '[.stats.warnings[].code] | index("nonzero-exit") != null' true

run collect time -q -r 2 -o segv.json -- "$PROGS/s-segv"
check "segfault: exit 1" [ "$rc" = 1 ]
check "segfault: named" has "$err" "was killed by signal 11 (Segmentation fault)"
check "segfault: signal recorded" jq_eq segv.json .stats.exit_status.signal 11
check "segfault: the run is recorded" jq_eq segv.json '[.resources[] | .amount | length] | unique | join(",")' 1
check "segfault: exit-status column 139" jq_eq segv.json \
	'[.resource_type_map | to_entries[] | select(.value.subtype=="exit-status") | .key][0] as $k | .resources[$k].amount[0]' 139
check "error profiles match the schema" validate fail.json ign.json segv.json
finish

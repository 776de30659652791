# lib.sh - the harness of the end-to-end tests: TAP output, a scratch
# directory, and helpers that run the real sonde binary.
#
# Each test script sources this file, calls check/skip, and ends with finish.
# Environment (set by meson): SONDE, PROGS (test programs), SRC, BUILD.
set -u
: "${SONDE:?}" "${PROGS:?}" "${SRC:?}"
n=0
WORK=$(mktemp -d /tmp/sonde-e2e-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
# a command run once reads sonde's stdin: never the terminal of whoever runs the tests
exec </dev/null
export GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@t
# the symbol cache ($XDG_CACHE_HOME/sonde) starts empty in each script, and the
# user's is left alone (not SONDE_CACHE_DIR: a target must see no SONDE_* variable)
export XDG_CACHE_HOME="$WORK/xdg-cache"

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# check DESCRIPTION COMMAND...: ok when the command succeeds
check() {
	d=$1
	shift
	# what the command prints goes to stderr: stdout is the TAP stream
	if "$@" >&2; then ok "$d"; else not_ok "$d"; fi
}
# finish: every profile sonde wrote in the scratch directory (collector_info and
# machine, as sonde writes them) loads again in sonde: a profile that only other
# tools, or none, can read is a defect whichever option made it. A script that
# makes bad profiles on purpose names them in NOT_LOADABLE.
finish() {
	WORK="$WORK" NOT_LOADABLE="${NOT_LOADABLE:-}" find "$WORK" -name '*.json' -size -64M -exec sh -c '
		for f; do
			jq -e "has(\"format_version\") and has(\"collector_info\") and has(\"machine\")" \
				"$f" >/dev/null 2>&1 || continue
			case " $NOT_LOADABLE " in *" ${f##*/} "*) continue ;; esac
			"$SONDE" show "$f" >/dev/null 2>"$WORK/.load" ||
				printf "%s (%s); " "${f#"$WORK"/}" "$(head -1 "$WORK/.load")"
		done' sh {} + >>"$WORK/.unloadable"
	if [ -s "$WORK/.unloadable" ]; then
		not_ok "profiles written here that sonde cannot load: $(cat "$WORK/.unloadable")"
	else
		ok "every profile written here loads in sonde"
	fi
	echo "1..$n"
}
# all 'COND'...: every condition holds; any 'COND'...: one does. One check over
# several conditions: `check D A && B` would assert A only.
all() {
	for c in "$@"; do
		eval "$c" || return 1
	done
}
any() {
	for c in "$@"; do
		eval "$c" && return 0
	done
	return 1
}

# run ARGS...: run sonde, keeping stdout in $out, stderr in $err and the status in $rc.
# A run still going after RUN_LIMIT seconds (120) hangs: watchdog says where
# each of its threads and processes waits, into the test's log, and kills it,
# so that the script goes on and the hang is found where it happened.
run() {
	exec 9<&0 # a command in the background reads /dev/null, not the caller's stdin
	"$SONDE" "$@" <&9 >"$WORK/.out" 2>"$WORK/.err" &
	_pid=$!
	exec 9<&-
	watchdog "$_pid" &
	_wd=$!
	wait "$_pid"
	rc=$?
	kill "$_wd" 2>/dev/null
	wait "$_wd" 2>/dev/null
	out=$(cat "$WORK/.out")
	err=$(cat "$WORK/.err")
	if [ "${1:-}" = collect ]; then loads_after "$@"; fi
}
# watchdog PID: after RUN_LIMIT seconds, PID's threads and its descendants, each
# with the kernel function it waits in (root: its kernel stack), then SIGTERM and
# SIGKILL; killed before that (the run ended), it stops its sleep
watchdog() {
	trap 'kill "$_s" 2>/dev/null; exit 0' TERM
	# (its own stdio: a TERM between the fork and "_s=" leaves this sleep behind, and
	# one holding the test's output kept meson waiting for it, 120 s)
	sleep "${RUN_LIMIT:-120}" </dev/null >/dev/null 2>&1 &
	_s=$!
	wait "$_s" || exit 0
	echo "# sonde (pid $1) still runs after ${RUN_LIMIT:-120} s: where it waits" >&2
	for _t in /proc/"$1"/task/*; do
		printf '#   thread %s %s: %s %s\n' "${_t##*/}" "$(cat "$_t/comm" 2>/dev/null)" \
			"$(cat "$_t/wchan" 2>/dev/null)" "$(head -4 "$_t/stack" 2>/dev/null | tr '\n' ' ')" >&2
	done
	ps -o pid,ppid,stat,wchan:32,args -g "$(ps -o sid= -p "$1" | tr -d ' ')" 2>/dev/null |
		sed 's/^/#   /' >&2
	kill -TERM "$1" 2>/dev/null
	sleep 5
	kill -KILL "$1" 2>/dev/null
}
# loads_after COLLECT-ARGS...: the profile a collect wrote (-o FILE) loads in
# sonde, checked now (a later run may write over it); finish reports the rest
loads_after() {
	_o=""
	while [ $# -gt 0 ]; do
		case $1 in
		-o | --output) _o=${2:-} && break ;;
		--) break ;;
		esac
		shift
	done
	if [ -z "$_o" ] || [ "$_o" = - ] || [ ! -f "$_o" ] ||
		! jq -e 'has("format_version") and has("collector_info")' "$_o" >/dev/null 2>&1; then
		return 0
	fi
	"$SONDE" show "$_o" >/dev/null 2>"$WORK/.load" ||
		printf '%s (%s); ' "$_o" "$(head -1 "$WORK/.load")" >>"$WORK/.unloadable"
}
# held_up ARGS...: sonde ARGS with sonde stopped (SIGSTOP) for 0.3 s while
# its target runs: ARGS end in a target that creates ./started first and then
# runs for over 0.4 s. Sets rc.
held_up() {
	rm -f started
	"$SONDE" "$@" >/dev/null 2>held.err &
	hp=$!
	i=0
	while [ ! -e started ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	sleep 0.1
	kill -STOP "$hp"
	sleep 0.3
	kill -CONT "$hp"
	wait "$hp"
	rc=$?
}
# cpu_waited: microseconds since boot in which some task waited for a CPU
# (/proc/pressure/cpu's "some" total); nothing where the kernel keeps no PSI
cpu_waited() { sed -n 's/^some .*total=\([0-9]*\)$/\1/p' /proc/pressure/cpu 2>/dev/null; }
# busy_since W0 T0: in per mille of the wall time since T0 (date +%s%N), how
# long some task waited for a CPU (W0: cpu_waited then); nothing without PSI
busy_since() {
	w1=$(cpu_waited)
	[ -n "$1" ] && [ -n "$w1" ] || return 0
	awk -v a="$1" -v b="$w1" -v t0="$2" -v t1="$(date +%s%N)" \
		'BEGIN { printf "%.0f", (b - a) * 1e6 / (t1 - t0) }'
}
# opt NAME: the build's meson option NAME (b_sanitize, prefix...)
opt() { meson introspect "$BUILD" --buildoptions | jq -r ".[] | select(.name == \"$1\") | .value"; }
# jq_eq FILE FILTER EXPECTED
jq_eq() { [ "$(jq -r "$2" "$1")" = "$3" ]; }
validate() { /usr/bin/python3 "$SRC/tests/validate-profile.py" "$SRC/docs/profile.schema.json" "$@"; }
has() { printf '%s' "$1" | grep -q -- "$2"; }
# aligned TEXT WORD: in TEXT's table under the header line that has WORD (to
# the next blank line), every row's right-aligned column WORD ends where the
# header's does, counted in characters ("µs" is one)
aligned() {
	printf '%s' "$1" | /usr/bin/python3 -c '
import sys
lines, word = sys.stdin.buffer.read().decode().split("\n"), sys.argv[1]
at = next(i for i, l in enumerate(lines) if word in l)
end = lines[at].index(word) + len(word)
rows = []
for l in lines[at + 1:]:
    if not l.strip():
        break
    rows.append(l)
bad = [l for l in rows if len(l) < end or l[end - 1] == " " or l[end:end + 1] not in ("", " ")]
for l in bad:
    print("not aligned under %r: %r" % (word, l), file=sys.stderr)
sys.exit(1 if bad or not rows else 0)' "$2"
}
# alloc_prog EXPR: prog.c, whose keep(n) allocates EXPR bytes (n * 64, n * n):
# exact, known allocations for the history checks and their models
alloc_prog() {
	cat >prog.c <<EOF
#include <stdlib.h>
#include <string.h>

void *keep(long n)
{
	char *p = malloc($1);

	memset(p, 1, $1);
	return p;
}

int main(int argc, char **argv)
{
	free(keep(atol(argv[1])));
	return 0;
}
EOF
}

# browser WHAT SPEC: open the files of SPEC in headless chromium (tests/browser/open.js)
# and report its checks as TAP lines; SKIP (and return 1) without node or chromium
browser() {
	pw_dir="${BUILD:-$SRC/build}/tests/browser"
	if ! command -v node >/dev/null 2>&1; then
		skip "$1" "node is not installed (scripts/install-deps installs it)"
		return 1
	elif [ ! -x /usr/bin/chromium ]; then
		skip "$1" "/usr/bin/chromium is not installed (scripts/install-deps installs it)"
		return 1
	elif ! why=$("$SRC/tests/browser/setup" "$pw_dir"); then
		skip "$1" "$why"
		return 1
	fi
	PW_DIR="$pw_dir" node "$SRC/tests/browser/open.js" "$2" >browser.tap 2>&1
	grep -E '^(not )?ok ' browser.tap | while IFS= read -r line; do
		case $line in
		"not ok"*) echo "not ok - browser: ${line#not ok * - }" ;;
		*) echo "ok - browser: ${line#ok * - }" ;;
		esac
	done >browser.lines
	[ -s browser.lines ] || echo "not ok - browser: no result ($(head -c 300 browser.tap))" >browser.lines
	while IFS= read -r line; do
		case $line in
		"not ok"*) not_ok "${line#not ok - }" ;;
		*) ok "${line#ok - }" ;;
		esac
	done <browser.lines
	return 0
}

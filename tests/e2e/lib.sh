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
export GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@t

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
finish() { echo "1..$n"; }

# run ARGS...: run sonde, keeping stdout in $out, stderr in $err and the status in $rc
run() {
	"$SONDE" "$@" >"$WORK/.out" 2>"$WORK/.err"
	rc=$?
	out=$(cat "$WORK/.out")
	err=$(cat "$WORK/.err")
}
# jq_eq FILE FILTER EXPECTED
jq_eq() { [ "$(jq -r "$2" "$1")" = "$3" ]; }
validate() { /usr/bin/python3 "$SRC/tests/validate-profile.py" "$SRC/docs/profile.schema.json" "$@"; }
has() { printf '%s' "$1" | grep -q -- "$2"; }

# lib.sh - what the conformance suites share: the e2e harness, compare.py, and
# a SKIP (with the package to install) when the peer is missing.
# shellcheck source=../e2e/lib.sh
. "$SRC/tests/e2e/lib.sh"
CMP="/usr/bin/python3 $SRC/tests/conformance/compare.py"

# need_peer COMMAND: skip the whole suite when the peer is not installed
need_peer() {
	if ! command -v "$1" >/dev/null 2>&1; then
		echo "1..0 # SKIP $1 is not installed (scripts/install-deps installs it)"
		exit 0
	fi
}

# show_cmp OK-TEXT FAIL-TEXT [COMPARE-ARGS...]: run compare.py, one TAP line,
# its lines as comments; returns 1 when they differ
show_cmp() {
	okt=$1 failt=$2 cmp_rc=0
	shift 2
	if $CMP "$@" >cmp.out 2>&1; then ok "$okt"; else not_ok "$failt"; cmp_rc=1; fi
	sed 's/^/# /' cmp.out
	return $cmp_rc
}

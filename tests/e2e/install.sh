#!/bin/sh
# make install DESTDIR=... into a temporary stage: the installed sonde runs
# collections, man renders its pages, the completion completes, and a program
# builds against libsonde through sonde.pc. PREFIX is the build directory's own,
# so make install reconfigures nothing while other tests use that directory.
. "$SRC/tests/e2e/lib.sh"
: "${BUILD:?}"

prefix=$(opt prefix)
D=$WORK/stage
if ! make -s -C "$SRC" install BUILD="$BUILD" PREFIX="$prefix" DESTDIR="$D" >inst.log 2>&1; then
	not_ok "make install DESTDIR=: $(tail -3 inst.log | tr '\n' ' ')"
	finish
	exit 0
fi
check "make install: says where" grep -q "installed under $D$prefix" inst.log
P=$D$prefix
L=$P/$(opt libdir)
BIN=$P/bin/sonde
check "installed: the binary" test -x "$BIN"
check "installed: libsonde" test -e "$L/libsonde.so"
check "installed: the runtimes" sh -c 'test -e "$1/sonde/libsonde-memory.so" && test -e "$1/sonde/libsonde-trace.so" && test -e "$1/sonde/libsonde-sample.so" && test -x "$1/sonde/sonde-spawn"' _ "$L"
check "installed: the headers" test -e "$P/include/sonde/sonde.h"
check "installed: the docs" test -e "$P/share/doc/sonde/analysis.md"
check "installed: the licence (MIT) beside the docs" grep -q "^MIT License" "$P/share/doc/sonde/LICENSE"

# the installed sonde works on its own files (the staged libsonde finds its runtimes beside it)
export LD_LIBRARY_PATH="$L"
"$BIN" collect memory -o inst-m.json -- "$PROGS/m-known" >/dev/null 2>inst.err
rc=$?
check "installed sonde: collect memory works (exit $rc)" sh -c '[ "$1" = 0 ] && jq -e ".stats.memory.allocations > 0" inst-m.json >/dev/null' _ "$rc"
"$BIN" collect time -q -r 2 -o inst-t.json -- "$PROGS/s-exit"
check "installed sonde: collect time works" validate inst-t.json

# man pages: sonde(1) and one per command, rendered by man
M=$P/share/man/man1
check "man: sonde(1)" test -e "$M/sonde.1"
cmds=$("$BIN" --help | sed -n '/^commands:/,/^$/p' | awk 'NF > 1 && $1 != "help" && $1 != "commands:" {print $1}')
missing=""
for c in $cmds; do [ -e "$M/sonde-$c.1" ] || missing="$missing $c"; done
check "man: a page for every command ($(echo $cmds | wc -w) commands; missing:$missing)" [ -z "$missing" ]
MANPAGER=cat MANWIDTH=100 man -l "$M/sonde-collect.1" >man.txt 2>man.err
check "man -l renders sonde-collect(1)" sh -c 'grep -q "^NAME" man.txt && grep -q "sonde-collect - run a command" man.txt'
check "sonde-collect(1) has each collector's options" sh -c 'grep -q "COLLECTOR memory" man.txt && grep -q -- "--min-time DURATION" man.txt'
check "sonde-collect(1): no roff warnings" sh -c '! grep -q "warning" man.err'
MANPAGER=cat man -l "$M/sonde.1" >man1.txt 2>&1
check "sonde(1) lists the commands and exit codes" sh -c 'grep -q "sonde-check(1)" man1.txt && grep -q "EXIT STATUS" man1.txt'

# completion
B=$P/share/bash-completion/completions/sonde
complete_words() { bash -c '. "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _sonde; printf "%s\n" "${COMPREPLY[@]}"' "$B" "$@"; }
check "bash: 'sonde coll' offers collect and collector" \
	[ "$(complete_words sonde coll | tr '\n' ' ')" = "collect collector " ]
check "bash: 'sonde -v colle' too" [ "$(complete_words sonde -v colle | tr '\n' ' ')" = "collect collector " ]
check "bash: 'sonde pos' completes to postprocess" [ "$(complete_words sonde pos)" = postprocess ]
check "bash: 'sonde collect ti' completes to time" [ "$(complete_words sonde collect ti)" = time ]
check "bash: 'sonde collect memory --samp' completes the collector's option" \
	[ "$(complete_words sonde collect memory --samp)" = --sampling ]
check "bash: 'sonde show x --format ' offers the formats" sh -c 'printf "%s\n" "$1" | grep -qx csv' _ "$(complete_words sonde show x --format '')"
check "bash: after the target, files" sh -c 'printf "%s\n" "$1" | grep -qx inst-m.json' _ "$(complete_words sonde collect time -- ls inst-m)"
Z=$P/share/zsh/vendor-completions/_sonde
if command -v zsh >/dev/null; then
	check "zsh: the completion parses" zsh -n "$Z"
	check "zsh: it knows collect and its collectors" sh -c 'grep -q "collect:run a command" "$0" && grep -q "collectors=( time" "$0"' "$Z"
else
	skip "zsh completion" "zsh is not installed"
fi

# sonde.pc: its Requires names jansson; a program builds and runs against the staged tree
export PKG_CONFIG_PATH="$L/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
check "sonde.pc requires jansson" sh -c 'pkg-config --print-requires sonde | grep -q jansson'
cat >v.c <<'EOF'
#include <stdio.h>
#include <sonde/sonde.h>
int main(void) { puts(sonde_version()); return 0; }
EOF
# a sanitized libsonde (the sanitizer build) loads only into a program built the same way
san=$(opt b_sanitize)
SANFLAGS=""
[ -n "$san" ] && [ "$san" != none ] && SANFLAGS="-fsanitize=$san"
# shellcheck disable=SC2046,SC2086
if cc $SANFLAGS v.c $(pkg-config --cflags --libs sonde) -o v 2>cc.err; then
	check "a program built with pkg-config sonde runs" [ "$(./v)" = "$("$BIN" --version | cut -d' ' -f2)" ]
else
	not_ok "a program builds with pkg-config sonde: $(head -3 cc.err | tr '\n' ' ')"
fi
# the C region timer, as a user builds it: its own profile, read by show, check and report
# shellcheck disable=SC2046,SC2086
if cc $SANFLAGS "$SRC/examples/timer.c" $(pkg-config --cflags --libs sonde) -lpthread -o tm 2>cc.err; then
	check "the C timer: nested regions on four threads, warm-up left out" \
		sh -c './tm 12 tm-a.json | grep -q "^solve  n=46 " && ./tm 12 tm-b.json | grep -q "^step   n=46 "'
	check "the C timer's profile: show lists both regions in time units" \
		sh -c '"$0" show tm-a.json | grep -E "^  (solve|step) +time +[0-9.]+ (µs|ms)" | wc -l | grep -qx 2' "$BIN"
	check "the C timer's profiles: check compares them region by region" \
		sh -c '"$0" check tm-a.json tm-b.json | grep -qE "^  solve +region"' "$BIN"
	check "the C timer's profile: report draws it" \
		sh -c '"$0" report tm-a.json -o tm.html >/dev/null && grep -q solve tm.html' "$BIN"
else
	not_ok "the C timer builds with pkg-config sonde: $(head -3 cc.err | tr '\n' ' ')"
fi

# the Python package, where the interpreter's site directory is under PREFIX
ext=$(find "$P" -name '_sonde*.so' | head -1)
if [ ! -d "$BUILD/python/sonde" ]; then
	skip "installed: the Python package" "the build has no Python binding (python3-dev)"
elif [ -z "$ext" ]; then
	not_ok "installed: the Python package (no _sonde extension under $P)"
else
	pkg=$(dirname "$(dirname "$ext")")
	check "installed: sonde/__init__.py beside the extension" test -e "$pkg/sonde/__init__.py"
	check "installed: the Python package carries its licence" grep -q "^MIT License" "$pkg/sonde/LICENSE"
	# without DESTDIR it would be where the interpreter of the build looks for PREFIX's
	check "installed: the package in a folder on python3's path (${pkg#"$D"})" \
		/usr/bin/python3 -c 'import sys, sysconfig
p = sys.argv[1]
sys.exit(0 if p in sys.path or p == sysconfig.get_path("platlib") or not p.startswith("/usr/") else 1)' "${pkg#"$D"}"
	case "${ASAN_OPTIONS:-}${SANFLAGS:-}" in
	*sanitize* | *detect_leaks*) skip "installed: import sonde" "a sanitized extension needs the sanitizer runtime preloaded (tests/python/run does)" ;;
	*) check "installed: import sonde times a region" env PYTHONPATH="$pkg" /usr/bin/python3 -c '
import sonde, time
t = sonde.Timer()
with t.measure("r"):
    time.sleep(0.01)
assert t.get_elapsed("r") >= 10.0' ;;
	esac
fi
finish

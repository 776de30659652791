#!/bin/sh
# The symbol cache (SONDE_CACHE_DIR, docs/cli.md): a run over objects seen before
# gives the same frames as one that reads their debug information, without
# reading it; a cache that is damaged, written by another build, or cannot be
# written changes no answer.
. "$SRC/tests/e2e/lib.sh"
export SONDE_CACHE_DIR="$WORK/cache"

prog=$PROGS/m-cxx # C++: demangled names, inlined frames, source lines
# shape FILE: the sites and their frames (not the counts)
shape() { jq -S '[.resource_type_map[] | del(.summary)]' "$1"; }
bid=$(readelf -n "$prog" | awk '/Build ID/ { print $3 }')

SONDE_CACHE_DIR="" "$SONDE" collect memory -q -o none.json -- "$prog" >/dev/null 2>&1
check "SONDE_CACHE_DIR empty: no cache written" [ ! -e cache ]
run collect memory -q -o cold.json -- "$prog"
check "a first run: exit 0, a cache file named after the program's build id ($bid)" all \
	'[ "$rc" = 0 ]' '[ -s "cache/symbols/$bid" ]'
check "... the same frames as without a cache" [ "$(shape cold.json)" = "$(shape none.json)" ]
cp "cache/symbols/$bid" good.bin
run collect memory -q -o warm.json -- "$prog"
check "a second run: the same frames, from the cache" all '[ "$rc" = 0 ]' \
	'[ "$(shape warm.json)" = "$(shape none.json)" ]'
check "... and the cache file is not written again (nothing new)" cmp -s good.bin "cache/symbols/$bid"

# the C library's separate debug information: read by a first run, not by a second
libc=$(ldd "$prog" | awk '$1 ~ /^libc\.so/ { print $3 }')
lbid=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/ { print $3 }')
dbg=$(printf '/usr/lib/debug/.build-id/%.2s/%s.debug' "$lbid" "${lbid#??}")
if [ -z "$lbid" ] || [ ! -r "$dbg" ] || ! command -v strace >/dev/null 2>&1; then
	skip "the C library's debug file is read once" "no $dbg (libc6-dbg) or no strace"
else
	SONDE_CACHE_DIR="$WORK/fresh" strace -f -qq -e trace=openat -o cold.st \
		"$SONDE" collect memory -q -o c2.json -- "$prog" >/dev/null 2>&1
	SONDE_CACHE_DIR="$WORK/fresh" strace -f -qq -e trace=openat -o warm.st \
		"$SONDE" collect memory -q -o w2.json -- "$prog" >/dev/null 2>&1
	check "the C library's debug file: opened by a first run, not by a second" all \
		'grep -q "$dbg" cold.st' '! grep -q "$dbg" warm.st'
fi

# damaged: cut in half; the entries before the cut are kept, the rest resolved again
head -c $(($(wc -c <good.bin) / 2)) good.bin >"cache/symbols/$bid"
run collect memory -q -o cut.json -- "$prog"
check "a cache file cut in half: exit 0, the same frames" all '[ "$rc" = 0 ]' \
	'[ "$(shape cut.json)" = "$(shape none.json)" ]'
check "... and it is whole again" [ "$(wc -c <"cache/symbols/$bid")" = "$(wc -c <good.bin)" ]
# cut at many places: inside the magic, the resolver's id, an entry's key, its frames, a string
size=$(wc -c <good.bin) bad=""
for at in 4 8 30 89 90 93 97 98 102 110 130 $((size - 3)); do
	[ "$at" -lt "$size" ] || continue
	head -c "$at" good.bin >"cache/symbols/$bid"
	"$SONDE" collect memory -q -o cutn.json -- "$prog" >/dev/null 2>&1 &&
		[ "$(shape cutn.json)" = "$(shape none.json)" ] || bad="$bad $at"
done
check "a cache file cut at 12 places: exit 0 and the same frames each time${bad:+ (not at:$bad)}" \
	[ -z "$bad" ]
# garbage
head -c 3000 /dev/urandom >"cache/symbols/$bid"
run collect memory -q -o junk.json -- "$prog"
check "a cache file of random bytes: exit 0, the same frames" all '[ "$rc" = 0 ]' \
	'[ "$(shape junk.json)" = "$(shape none.json)" ]'
# another build of sonde wrote it (its build id after the magic differs): not read
{ printf 'SONDESY1%081d' 0; tail -c +90 good.bin; } >"cache/symbols/$bid"
run collect memory -q -o other.json -- "$prog"
check "a cache file of another sonde build: not read, the same frames, rewritten" all \
	'[ "$rc" = 0 ]' '[ "$(shape other.json)" = "$(shape none.json)" ]' \
	'[ "$(wc -c <"cache/symbols/$bid")" = "$(wc -c <good.bin)" ]'
# a cache that cannot be written
: >notadir
SONDE_CACHE_DIR="$WORK/notadir" "$SONDE" collect memory -q -o nodir.json -- "$prog" >/dev/null 2>nodir.err
check "a cache directory that cannot be made: exit 0, no message, the same frames" all \
	'[ ! -s nodir.err ]' '[ "$(shape nodir.json)" = "$(shape none.json)" ]'

# the trace collector reads the same cache
SONDE_CACHE_DIR="" "$SONDE" collect trace -q -o tn.json -- "$PROGS/t-calls" >/dev/null 2>&1
run collect trace -q -o t1.json -- "$PROGS/t-calls"
run collect trace -q -o t2.json -- "$PROGS/t-calls"
check "trace: the same functions and places with and without the cache" all \
	'[ "$(jq -S "[.resource_type_map[] | del(.summary)]" t1.json)" = "$(jq -S "[.resource_type_map[] | del(.summary)]" tn.json)" ]' \
	'[ "$(jq -S "[.resource_type_map[] | del(.summary)]" t2.json)" = "$(jq -S "[.resource_type_map[] | del(.summary)]" tn.json)" ]'
finish

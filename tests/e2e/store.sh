#!/bin/sh
# The store: init, pending jobs, add against HEAD, N@p / N@i names, rm, log.
. "$SRC/tests/e2e/lib.sh"

git init -q repo && cd repo || exit 1
echo a >a && git add a && git commit -qm first
run init
check "init: exit 0" [ "$rc" = 0 ]
check "init: layout" test -d .sonde/jobs -a -d .sonde/objects -a -f .sonde/index.db
run init
check "init is idempotent" [ "$rc" = 0 ]
mkdir sub && cd sub || exit 1
run collect time -q -r 2 -- "$PROGS/s-exit"
cd .. || exit 1
check "collect inside the tree writes to jobs/" [ "$(ls .sonde/jobs | grep -c '^s-exit-time-.*\.json$')" = 1 ]
job=$(ls .sonde/jobs/*.json)
check "origin is HEAD" jq_eq "$job" .origin "$(git rev-parse HEAD)"
check "clean tree noted" jq_eq "$job" .metadata.dirty false
run status
check "status lists 0@p" has "$out" "0@p  time"
check "status names HEAD" has "$out" "HEAD: $(git rev-parse HEAD)"
run show 0@p --format csv
check "show 0@p" has "$out" "uid,type,subtype"
run show 5@p
check "show 5@p: exit 1" [ "$rc" = 1 ]
check "show 5@p: says how many" has "$err" "there are 1 pending profile(s)"
run add 0@p
check "add: exit 0" [ "$rc" = 0 ]
check "add: removed from jobs" [ -z "$(ls .sonde/jobs)" ]
check "add: stored under its origin" [ -n "$(ls .sonde/objects/"$(git rev-parse HEAD)"/)" ]
run status
check "status lists 0@i" has "$out" "0@i  time"
run show 0@i --format json
check "show 0@i" jq_eq "$WORK/.out" '.rows[0].subtype' real
run log
check "log counts the profile" has "$out" "$(git rev-parse --short=12 HEAD)    1 profile "

# a profile of another commit is refused, unless --force
run collect time -q -r 1 -o old.json -- "$PROGS/s-exit"
echo b >b && git add b && git commit -qm second
run add old.json
check "add other origin: exit 1" [ "$rc" = 1 ]
check "add other origin: says so" has "$err" "not on HEAD"
run add --force old.json
check "add --force: exit 0" [ "$rc" = 0 ]
run log
check "log lists both commits" [ "$(printf '%s\n' "$out" | wc -l)" = 2 ]
check "first commit has 2 profiles" has "$(printf '%s\n' "$out" | tail -1)" "2 profiles"
git checkout -q HEAD~1
run rm 0@i
check "rm 0@i: exit 0" [ "$rc" = 0 ]
run log
check "rm: one profile left" has "$(printf '%s\n' "$out" | tail -1)" "1 profile "
run rm 9@i
check "rm 9@i: exit 1" [ "$rc" = 1 ]

# a dirty tree is noted and warned about
echo c >>a
run collect time -q -r 1 -o dirty.json -- "$PROGS/s-exit"
check "dirty tree noted" jq_eq dirty.json .metadata.dirty true
check "dirty tree warned" jq_eq dirty.json '[.stats.warnings[].code] | index("dirty-tree") != null' true

# one profile registered once: 20 concurrent adds of it register it once, the
# others say so (9 to 15 duplicates in 40 adds, all exit 0, before)
cd "$WORK" && git init -q race && cd race || exit 1
git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x
"$SONDE" init >/dev/null
"$SONDE" collect time -q -r 1 -o same.json -- "$PROGS/s-exit" >/dev/null 2>&1
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	"$SONDE" add --keep same.json >/dev/null 2>>race.err &
done
wait
check "20 concurrent adds of one profile: registered once" \
	[ "$(sqlite3 .sonde/index.db 'select count(*) from profiles')" = 1 ]
check "... one object" [ "$(find .sonde/objects -name '*.json' | wc -l)" = 1 ]
# each error is one write: lines of sondes sharing a file do not run together
# (an error was three writes, and a loaded machine could run two together)
check "... the 19 others are told, one line each" \
	all "[ \"\$(grep -c 'is already registered' race.err)\" = 19 ]" \
	"[ \"\$(grep -c '^sonde: add: .* is already registered ([^)]*)\$' race.err)\" = 19 ]" \
	"[ \"\$(wc -l <race.err)\" = 19 ]"
[ "$(grep -c '^sonde: add: .* is already registered ([^)]*)$' race.err)" = 19 ] && [ "$(wc -l <race.err)" = 19 ] ||
	sed 's/^/# /' race.err # what they said instead
run add --keep same.json
check "adding it again: exit 1" [ "$rc" = 1 ]
# an index made by an earlier sonde (no digest column) is brought up to date
rm -rf .sonde/index.db .sonde/objects/*
sqlite3 .sonde/index.db "CREATE TABLE profiles (id INTEGER PRIMARY KEY, origin TEXT NOT NULL,
  path TEXT NOT NULL UNIQUE, collector TEXT, type TEXT, cmd TEXT, workload TEXT,
  added INTEGER NOT NULL); PRAGMA user_version = 1;"
run add --keep same.json
check "a version-1 index: add works" [ "$rc" = 0 ]
check "... and the index is version 2" [ "$(sqlite3 .sonde/index.db 'pragma user_version')" = 2 ]

# a damaged index: said, with the way out; sonde fsck rebuilds it from objects/
head -c 4096 /dev/urandom | dd of=.sonde/index.db bs=1 conv=notrunc 2>/dev/null
run status
check "damaged index: status exits 1" [ "$rc" = 1 ]
check "damaged index: one line naming sonde fsck" \
	sh -c '[ "$(printf "%s\n" "$0" | grep -c .)" = 1 ] && printf "%s" "$0" | grep -q "damaged: .sonde fsck. rebuilds it"' "$err"
run fsck
check "fsck: exit 0, the profile registered again" sh -c '[ "$0" = 0 ] && printf "%s" "$1" | grep -q "1 profile registered"' "$rc" "$out"
check "fsck: the damaged index kept aside" [ -n "$(ls .sonde/index.db.damaged-* 2>/dev/null)" ]
run status
check "after fsck: status lists it" has "$out" "0@i  time"
# an index that cannot be written (another user's store): read commands still work
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	chmod -R a+rX "$WORK"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$SONDE" status >ro.out 2>ro.err
	rc=$?
	check "read-only index: status works (exit $rc)" sh -c '[ "$0" = 0 ] && grep -q "^store: " ro.out' "$rc"
else
	skip "read-only index" "needs root (another user)"
fi

# fsck beside adds and rms: the new index is built aside and swapped in, a
# writer holding the old one moves to the new one; nothing refused, nothing lost
cd "$WORK" && git init -q swap && cd swap && echo a >a && git add a && git commit -qm a || exit 1
"$SONDE" init >/dev/null && "$SONDE" collect time -q -r 1 -o base.json -- "$PROGS/s-exit"
for i in $(seq 40); do jq -c ".header.run_id = \"r$i\"" base.json >"p$i.json"; done
for i in $(seq 20); do "$SONDE" add --keep "p$i.json" >/dev/null; done
(for r in 1 2 3 4 5 6; do "$SONDE" fsck >/dev/null 2>>fsck.err || echo "fsck exit $?" >>fsck.err; done) &
for i in $(seq 21 40); do
	"$SONDE" add --keep "p$i.json" >/dev/null 2>>add.err || echo "add exit $?" >>add.err
	[ $((i % 4)) = 0 ] && { "$SONDE" rm 0@i >/dev/null 2>>add.err || echo "rm exit $?" >>add.err; }
done
wait
check "fsck beside 20 adds and 5 rms: every command exit 0, nothing said" \
	sh -c '[ ! -s add.err ] && [ ! -s fsck.err ]'
cat add.err fsck.err | sed 's/^/# /'
check "... 35 profiles registered, each object indexed once" \
	sh -c '[ "$("$0" log | grep -o "[0-9]* profiles")" = "35 profiles" ] && [ "$(find .sonde/objects -name "*.json" | wc -l)" = 35 ]' "$SONDE"
"$SONDE" status >before.txt && "$SONDE" fsck >/dev/null && "$SONDE" status >after.txt
check "fsck keeps each profile's N@i and the time it was added" cmp before.txt after.txt

# outside any store and git tree: no origin, add refused
cd "$WORK" && mkdir plain && cd plain || exit 1
run collect time -q -r 1 -o p.json -- "$PROGS/s-exit"
check "no git: origin null" jq_eq p.json .origin null
run status
check "status without a store: exit 1" [ "$rc" = 1 ]
check "status without a store: says init" has "$err" "run 'sonde init'"
finish

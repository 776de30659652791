#!/bin/sh
# Profiles shared through git (sonde push, sonde pull) with real git: a bare
# repository as the remote of two clones. What one pushes the other pulls,
# registered against the same commits; pushing twice sends nothing new; two
# clones pushing at once, again and again, lose nothing and duplicate nothing
# (the overtaken push is made again on top); a blob that is not a profile is
# refused with one line and the rest still registered; errors are one line.
. "$SRC/tests/e2e/lib.sh"

git init -q --bare -b main remote.git
git init -q -b main a && (cd a && echo x >f && git add f && git commit -qm one &&
	git remote add origin ../remote.git && git push -q origin main)
git clone -q remote.git b
c1=$(git -C a rev-parse HEAD)
for d in a b; do (cd "$d" && "$SONDE" init -q .); done

cd a || exit 1
"$SONDE" collect time -q -r 2 -- "$PROGS/s-exit" 0 >/dev/null
"$SONDE" collect time -q -r 2 -- "$PROGS/s-echo" hi >/dev/null
"$SONDE" add -q 0@p 1@p
run pull
check "pull from a remote with no profiles: exit 0, said" all '[ "$rc" = 0 ]' \
	'has "$out" "origin has no sonde profiles"'
run push
check "push: exit 0, two profiles sent" all '[ "$rc" = 0 ]' \
	'has "$out" "pushed 2 profiles to origin (2 there now)"'
check "the remote holds them under refs/sonde/profiles as ORIGIN/DIGEST.json" \
	[ "$(git -C ../remote.git ls-tree -r --name-only refs/sonde/profiles | grep -c "^$c1/[0-9a-f]\{32\}\.json\$")" = 2 ]
run push
check "push again: nothing new to send" has "$out" "origin has every registered profile (2 there)"
cd ../b || exit 1
run pull
check "pull on the other clone: two registered" all '[ "$rc" = 0 ]' \
	'has "$out" "registered 2 profiles from origin (2 there, 0 here already)"'
run status
check "... against the commit they were measured on" has "$out" "registered.*(2)"
check "... with the same content (the index's digests)" [ \
	"$(sqlite3 .sonde/index.db 'select digest from profiles order by digest' | tr '\n' ' ')" = \
	"$(sqlite3 ../a/.sonde/index.db 'select digest from profiles order by digest' | tr '\n' ' ')" ]
run pull
check "pull again: nothing new" has "$out" "registered 0 profiles from origin (2 there, 2 here already)"

# both clones push at once, five times each, a new profile each time
cd .. || exit 1
race() {
	cd "$1" || exit 1
	for i in 1 2 3 4 5; do
		"$SONDE" collect time -q -r 1 -o "r-$1-$i.json" -- "$PROGS/s-exit" "$i" >/dev/null 2>&1
		"$SONDE" add -q "r-$1-$i.json" >/dev/null
		"$SONDE" push >>push.log 2>&1 || echo "push failed" >>push.log
	done
}
race a &
pa=$!
race b &
pb=$!
wait $pa $pb
check "ten pushes racing from two clones: none failed" \
	sh -c '! grep -q "failed\|sonde: push" a/push.log b/push.log'
grep -h "made again" a/push.log b/push.log | sed 's/^/# /'
tree=$(git -C remote.git ls-tree -r --name-only refs/sonde/profiles)
check "the remote has every profile once: 2 + 10" all \
	'[ "$(printf "%s\n" "$tree" | wc -l)" = 12 ]' \
	'[ "$(printf "%s\n" "$tree" | sort -u | wc -l)" = 12 ]'
(cd a && "$SONDE" pull >/dev/null) && (cd b && "$SONDE" pull >/dev/null)
check "after a pull each clone has all 12, none twice" all \
	'[ "$(sqlite3 a/.sonde/index.db "select count(*), count(distinct digest) from profiles")" = "12|12" ]' \
	'[ "$(sqlite3 b/.sonde/index.db "select count(*), count(distinct digest) from profiles")" = "12|12" ]'

# a blob that is not a profile, pushed by someone else: refused, the rest registered
git clone -q remote.git c && (cd c && "$SONDE" init -q .)
(
	cd c || exit 1
	git fetch -q origin refs/sonde/profiles:refs/sonde/x
	printf 'commit refs/sonde/x\ncommitter x <x@x> 0 +0000\ndata 3\nbad\nfrom refs/sonde/x^0\nM 100644 inline %s/0123456789abcdef0123456789abcdef.json\ndata 9\nnot json\n\n' "$c1" |
		git fast-import --quiet --force
	git push -q origin refs/sonde/x:refs/sonde/profiles
)
cd c || exit 1
run pull
check "a blob that is not a profile: exit 1, one line saying so" all '[ "$rc" = 1 ]' \
	'has "$err" "1 of origin.s blobs are not profiles sonde can register"' \
	'[ "$(printf "%s\n" "$err" | wc -l)" = 1 ]'
check "... and the 12 profiles are registered all the same" \
	[ "$(sqlite3 .sonde/index.db "select count(*) from profiles")" = 12 ]
run push nosuch
check "push to a remote git does not know: exit 1, one line" all '[ "$rc" = 1 ]' \
	'has "$err" "cannot read remote .nosuch."' '[ "$(printf "%s\n" "$err" | wc -l)" = 1 ]'
run push --upload-pack=x
check "an option as the remote: exit 2" [ "$rc" = 2 ]
cd .. && mkdir bare && cd bare || exit 1
run pull
check "outside a store: exit 1" [ "$rc" = 1 ]
cd .. || exit 1
finish

#!/bin/sh
# End to end: what `-o PATH` does to what is already at PATH, for every command
# that writes a file. A regular file is replaced atomically; a device or a FIFO
# is written through and stays what it was (renaming over /dev/null replaced
# the machine's own); a symbolic link is followed and stays a link; a directory
# is refused with one line. The device is a private node made here (root),
# never the machine's /dev/null.
. "$(dirname "$0")/lib.sh"

run collect time -q -r 2 -o p.json -- "$PROGS/s-exit"
run collect trace -q -o calls.json -- "$PROGS/t-calls"
mkfifo fifo
echo old >real.json
ln -s real.json link.json
ln -s made.json dangling.json
mkdir adir

# writes FILE with each command: collect, show (a drawn view), report, export, postprocess
writes() {
	case $1 in
	collect) "$SONDE" collect time -q -r 1 -o "$2" -- "$PROGS/s-exit" ;;
	show) "$SONDE" show calls.json flamegraph -o "$2" ;;
	report) "$SONDE" report p.json -o "$2" ;;
	export) "$SONDE" export p.json --format csv -o "$2" ;;
	postprocess) "$SONDE" postprocess calls.json regression -o "$2" ;;
	esac
}

for c in collect show report export postprocess; do
	# a FIFO: a reader gets the output, the FIFO stays a FIFO
	timeout 30 cat fifo >got.txt & # never waits forever for a writer that failed
	reader=$!
	writes $c fifo >/dev/null 2>"$c.err"
	rc=$?
	wait $reader
	check "$c -o FIFO: exit 0" [ "$rc" = 0 ]
	check "$c -o FIFO: still a FIFO" [ -p fifo ]
	check "$c -o FIFO: the reader got the output" [ -s got.txt ]
	# a symbolic link: followed, and still a link
	rm -f real.json made.json
	writes $c link.json >/dev/null 2>&1
	check "$c -o SYMLINK: still a link" [ -L link.json ]
	check "$c -o SYMLINK: what it points to was written" [ -s real.json ]
	writes $c dangling.json >/dev/null 2>&1
	check "$c -o DANGLING-LINK: the file it names is created" \
		sh -c '[ -L dangling.json ] && [ -s made.json ]'
	rm -f made.json
	# a directory: one line, exit non-zero, nothing changed
	writes $c adir >/dev/null 2>"$c.err"
	rc=$?
	check "$c -o DIRECTORY: refused, the directory untouched" \
		sh -c '[ "$0" != 0 ] && [ -d adir ] && [ -z "$(ls -A adir)" ]' "$rc"
	check "$c -o DIRECTORY: one line saying so" \
		sh -c '[ "$(grep -c . "$0")" = 1 ] && grep -q "Is a directory" "$0"' "$c.err"
done

if [ "$(id -u)" = 0 ] && mknod null c 1 3 2>/dev/null; then
	for c in collect show report export postprocess; do
		writes $c null >/dev/null 2>&1
		check "$c -o DEVICE (a private null node): exit 0, still a character device" \
			sh -c '[ "$0" = 0 ] && [ -c null ]' "$?"
	done
else
	skip "-o DEVICE" "making a private device node needs root (mknod)"
fi

# -: standard output, and nothing else on it
"$SONDE" collect time -q -r 1 -o - -- "$PROGS/s-exit" >stdout.json 2>/dev/null
check "collect -o -: the profile on stdout, valid JSON" jq_eq stdout.json .header.type time
finish

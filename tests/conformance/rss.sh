#!/bin/sh
# Conformance of `collect time`'s max-rss with GNU time's %M on the same
# programs: both read the target's ru_maxrss from wait4. The kernel counts in it
# the high-water mark of the address space the target had before its exec, so a
# tool that starts the target from its own memory reports that memory (sonde
# did: 5 MiB for a 1 MiB program); sonde starts it through sonde-spawn, GNU time
# from its own small fork. Medians of 5 runs each must agree within 10 % or
# 256 KiB, whichever is larger; below GNU time's own floor (about 500 KiB, the
# copy of GNU time that execs the target) sonde may read less, never more.
. "$SRC/tests/conformance/lib.sh"
need_peer /usr/bin/time

# same NAME COMMAND...: median max-rss of 5 runs, GNU time's and sonde's
same() {
	name=$1
	shift
	: >gnu.txt
	for i in 1 2 3 4 5; do
		/usr/bin/time -f '%M' -o gnu.1 "$@" >/dev/null 2>&1
		cat gnu.1 >>gnu.txt
	done
	if ! "$SONDE" collect time -r 5 --discard-output -o t.json -- "$@" >s.out 2>&1; then
		not_ok "$name: sonde collect time failed"
		sed 's/^/# /' s.out
		return
	fi
	/usr/bin/python3 - gnu.txt t.json >cmp.out 2>&1 <<'PY'
import json, statistics, sys
gnu = statistics.median(int(l) for l in open(sys.argv[1]) if l.strip()) * 1024
prof = json.load(open(sys.argv[2]))
vals = [v for k, m in prof["resource_type_map"].items() if m["subtype"] == "max-rss"
        for v in prof["resources"][k]["amount"]]
if not vals:
    print("  sonde recorded no max-rss")
    sys.exit(1)
son = statistics.median(vals)
tol = max(0.10 * gnu, 256 * 1024)
ok = son <= gnu + tol and (son >= gnu - tol or gnu <= 600 * 1024)
print(f"  GNU time {gnu / 1024:.0f} KiB, sonde {son / 1024:.0f} KiB (within {tol / 1024:.0f} KiB)"
      + ("" if ok else "  <- differs"))
sys.exit(0 if ok else 1)
PY
	if [ $? = 0 ]; then ok "$name: max-rss agrees with GNU time"; else not_ok "$name: max-rss differs from GNU time's"; fi
	sed 's/^/# /' cmp.out
}

same "a dynamic program that allocates nothing" "$PROGS/cf-rss" 0
same "a static program that allocates nothing" "$PROGS/cf-rss-static" 0
same "a dynamic program with a 64 MiB peak" "$PROGS/cf-rss" 67108864
same "a static program with a 256 MiB peak" "$PROGS/cf-rss-static" 268435456
same "true" /bin/true
same "python3 -c pass" /usr/bin/python3 -c pass
seq 1 300000 | sort -R >lines.txt
same "sort of 300 000 lines" sort lines.txt
finish

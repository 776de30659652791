#!/bin/sh
# The ranks of a distributed job, with the real launcher (Debian's Open MPI):
# mpirun -np 4 sonde collect ... -- r-work, where rank R allocates (R+1)*100
# blocks. Each rank's profile is found, named by job, rank and host, under one
# run id; each rank's allocations are those of the same rank run alone;
# sonde show RUN names the imbalance (rank 3: 1.6x the mean); the run's
# timeline has every rank's tracks apart; two hosts' clocks (profiles of
# another boot, made by hand from real ones) are aligned through CLOCK_REALTIME
# with the bound said, or said to be unbounded.
. "$SRC/tests/e2e/lib.sh"

if ! command -v mpirun >/dev/null 2>&1; then
	skip "ranks of an MPI job" "mpirun is not installed (openmpi-bin; scripts/install-deps installs it)"
	finish
	exit 0
fi
# root may run mpirun only when it says so; 4 ranks on however many cores there are
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# no network interface but loopback is needed (and others may be slow to probe)
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
host=$(hostname)

mkdir mem && cd mem || exit 1
timeout 240 mpirun -np 4 "$SONDE" collect memory -q -- "$PROGS/r-work" >out 2>err
rc=$?
check "mpirun -np 4 sonde collect memory: exit 0" [ "$rc" = 0 ]
[ "$rc" = 0 ] || sed 's/^/# /' err | head -20
check "a profile per rank, each named by job, rank and host" all \
	'[ "$(ls | grep -c "^r-work-memory-.*-job[0-9]*-rank[0-3]-$host\.json$")" = 4 ]' \
	'[ "$(ls *.json | sed "s/.*-rank\([0-9]\).*/\1/" | sort | tr -d "\n")" = 0123 ]'
check "each is valid" validate ./*.json
id=$(jq -r .header.run_id ./*rank0*.json)
check "one run id for the job ($id)" [ "$(jq -r .header.run_id ./*.json | sort -u)" = "$id" ]
check "each says its launcher, job, rank, size and host" all \
	'[ "$(jq -r ".metadata.job | [.launcher, .size, .host] | join(\" \")" ./*.json | sort -u)" = "openmpi 4 $host" ]' \
	'[ "$(jq -r .metadata.job.rank ./*.json | sort | tr -d "\n")" = 0123 ]' \
	'[ "$(jq -r .metadata.job.id ./*.json | sort -u | wc -l)" = 1 ]'
ok=yes
for r in 0 1 2 3; do
	"$SONDE" collect memory -q -o "../alone$r.json" -- "$PROGS/r-work" "$r" >/dev/null 2>&1
	a=$(jq .stats.memory.allocations ./*rank$r-*.json)
	b=$(jq .stats.memory.allocations "../alone$r.json")
	echo "# rank $r: $a allocations under mpirun, $b alone"
	[ "$a" = "$b" ] && [ "$b" -gt $(((r + 1) * 100)) ] || ok=no
done
check "each rank's allocations are the same rank's alone (exactly)" [ $ok = yes ]
check "alone, no job: a run id of its own and no job" all \
	'[ "$(jq -r .metadata.job ../alone0.json)" = null ]' \
	'[ "$(jq -r .header.run_id ../alone0.json)" != "$id" ]'

run show "$id"
check "show RUN: exit 0" [ "$rc" = 0 ]
check "show RUN: the job, its ranks and host" has "$out" "openmpi job .*, 4 rank profiles on 1 host ($host)"
check "show RUN: the allocations' imbalance is rank 3's (4 / 2.5 of the work)" \
	has "$out" "allocations (whole run) .* 1\.5[0-9][0-9]  rank 3 ($host)"
run show "$(echo "$id" | cut -c1-8)" --format json
printf '%s\n' "$out" >ranks.json
jq -s '[.[].stats.memory.allocations]' ./r-work-*.json >allocs
check "show RUN -f json: min, mean and max over the ranks are the profiles'" jq -e --slurpfile p allocs \
	'(.collectors[0].metrics[] | select(.metric == "allocations (whole run)")) as $m |
	 $m.min == ($p[0] | min) and $m.max == ($p[0] | max) and $m.mean == ($p[0] | add / 4) and
	 $m.highest_rank == 3 and $m.ranks == 4' ranks.json
check "show RUN -f json: no rank missing" jq -e '.collectors[0].missing_ranks == []' ranks.json
mv ./*rank2-*.json ../
run show "$id"
check "a rank without its profile is named, not hidden" has "$out" "memory: 3 ranks; no profile of rank 2"
mv ../*rank2-*.json .

# -o FILE: each rank writes FILE-rankR, never one file for all
timeout 240 mpirun -np 2 "$SONDE" collect time+system -q -r 2 -o t.json -- "$PROGS/r-work" >/dev/null 2>&1
check "-o t.json under mpirun: t-rank0/1-time.json and -system.json" all \
	'[ -f t-rank0-time.json ]' '[ -f t-rank1-time.json ]' \
	'[ -f t-rank0-system.json ]' '[ -f t-rank1-system.json ]'
tid=$(jq -r .header.run_id t-rank0-time.json)
run show "$tid"
check "show RUN: a section per collector" all 'has "$out" "^time: 2 ranks"' 'has "$out" "^system: 2 ranks"'

# the timeline: every rank's tracks apart, on one host's clock
run export "$tid" --format perfetto -o tl.json
check "export RUN: exit 0, and the alignment said" all '[ "$rc" = 0 ]' \
	'has "$err" "4 rank profiles on one host.s clock: aligned exactly"'
check "every rank's processes are named and apart" all \
	'[ "$(jq "[.traceEvents[] | select(.ph == \"M\" and .name == \"process_name\") | .pid] | unique | length" tl.json)" = 4 ]' \
	'jq -e "[.traceEvents[] | select(.name == \"process_name\") | .args.name] | map(test(\"^rank [01] \\\\($host\\\\): sonde: (time|system)\$\")) | all" tl.json >/dev/null'
check "the alignment is in the trace too" jq -e '.otherData.clock_alignment | test("aligned exactly")' tl.json
# on one clock: each rank's runs where its collection started (its start_monotonic_ns)
# plus their own timestamps, rank 0's start the zero
s0=$(jq .metadata.clock.start_monotonic_ns t-rank0-time.json)
s1=$(jq .metadata.clock.start_monotonic_ns t-rank1-time.json)
own=$(jq '[.resources[] | .timestamp? // empty | .[]] | min' t-rank1-time.json)
got=$(jq '[.traceEvents[] | select(.ph == "X" and .cat == "run" and .pid < -33554432) | .ts] | min' tl.json)
check "rank 1's first run is at its own time plus its start's distance from rank 0's" \
	awk -v g="$got" -v o="$own" -v a="$s0" -v b="$s1" 'BEGIN { d = g * 1000 - (o + b - a); exit !(d < 1 && d > -1) }'

# another host: rank 1's profiles as if from a boot whose wall clock is 5 s
# ahead of its monotonic clock more than this one's, within 2 ms
for f in t-rank1-time.json t-rank1-system.json; do
	jq '.metadata.clock.boot_id = "00000000-0000-0000-0000-000000000000" |
	    .metadata.clock.realtime_ns += 5000000000 | .metadata.clock.maxerror_ns = 1000000 |
	    .metadata.job.host = "far"' "$f" >"far-$f"
done
for f in t-rank0-time.json t-rank0-system.json; do
	jq '.metadata.clock.maxerror_ns = 500000' "$f" >"near-$f"
done
mkdir two && mv far-* near-* two/ && cd two || exit 1
run export "$tid" --format perfetto -o tl2.json
check "two hosts: aligned through the wall clock, within both clocks' bound" \
	has "$err" "4 rank profiles of 2 hosts aligned through each host's wall clock (CLOCK_REALTIME): to within 1\.5[0-9]* ms"
a=$(jq '[.traceEvents[] | select(.ph == "X" and .cat == "run" and (.pid < -33554432)) | .ts] | min' tl2.json)
b=$(jq '[.traceEvents[] | select(.ph == "X" and .cat == "run" and (.pid < -33554432)) | .ts] | min' ../tl.json)
check "two hosts: the far rank's runs moved by the 5 s between the clocks" \
	awk -v a="$a" -v b="$b" 'BEGIN { d = a - b - 5000000; exit !(d < 1 && d > -1) }'
jq '.metadata.clock.maxerror_ns = -1' far-t-rank1-time.json >x && mv x far-t-rank1-time.json
run export "$tid" --format perfetto -o tl3.json
check "two hosts, one clock not synchronised: said to be unbounded" \
	has "$err" "not bounded, a host's clock is not synchronised"
cd ..
finish

#!/bin/sh
# Slurm for real (Debian's slurmctld, slurmd and munge), started here on
# localhost with a generated configuration and stopped after:
#   srun -n 2 sonde collect memory -- r-work: the two tasks of the step are
#     ranks of one run, launcher slurm, job id JOB.STEP, each doing what the
#     same rank does alone;
#   sonde run job --slurm: the batch as one job array (sbatch), each task one
#     job of the batch, its profile in the store; sonde status counts the
#     tasks finished and failed, and a failed task's log is kept and named;
#   without sbatch: one line, exit 3.
. "$SRC/tests/e2e/lib.sh"

for p in slurmctld slurmd munged sbatch srun squeue sinfo; do
	if ! command -v "$p" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$p" ]; then
		skip "Slurm" "$p is not installed (slurmctld, slurmd, slurm-client, munge; scripts/install-deps installs them)"
		finish
		exit 0
	fi
done
if [ "$(id -u)" != 0 ]; then
	skip "Slurm" "starting slurmctld, slurmd and munged here needs root"
	finish
	exit 0
fi
PATH=$PATH:/usr/sbin
S=$WORK/slurm
mkdir -p "$S/state" "$S/spool" && chmod 700 "$S"
stop() { # each daemon asked to end, given 15 s, then killed; their files go after them
	pids=
	for f in slurmd slurmctld munged; do
		[ -f "$S/$f.pid" ] && pids="$pids $(cat "$S/$f.pid")"
	done
	pids="$pids $daemons"
	for p in $pids; do kill "$p" 2>/dev/null; done
	i=0
	while [ $i -lt 60 ]; do
		alive=
		for p in $pids; do kill -0 "$p" 2>/dev/null && alive=yes; done
		[ -z "$alive" ] && break
		sleep 0.25
		i=$((i + 1))
	done
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
daemons=
trap stop EXIT
# two free ports on localhost, and the key munge signs with
ports=$(/usr/bin/python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
set -- $ports
head -c 1024 /dev/urandom >"$S/munge.key" && chmod 600 "$S/munge.key"
munged -f --socket="$S/munge.sock" --key-file="$S/munge.key" --log-file="$S/munged.log" \
	--pid-file="$S/munged.pid" --seed-file="$S/munged.seed"
host=$(hostname -s)
cat >"$S/slurm.conf" <<EOF
ClusterName=sonde-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$S/slurm.conf"
slurmctld -c && slurmd
for f in slurmd slurmctld munged; do # their pid files go when they end: kept here
	[ -f "$S/$f.pid" ] && daemons="$daemons $(cat "$S/$f.pid")"
done
i=0
until [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] || [ $i -ge 60 ]; do
	sleep 0.5
	i=$((i + 1))
done
if [ "$(sinfo -h -o %t 2>/dev/null)" != idle ]; then
	not_ok "a local Slurm started (slurmctld: $(tail -1 "$S/slurmctld.log" 2>/dev/null); slurmd: $(tail -1 "$S/slurmd.log" 2>/dev/null))"
	finish
	exit 0
fi
ok "a local Slurm started: one node, idle"
# wait_job ID: until Slurm has no task of the job left (60 s at most)
wait_job() {
	i=0
	while [ -n "$(squeue -h -r -j "$1" 2>/dev/null)" ] && [ $i -lt 240 ]; do
		sleep 0.25
		i=$((i + 1))
	done
}

# --- the two tasks of an srun step are two ranks of one run
mkdir step && cd step || exit 1
timeout 120 srun -n 2 "$SONDE" collect memory -q -- "$PROGS/r-work" >out 2>err
check "srun -n 2 sonde collect memory: exit 0" [ "$?" = 0 ]
check "a profile per task, named by job, rank and host" \
	[ "$(ls | grep -c "^r-work-memory-.*-job[0-9]*\.0-rank[01]-$host\.json$")" = 2 ]
check "one run id, launcher slurm, the step's id" all \
	'[ "$(jq -r .header.run_id ./*.json | sort -u | wc -l)" = 1 ]' \
	'[ "$(jq -r ".metadata.job | [.launcher, .size] | join(\" \")" ./*.json | sort -u)" = "slurm 2" ]' \
	'jq -r .metadata.job.id ./*.json | grep -q "^[0-9]*\.0$"'
ok=yes
for r in 0 1; do
	"$SONDE" collect memory -q -o "../alone$r.json" -- "$PROGS/r-work" "$r" >/dev/null 2>&1
	[ "$(jq .stats.memory.allocations ./*rank$r-*.json)" = "$(jq .stats.memory.allocations "../alone$r.json")" ] || ok=no
done
check "each task's allocations are the same rank's alone" [ $ok = yes ]
run show "$(jq -r .header.run_id ./*rank0-*.json)"
check "show RUN: the step's two ranks, rank 1 the highest" all \
	'has "$out" "slurm job [0-9]*\.0, 2 rank profiles on 1 host"' \
	'has "$out" "allocations (whole run) .* rank 1 ($host)"'
cd .. || exit 1

# --- a batch as a job array
git init -q -b main repo && cd repo || exit 1
echo x >f && git add f && git commit -qm one
"$SONDE" init -q .
run run job -b "$PROGS/r-work" -w 0 -w 1 -w 2 -c memory --slurm
check "run job --slurm: exit 0, submitted as one job array" all '[ "$rc" = 0 ]' \
	'has "$out" "submitted 3 jobs as Slurm job array [0-9]*"'
job=$(printf '%s\n' "$out" | sed -n 's/.*job array \([0-9]*\);.*/\1/p')
wait_job "$job"
check "each task made its job's profile in the store" [ "$(ls .sonde/jobs | grep -c 'memory.*r-work')" = 3 ]
ok=yes
for w in 0 1 2; do
	a=$(jq .stats.memory.allocations .sonde/jobs/*r-work-$w-*.json)
	b=$(jq .stats.memory.allocations "../alone0.json")
	echo "# workload $w: $a allocations"
	[ "$a" = $((b + w * 100)) ] || ok=no
done
check "... each its workload's allocations (the same as run here)" [ $ok = yes ]
run status
check "status: the batch's 3 tasks finished" has "$out" "job $job .* 3 tasks: 3 finished, 0 failed, 0 running, 0 pending"
run run job -b "$PROGS/s-exit" -w 3 -c time --cp repeat=1 --slurm
job2=$(printf '%s\n' "$out" | sed -n 's/.*job array \([0-9]*\);.*/\1/p')
wait_job "$job2"
run status
check "status: a task that failed is counted and its log named" all \
	'has "$out" "job $job2 .* 1 task: 0 finished, 1 failed"' \
	'has "$out" "failed: task 0 (time .*s-exit 3), exit 1, log .*task-0.log"'
log=$(printf '%s\n' "$out" | sed -n 's/.*failed: task 0.*, log \(.*\)$/\1/p')
check "... its log kept, with the reason" grep -q "exited with status 3" "$log"
mkdir ../nopath
run_nopath() { PATH=$WORK/nopath "$SONDE" run job -b "$PROGS/s-exit" -w 0 -c time --slurm >/dev/null 2>err; }
run_nopath
rc=$?
check "without sbatch: exit 3, one line saying what is missing" all '[ "$rc" = 3 ]' \
	'grep -q "sbatch is not installed" err' '[ "$(wc -l <err)" = 1 ]'
cd .. || exit 1
finish

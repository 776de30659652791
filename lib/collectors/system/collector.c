/*
 * collector.c - `sonde collect system`: the target's process tree, sampled
 * from /proc every interval (default 10 ms) while the target runs, and the
 * machine every machine interval (default 100 ms, in whole samples:
 * /proc/stat counts in ticks of 10 ms).
 *
 * The machine: per-CPU and total utilisation (user, system, iowait, irq, steal,
 * busy) from /proc/stat, memory from /proc/meminfo, pressure stall
 * information from /proc/pressure, disk throughput from /sys/block/DISK/stat
 * (physical disks only: stacked devices would count twice) and network
 * throughput from /proc/net/dev (all interfaces but lo), and each NVIDIA GPU's
 * utilisation, memory, power, clocks and temperature through NVML where the
 * driver is installed (stats.system.gpus_not_read says why not). The process tree,
 * walked from the target through /proc/PID/task/TID/children: on-CPU time,
 * context switches and page faults from a group of software perf counters
 * that the tree inherits, read at the sample's time (the kernel brings a
 * running thread's count up to date, and an exited process's counts stay in
 * them; schedstat, the way without perf, holds a running thread's time as of
 * its last scheduler tick, and 10 ms samples of a process busy on 2 CPUs then
 * read 179 % and 219 % by turns on a kernel of 250 Hz), RSS from statm,
 * threads from stat, I/O from io.
 *
 * A rate is the difference of two samples over the time between them; a
 * process that starts and ends between two samples is not seen in /proc (its
 * I/O is, in the io of the parent that reaps it); the run's totals, from
 * wait4, are in stats.system.runs_total to say how much of them the series
 * saw.
 *
 * Resources: one per metric (and CPU, for per-CPU ones): uid = the metric
 * ("cpu.user"; CPU 3's: "cpu3.user"), type "system", subtype "machine" or "process", fixed
 * properties unit and cpu; columns amount, timestamp (the interval's start, ns
 * since the collection began), duration (ns, the interval) and order (the
 * run). stats.system: interval_ms, samples, a summary per metric (mean, peak,
 * p95, and total for rates) and the sampler's own CPU time.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sonde/clock.h>
#include <sonde/collector.h>
#include <stddef.h>
#include "../../grow.h"
#include "../../perf-read.h"
#include "../../procfile.h"
#include "../../ticker.h"
#include "../../u64map.h"
#include "../../engines/gpu/gpu.h"

#define MAX_CPUS  1024
#define MAX_DEPTH 64

enum unit { U_PCT, U_BYTES, U_BPS, U_PER_S, U_COUNT, U_W, U_MHZ, U_CELSIUS };
static const char *const unit_name[] = { "%", "B", "B/s", "1/s", "count", "W", "MHz", "°C" };

/* The metrics, in sample order; per-CPU ones repeat for every CPU after the totals. */
enum {
	M_CPU_USER,
	M_CPU_SYSTEM,
	M_CPU_IOWAIT,
	M_CPU_IRQ,
	M_CPU_STEAL,
	M_CPU_BUSY,
	M_MEM_USED,
	M_MEM_AVAILABLE,
	M_MEM_CACHED,
	M_SWAP_USED,
	M_PSI_CPU,
	M_PSI_MEM_SOME,
	M_PSI_MEM_FULL,
	M_PSI_IO_SOME,
	M_PSI_IO_FULL,
	M_DISK_READ,
	M_DISK_WRITE,
	M_NET_RX,
	M_NET_TX,
	M_P_CPU,
	M_P_RSS,
	M_P_THREADS,
	M_P_PROCESSES,
	M_P_READ,
	M_P_WRITE,
	M_P_RCHAR,
	M_P_WCHAR,
	M_P_SWITCHES,
	M_P_MINFLT,
	M_P_MAJFLT,
	M__N
};

static const struct {
	const char *uid;
	enum unit unit;
	bool process, rate;
} metric[M__N] = {
	[M_CPU_USER] = { "cpu.user", U_PCT },
	[M_CPU_SYSTEM] = { "cpu.system", U_PCT },
	[M_CPU_IOWAIT] = { "cpu.iowait", U_PCT },
	[M_CPU_IRQ] = { "cpu.irq", U_PCT },
	[M_CPU_STEAL] = { "cpu.steal", U_PCT },
	[M_CPU_BUSY] = { "cpu.busy", U_PCT },
	[M_MEM_USED] = { "memory.used", U_BYTES },
	[M_MEM_AVAILABLE] = { "memory.available", U_BYTES },
	[M_MEM_CACHED] = { "memory.cached", U_BYTES },
	[M_SWAP_USED] = { "swap.used", U_BYTES },
	[M_PSI_CPU] = { "pressure.cpu.some", U_PCT },
	[M_PSI_MEM_SOME] = { "pressure.memory.some", U_PCT },
	[M_PSI_MEM_FULL] = { "pressure.memory.full", U_PCT },
	[M_PSI_IO_SOME] = { "pressure.io.some", U_PCT },
	[M_PSI_IO_FULL] = { "pressure.io.full", U_PCT },
	[M_DISK_READ] = { "disk.read", U_BPS, false, true },
	[M_DISK_WRITE] = { "disk.write", U_BPS, false, true },
	[M_NET_RX] = { "net.rx", U_BPS, false, true },
	[M_NET_TX] = { "net.tx", U_BPS, false, true },
	[M_P_CPU] = { "process.cpu", U_PCT, true },
	[M_P_RSS] = { "process.rss", U_BYTES, true },
	[M_P_THREADS] = { "process.threads", U_COUNT, true },
	[M_P_PROCESSES] = { "process.processes", U_COUNT, true },
	[M_P_READ] = { "process.io.read", U_BPS, true, true },
	[M_P_WRITE] = { "process.io.write", U_BPS, true, true },
	[M_P_RCHAR] = { "process.io.rchar", U_BPS, true, true },
	[M_P_WCHAR] = { "process.io.wchar", U_BPS, true, true },
	[M_P_SWITCHES] = { "process.switches", U_PER_S, true, true },
	[M_P_MINFLT] = { "process.faults.minor", U_PER_S, true, true },
	[M_P_MAJFLT] = { "process.faults.major", U_PER_S, true, true },
};
/* the per-CPU ones: M_CPU_USER .. M_CPU_BUSY */
#define N_PERCPU 6

/* Each NVIDIA GPU's, through NVML (gauges, read with the machine): uid "gpuN.NAME". */
#define MAX_GPUS 16
enum { G_UTIL, G_MEM_UTIL, G_MEM_USED, G_POWER, G_SM_CLOCK, G_MEM_CLOCK, G_TEMP, N_PERGPU };
static const struct {
	const char *name;
	enum unit unit;
} gmetric[N_PERGPU] = {
	[G_UTIL] = { "util", U_PCT },
	[G_MEM_UTIL] = { "memory.util", U_PCT },
	[G_MEM_USED] = { "memory.used", U_BYTES },
	[G_POWER] = { "power", U_W },
	[G_SM_CLOCK] = { "clock.sm", U_MHZ },
	[G_MEM_CLOCK] = { "clock.memory", U_MHZ },
	[G_TEMP] = { "temperature", U_CELSIUS },
};

/* Cumulative counters read at one instant; rates and shares are differences of two. */
struct raw {
	uint64_t t;
	unsigned long long cpu[MAX_CPUS + 1][8]; /* [0]: the total line; user..steal */
	unsigned ncpu;
	double mem[4];			    /* used, available, cached, swap used (bytes) */
	unsigned long long psi[5];	    /* total stall, us */
	unsigned long long disk[2], net[2]; /* bytes */
	unsigned long long pcpu, prd, pwr, prc, pwc, psw, pmin, pmaj; /* the tree, cumulative */
	double rss, threads, procs;
	double gpu[MAX_GPUS][N_PERGPU]; /* NAN: not read */
	bool have_proc;
	bool have_pcpu;	   /* pcpu read (a failed read of the counter: not measured) */
	bool have_machine; /* cpu, mem, psi, disk, net read */
	bool cpus_beyond;  /* CPUs past MAX_CPUS: no series of their own */
	bool too_deep;	   /* a process tree deeper than MAX_DEPTH: its depths not walked */
};

struct sample {
	uint64_t ts, dur;   /* the interval's start, since the collection began; its length */
	uint64_t mts, mdur; /* the machine's: since its last reading (every machine_every) */
	unsigned run;
	size_t first; /* into vals: nvals_per values */
};

struct system_state {
	struct ticker ticker;
	double interval_ms;
	bool per_cpu;
	bool psi_ok, disk_ok, net_ok;
	char **disks; /* physical disks' names */
	int *disk_fd; /* their stat files: fd + 1, 0 = closed */
	size_t ndisks, cap_disks;
	unsigned ncpu; /* per-CPU lines at start */
	unsigned run;
	pid_t root;
	uint64_t t0;
	struct raw *prev, *cur;
	struct raw *mlast;		       /* the machine's last reading */
	unsigned machine_every, since_machine; /* the machine is read every machine_every samples */
	/* the tree's processes and threads: last cumulative values, so that a
	   thread that leaves does not take its past with it */
	struct u64map seen; /* tid -> thr[] */
	struct tacc {
		unsigned long long run, slices; /* on-CPU ns, switches-in */
		int fd[2];			/* schedstat, children: fd + 1, 0 = closed */
		bool ran;			/* since the last reading (or never read before) */
		bool kids;			/* had children at the last reading of its list */
	} * thr;
	size_t nthr, cap_thr;
	struct u64map pseen; /* pid -> pacc[] */
	struct pacc {
		unsigned long long v[6]; /* read_bytes write_bytes rchar wchar minflt majflt */
		int fd[3];		 /* stat, io, statm: fd + 1, 0 = closed */
		DIR *task;
	} * pacc;
	size_t npacc, cap_pacc;
	/* the series */
	double *vals;
	size_t nvals, cap_vals, per; /* per: values per sample */
	struct sample *s;
	size_t ns, cap_s;
	int fd[6]; /* the machine's files, kept open: fd + 1, 0 = closed (enum mfile) */
	uint64_t own_cpu_ns;
	double page_size; /* bytes */
	unsigned long long run_cpu_ns, run_wall_ns;
	unsigned long long run_io[2], run_flt[2], run_sw[2]; /* from wait4's rusage */
	unsigned long long errors;
	unsigned long long unread; /* samples whose counters could not be read */
	unsigned long long slow;   /* samples whose three reads each took over 200 us */
	struct ticker_late late;   /* all runs */
	int clock_fd;  /* the tree's counters' group (its leader, task-clock); -1: none (/proc) */
	int sib_fd[3]; /* its other members (enum tree_counter - 1); -1: not opened */
	unsigned long long tc[4]; /* their last reading (enum tree_counter) */
	bool clock_noted;
	bool cpus_beyond, too_deep; /* limits met: said in notes */
	struct sonde_nvml *nvml;    /* NULL: no GPU read (gpu_why says why) */
	unsigned ngpu;
	char gpu_why[160];
};

/* the tree's counters, inherited by every thread and process of it */
enum tree_counter { TC_CLOCK, TC_SWITCHES, TC_MINFLT, TC_MAJFLT, TC__N };

/* ---- reading /proc ------------------------------------------------------------------------ */

enum mfile { F_STAT, F_MEMINFO, F_PSI_CPU, F_PSI_MEM, F_PSI_IO, F_NET };
static const char *const mfile_path[] = { "/proc/stat",		"/proc/meminfo",
					  "/proc/pressure/cpu", "/proc/pressure/memory",
					  "/proc/pressure/io",	"/proc/net/dev" };

/*
 * The next unsigned decimal at or after p (spaces skipped), into *v; where it
 * ended. Hand-written: at 100 samples a second, sscanf's and strtoull's
 * generality was a fifth of the sampler's own CPU time.
 */
static const char *next_u64(const char *p, unsigned long long *v)
{
	unsigned long long x = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	while (*p >= '0' && *p <= '9')
		x = x * 10 + (unsigned long long)(*p++ - '0');
	*v = x;
	return p;
}

/* p past n space-separated fields */
static const char *skip_fields(const char *p, int n)
{
	while (n-- > 0) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	return p;
}

static void read_stat(struct system_state *st, struct raw *r)
{
	static char buf[1 << 17];
	char *line, *save;

	r->ncpu = 0;
	if (sonde_procfile__read(&st->fd[F_STAT], mfile_path[F_STAT], buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long v[8] = { 0 };
		unsigned idx, k = 0;
		char *p;

		if (strncmp(line, "cpu", 3))
			break;
		if (line[3] == ' ') {
			idx = 0;
		} else {
			idx = (unsigned)strtoul(line + 3, &p, 10) + 1;
			if (idx > MAX_CPUS) { /* in the total all the same; said in a note */
				r->cpus_beyond = true;
				continue;
			}
			if (idx > r->ncpu)
				r->ncpu = idx;
		}
		/* user nice system idle iowait irq softirq steal */
		for (const char *q = strchr(line, ' '); q && k < 8; k++)
			q = next_u64(q, &v[k]);
		memcpy(r->cpu[idx], v, sizeof(v));
	}
}

static void read_meminfo(struct system_state *st, struct raw *r)
{
	char buf[8192], *p;
	double total = NAN, avail = NAN, cached = NAN, swt = NAN, swf = NAN;
	int found = 0;

	if (sonde_procfile__read(&st->fd[F_MEMINFO], mfile_path[F_MEMINFO], buf, sizeof(buf)) <= 0)
		return;
	/* the five are among the first twenty lines of fifty: stop when they are read */
	for (p = buf; p && *p && found < 5; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *colon = strchr(p, ':');
		unsigned long long k = 0;
		double kb;

		if (!colon)
			break;
		next_u64(colon + 1, &k);
		kb = (double)k * 1024;

		if (!strncmp(p, "MemTotal:", 9))
			total = kb, found++;
		else if (!strncmp(p, "MemAvailable:", 13))
			avail = kb, found++;
		else if (!strncmp(p, "Cached:", 7))
			cached = kb, found++;
		else if (!strncmp(p, "SwapTotal:", 10))
			swt = kb, found++;
		else if (!strncmp(p, "SwapFree:", 9))
			swf = kb, found++;
	}
	r->mem[0] = total - avail;
	r->mem[1] = avail;
	r->mem[2] = cached;
	r->mem[3] = swt - swf;
}

/* "some avg10=0.00 avg60=0.00 avg300=0.00 total=N" [+ "full ..."]: the totals (us). */
static bool read_psi(struct system_state *st, enum mfile f, unsigned long long *some,
		     unsigned long long *full)
{
	char buf[512], *p;

	if (sonde_procfile__read(&st->fd[f], mfile_path[f], buf, sizeof(buf)) <= 0)
		return false;
	p = strstr(buf, "some");
	if (!p || !(p = strstr(p, "total=")))
		return false;
	*some = strtoull(p + 6, NULL, 10);
	p = strstr(buf, "full");
	if (full)
		*full = p && (p = strstr(p, "total=")) ? strtoull(p + 6, NULL, 10) : 0;
	return true;
}

/* Each physical disk's /sys/block/NAME/stat: the fields of /proc/diskstats after
   the name, for that disk alone (reading diskstats lists every loop device too). */
static void read_disks(struct system_state *st, struct raw *r)
{
	size_t i;

	r->disk[0] = r->disk[1] = 0;
	for (i = 0; i < st->ndisks; i++) {
		char path[300], buf[512];
		unsigned long long v[7];
		const char *p = buf;
		int k;

		if (!st->disk_fd[i])
			snprintf(path, sizeof(path), "/sys/block/%s/stat", st->disks[i]);
		if (sonde_procfile__read(&st->disk_fd[i], path, buf, sizeof(buf)) <= 0)
			continue;
		/* reads merged sectors ms writes merged sectors ... */
		for (k = 0; k < 7; k++)
			p = next_u64(p, &v[k]);
		r->disk[0] += v[2] * 512; /* sectors are 512 bytes here, whatever the disk's */
		r->disk[1] += v[6] * 512;
	}
}

static void read_net(struct system_state *st, struct raw *r)
{
	char buf[16384], *line, *save;

	r->net[0] = r->net[1] = 0;
	if (sonde_procfile__read(&st->fd[F_NET], mfile_path[F_NET], buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':'), *name = line;
		unsigned long long rx, tx;

		if (!colon)
			continue;
		while (*name == ' ')
			name++;
		if (!strncmp(name, "lo:", 3))
			continue;
		/* rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes ... */
		next_u64(skip_fields(next_u64(colon + 1, &rx), 7), &tx);
		r->net[0] += rx;
		r->net[1] += tx;
	}
}

/* One thread: its on-CPU ns and switches-in, kept as the last value seen; its slot. */
static long read_thread(struct system_state *st, pid_t pid, pid_t tid)
{
	char path[96], buf[128];
	unsigned long long run = 0, wait = 0, slices = 0;
	size_t k;

	if (u64map__element(&st->seen, (uint64_t)tid, (void **)&st->thr, &st->nthr, &st->cap_thr,
			    sizeof(*st->thr), &k)) {
		st->errors++;
		return -1;
	}
	if (!st->thr[k].fd[0])
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	st->thr[k].ran = true;
	if (sonde_procfile__read(&st->thr[k].fd[0], path, buf, sizeof(buf)) > 0 && buf[0] >= '0' &&
	    buf[0] <= '9') {
		next_u64(next_u64(next_u64(buf, &run), &wait), &slices);
		/* a thread's first reading, or one that ran since: both move on a CPU */
		st->thr[k].ran =
			!st->thr[k].fd[1] || run != st->thr[k].run || slices != st->thr[k].slices;
		st->thr[k].run = run;
		st->thr[k].slices = slices;
	}
	return (long)k;
}

static void walk(struct system_state *st, pid_t pid, struct raw *r, int depth);

/*
 * The processes thread t (tid of pid, read) started, walked. A thread that has
 * not run since its last reading cannot have started one: when its list was
 * empty then, it is not read again (a file less at every sample of a sleeper).
 */
static void kids_of(struct system_state *st, pid_t pid, pid_t tid, long t, struct raw *r, int depth)
{
	char path[96], small[4096], *list, *c, *save;

	if (t < 0 || (!st->thr[t].ran && !st->thr[t].kids && st->thr[t].fd[1]))
		return;
	if (!st->thr[t].fd[1])
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)tid);
	list = sonde_procfile__read_all(&st->thr[t].fd[1], path, small, sizeof(small));
	if (!list && errno == ENOMEM)
		st->errors++;
	st->thr[t].kids = false;
	for (c = list ? strtok_r(list, " \n", &save) : NULL; c; c = strtok_r(NULL, " \n", &save)) {
		st->thr[t].kids = true;
		walk(st, (pid_t)atoi(c), r, depth + 1);
	}
	if (list != small)
		free(list);
}

/* One thread of pid: its own values, then the processes it started (all of them). */
static void children_of(struct system_state *st, pid_t pid, pid_t tid, struct raw *r, int depth)
{
	kids_of(st, pid, tid, read_thread(st, pid, tid), r, depth);
}

/* A process's /proc/PID/io: read_bytes write_bytes rchar wchar, into pacc[k].v[0..3]. */
static void read_io(struct system_state *st, pid_t pid, size_t k)
{
	static const char *const keys[4] = { "read_bytes: ", "write_bytes: ", "rchar: ",
					     "wchar: " };
	char path[96], buf[4096], *p;
	int i;

	if (!st->pacc[k].fd[1])
		snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	if (sonde_procfile__read(&st->pacc[k].fd[1], path, buf, sizeof(buf)) <= 0)
		return;
	for (i = 0; i < 4; i++) {
		unsigned long long v = 0;

		if ((p = strstr(buf, keys[i])))
			next_u64(p + strlen(keys[i]), &v);
		st->pacc[k].v[i] = v;
	}
}

static void walk(struct system_state *st, pid_t pid, struct raw *r, int depth)
{
	char path[96], buf[4096], *p;
	unsigned long long minflt = 0, majflt = 0, threads = 0;
	long long rss = 0;
	struct dirent *e;
	size_t k;
	DIR *d;

	if (depth > MAX_DEPTH) {
		r->too_deep = true;
		return;
	}
	if (u64map__element(&st->pseen, (uint64_t)pid, (void **)&st->pacc, &st->npacc,
			    &st->cap_pacc, sizeof(*st->pacc), &k)) {
		st->errors++;
		return;
	}
	if (!st->pacc[k].fd[0])
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (sonde_procfile__read(&st->pacc[k].fd[0], path, buf, sizeof(buf)) <= 0 ||
	    !(p = strrchr(buf, ')')))
		return;
	/* after "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt
	   cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime
	   vsize rss */
	{ /* fields 8, 10, 17 and 21 after the comm (0-based), all non-negative */
		unsigned long long urss = 0;
		const char *q = skip_fields(p + 1, 7);

		q = next_u64(q, &minflt);
		q = next_u64(skip_fields(q, 1), &majflt);
		q = next_u64(skip_fields(q, 7), &threads);
		next_u64(skip_fields(q, 3), &urss);
		if (!threads) /* not the line expected */
			return;
		rss = (long long)urss;
	}
	/* stat's rss is the kernel's quick reading of per-CPU counters, short by up
	   to a batch of pages per CPU (45 pages of a 340-page process with two
	   threads on two CPUs here); statm's resident field is their sum */
	if (!st->pacc[k].fd[2])
		snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	if (sonde_procfile__read(&st->pacc[k].fd[2], path, buf, sizeof(buf)) > 0 && buf[0] >= '0' &&
	    buf[0] <= '9') {
		unsigned long long size, res;

		next_u64(next_u64(buf, &size), &res);
		rss = (long long)res;
	}
	r->have_proc = true;
	r->procs += 1;
	r->threads += (double)threads;
	r->rss += (double)rss * st->page_size;
	st->pacc[k].v[4] = minflt;
	st->pacc[k].v[5] = majflt;
	/* a process of one thread has only its main thread (tid = pid), and its
	   directory need not be listed (two system calls); its I/O counts move only
	   while it runs (they are counted in the calling task's context) */
	if (threads == 1) {
		long t = read_thread(st, pid, pid);

		if (t < 0 || st->thr[t].ran || !st->pacc[k].fd[1])
			read_io(st, pid, k);
		kids_of(st, pid, pid, t, r, depth);
		return;
	}
	read_io(st, pid, k);
	if (st->pacc[k].task) {
		rewinddir(st->pacc[k].task);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		st->pacc[k].task = opendir(path);
	}
	d = st->pacc[k].task;
	while (d && (e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid > 0)
			children_of(st, pid, tid, r, depth);
	}
}

/* Close what the tree's processes and threads kept open, and forget them. */
static void forget_tree(struct system_state *st)
{
	size_t i;

	for (i = 0; i < st->nthr; i++) {
		sonde_procfile__close(&st->thr[i].fd[0]);
		sonde_procfile__close(&st->thr[i].fd[1]);
	}
	for (i = 0; i < st->npacc; i++) {
		sonde_procfile__close(&st->pacc[i].fd[0]);
		sonde_procfile__close(&st->pacc[i].fd[1]);
		sonde_procfile__close(&st->pacc[i].fd[2]);
		if (st->pacc[i].task)
			closedir(st->pacc[i].task);
		st->pacc[i].task = NULL;
	}
	u64map__release(&st->seen);
	u64map__release(&st->pseen);
	st->nthr = st->npacc = 0;
}

/*
 * The tree's counters (one read of the group: one call to the target's CPU),
 * and the sample's time taken with them: the middle of the read, read again
 * (up to 3 times) while a read takes over 200 µs (this thread preempted, or
 * its CPU taken by the host: the counts and the time would then be a few
 * milliseconds apart, and two samples' difference read over 100 % of a CPU
 * for one thread).
 */
static void read_counters(struct system_state *st, struct raw *r)
{
	uint64_t v[1 + TC__N], t0, t1, members = 1;
	ssize_t n;
	int tries = 0, i;

	for (i = 0; i < TC__N - 1; i++)
		members += st->sib_fd[i] >= 0;
	do {
		t0 = sonde_clock_ns();
		n = sonde_perf_read(st->clock_fd, v, sizeof(v));
		t1 = sonde_clock_ns();
		if (n < (ssize_t)((1 + members) * sizeof(uint64_t)) || v[0] != members) {
			/* not read: the counts keep their last values (the next reading
			   brings the interval's counts with its own), and the CPU time of
			   the intervals on each side is not measured. Taking /proc's
			   counts instead, which miss the processes gone, made the next
			   reading count the difference twice. */
			st->unread++;
			r->have_pcpu = false;
			return;
		}
	} while (t1 - t0 > 200000 && ++tries < 3);
	/* members in the order opened: task-clock, then those that opened */
	st->tc[TC_CLOCK] = v[1];
	for (i = 1, n = 2; i < TC__N; i++)
		if (st->sib_fd[i - 1] >= 0)
			st->tc[i] = v[n++];
	r->t = t0 + (t1 - t0) / 2;
	if (t1 - t0 > 200000) { /* the counts are right, their time is not known */
		st->slow++;
		r->have_pcpu = false;
	}
}

static void read_gpus(struct system_state *st, struct raw *r)
{
	unsigned g;

	for (g = 0; g < st->ngpu; g++) {
		struct sonde_nvml_reading x;

		sonde_nvml__read(st->nvml, g, &x);
		r->gpu[g][G_UTIL] = x.gpu_util_pct;
		r->gpu[g][G_MEM_UTIL] = x.mem_util_pct;
		r->gpu[g][G_MEM_USED] = x.memory_used;
		r->gpu[g][G_POWER] = x.power_w;
		r->gpu[g][G_SM_CLOCK] = x.sm_clock_mhz;
		r->gpu[g][G_MEM_CLOCK] = x.mem_clock_mhz;
		r->gpu[g][G_TEMP] = x.temperature_c;
	}
}

static void read_all(struct system_state *st, struct raw *r, bool machine)
{
	size_t i;

	memset(r, 0, offsetof(struct raw, cpu));
	r->cpus_beyond = r->too_deep = false;
	r->t = sonde_clock_ns();
	r->have_pcpu = true;
	if (st->clock_fd >= 0)
		read_counters(st, r);
	r->have_machine = machine;
	if (machine) {
		read_stat(st, r);
		read_meminfo(st, r);
		if (st->psi_ok) {
			read_psi(st, F_PSI_CPU, &r->psi[0], NULL);
			read_psi(st, F_PSI_MEM, &r->psi[1], &r->psi[2]);
			read_psi(st, F_PSI_IO, &r->psi[3], &r->psi[4]);
		}
		if (st->disk_ok)
			read_disks(st, r);
		if (st->net_ok)
			read_net(st, r);
		read_gpus(st, r);
	}
	r->have_proc = false;
	r->rss = r->threads = r->procs = 0;
	if (st->root > 0)
		walk(st, st->root, r, 0);
	st->cpus_beyond |= r->cpus_beyond;
	st->too_deep |= r->too_deep;
	/* the tree's totals: every thread and process seen, at its last value */
	r->pcpu = r->psw = r->prd = r->pwr = r->prc = r->pwc = r->pmin = r->pmaj = 0;
	for (i = 0; i < st->nthr; i++) {
		r->pcpu += st->thr[i].run;
		r->psw += st->thr[i].slices;
	}
	for (i = 0; i < st->npacc; i++) {
		r->prd += st->pacc[i].v[0];
		r->pwr += st->pacc[i].v[1];
		r->prc += st->pacc[i].v[2];
		r->pwc += st->pacc[i].v[3];
		r->pmin += st->pacc[i].v[4];
		r->pmaj += st->pacc[i].v[5];
	}
	/* the counters hold the processes /proc no longer shows, and those that
	   came and went between two samples (pcpu, and psw, pmin, pmaj where
	   opened) */
	if (st->clock_fd >= 0) {
		r->pcpu = st->tc[TC_CLOCK];
		if (st->sib_fd[TC_SWITCHES - 1] >= 0)
			r->psw = st->tc[TC_SWITCHES];
		if (st->sib_fd[TC_MINFLT - 1] >= 0)
			r->pmin = st->tc[TC_MINFLT];
		if (st->sib_fd[TC_MAJFLT - 1] >= 0)
			r->pmaj = st->tc[TC_MAJFLT];
	}
}

/* ---- one sample: the differences of two readings ------------------------------------------ */

/* Where GPU g's metric m lies in a sample: after the totals and the per-CPU ones. */
static size_t gpu_index(const struct system_state *st, unsigned g, int m)
{
	return M__N + (st->per_cpu ? st->ncpu * N_PERCPU : 0) + g * N_PERGPU + (size_t)m;
}

/* A CPU's (or, in row 0, all CPUs') ticks: /proc/stat's eight fields summed. */
static unsigned long long ticks(const unsigned long long *c)
{
	unsigned long long t = 0;
	int i;

	for (i = 0; i < 8; i++)
		t += c[i];
	return t;
}

static double share(const unsigned long long *a, const unsigned long long *b, int which)
{
	unsigned long long ta = ticks(a), tb = ticks(b);
	double part;

	if (tb <= ta)
		return NAN;
	switch (which) {
	case M_CPU_USER:
		part = (double)(b[0] + b[1] - a[0] - a[1]);
		break;
	case M_CPU_SYSTEM:
		part = (double)(b[2] - a[2]);
		break;
	case M_CPU_IOWAIT:
		part = (double)(b[4] - a[4]);
		break;
	case M_CPU_IRQ:
		part = (double)(b[5] + b[6] - a[5] - a[6]);
		break;
	case M_CPU_STEAL:
		part = (double)(b[7] - a[7]);
		break;
	default: /* busy: all but idle and iowait */
		part = (double)(tb - ta) - (double)(b[3] - a[3]) - (double)(b[4] - a[4]);
		break;
	}
	return 100.0 * part / (double)(tb - ta);
}

static double rate(unsigned long long a, unsigned long long b, double secs)
{
	return b >= a && secs > 0 ? (double)(b - a) / secs : NAN;
}

/* The machine's part of a reading, kept as the next machine window's start. */
static void keep_machine(struct raw *dst, const struct raw *src)
{
	dst->t = src->t;
	dst->ncpu = src->ncpu;
	memcpy(dst->cpu, src->cpu, (src->ncpu + 1) * sizeof(src->cpu[0]));
	memcpy(dst->mem, src->mem, sizeof(src->mem));
	memcpy(dst->psi, src->psi, sizeof(src->psi));
	memcpy(dst->disk, src->disk, sizeof(src->disk));
	memcpy(dst->net, src->net, sizeof(src->net));
}

/*
 * One sample: the process tree's metrics over a to b; the machine's, where b
 * read it, over the machine's last reading (st->mlast) to b (NaN elsewhere).
 * A machine window in which /proc/stat's ticks did not move (a sample a few
 * ms long, after a late one) stays open, unless close says the run ends: its
 * time goes into the next window, which has a share, not into one without.
 */
static void record(struct system_state *st, const struct raw *a, const struct raw *b, bool close)
{
	double secs = (double)(b->t - a->t) / 1e9, *v;
	const struct raw *ma = st->mlast;
	struct sample *s;
	unsigned c;
	int m;

	if (b->t <= a->t)
		return;
	if (sonde_grow((void **)&st->s, &st->cap_s, st->ns + 1, sizeof(*st->s)) ||
	    sonde_grow((void **)&st->vals, &st->cap_vals, st->nvals + st->per, sizeof(double))) {
		st->errors++;
		return;
	}
	s = &st->s[st->ns++];
	s->ts = a->t > st->t0 ? a->t - st->t0 : 0;
	s->dur = b->t - a->t;
	s->run = st->run;
	s->first = st->nvals;
	v = st->vals + st->nvals;
	st->nvals += st->per;
	for (m = 0; m < (int)st->per; m++)
		v[m] = NAN;
	if (b->have_machine && b->t > ma->t && (close || ticks(b->cpu[0]) != ticks(ma->cpu[0]))) {
		double msecs = (double)(b->t - ma->t) / 1e9;

		s->mts = ma->t > st->t0 ? ma->t - st->t0 : 0;
		s->mdur = b->t - ma->t;
		for (m = M_CPU_USER; m <= M_CPU_BUSY; m++)
			v[m] = share(ma->cpu[0], b->cpu[0], m);
		for (m = 0; m < 4; m++)
			v[M_MEM_USED + m] = b->mem[m];
		if (st->psi_ok)
			for (m = 0; m < 5; m++)
				v[M_PSI_CPU + m] =
					b->psi[m] >= ma->psi[m]
						? 100.0 * (double)(b->psi[m] - ma->psi[m]) /
							  (msecs * 1e6)
						: NAN;
		if (st->disk_ok) {
			v[M_DISK_READ] = rate(ma->disk[0], b->disk[0], msecs);
			v[M_DISK_WRITE] = rate(ma->disk[1], b->disk[1], msecs);
		}
		if (st->net_ok) {
			v[M_NET_RX] = rate(ma->net[0], b->net[0], msecs);
			v[M_NET_TX] = rate(ma->net[1], b->net[1], msecs);
		}
		for (c = 0; st->per_cpu && c < st->ncpu; c++)
			for (m = 0; m < N_PERCPU; m++)
				v[M__N + c * N_PERCPU + (unsigned)m] =
					c + 1 <= ma->ncpu && c + 1 <= b->ncpu
						? share(ma->cpu[c + 1], b->cpu[c + 1],
							M_CPU_USER + m)
						: NAN;
		for (c = 0; c < st->ngpu; c++)
			for (m = 0; m < N_PERGPU; m++)
				v[gpu_index(st, c, m)] = b->gpu[c][m];
		keep_machine(st->mlast, b);
	}
	if (a->have_proc && b->have_proc) {
		v[M_P_CPU] = a->have_pcpu && b->have_pcpu
				     ? 100.0 * rate(a->pcpu, b->pcpu, secs) / 1e9
				     : NAN;
		v[M_P_RSS] = b->rss;
		v[M_P_THREADS] = b->threads;
		v[M_P_PROCESSES] = b->procs;
		v[M_P_READ] = rate(a->prd, b->prd, secs);
		v[M_P_WRITE] = rate(a->pwr, b->pwr, secs);
		v[M_P_RCHAR] = rate(a->prc, b->prc, secs);
		v[M_P_WCHAR] = rate(a->pwc, b->pwc, secs);
		v[M_P_SWITCHES] = rate(a->psw, b->psw, secs);
		v[M_P_MINFLT] = rate(a->pmin, b->pmin, secs);
		v[M_P_MAJFLT] = rate(a->pmaj, b->pmaj, secs);
	}
}

/* The reading just taken (cur) is the next one's start (prev). */
static void advance(struct system_state *st)
{
	struct raw *t = st->prev;

	st->prev = st->cur;
	st->cur = t;
}

/*
 * One sample; the machine's too every machine_every, or where machine says
 * so; close ends the machine's window (the run ends).
 */
static void sample(struct system_state *st, bool machine, bool close)
{
	if (++st->since_machine >= st->machine_every)
		machine = true;
	if (machine)
		st->since_machine = 0;
	read_all(st, st->cur, machine);
	record(st, st->prev, st->cur, close);
	advance(st);
}

/*
 * A tick. Until the target's exec (it waits at the barrier while the other
 * collectors start: tens of ms on a loaded machine), a tick only moves the
 * first window's start up, so no sample lies before the run: the tree's
 * task-clock, enabled at the exec, reads 0 until then. The first window opens
 * at most an interval before the exec. Without the counters (/proc), it opens
 * where the collector started.
 */
static void tick(void *arg)
{
	struct system_state *st = arg;

	if (st->clock_fd < 0 || !st->prev->have_pcpu || st->prev->pcpu) {
		sample(st, false, false);
		return;
	}
	read_all(st, st->cur, true);
	if (st->cur->have_pcpu && !st->cur->pcpu) { /* still waiting: the new start */
		keep_machine(st->mlast, st->cur);
		st->since_machine = 0;
	} else { /* it runs: the tree's first window; the machine's stays open */
		st->cur->have_machine = false;
		record(st, st->prev, st->cur, false);
		st->since_machine = 1;
	}
	advance(st);
}

/* ---- the collector ------------------------------------------------------------------------ */

/*
 * The tree's counters, read together: task-clock (its on-CPU time, to the
 * nanosecond at each reading), context switches and minor and major page
 * faults, on the target, inherited by every thread and process it starts,
 * counting from its exec (it waits at the barrier until then). A process that
 * starts and ends between two samples is in them, and one that has gone keeps
 * its counts in them. The leader's fd, or -errno; the other members that
 * open go to sib_fd (-1 where refused: /proc then gives that metric).
 */
static int open_tree_counters(struct system_state *st, pid_t pid)
{
	static const unsigned long long config[TC__N] = { PERF_COUNT_SW_TASK_CLOCK,
							  PERF_COUNT_SW_CONTEXT_SWITCHES,
							  PERF_COUNT_SW_PAGE_FAULTS_MIN,
							  PERF_COUNT_SW_PAGE_FAULTS_MAJ };
	struct perf_event_attr a = { 0 };
	long fd;
	int i;

	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = config[TC_CLOCK];
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.inherit = 1;
	a.read_format = PERF_FORMAT_GROUP;
	fd = syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the others count while the leader does */
	a.disabled = 0;
	a.enable_on_exec = 0;
	for (i = 1; i < TC__N; i++) {
		long s;

		a.config = config[i];
		s = syscall(SYS_perf_event_open, &a, pid, -1, (int)fd, PERF_FLAG_FD_CLOEXEC);
		st->sib_fd[i - 1] = s < 0 ? -1 : (int)s;
	}
	return (int)fd;
}

static void close_tree_counters(struct system_state *st)
{
	int i;

	for (i = 0; i < TC__N - 1; i++) {
		if (st->sib_fd[i] >= 0)
			close(st->sib_fd[i]);
		st->sib_fd[i] = -1;
	}
	if (st->clock_fd >= 0)
		close(st->clock_fd);
	st->clock_fd = -1;
}

static int system_before(struct sonde_collection *c)
{
	struct system_state *st = calloc(1, sizeof(*st));
	unsigned long long x;
	DIR *d;
	struct dirent *e;

	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
	st->clock_fd = st->sib_fd[0] = st->sib_fd[1] = st->sib_fd[2] = -1;
	st->interval_ms = sonde_collection__param_double(c, "interval", 10);
	st->per_cpu = !sonde_collection__param_bool(c, "no-per-cpu");
	st->page_size = (double)sysconf(_SC_PAGESIZE);
	st->prev = calloc(1, sizeof(struct raw));
	st->cur = calloc(1, sizeof(struct raw));
	st->mlast = calloc(1, sizeof(struct raw));
	if (!st->prev || !st->cur || !st->mlast)
		return -ENOMEM;
	{ /* the machine every machine-interval, in whole samples */
		double mi = sonde_collection__param_double(c, "machine-interval", 100);
		long k = lround(mi / st->interval_ms);

		st->machine_every = k < 1 ? 1 : (unsigned)k;
	}
	read_stat(st, st->prev);
	if (!st->prev->ncpu && !st->prev->cpu[0][0] && !st->prev->cpu[0][3]) {
		sonde_collection__fail(c, "the system collector reads /proc/stat, and cannot: %s",
				       access("/proc/stat", R_OK) ? strerror(errno)
								  : "no cpu lines");
		return -ENOTSUP;
	}
	st->ncpu = st->prev->ncpu;
	st->psi_ok = read_psi(st, F_PSI_CPU, &x, NULL);
	if (!st->psi_ok)
		sonde_collection__note(c, "pressure.*: <not supported>: /proc/pressure is absent "
					  "(a kernel without CONFIG_PSI, or psi=0)");
	d = opendir("/sys/block");
	while (d && (e = readdir(d))) {
		char path[300];

		if (e->d_name[0] == '.')
			continue;
		/* physical disks have a device; loop, ram, zram, dm and md stack on others */
		snprintf(path, sizeof(path), "/sys/block/%s/device", e->d_name);
		if (access(path, F_OK) || !strncmp(e->d_name, "loop", 4))
			continue;
		if (!sonde_grow((void **)&st->disks, &st->cap_disks, st->ndisks + 1,
				sizeof(char *))) {
			st->disks[st->ndisks] = strdup(e->d_name);
			if (st->disks[st->ndisks])
				st->ndisks++;
		}
	}
	if (d)
		closedir(d);
	st->disk_fd = calloc(st->ndisks ? st->ndisks : 1, sizeof(int));
	st->disk_ok = st->disk_fd != NULL; /* no physical disk: 0 B/s */
	st->net_ok = access("/proc/net/dev", R_OK) == 0;
	{ /* NVIDIA GPUs: NVML where the driver is installed */
		struct sonde_strbuf why;

		sonde_strbuf__init(&why);
		st->nvml = sonde_nvml__open(&why);
		st->ngpu = (unsigned)sonde_nvml__count(st->nvml);
		if (st->ngpu > MAX_GPUS) {
			sonde_collection__note(c, "gpu*.*: the first %d of %u GPUs are read",
					       MAX_GPUS, st->ngpu);
			st->ngpu = MAX_GPUS;
		}
		snprintf(st->gpu_why, sizeof(st->gpu_why), "%s", why.buf);
		sonde_strbuf__release(&why);
	}
	st->per = M__N + (st->per_cpu ? st->ncpu * N_PERCPU : 0) + st->ngpu * N_PERGPU;
	return 0;
}

static int system_start(struct sonde_collection *c, pid_t pid)
{
	struct system_state *st = sonde_collection__priv(c);

	st->t0 = sonde_collection__t0_ns(c);
	st->root = pid;
	memset(st->tc, 0, sizeof(st->tc));
	st->clock_fd = open_tree_counters(st, pid);
	if (st->clock_fd < 0 && !st->clock_noted) {
		sonde_collection__note(
			c,
			"process.cpu, process.switches, process.faults.*: from /proc, "
			"perf_event_open of inherited software counters being refused "
			"(%s): a running thread's time there is as of its last "
			"scheduler tick, so short intervals of a busy process read "
			"high and low by turns, and a process that starts and ends "
			"between two samples is not seen",
			strerror(-st->clock_fd));
		st->clock_noted = true;
	}
	read_all(st, st->prev, true);
	keep_machine(st->mlast, st->prev);
	st->since_machine = 0;
	st->ticker = (struct ticker){ .fn = tick,
				      .ctx = st,
				      .period_ns = (uint64_t)(st->interval_ms * 1e6) };
	return ticker__start(&st->ticker);
}

/*
 * The target exited, not reaped: the tree's last sample, while the zombie's
 * /proc entries still hold its final counts (what it wrote after the last
 * tick, say). The sampler stops here; stop() adds the machine's last part.
 */
static int system_exited(struct sonde_collection *c, pid_t pid)
{
	struct system_state *st = sonde_collection__priv(c);

	(void)pid;
	ticker__stop(&st->ticker);
	/*
	 * the machine too, if its window is half a machine interval old or more
	 * (a younger one would be a sliver beside stop()'s, which closes it), and
	 * even then it stays open if /proc/stat's ticks have not moved since the
	 * last one: stop() closes it. Closed here, such a window has no share and
	 * leaves a hole before stop()'s
	 */
	if (st->root)
		sample(st,
		       (double)(sonde_clock_ns() - st->mlast->t) >=
			       st->interval_ms * (double)st->machine_every * 0.5e6,
		       false);
	return 0;
}

static int system_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct system_state *st = sonde_collection__priv(c);
	const struct rusage *ru = &ri->run->rusage;

	ticker__stop(&st->ticker);
	st->own_cpu_ns += st->ticker.cpu_ns;
	if (!ri->warmup) /* as its windows: only a recorded run's */
		ticker__add_late(&st->late, &st->ticker);
	st->run_wall_ns += ri->run->end_ns - ri->run->start_ns;
	/* the last part of the run: the machine only, the tree has been reaped */
	st->root = 0;
	sample(st, true, true);
	if (ri->warmup) { /* a warm-up is not recorded */
		while (st->ns && st->s[st->ns - 1].run == st->run)
			st->nvals = st->s[--st->ns].first;
	} else {
		st->run_cpu_ns += sonde_rusage_cpu_ns(ru);
		st->run_io[0] += (unsigned long long)ru->ru_inblock * 512;
		st->run_io[1] += (unsigned long long)ru->ru_oublock * 512;
		st->run_flt[0] += (unsigned long long)ru->ru_minflt;
		st->run_flt[1] += (unsigned long long)ru->ru_majflt;
		st->run_sw[0] += (unsigned long long)ru->ru_nvcsw;
		st->run_sw[1] += (unsigned long long)ru->ru_nivcsw;
		st->run++;
	}
	forget_tree(st); /* a new run starts with a new tree */
	close_tree_counters(st);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* What a series is: its uid, unit, whether it is the machine's and a rate. */
struct series {
	const char *uid;
	enum unit unit;
	bool process, rate;
	int cpu;      /* a CPU's own (no summary): its number; else -1 */
	bool summary; /* summarised in stats.system.summary */
};

/* Add one series' resource and its summary; idx is its place in a sample. */
static int emit_series(struct system_state *st, struct sonde_profile *p, json_t *summary,
		       size_t idx, const struct series *se, double *tmp)
{
	json_t *extra = json_pack("{s:s}", "unit", unit_name[se->unit]), *sum;
	double total = 0, acc = 0, peak = -INFINITY, secs = 0;
	size_t i, n = 0;
	long res;
	int err = 0, cpu = se->cpu;

	bool mach = !se->process; /* over the machine's windows */

	if (cpu >= 0)
		json_object_set_new(extra, "cpu", json_integer(cpu));
	for (i = 0; i < st->ns; i++) {
		double v = st->vals[st->s[i].first + idx],
		       d = (double)(mach ? st->s[i].mdur : st->s[i].dur) / 1e9;

		if (isnan(v))
			continue;
		tmp[n++] = v;
		acc += v;
		total += v * d;
		secs += d;
		if (v > peak)
			peak = v;
	}
	if (!n) { /* never measured: no resource, and the summary says so */
		json_decref(extra);
		if (se->summary)
			json_object_set_new(summary, se->uid, json_null());
		return 0;
	}
	res = sonde_profile__resource(p, se->uid, "system", se->process ? "process" : "machine",
				      extra);
	json_decref(extra);
	if (res < 0)
		return (int)res;
	for (i = 0; i < st->ns; i++) {
		double v = st->vals[st->s[i].first + idx];

		if (isnan(v))
			continue;
		err |= sonde_profile__append(p, res, "amount", json_real(v));
		err |= sonde_profile__append(
			p, res, "timestamp",
			json_integer((json_int_t)(mach ? st->s[i].mts : st->s[i].ts)));
		err |= sonde_profile__append(
			p, res, "duration",
			json_integer((json_int_t)(mach ? st->s[i].mdur : st->s[i].dur)));
		err |= sonde_profile__append(p, res, "order", json_integer(st->s[i].run + 1));
	}
	if (!se->summary)
		return err ? -ENOMEM : 0;
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	/* shares and levels: the time-weighted mean; rates: the total over the time seen */
	sum = json_pack("{s:s, s:f, s:f, s:f, s:I}", "unit", unit_name[se->unit], "mean",
			secs > 0 && se->rate ? total / secs : acc / (double)n, "peak", peak, "p95",
			tmp[(size_t)ceil(0.95 * (double)n) - 1], "samples", (json_int_t)n);
	if (se->rate)
		json_object_set_new(sum, "total", json_real(total));
	json_object_set_new(summary, se->uid, sum);
	return err ? -ENOMEM : 0;
}

/* A metric of the table (cpu >= 0: that CPU's own, cpu3.user). */
static int emit(struct system_state *st, struct sonde_profile *p, json_t *summary, size_t idx,
		int m, int cpu, double *tmp)
{
	char uid[64];
	struct series se = { uid, metric[m].unit, metric[m].process, metric[m].rate, cpu, cpu < 0 };

	if (cpu >= 0) /* cpu.user of CPU 3: cpu3.user */
		snprintf(uid, sizeof(uid), "cpu%d%s", cpu, metric[m].uid + 3);
	else
		snprintf(uid, sizeof(uid), "%s", metric[m].uid);
	return emit_series(st, p, summary, idx, &se, tmp);
}

/* GPU g's metric m: gpu0.util */
static int emit_gpu(struct system_state *st, struct sonde_profile *p, json_t *summary, unsigned g,
		    int m, double *tmp)
{
	char uid[64];
	struct series se = { uid, gmetric[m].unit, false, false, -1, true };

	snprintf(uid, sizeof(uid), "gpu%u.%s", sonde_nvml__device(st->nvml, g)->index,
		 gmetric[m].name);
	return emit_series(st, p, summary, gpu_index(st, g, m), &se, tmp);
}

static int system_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct system_state *st = sonde_collection__priv(c);
	json_t *sys = json_object(), *summary = json_object();
	double *tmp = malloc((st->ns + 1) * sizeof(double)), dur = 0;
	unsigned cpu;
	size_t i;
	int m, rc = 0;

	if (!sys || !summary || !tmp) {
		json_decref(sys);
		json_decref(summary);
		free(tmp);
		return -ENOMEM;
	}
	for (m = 0; m < M__N && !rc; m++)
		rc = emit(st, p, summary, (size_t)m, m, -1, tmp);
	for (cpu = 0; st->per_cpu && cpu < st->ncpu && !rc; cpu++)
		for (m = 0; m < N_PERCPU && !rc; m++)
			rc = emit(st, p, summary, M__N + cpu * N_PERCPU + (size_t)m, M_CPU_USER + m,
				  (int)cpu, tmp);
	for (cpu = 0; cpu < st->ngpu && !rc; cpu++)
		for (m = 0; m < N_PERGPU && !rc; m++)
			rc = emit_gpu(st, p, summary, cpu, m, tmp);
	free(tmp);
	for (i = 0; i < st->ns; i++)
		dur += (double)st->s[i].dur;
	json_object_set_new(sys, "interval_ms", json_real(st->interval_ms));
	json_object_set_new(sys, "machine_interval_ms",
			    json_real(st->interval_ms * (double)st->machine_every));
	json_object_set_new(sys, "samples", json_integer((json_int_t)st->ns));
	json_object_set_new(sys, "cpus", json_integer(st->ncpu));
	json_object_set_new(sys, "gpus", json_integer(st->ngpu));
	if (!st->ngpu)
		json_object_set_new(sys, "gpus_not_read", json_string(st->gpu_why));
	json_object_set_new(sys, "summary", summary);
	/* the runs' totals as wait4 gives them (the tree, reaped children included): what
	   the series should add up to, less what came and went between two samples */
	json_object_set_new(
		sys, "runs_total",
		json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "cpu_ns",
			  (json_int_t)st->run_cpu_ns, "io_read_bytes", (json_int_t)st->run_io[0],
			  "io_write_bytes", (json_int_t)st->run_io[1], "minor_faults",
			  (json_int_t)st->run_flt[0], "major_faults", (json_int_t)st->run_flt[1],
			  "voluntary_switches", (json_int_t)st->run_sw[0], "involuntary_switches",
			  (json_int_t)st->run_sw[1]));
	/* what sampling cost: the sampler thread's CPU time, as a share of one CPU */
	json_object_set_new(sys, "own_cpu_ns", json_integer((json_int_t)st->own_cpu_ns));
	json_object_set_new(sys, "own_cpu_share",
			    st->run_wall_ns ? json_real(100.0 * (double)st->own_cpu_ns /
							(double)st->run_wall_ns)
					    : json_null());
	json_object_set_new(sys, "counters_unread", json_integer((json_int_t)st->unread));
	json_object_set_new(sys, "counters_slow", json_integer((json_int_t)st->slow));
	ticker__report_late(&st->late, (uint64_t)(st->interval_ms * 1e6), "system", sys, c);
	if (st->errors)
		sonde_collection__dropped(c, st->errors);
	if (st->unread)
		sonde_collection__note(c,
				       "process.cpu: not measured in %llu interval(s): the kernel "
				       "refused to read the tree's counters while a process of it "
				       "was exiting (their counts came with the next reading)",
				       st->unread);
	if (st->slow)
		sonde_collection__note(
			c,
			"process.cpu: not measured in the intervals on each side of "
			"%llu reading(s): three reads of the counters in a row took "
			"over 200 us each (the sampler preempted, or its CPU taken by "
			"the host), so when the counts were taken is not known",
			st->slow);
	{ /* the machine's CPU shares come in the kernel's ticks */
		long hz = sysconf(_SC_CLK_TCK);
		double ms = st->interval_ms * (double)st->machine_every,
		       ticks = hz > 0 ? ms * (double)hz / 1000.0 : 0;

		if (ticks > 0 && ticks < 10)
			sonde_collection__note(
				c,
				"cpu.*: /proc/stat counts CPU time in ticks of %.0f ms, about "
				"%.1f a CPU in a sample of %g ms: one sample's share of a CPU "
				"is coarse (steps of about %.0f %%), and so are the peak and p95; "
				"the mean over the run is right (process.cpu is counted to the "
				"nanosecond)",
				1000.0 / (double)hz, ticks, ms, 100.0 / ticks);
	}
	if (st->cpus_beyond)
		sonde_collection__note(c,
				       "this machine has more than %d CPUs: they are in cpu.* but "
				       "have no cpuN.* series of their own",
				       MAX_CPUS);
	if (st->too_deep)
		sonde_collection__note(c,
				       "the process tree is deeper than %d: the processes below "
				       "that depth are not in process.*",
				       MAX_DEPTH);
	sonde_profile__set(sonde_profile__stats(p), "system", sys);
	return rc;
}

static void system_cleanup(struct sonde_collection *c)
{
	struct system_state *st = sonde_collection__priv(c);
	size_t i;

	if (!st)
		return;
	ticker__stop(&st->ticker);
	close_tree_counters(st);
	sonde_nvml__close(st->nvml);
	for (i = 0; i < st->ndisks; i++) {
		free(st->disks[i]);
		if (st->disk_fd)
			sonde_procfile__close(&st->disk_fd[i]);
	}
	free(st->disk_fd);
	free(st->disks);
	forget_tree(st);
	for (i = 0; i < sizeof(st->fd) / sizeof(st->fd[0]); i++)
		sonde_procfile__close(&st->fd[i]);
	free(st->thr);
	free(st->pacc);
	free(st->vals);
	free(st->s);
	free(st->prev);
	free(st->cur);
	free(st->mlast);
	free(st);
}

static const char *const system_units[] = { "amount", "the metric's unit", "timestamp",
					    "ns",     "duration",	   "ns",
					    NULL };

static const struct sonde_option system_options[] = {
	{ SONDE_OPT_DURATION, 'I', "interval", NULL, NULL,
	  "sample every DURATION (default 10ms; a plain number is milliseconds)", 1, 3.6e6,
	  .unit_s = 1e-3 },
	{ SONDE_OPT_DURATION, 0, "machine-interval", NULL, NULL,
	  "read the machine (cpu.*, memory.*, pressure.*, disk.*, net.*) every DURATION, "
	  "in whole samples (default 100ms: /proc/stat counts in 10 ms ticks)",
	  1, 3.6e6, .unit_s = 1e-3 },
	{ SONDE_OPT_FLAG, 0, "no-per-cpu", NULL, NULL,
	  "record the CPUs' total only, not each CPU's utilisation" },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_system = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "system",
	.summary = "the machine and the target's process tree, sampled from /proc",
	.profile_type = "system",
	.units = system_units,
	.options = system_options,
	/* the first reading before the exec: what the target does from its first
	   instruction on is counted (read after the exec, a loaded machine lost up
	   to a sixth of its writes) */
	.flags = SONDE_COLLECTOR_EXCLUSIVE | SONDE_COLLECTOR_ONE_RUN |
		 SONDE_COLLECTOR_NEEDS_BARRIER | SONDE_COLLECTOR_PERF_TASK |
		 SONDE_COLLECTOR_ORDER_IS_RUN,
	.before = system_before,
	.start = system_start,
	.stop = system_stop,
	.after = system_after,
	.cleanup = system_cleanup,
	.exited = system_exited,
};

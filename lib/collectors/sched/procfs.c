/*
 * procfs.c - the sched collector without root or BTF (see loader.h): every
 * interval, each thread of the target's tree is read from /proc:
 * task/TID/schedstat (on-CPU and run-queue time in ns, switches-in) and
 * task/TID/status (voluntary and involuntary switches), and the last values
 * seen are kept. What /proc cannot give is left out, and the collector says
 * so: off-CPU time by reason, interrupts, system calls, migrations, the
 * run-queue histogram and the timeline; a thread that starts and ends
 * between two readings is not seen, and the last interval of one that exits
 * is lost, but for the target's own threads: they are read once more when it
 * has exited and is not reaped yet.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../grow.h"
#include "../../procfile.h"
#include "../../ticker.h"
#include "../../u64map.h"
#include "loader.h"

#define MAX_DEPTH 64

struct sc_proc {
	pid_t root;
	struct ticker ticker;
	struct u64map seen; /* tid -> t[] */
	struct sc_thread_rec *t;
	size_t n, cap;
	unsigned long long oom;
	bool too_deep; /* a tree deeper than MAX_DEPTH: its depths not read */
};

static unsigned long long field(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static void read_thread(struct sc_proc *p, pid_t pid, pid_t tid)
{
	char path[96], buf[2048];
	unsigned long long run, wait, slices;
	struct sc_thread *t;
	size_t k;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	if (sonde_procfile__read(NULL, path, buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%llu %llu %llu", &run, &wait, &slices) != 3)
		return;
	if (u64map__element(&p->seen, (uint64_t)tid, (void **)&p->t, &p->n, &p->cap, sizeof(*p->t),
			    &k)) {
		p->oom++;
		return;
	}
	t = &p->t[k].t;
	p->t[k].tid = (unsigned)tid;
	t->tgid = (unsigned)pid;
	t->oncpu_ns = run;
	t->runq_ns = wait;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (sonde_procfile__read(NULL, path, buf, sizeof(buf)) > 0) {
		char *nl;

		t->vol = field(buf, "voluntary_ctxt_switches:");
		t->invol = field(buf, "nonvoluntary_ctxt_switches:");
		if (!strncmp(buf, "Name:\t", 6)) {
			nl = strchr(buf + 6, '\n');
			snprintf(t->comm, sizeof(t->comm), "%.*s", (int)(nl ? nl - (buf + 6) : 15),
				 buf + 6);
		}
	}
}

static void walk(struct sc_proc *p, pid_t pid, int depth)
{
	char path[96], small[4096], *list;
	struct dirent *e;
	DIR *d;

	if (depth > MAX_DEPTH) {
		p->too_deep = true;
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		char *c, *save;

		if (tid <= 0)
			continue;
		read_thread(p, pid, tid);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)tid);
		list = sonde_procfile__read_all(NULL, path, small, sizeof(small));
		for (c = list ? strtok_r(list, " \n", &save) : NULL; c;
		     c = strtok_r(NULL, " \n", &save))
			walk(p, (pid_t)atoi(c), depth + 1);
		if (list != small)
			free(list);
	}
	if (d)
		closedir(d);
}

static void tick(void *arg)
{
	struct sc_proc *p = arg;

	walk(p, p->root, 0);
}

int sc_proc__start(struct sc_proc **out, pid_t pid, double interval_ms)
{
	struct sc_proc *p = calloc(1, sizeof(*p));
	int rc;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->root = pid;
	tick(p);
	p->ticker =
		(struct ticker){ .fn = tick, .ctx = p, .period_ns = (uint64_t)(interval_ms * 1e6) };
	rc = ticker__start(&p->ticker);
	if (rc) {
		sc_proc__free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void sc_proc__last(struct sc_proc *p)
{
	ticker__stop(&p->ticker);
	tick(p);
}

int sc_proc__stop(struct sc_proc *p, struct sc_data *d, unsigned run, bool keep)
{
	size_t i;

	ticker__stop(&p->ticker);
	if (keep)
		ticker__add_late(&d->late, &p->ticker);
	for (i = 0; keep && i < p->n; i++) {
		if (sonde_grow((void **)&d->threads, &d->cap_threads, d->nthreads + 1,
			       sizeof(*d->threads))) {
			d->oom++;
			break;
		}
		d->threads[d->nthreads] = p->t[i];
		d->threads[d->nthreads++].run = run;
	}
	d->oom += p->oom;
	d->too_deep |= p->too_deep;
	return 0;
}

void sc_proc__free(struct sc_proc *p)
{
	if (!p)
		return;
	ticker__stop(&p->ticker);
	u64map__release(&p->seen);
	free(p->t);
	free(p);
}

void sc_data__release(struct sc_data *d)
{
	free(d->threads);
	free(d->syscalls);
	free(d->events);
	memset(d, 0, sizeof(*d));
}

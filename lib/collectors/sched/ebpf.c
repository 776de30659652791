/*
 * ebpf.c - the sched collector's BPF loader (see loader.h and sched.bpf.c).
 *
 * The programs are loaded before the first run and attached at its start,
 * once, system-wide; what they count is filtered in the kernel to the
 * processes in the procs map. A reader thread drains the timeline ring while
 * the target runs; at the end of each run the thread and system-call maps are
 * read and emptied, so that each run's records are its own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "../../bpf-log.h"
#include "../../grow.h"
#include "loader.h"
#include "sched.skel.h"

struct sc_bpf {
	struct sched_bpf *skel;
	struct ring_buffer *rb;
	bool attached;
	pthread_t reader;
	bool reading;
	atomic_int stop;
	pthread_mutex_t lock; /* the ring's consumer, and ev */
	struct sc_event *ev;  /* the run's events so far */
	size_t nev, cap_ev;
	unsigned long long oom;
};

bool sc_bpf__built(void)
{
	return true;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct sc_bpf *b = ctx;

	size_t n = size / sizeof(struct sc_event); /* a batch */

	if (!n)
		return 0;
	if (sonde_grow((void **)&b->ev, &b->cap_ev, b->nev + n, sizeof(*b->ev))) {
		b->oom += n;
		return 0;
	}
	memcpy(&b->ev[b->nev], data, n * sizeof(struct sc_event));
	b->nev += n;
	return 0;
}

static void *reader_main(void *arg)
{
	struct sc_bpf *b = arg;
	int efd = ring_buffer__epoll_fd(b->rb);

	while (!atomic_load(&b->stop)) {
		struct epoll_event e;

		epoll_wait(efd, &e, 1, 100); /* woken at a quarter full, else every 100 ms */
		pthread_mutex_lock(&b->lock);
		ring_buffer__consume(b->rb);
		pthread_mutex_unlock(&b->lock);
	}
	return NULL;
}

int sc_bpf__open(struct sc_bpf **out, bool timeline, bool syscalls, size_t ring_bytes,
		 struct sonde_strbuf *err)
{
	struct sc_bpf *b;
	int rc;

	*out = NULL;
	if (geteuid() != 0) {
		sonde_strbuf__adds(err, "its BPF programs need root");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		sonde_strbuf__adds(err, "its BPF programs need a kernel with BTF "
					"(/sys/kernel/btf/vmlinux is missing)");
		return -ENOTSUP;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	sonde_bpf_log__capture();
	pthread_mutex_init(&b->lock, NULL);
	b->skel = sched_bpf__open();
	if (!b->skel) {
		rc = -errno;
		sonde_strbuf__addf(err, "cannot open its BPF programs: %s", strerror(-rc));
		sc_bpf__free(b);
		return rc;
	}
	b->skel->rodata->timeline = timeline;
	if (!syscalls) { /* not attached at all: the machine's system calls stay untraced */
		bpf_program__set_autoload(b->skel->progs.sc_sys_enter, false);
		bpf_program__set_autoload(b->skel->progs.sc_sys_exit, false);
	}
	b->skel->rodata->wakeup_bytes = ring_bytes / 4;
	bpf_map__set_max_entries(b->skel->maps.events, (uint32_t)ring_bytes);
	rc = sched_bpf__load(b->skel);
	if (rc) {
		sonde_strbuf__addf(err, "the kernel refused its BPF programs: %s%s%s",
				   strerror(-rc), sonde_bpf_log__last()[0] ? ": " : "",
				   sonde_bpf_log__last());
		sc_bpf__free(b);
		return -ENOTSUP;
	}
	*out = b;
	return 0;
}

int sc_bpf__follow(struct sc_bpf *b, pid_t pid, struct sonde_strbuf *err)
{
	uint32_t tgid = (uint32_t)pid, at_exec = SC_AT_EXEC;
	int rc;

	/* counted from its exec on, as perf's enable_on_exec */
	if (bpf_map__update_elem(b->skel->maps.procs, &tgid, sizeof(tgid), &at_exec,
				 sizeof(at_exec), BPF_ANY))
		return -errno;
	b->skel->bss->root_tgid = tgid;
	if (b->attached)
		return 0;
	rc = sched_bpf__attach(b->skel);
	if (rc) {
		sonde_strbuf__addf(err, "cannot attach to the scheduler's tracepoints: %s%s%s",
				   strerror(-rc), sonde_bpf_log__last()[0] ? ": " : "",
				   sonde_bpf_log__last());
		return rc;
	}
	b->attached = true;
	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.events), on_event, b, NULL);
	if (!b->rb)
		return -errno;
	atomic_store(&b->stop, 0);
	b->reading = pthread_create(&b->reader, NULL, reader_main, b) == 0;
	return b->reading ? 0 : -EAGAIN;
}

/* Empty a hash map (keys of 4 bytes). */
static void clear_map(struct bpf_map *m)
{
	uint32_t key, next;
	int fd = bpf_map__fd(m);

	while (!bpf_map_get_next_key(fd, NULL, &next)) {
		key = next;
		if (bpf_map_delete_elem(fd, &key))
			break;
	}
}

int sc_bpf__harvest(struct sc_bpf *b, struct sc_data *d, unsigned run, bool keep)
{
	int fd = bpf_map__fd(b->skel->maps.threads), ncpu = libbpf_num_possible_cpus();
	uint32_t key, next, k;
	uint64_t *per = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*per)) : NULL;
	struct sc_syscall *sc;
	const uint32_t *prev = NULL;
	size_t i;

	/* the ring's last events, and each CPU's batch not yet sent */
	if (b->rb) {
		struct sc_batch *bt = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*bt)) : NULL;
		int bfd = bpf_map__fd(b->skel->maps.batch), c;

		pthread_mutex_lock(&b->lock);
		ring_buffer__consume(b->rb);
		k = 0;
		if (bt && !bpf_map_lookup_elem(bfd, &k, bt)) {
			for (c = 0; c < ncpu; c++)
				on_event(b, bt[c].ev,
					 (bt[c].n < SC_BATCH ? bt[c].n : 0) *
						 sizeof(struct sc_event));
			memset(bt, 0, (size_t)ncpu * sizeof(*bt));
			bpf_map_update_elem(bfd, &k, bt, BPF_ANY);
		}
		pthread_mutex_unlock(&b->lock);
		free(bt);
	}
	clear_map(b->skel->maps.procs); /* the next run follows its own tree */
	for (i = 0; keep && i < b->nev; i++) {
		if (sonde_grow((void **)&d->events, &d->cap_events, d->nevents + 1,
			       sizeof(*d->events))) {
			d->oom++;
			break;
		}
		d->events[d->nevents].run = run;
		d->events[d->nevents++].e = b->ev[i];
	}
	pthread_mutex_lock(&b->lock);
	b->nev = 0;
	d->oom += b->oom;
	b->oom = 0;
	pthread_mutex_unlock(&b->lock);
	for (prev = NULL; !bpf_map_get_next_key(fd, prev, &next); prev = &key) {
		struct sc_thread t;

		key = next;
		if (!keep || bpf_map_lookup_elem(fd, &key, &t))
			continue;
		if (sonde_grow((void **)&d->threads, &d->cap_threads, d->nthreads + 1,
			       sizeof(*d->threads))) {
			d->oom++;
			continue;
		}
		d->threads[d->nthreads++] =
			(struct sc_thread_rec){ .run = run, .tid = key, .t = t };
	}
	clear_map(b->skel->maps.threads);
	/* the system calls: per CPU, summed */
	fd = bpf_map__fd(b->skel->maps.syscalls);
	sc = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*sc)) : NULL;
	for (k = 0; sc && k < SC_MAX_SYSCALLS; k++) {
		struct sc_syscall sum = { 0 };
		int c, h;

		if (bpf_map_lookup_elem(fd, &k, sc))
			continue;
		for (c = 0; c < ncpu; c++) {
			sum.count += sc[c].count;
			sum.errors += sc[c].errors;
			sum.total_ns += sc[c].total_ns;
			if (sc[c].max_ns > sum.max_ns)
				sum.max_ns = sc[c].max_ns;
			for (h = 0; h < SC_HIST; h++)
				sum.hist[h] += sc[c].hist[h];
		}
		if (!sum.count)
			continue;
		memset(sc, 0, (size_t)ncpu * sizeof(*sc));
		bpf_map_update_elem(fd, &k, sc, BPF_ANY);
		if (!keep)
			continue;
		if (sonde_grow((void **)&d->syscalls, &d->cap_syscalls, d->nsyscalls + 1,
			       sizeof(*d->syscalls))) {
			d->oom++;
			continue;
		}
		d->syscalls[d->nsyscalls++] =
			(struct sc_syscall_rec){ .run = run, .nr = k, .s = sum };
	}
	free(sc);
	/* what the programs could not keep, summed over the CPUs */
	for (k = 0; per && k < SC_ST_N; k++) {
		int c;

		if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.stats), &k, per))
			continue;
		for (c = 0; c < ncpu; c++)
			d->drops[k] += per[c];
		memset(per, 0, (size_t)ncpu * sizeof(*per));
		bpf_map_update_elem(bpf_map__fd(b->skel->maps.stats), &k, per, BPF_ANY);
	}
	free(per);
	return 0;
}

void sc_bpf__free(struct sc_bpf *b)
{
	if (!b)
		return;
	if (b->reading) {
		atomic_store(&b->stop, 1);
		pthread_join(b->reader, NULL);
	}
	ring_buffer__free(b->rb);
	sched_bpf__destroy(b->skel);
	pthread_mutex_destroy(&b->lock);
	free(b->ev);
	free(b);
}

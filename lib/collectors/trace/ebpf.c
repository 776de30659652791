/*
 * ebpf.c - the trace collector's eBPF engine, in sonde: loads trace.bpf.c,
 * attaches uprobes and uretprobes to the chosen functions of an unmodified
 * binary (and USDT probes), and reads the ring buffer into the analysis.
 *
 * Probes are attached once, system-wide, before the first run; the kernel side
 * records only the processes in its `procs` map: the target, put there while it
 * waits at the runner's barrier, and every process it forks. A reader thread
 * polls the ring buffer during the run, feeding the analysis as it goes, so a
 * long run needs no more memory than its distinct calling contexts.
 *
 * A function that starts with endbr64 is probed just after it: the kernel
 * single-steps an instruction it cannot emulate, and endbr64 is one of them on
 * many kernels, which costs a probe hit several microseconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sonde/clock.h>
#include <sonde/stats.h>
#include "../../bpf-log.h"
#include "../../u64map.h"
#include "../../grow.h"
#include "ebpf.h"
#include "trace.skel.h"

struct probe {
	uint32_t module;
	uint32_t every, pair;
	uint64_t vaddr;
	uint8_t kind, size_arg;
	bool off;      /* every 0: not traced after all */
	bool calib;    /* sonde's own calibration probe */
	bool stepped;  /* its first instruction is single-stepped */
	char *name;    /* USDT: provider:name */
	uint64_t sem;  /* USDT semaphore's ELF address, 0: none */
	uint32_t func; /* the analysis' function + 1, once seen */
};

struct te_loader {
	struct tr_analysis *a;
	struct trace_bpf *skel;
	char **paths;
	struct tr_segs *segs;
	size_t npaths;
	struct probe *p;
	size_t np, capp;
	struct u64map index;	 /* module << 48 | vaddr -> probe + 1 (functions) */
	struct bpf_link **links; /* perf-event links, tracepoints */
	size_t nlinks, caplinks, failed;
	int *fds; /* uprobe_multi links */
	size_t nfds, capfds;
	bool calib;		/* the calibration probes are there */
	double cost[2];		/* ns per recorded call: emulated, single-stepped */
	uint64_t calls[2];	/* calls recorded, by kind */
	uint64_t base[TE_ST_N]; /* the counters after calibration */
	struct ring_buffer *rb;
	pthread_t reader;
	bool reading;
	atomic_int stop;
	/* the run */
	struct tr_feed *feed;
	struct u64map serial; /* pid -> serial */
	char **exes;	      /* per serial */
	uint32_t nserial;
	uint32_t target;    /* the run's process, until its first image is known */
	uint64_t reader_ns; /* the reader thread's CPU time in this run */
	const char *target_exe;
	int err;
	bool multi;	     /* probes are attached as uprobe_multi links */
	bool unflushed;	     /* te_flush could not run at a stop (see flush_batches) */
	te_follow_fn follow; /* exec'ed files get probes (te_loader__follow) */
	void *follow_ctx;
};

int te_loader__new(struct te_loader **out, struct tr_analysis *a, struct sonde_strbuf *err)
{
	struct te_loader *l;

	*out = NULL;
	if (geteuid() != 0) {
		sonde_strbuf__adds(err, "the ebpf engine loads BPF programs and uprobes: it needs "
					"root (run sonde as root, or use -e instrument)");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		sonde_strbuf__adds(err,
				   "the ebpf engine needs a kernel with BTF, and "
				   "/sys/kernel/btf/vmlinux is missing (CONFIG_DEBUG_INFO_BTF=y)");
		return -ENOTSUP;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->a = a;
	sonde_bpf_log__capture();
	*out = l;
	return 0;
}

static void close_links(struct te_loader *l);

static void end_reader(struct te_loader *l)
{
	if (l->reading) {
		atomic_store(&l->stop, 1);
		pthread_join(l->reader, NULL);
		l->reading = false;
	}
}

void te_loader__free(struct te_loader *l)
{
	size_t i;

	if (!l)
		return;
	end_reader(l);
	if (l->feed)
		tr_feed__end(l->feed, 0);
	ring_buffer__free(l->rb);
	close_links(l);
	trace_bpf__destroy(l->skel);
	for (i = 0; i < l->np; i++)
		free(l->p[i].name);
	free(l->p);
	u64map__release(&l->index);
	u64map__release(&l->serial);
	tr_strv_free(l->paths);
	free(l->segs);
	for (i = 0; i < l->nserial; i++)
		free(l->exes[i]);
	free(l->exes);
	free(l);
}

/* ---- probes ------------------------------------------------------------------------------ */

static int module_of(struct te_loader *l, const char *path, uint32_t *out)
{
	size_t i;
	void *n;

	for (i = 0; i < l->npaths; i++)
		if (strcmp(l->paths[i], path) == 0) {
			*out = (uint32_t)i;
			return 0;
		}
	n = realloc(l->paths, (l->npaths + 2) * sizeof(*l->paths));
	if (!n)
		return -ENOMEM;
	l->paths = n;
	n = realloc(l->segs, (l->npaths + 1) * sizeof(*l->segs));
	if (!n)
		return -ENOMEM;
	l->segs = n;
	l->paths[l->npaths] = strdup(path);
	l->paths[l->npaths + 1] = NULL;
	if (!l->paths[l->npaths])
		return -ENOMEM;
	if (tr_elf_segs(path, &l->segs[l->npaths])) {
		free(l->paths[l->npaths]);
		l->paths[l->npaths] = NULL;
		return -ENOEXEC;
	}
	*out = (uint32_t)l->npaths++;
	return 0;
}

static struct probe *new_probe(struct te_loader *l, uint32_t module, uint64_t vaddr, uint8_t kind)
{
	struct probe *p;

	if (l->np >= TE_MAX_PROBES - 1 ||
	    sonde_grow((void **)&l->p, &l->capp, l->np + 1, sizeof(*l->p)))
		return NULL;
	p = &l->p[l->np++];
	memset(p, 0, sizeof(*p));
	p->module = module;
	p->vaddr = vaddr;
	p->kind = kind;
	p->every = 1;
	return p;
}

static int func_probe(struct te_loader *l, const char *path, uint64_t vaddr, struct probe **out)
{
	uint32_t m;
	uint64_t v;
	int rc = module_of(l, path, &m);

	if (rc)
		return rc;
	if (u64map__get(&l->index, (uint64_t)m << 48 | vaddr, &v)) {
		*out = &l->p[v - 1];
		return 1;
	}
	*out = new_probe(l, m, vaddr, TE_PK_FUNC);
	if (!*out || u64map__put(&l->index, (uint64_t)m << 48 | vaddr, l->np))
		return -ENOMEM;
	return 0;
}

int te_loader__func(struct te_loader *l, const char *path, uint64_t vaddr, uint32_t every,
		    bool rule, unsigned size_arg)
{
	struct probe *p = NULL;
	int rc = func_probe(l, path, vaddr, &p);

	if (rc < 0)
		return rc;
	if (rc == 0 || rule || (size_arg && p->off)) {
		p->every = every;
		p->off = every == 0;
	}
	if (size_arg)
		p->size_arg = (uint8_t)size_arg;
	return 0;
}

int te_loader__usdt(struct te_loader *l, const char *path, const struct tr_usdt *site,
		    enum te_probe_kind kind, uint32_t group, uint32_t every, uint32_t *idx)
{
	struct probe *p;
	uint32_t m;
	int rc = module_of(l, path, &m);

	if (rc)
		return rc;
	p = new_probe(l, m, site->pc, (uint8_t)kind);
	if (!p)
		return -ENOMEM;
	*idx = (uint32_t)(l->np - 1);
	p->pair = group == UINT32_MAX ? *idx : group;
	p->every = every;
	p->sem = site->semaphore;
	if (group == UINT32_MAX && asprintf(&p->name, "%s:%s", site->provider, site->name) < 0) {
		p->name = NULL;
		return -ENOMEM;
	}
	return 0;
}

int te_loader__size_probe(struct te_loader *l, const char *path, uint64_t vaddr)
{
	uint32_t m;
	int rc = module_of(l, path, &m);

	if (rc)
		return rc;
	return new_probe(l, m, vaddr, TE_PK_SIZE) ? 0 : -ENOMEM;
}

size_t te_loader__nprobes(const struct te_loader *l)
{
	size_t i, n = 0;

	for (i = 0; i < l->np; i++)
		n += !l->p[i].off && !l->p[i].calib;
	return n;
}

size_t te_loader__failed(const struct te_loader *l)
{
	return l->failed;
}

/* ---- attach ------------------------------------------------------------------------------ */

/*
 * uprobe_multi links (Linux 6.6): one link carries every probe of a program in
 * a file, and detaching it waits for one grace period instead of one per probe
 * (about 0.1 s each here). Debian 12's headers predate it, so the attribute
 * layout of BPF_LINK_CREATE is spelled out.
 */
#define TE_TRACE_UPROBE_MULTI	 48
#define TE_F_UPROBE_MULTI_RETURN 1u
struct te_uprobe_multi_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, multi_flags, pid;
};

static int keep_link(struct te_loader *l, struct bpf_link *link)
{
	if (sonde_grow((void **)&l->links, &l->caplinks, l->nlinks + 1, sizeof(*l->links))) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	l->links[l->nlinks++] = link;
	return 0;
}

static int keep_fd(struct te_loader *l, int fd)
{
	if (sonde_grow((void **)&l->fds, &l->capfds, l->nfds + 1, sizeof(*l->fds))) {
		close(fd);
		return -ENOMEM;
	}
	l->fds[l->nfds++] = fd;
	return 0;
}

struct closer {
	struct te_loader *l;
	size_t from, step;
};

static void *close_some(void *arg)
{
	struct closer *c = arg;
	size_t i;

	for (i = c->from; i < c->l->nlinks; i += c->step)
		bpf_link__destroy(c->l->links[i]);
	for (i = c->from; i < c->l->nfds; i += c->step)
		close(c->l->fds[i]);
	return NULL;
}

/* Detach everything; each detach waits for a grace period, so they wait together. */
static void close_links(struct te_loader *l)
{
	enum { MAX_THREADS = 32 };
	size_t n = l->nlinks > l->nfds ? l->nlinks : l->nfds, k, t;
	pthread_t th[MAX_THREADS];
	struct closer c[MAX_THREADS];
	bool started[MAX_THREADS] = { 0 };

	t = n < MAX_THREADS ? n : MAX_THREADS;
	for (k = 0; k < t; k++) {
		c[k] = (struct closer){ l, k, t };
		started[k] = pthread_create(&th[k], NULL, close_some, &c[k]) == 0;
	}
	for (k = 0; k < t; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		else
			close_some(&c[k]);
	}
	free(l->links);
	free(l->fds);
	l->links = NULL;
	l->fds = NULL;
	l->nlinks = l->caplinks = l->nfds = l->capfds = 0;
}

/* Whether the kernel emulates this instruction at a uprobe (no single step). */
static bool emulated(const unsigned char *b)
{
	unsigned char op = b[0] == 0x41 || b[0] == 0x66 ? b[1] : b[0]; /* REX.B, operand size */

	return (op >= 0x50 && op <= 0x57) || op == 0x90 || op == 0xe8 || op == 0xe9 || op == 0xeb ||
	       (op >= 0x70 && op <= 0x7f) || (b[0] == 0x0f && b[1] == 0x1f);
}

/* The probe's file offset, past an endbr64 at a function's start. */
static bool probe_offset(struct te_loader *l, struct probe *p, int fd, uint64_t *off)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	unsigned char head[8];

	if (!tr_segs__offset(&l->segs[p->module], p->vaddr, off))
		return false;
	if (p->kind != TE_PK_FUNC || fd < 0 || pread(fd, head, 8, (off_t)*off) != 8)
		return true;
	if (memcmp(head, endbr64, 4) == 0) {
		*off += 4;
		memmove(head, head + 4, 4);
	}
	p->stepped = !emulated(head);
	return true;
}

/* The four programs, and which probes each takes. */
static struct bpf_program *prog_of(struct te_loader *l, int which)
{
	switch (which) {
	case 0:
		return l->skel->progs.te_call;
	case 1:
		return l->skel->progs.te_return;
	case 2:
		return l->skel->progs.te_usdt;
	default:
		return l->skel->progs.te_size;
	}
}

static bool takes(const struct probe *p, int which)
{
	if (p->off)
		return false;
	switch (which) {
	case 0:
	case 1:
		return p->kind == TE_PK_FUNC;
	case 3:
		return p->kind == TE_PK_SIZE;
	default:
		return p->kind != TE_PK_FUNC && p->kind != TE_PK_SIZE;
	}
}

/* One program's probes in one file as one uprobe_multi link. */
static int attach_multi(struct te_loader *l, uint32_t m, int which, int fd)
{
	uint64_t *off = calloc(l->np, sizeof(*off)), *ref = calloc(l->np, sizeof(*ref)),
		 *cookie = calloc(l->np, sizeof(*cookie));
	union bpf_attr attr;
	struct te_uprobe_multi_attr a = { 0 };
	bool refs = false;
	uint32_t k, n = 0;
	int lfd, rc = 0;

	if (!off || !ref || !cookie) {
		rc = -ENOMEM;
		goto out;
	}
	for (k = 0; k < l->np; k++) {
		struct probe *p = &l->p[k];

		if (p->module != m || !takes(p, which))
			continue;
		if (!probe_offset(l, p, fd, &off[n]) ||
		    (p->sem && !tr_segs__offset(&l->segs[m], p->sem, &ref[n]))) {
			l->failed += which != 1;
			continue;
		}
		refs |= ref[n] != 0;
		cookie[n++] = k;
	}
	if (!n)
		goto out;
	a.prog_fd = (uint32_t)bpf_program__fd(prog_of(l, which));
	a.attach_type = TE_TRACE_UPROBE_MULTI;
	a.multi_flags = which == 1 ? TE_F_UPROBE_MULTI_RETURN : 0;
	a.path = (uint64_t)(uintptr_t)l->paths[m];
	a.offsets = (uint64_t)(uintptr_t)off;
	a.ref_ctr_offsets = refs ? (uint64_t)(uintptr_t)ref : 0;
	a.cookies = (uint64_t)(uintptr_t)cookie;
	a.cnt = n;
	memset(&attr, 0, sizeof(attr));
	memcpy(&attr, &a, sizeof(a) < sizeof(attr) ? sizeof(a) : sizeof(attr));
	lfd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	rc = lfd < 0 ? -errno : keep_fd(l, lfd);
out:
	free(off);
	free(ref);
	free(cookie);
	return rc;
}

/* Without uprobe_multi: a perf event and a link per probe. */
static int attach_one(struct te_loader *l, uint32_t k, int which, int fd)
{
	struct probe *p = &l->p[k];
	uint64_t off, sem = 0;
	struct bpf_link *link;

	if (!probe_offset(l, p, fd, &off) ||
	    (p->sem && !tr_segs__offset(&l->segs[p->module], p->sem, &sem))) {
		l->failed += which != 1;
		return 0;
	}
	{
		LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = k, .retprobe = which == 1,
			    .ref_ctr_offset = (size_t)sem);

		link = bpf_program__attach_uprobe_opts(prog_of(l, which), -1, l->paths[p->module],
						       (size_t)off, &o);
	}
	if (!link) {
		l->failed += which != 1;
		return 0;
	}
	return keep_link(l, link);
}

/* Probes from..np into the kernel's table. */
static int put_probes(struct te_loader *l, uint32_t from)
{
	uint32_t k;

	for (k = from; k < l->np; k++) {
		struct te_probe tp = { .every = l->p[k].every,
				       .pair = l->p[k].pair,
				       .kind = l->p[k].kind,
				       .size_arg = l->p[k].size_arg };

		if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.probes), &k, &tp, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int load(struct te_loader *l, bool multi, uint32_t max_depth, size_t ring_bytes,
		struct sonde_strbuf *err)
{
	int rc, w;

	l->skel = trace_bpf__open();
	if (!l->skel) {
		rc = -errno;
		sonde_strbuf__addf(err, "cannot open the trace BPF object: %s", strerror(-rc));
		return rc;
	}
	l->skel->rodata->max_depth = max_depth;
	l->skel->rodata->wakeup_bytes = ring_bytes / 4;
	bpf_map__set_max_entries(l->skel->maps.events, (uint32_t)ring_bytes);
	for (w = 0; multi && w < 4; w++)
		bpf_program__set_expected_attach_type(prog_of(l, w), TE_TRACE_UPROBE_MULTI);
	rc = trace_bpf__load(l->skel);
	if (rc) {
		sonde_strbuf__addf(err, "cannot load the trace BPF programs: %s%s%s", strerror(-rc),
				   sonde_bpf_log__last()[0] ? ": " : "", sonde_bpf_log__last());
		return rc;
	}
	return put_probes(l, 0);
}

/* The probes of modules from..npaths: as uprobe_multi links, or one by one. */
static int attach_probes(struct te_loader *l, bool multi, uint32_t from)
{
	uint32_t m, k;
	int rc = 0, w;

	l->multi = multi;
	for (m = from; m < l->npaths && !rc; m++) {
		int fd = open(l->paths[m], O_RDONLY | O_CLOEXEC);

		for (w = 0; w < 4 && !rc; w++) {
			if (multi) {
				rc = attach_multi(l, m, w, fd);
				continue;
			}
			for (k = 0; k < l->np && !rc; k++)
				if (l->p[k].module == m && takes(&l->p[k], w))
					rc = attach_one(l, k, w, fd);
		}
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

/*
 * Calibration targets, written in assembly so their first instruction is known:
 * a probe hit costs a trap when the kernel emulates the probed instruction
 * (push, nop, jumps, calls), and a second trap for a single step when it does
 * not. Each kind is timed against an unprobed twin.
 */
__asm__(".text\n"
	".globl te_calib_push\n.hidden te_calib_push\n.type te_calib_push, @function\n"
	"te_calib_push:\n push %rbp\n mov %edi, %eax\n add $1, %eax\n pop %rbp\n ret\n"
	".size te_calib_push, .-te_calib_push\n"
	".globl te_calib_step\n.hidden te_calib_step\n.type te_calib_step, @function\n"
	"te_calib_step:\n mov %edi, %eax\n add $1, %eax\n ret\n"
	".size te_calib_step, .-te_calib_step\n"
	".globl te_calib_twin\n.hidden te_calib_twin\n.type te_calib_twin, @function\n"
	"te_calib_twin:\n push %rbp\n mov %edi, %eax\n add $1, %eax\n pop %rbp\n ret\n"
	".size te_calib_twin, .-te_calib_twin\n");
int te_calib_push(int x);
int te_calib_step(int x);
int te_calib_twin(int x);
/* by kind: the kernel emulates the first instruction, or single-steps it */
static int (*const calib_fn[2])(int) = { te_calib_push, te_calib_step };

struct find_self {
	uintptr_t addr;
	char path[4096];
	uint64_t vaddr;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct find_self *f = ctx;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || f->addr < start || f->addr >= start + ph->p_memsz)
			continue;
		f->vaddr = f->addr - info->dlpi_addr;
		if (info->dlpi_name && *info->dlpi_name)
			snprintf(f->path, sizeof(f->path), "%s", info->dlpi_name);
		else if (!realpath("/proc/self/exe", f->path))
			f->path[0] = '\0';
		return 1;
	}
	return 0;
}

/* The calibration probes, in sonde's own process: te_calib_push and te_calib_step. */
static void add_calibration(struct te_loader *l)
{
	uint32_t m;
	int i;

	for (i = 0; i < 2; i++) {
		struct find_self self = { .addr = (uintptr_t)calib_fn[i] };
		struct probe *p;

		if (!dl_iterate_phdr(find_self, &self) || !self.path[0] ||
		    module_of(l, self.path, &m))
			return;
		p = new_probe(l, m, self.vaddr, TE_PK_FUNC);
		if (!p)
			return;
		p->calib = true;
	}
	l->calib = true;
}

static uint64_t timed_calls(int (*fn)(int), int n)
{
	uint64_t t = sonde_clock_ns();
	int i, x = 0;

	for (i = 0; i < n; i++)
		x = fn(x);
	__asm__ volatile("" : : "r"(x));
	return sonde_clock_ns() - t;
}

static void read_stats(const struct te_loader *l, uint64_t out[TE_ST_N])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(l->skel->maps.stats);
	uint64_t *v = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*v)) : NULL;
	uint32_t k;
	int c;

	for (k = 0; k < TE_ST_N; k++) {
		out[k] = 0;
		if (v && bpf_map_lookup_elem(fd, &k, v) == 0)
			for (c = 0; c < ncpu; c++)
				out[k] += v[c];
	}
	free(v);
}

/*
 * Time each calibration target, probed with sonde's own process traced,
 * against the unprobed twin, rounds interleaved; the median difference is the
 * cost of one recorded call (breakpoint, single step or not, both programs,
 * the events) for that kind of first instruction.
 */
static void calibrate(struct te_loader *l)
{
	enum { ROUNDS = 7, CALLS = 200 };
	uint32_t pid = (uint32_t)getpid(), one = 1;
	int r, i, procs = bpf_map__fd(l->skel->maps.procs);
	double d[ROUNDS];

	if (!l->calib || bpf_map_update_elem(procs, &pid, &one, BPF_ANY))
		return;
	for (i = 0; i < 2; i++) {
		for (r = 0; r < ROUNDS; r++) {
			uint64_t probed = timed_calls(calib_fn[i], CALLS),
				 plain = timed_calls(te_calib_twin, CALLS);

			d[r] = probed > plain ? (double)(probed - plain) / CALLS : 0;
			ring_buffer__consume(l->rb); /* no run yet: the events are dropped */
		}
		l->cost[i] = sonde_stats__median_inplace(d, ROUNDS);
	}
	/* sonde's thread keeps its stack (what its batch holds is never sent): not traced
	   from the next generation on */
	bpf_map_delete_elem(procs, &pid);
	__atomic_add_fetch(&l->skel->bss->procs_gen, 1, __ATOMIC_SEQ_CST);
}

static int on_event(void *ctx, void *data, size_t size);

int te_loader__attach(struct te_loader *l, uint32_t max_depth, size_t ring_bytes,
		      struct sonde_strbuf *err)
{
	size_t i;
	int rc;

	add_calibration(l);
	l->failed = 0;
	rc = load(l, true, max_depth, ring_bytes, err);
	if (!rc)
		rc = attach_probes(l, true, 0);
	if (rc == -EINVAL || rc == -EOPNOTSUPP || rc == -ENOSYS || rc == -EPROTO) {
		/* no uprobe_multi in this kernel: load again for one link per probe */
		close_links(l);
		trace_bpf__destroy(l->skel);
		l->skel = NULL;
		sonde_strbuf__reset(err);
		l->failed = 0;
		rc = load(l, false, max_depth, ring_bytes, err);
		if (!rc)
			rc = attach_probes(l, false, 0);
	}
	if (rc)
		return rc;
	if (l->failed && l->failed >= te_loader__nprobes(l)) {
		sonde_strbuf__addf(err, "no probe could be attached%s%s",
				   sonde_bpf_log__last()[0] ? ": " : "", sonde_bpf_log__last());
		return -ENOTSUP;
	}
	for (i = 0; i < 3; i++) {
		struct bpf_program *prog = i == 0   ? l->skel->progs.te_fork
					   : i == 1 ? l->skel->progs.te_exec
						    : l->skel->progs.te_exit;
		struct bpf_link *link = bpf_program__attach(prog);

		if (!link) {
			rc = -errno;
			sonde_strbuf__addf(err, "cannot attach to the scheduler's tracepoints: %s",
					   strerror(-rc));
			return rc;
		}
		if ((rc = keep_link(l, link)))
			return rc;
	}
	l->rb = ring_buffer__new(bpf_map__fd(l->skel->maps.events), on_event, l, NULL);
	if (!l->rb)
		return -errno;
	calibrate(l);
	read_stats(l, l->base);
	return 0;
}

/* ---- events ------------------------------------------------------------------------------ */

static uint32_t new_serial(struct te_loader *l, uint32_t pid, uint32_t parent, const char *exe)
{
	uint32_t s = ++l->nserial;
	char **n = realloc(l->exes, (s + 1) * sizeof(*l->exes));

	if (!n) {
		l->err = -ENOMEM;
		return s;
	}
	l->exes = n;
	l->exes[s - 1] = strdup(exe);
	l->exes[s] = NULL;
	if (!l->exes[s - 1] || u64map__put(&l->serial, pid, s) ||
	    tr_feed__process(l->feed, s, pid, parent, exe, strlen(exe)))
		l->err = -ENOMEM;
	return s;
}

static uint32_t serial_of(struct te_loader *l, uint32_t pid)
{
	uint64_t v;

	if (u64map__get(&l->serial, pid, &v))
		return (uint32_t)v;
	if (pid == l->target) { /* its exec event was lost */
		l->target = 0;
		return new_serial(l, pid, 0, l->target_exe);
	}
	return new_serial(l, pid, 0, "?"); /* its fork event was lost */
}

static int func_of(struct te_loader *l, uint32_t idx, uint32_t *out)
{
	struct probe *p;
	int rc;

	if (idx >= l->np)
		return -EINVAL;
	p = &l->p[idx];
	if (p->func) {
		*out = p->func - 1;
		return 0;
	}
	rc = tr_analysis__func(l->a, l->paths[p->module], p->vaddr, p->name, out);
	if (!rc)
		p->func = *out + 1;
	return rc;
}

void te_loader__follow(struct te_loader *l, te_follow_fn add, void *ctx)
{
	l->follow = add;
	l->follow_ctx = ctx;
}

static bool same_file(const char *a, const struct stat *sb)
{
	struct stat sa;

	return stat(a, &sa) == 0 && sa.st_dev == sb->st_dev && sa.st_ino == sb->st_ino;
}

/*
 * Process pid exec'ed and waits, stopped by the kernel side: probe its new
 * image if no probe is on it yet, then let it go on, whatever happens.
 */
static void follow_exec(struct te_loader *l, uint32_t pid, bool first)
{
	char link[64], path[PATH_MAX];
	uint32_t np0 = (uint32_t)l->np, m0 = (uint32_t)l->npaths, m;
	struct stat st;
	ssize_t n;
	int rc = 0;

	if (first)
		goto go_on; /* the run's own program (or a script's interpreter): chosen */
	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || stat(link, &st) < 0)
		goto go_on;
	path[n] = '\0';
	for (m = 0; m < l->npaths; m++)
		if (same_file(l->paths[m], &st))
			goto go_on;
	rc = l->follow(l->follow_ctx, l, path);
	if (!rc)
		rc = put_probes(l, np0);
	if (!rc && l->npaths > m0)
		rc = attach_probes(l, l->multi, m0);
	if (rc)
		l->err = rc;
go_on:
	kill((pid_t)pid, SIGCONT);
}

static int on_thread_event(struct te_loader *l, const struct te_event *e, const void *data,
			   size_t size);

/*
 * A record of the ring buffer: a process event (fork, exec, exit), or a
 * thread's batch of calls, returns and points (one or more te_event, in order).
 */
static int on_event(void *ctx, void *data, size_t size)
{
	struct te_loader *l = ctx;
	const struct te_event *e = data;
	size_t off;
	int rc = 0;

	if (!l->feed || size < sizeof(*e))
		return 0;	       /* calibration, or not ours */
	l->a->t.log_bytes += size + 8; /* and the ring buffer's record header */
	if (e->type != TE_EV_CALL && e->type != TE_EV_RET && e->type != TE_EV_POINT)
		return on_thread_event(l, e, data, size);
	for (off = 0; off + sizeof(*e) <= size && !rc; off += sizeof(*e))
		rc = on_thread_event(l, (const struct te_event *)((const char *)data + off),
				     (const char *)data + off, sizeof(*e));
	return rc;
}

static int on_thread_event(struct te_loader *l, const struct te_event *e, const void *data,
			   size_t size)
{
	struct tr_thread *t;
	uint32_t func;
	int rc = 0;

	switch (e->type) {
	case TE_EV_FORK: {
		uint32_t parent = serial_of(l, e->tid);

		new_serial(l, e->pid, parent, l->exes[parent - 1] ? l->exes[parent - 1] : "?");
		return l->err;
	}
	case TE_EV_EXEC:
		if (size < sizeof(struct te_exec))
			return 0;
		if (e->pid == l->target) { /* the target leaves sonde's fork for its program */
			l->target = 0;
			new_serial(l, e->pid, 0, ((const struct te_exec *)data)->filename);
			if (l->follow)
				follow_exec(l, e->pid, true);
		} else {
			new_serial(l, e->pid, serial_of(l, e->pid),
				   ((const struct te_exec *)data)->filename);
			if (l->follow)
				follow_exec(l, e->pid, false);
		}
		return l->err;
	default:
		break;
	}
	t = tr_feed__thread(l->feed, serial_of(l, e->pid), e->pid, e->tid);
	if (!t)
		return -ENOMEM;
	switch (e->type) {
	case TE_EV_CALL:
		if (e->probe < l->np)
			l->calls[l->p[e->probe].stepped]++;
		rc = tr_feed__unwind(l->feed, t, e->rdepth, e->ts);
		rc = rc ? rc : func_of(l, e->probe, &func);
		rc = rc ? rc : tr_feed__enter(l->feed, t, func, e->ts);
		break;
	case TE_EV_RET:
		rc = tr_feed__unwind(l->feed, t, e->rdepth + 1, e->ts);
		if (e->flags & TE_FF_SIZE)
			tr_feed__size(t, e->size);
		if (!rc && tr_feed__depth(t) == e->rdepth + 1)
			rc = tr_feed__exit(l->feed, t, e->ts);
		else if (!rc)
			l->a->t.unmatched++;
		break;
	case TE_EV_POINT:
		rc = func_of(l, e->probe, &func);
		rc = rc ? rc : tr_feed__enter(l->feed, t, func, e->ts);
		rc = rc ? rc : tr_feed__exit(l->feed, t, e->ts);
		break;
	case TE_EV_EXIT:
		if (size >= sizeof(struct te_exit)) {
			char name[TE_COMM + 1] = { 0 };

			memcpy(name, ((const struct te_exit *)data)->comm, TE_COMM);
			tr_feed__name(t, name);
		}
		break;
	default:
		break; /* a later version's event */
	}
	if (rc)
		l->err = rc;
	return rc;
}

/* Reads events while the target runs; its CPU time is the analysis' during the run. */
/*
 * Nobody reads the exec events any more: no process is stopped at exec from
 * now on, and one stopped already goes on (SIGCONT to a running one is nothing).
 */
static void stop_following(struct te_loader *l)
{
	int fd = bpf_map__fd(l->skel->maps.procs);
	uint32_t key, next, *prev = NULL;

	l->skel->bss->follow_exec = 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		kill((pid_t)key, SIGCONT);
	}
}

static void *reader(void *arg)
{
	struct te_loader *l = arg;

	while (!atomic_load(&l->stop) && !l->err) {
		int n = ring_buffer__poll(l->rb, 50);

		if (n < 0 && n != -EINTR && !l->err)
			l->err = n;
	}
	if (l->err)
		stop_following(l);
	l->reader_ns = sonde_clock_thread_cpu_ns();
	return NULL;
}

int te_loader__start(struct te_loader *l, pid_t pid, const char *exe, uint64_t t0)
{
	uint32_t key = (uint32_t)pid, one = 1;
	int rc;

	l->feed = tr_feed__new(l->a, t0);
	if (!l->feed)
		return -ENOMEM;
	l->target = key; /* it waits at the barrier: its image comes with its exec */
	l->target_exe = exe;
	l->skel->bss->follow_exec = l->follow != NULL;
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.procs), &key, &one, BPF_ANY))
		return -errno;
	atomic_store(&l->stop, 0);
	rc = pthread_create(&l->reader, NULL, reader, l);
	if (rc)
		return -rc;
	l->reading = true;
	return 0;
}

/* The estimated cost: each recorded call at its kind's calibrated cost. */
static void cost(struct te_loader *l)
{
	double n = (double)(l->calls[0] + l->calls[1]);
	size_t i, stepped = 0;

	if (l->cost[0] <= 0 || l->cost[1] <= 0)
		return;
	for (i = 0; i < l->np; i++)
		stepped += !l->p[i].off && !l->p[i].calib && l->p[i].stepped;
	l->a->t.cost_ns_per_call =
		n ? ((double)l->calls[0] * l->cost[0] + (double)l->calls[1] * l->cost[1]) / n
		  : l->cost[0];
	json_decref(l->a->engine_stats);
	l->a->engine_stats =
		json_pack("{s:{s:f, s:f}, s:I, s:I}", "probe_hit_ns", "emulated", l->cost[0],
			  "single_stepped", l->cost[1], "single_stepped_probes",
			  (json_int_t)stepped, "single_stepped_calls", (json_int_t)l->calls[1]);
}

/*
 * What threads of traced processes still hold (a process left running after
 * the target), into the ring buffer: no thread adds to its batch from now on
 * (until te_loader__stop has untraced them), the programs under way finish,
 * then te_flush runs over every task.
 */
static void flush_batches(struct te_loader *l)
{
	struct bpf_link *link;
	char buf[64];
	int fd;

	l->skel->bss->draining = 1;
	usleep(1000);
	link = bpf_program__attach_iter(l->skel->progs.te_flush, NULL);
	fd = link ? bpf_iter_create(bpf_link__fd(link)) : -1;
	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
	if (fd >= 0)
		close(fd);
	else
		l->unflushed = true;
	bpf_link__destroy(link); /* draining stays on until the processes are untraced */
}

int te_loader__stop(struct te_loader *l)
{
	int fd = bpf_map__fd(l->skel->maps.procs), rc;
	uint64_t t = sonde_clock_ns();
	uint32_t key, next;

	flush_batches(l);
	end_reader(l);
	stop_following(l); /* a process left over from the run must not wait on us */
	if (!l->err) {
		rc = ring_buffer__consume(l->rb);
		if (rc < 0 && !l->err)
			l->err = rc;
	}
	/* the next run starts with no process traced */
	while (bpf_map_get_next_key(fd, NULL, &next) == 0) {
		key = next;
		bpf_map_delete_elem(fd, &key);
	}
	__atomic_add_fetch(&l->skel->bss->procs_gen, 1, __ATOMIC_SEQ_CST); /* threads look again */
	l->skel->bss->draining = 0;
	rc = tr_feed__end(l->feed, l->err);
	l->feed = NULL;
	l->a->t.analysis_ns += l->reader_ns + (sonde_clock_ns() - t);
	u64map__release(&l->serial);
	cost(l);
	return rc;
}

bool te_loader__unflushed(const struct te_loader *l)
{
	return l->unflushed;
}

uint64_t te_loader__stat(const struct te_loader *l, enum te_stat which)
{
	uint64_t now[TE_ST_N];

	if (!l->skel || which >= TE_ST_N)
		return 0;
	read_stats(l, now);
	return now[which] - l->base[which];
}

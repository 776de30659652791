/*
 * resolve.c - a run's records, in time order, into stacks of functions.
 *
 * The records of all CPUs are put in time order, then replayed: COMM, MMAP2
 * and FORK rebuild each process's executable mappings as they were at every
 * sample; each sample's addresses become functions through those mappings
 * and libsonde's symbolizer (kernel addresses through /proc/kallsyms).
 * Off-CPU: a thread's context-switch sample holds the stack where it left the
 * CPU; the time until it is switched in again (PERF_RECORD_SWITCH) is the
 * sample's weight, under a last frame "[off-cpu]" (it blocked) or
 * "[preempted]" (it was runnable). Samples are kept per process and handed
 * to the calltrace process by process.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sonde/symbols.h>
#include "../../grow.h"
#include "../../u64map.h"
#include "sample.h"

#define MAX_FRAMES 512

struct obj {
	char *path;
	char *file; /* what to read: path, or a copy of sonde's own [vdso] */
	bool read;  /* its program headers were read */
	struct load {
		uint64_t offset, vaddr;
		bool exec;
	} * load;
	size_t nload;
};

struct psample {
	uint32_t tid;
	uint64_t ns, weight;
	size_t off; /* into the process's ids */
	uint32_t n;
};

struct proc {
	uint32_t pid;
	struct smp_map *maps; /* sorted by start, not overlapping */
	size_t nmaps, capmaps;
	unsigned generation;
	const char *exe;
	struct psample *s;
	size_t ns, caps;
	uint32_t *ids;
	size_t nids, capids;
	uint32_t *tids;
	size_t ntids, captids;
	struct u64map code; /* Python code object -> function id */
};

struct pending { /* a thread off the CPU */
	uint64_t out_ns;
	uint32_t *st; /* where it left, innermost first */
	size_t n, cap;
	uint32_t pid;
	bool preempted, open;
};

struct ksym {
	uint64_t addr;
	char *name;
};

struct smp_resolver {
	struct smp_cfg cfg;
	struct sonde_symbols *sym;
	struct smp_unwinder *unw;
	struct obj *obj;
	size_t nobj, capobj;
	struct proc *p;
	size_t np, capp;
	struct u64map pidx;   /* pid -> index into p */
	struct u64map frames; /* (object, file address, return address) -> cached ids */
	uint32_t *cache;
	size_t ncache, capcache;
	struct u64map tpend; /* tid -> index into pend */
	struct pending *pend;
	size_t npend, cappend;
	struct u64map names; /* tid -> index into tnames */
	char **tnames;
	size_t ntnames, captnames;
	struct ksym *ks;
	size_t nks;
	bool ks_read;
	uint32_t id_offcpu, id_preempted, id_unknown, id_kernel;
	bool have_offcpu, have_preempted, have_unknown, have_kernel;
	int vdso_fd;	     /* the copy of [vdso] */
	struct u64map evals; /* function ids of CPython's eval loop */
	struct u64map pyidx; /* tid -> index into py: the Python frames of its next sample */
	struct pystack {
		uint64_t ns;
		uint32_t pid;
		uint64_t *code; /* innermost first, bit 0: is_entry */
		size_t n, cap;
	} * py;
	size_t npy, cappy;
	uint32_t *mix; /* scratch: a stack with Python frames */
	size_t capmix;
	uint64_t python_samples, python_misaligned, python_stale;
	struct sonde_calltrace *ct;
	/* figures */
	uint64_t samples, offcpu_samples, offcpu_ns, unknown_frames, kernel_frames, truncated,
		unwound, bad_records, python_stacks;
};

struct smp_resolver *smp_resolver__new(const struct smp_cfg *cfg)
{
	struct smp_resolver *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->cfg = *cfg;
	r->vdso_fd = -1;
	r->sym = sonde_symbols__new();
	r->unw = cfg->graph == SMP_DWARF ? smp_unwinder__new() : NULL;
	if (!r->sym || (cfg->graph == SMP_DWARF && !r->unw)) {
		smp_resolver__free(r);
		return NULL;
	}
	return r;
}

static void clear_procs(struct smp_resolver *r)
{
	size_t i;

	for (i = 0; i < r->np; i++) {
		free(r->p[i].maps);
		free(r->p[i].s);
		free(r->p[i].ids);
		free(r->p[i].tids);
		u64map__release(&r->p[i].code);
	}
	r->np = 0;
	u64map__release(&r->pidx);
	u64map__release(&r->tpend);
	for (i = 0; i < r->npend; i++)
		free(r->pend[i].st);
	r->npend = 0;
}

void smp_resolver__free(struct smp_resolver *r)
{
	size_t i;

	if (!r)
		return;
	clear_procs(r);
	free(r->p);
	for (i = 0; i < r->nobj; i++) {
		if (r->obj[i].file != r->obj[i].path)
			free(r->obj[i].file);
		free(r->obj[i].path);
		free(r->obj[i].load);
	}
	free(r->obj);
	for (i = 0; i < r->nks; i++)
		free(r->ks[i].name);
	free(r->ks);
	for (i = 0; i < r->ntnames; i++)
		free(r->tnames[i]);
	free(r->tnames);
	u64map__release(&r->names);
	u64map__release(&r->frames);
	u64map__release(&r->evals);
	u64map__release(&r->pyidx);
	for (i = 0; i < r->npy; i++)
		free(r->py[i].code);
	free(r->py);
	free(r->mix);
	free(r->cache);
	free(r->pend);
	sonde_symbols__free(r->sym);
	smp_unwinder__free(r->unw);
	if (r->vdso_fd >= 0)
		close(r->vdso_fd);
	free(r);
}

/* ---- objects ------------------------------------------------------------------------------ */

/*
 * The kernel's vDSO is the same image in every process: sonde's own, copied
 * into a memory file, gives its symbols (clock_gettime, ...). NULL without.
 */
static char *vdso_copy(struct smp_resolver *r)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long lo = 0, hi = 0;
	char line[512], *path = NULL;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			break;
	fclose(f);
	if (hi > lo && r->vdso_fd < 0) {
		r->vdso_fd = memfd_create("sonde-vdso", MFD_CLOEXEC);
		if (r->vdso_fd >= 0 &&
		    write(r->vdso_fd, (const void *)(uintptr_t)lo, hi - lo) != (ssize_t)(hi - lo)) {
			close(r->vdso_fd);
			r->vdso_fd = -1;
		}
	}
	if (r->vdso_fd >= 0 && asprintf(&path, "/proc/self/fd/%d", r->vdso_fd) < 0)
		path = NULL;
	return path;
}

static int obj_find(struct smp_resolver *r, const char *path, uint32_t *idx)
{
	size_t i;

	for (i = 0; i < r->nobj; i++) /* few objects; a lookup per mmap record */
		if (!strcmp(r->obj[i].path, path)) {
			*idx = (uint32_t)i;
			return 0;
		}
	if (sonde_grow((void **)&r->obj, &r->capobj, r->nobj + 1, sizeof(*r->obj)))
		return -ENOMEM;
	memset(&r->obj[r->nobj], 0, sizeof(r->obj[r->nobj]));
	r->obj[r->nobj].path = strdup(path);
	if (!r->obj[r->nobj].path)
		return -ENOMEM;
	r->obj[r->nobj].file = !strcmp(path, "[vdso]") ? vdso_copy(r) : r->obj[r->nobj].path;
	*idx = (uint32_t)r->nobj++;
	return 0;
}

static void obj_read(struct obj *o)
{
	int fd;
	Elf *e;
	size_t n, i;

	o->read = true;
	if (!o->file || o->file[0] != '/')
		return;
	fd = open(o->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && !elf_getphdrnum(e, &n) && (o->load = calloc(n ? n : 1, sizeof(*o->load)))) {
		for (i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
				o->load[o->nload++] = (struct load){ ph.p_offset, ph.p_vaddr,
								     (ph.p_flags & PF_X) != 0 };
		}
	}
	if (e)
		elf_end(e);
	close(fd);
}

/* The load bias of a mapping of o at start from file offset pgoff. */
static uint64_t obj_bias(struct obj *o, uint64_t start, uint64_t pgoff)
{
	size_t i;

	if (!o->read)
		obj_read(o);
	for (i = 0; i < o->nload; i++) /* the segment the mapping starts */
		if ((o->load[i].offset & ~0xfffull) == pgoff)
			return start - pgoff - (o->load[i].vaddr - o->load[i].offset);
	for (i = 0; i < o->nload; i++)
		if (o->load[i].exec)
			return start - pgoff - (o->load[i].vaddr - o->load[i].offset);
	return start - pgoff;
}

/* ---- processes ---------------------------------------------------------------------------- */

static struct proc *proc_get(struct smp_resolver *r, uint32_t pid)
{
	size_t i;

	if (u64map__element(&r->pidx, pid, (void **)&r->p, &r->np, &r->capp, sizeof(*r->p), &i))
		return NULL;
	r->p[i].pid = pid;
	return &r->p[i];
}

/* Map [start, end) of object obj, replacing what it overlaps. */
static int map_add(struct proc *p, const struct smp_map *m)
{
	size_t i, j = 0;
	struct smp_map keep[2];
	size_t nk;

	if (sonde_grow((void **)&p->maps, &p->capmaps, p->nmaps + 2, sizeof(*p->maps)))
		return -ENOMEM;
	for (i = 0; i < p->nmaps; i++) {
		struct smp_map o = p->maps[i];

		nk = 0;
		if (o.end <= m->start || o.start >= m->end) {
			keep[nk++] = o;
		} else {
			if (o.start < m->start) {
				keep[nk] = o;
				keep[nk++].end = m->start;
			}
			if (o.end > m->end) {
				keep[nk] = o;
				keep[nk].pgoff += m->end - o.start;
				keep[nk++].start = m->end;
			}
		}
		/* in place: j <= i, and a split (nk 2) happens once */
		if (nk == 2) {
			memmove(&p->maps[j + 2], &p->maps[i + 1],
				(p->nmaps - i - 1) * sizeof(*p->maps));
			p->maps[j++] = keep[0];
			p->maps[j++] = keep[1];
			p->nmaps++;
			i++;
			continue;
		}
		if (nk)
			p->maps[j++] = keep[0];
	}
	p->nmaps = j;
	for (i = 0; i < p->nmaps && p->maps[i].start < m->start; i++)
		;
	memmove(&p->maps[i + 1], &p->maps[i], (p->nmaps - i) * sizeof(*p->maps));
	p->maps[i] = *m;
	p->nmaps++;
	p->generation++;
	return 0;
}

static const struct smp_map *map_find(const struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nmaps && p->maps[lo].start <= addr ? &p->maps[lo] : NULL;
}

static int tname_set(struct smp_resolver *r, uint32_t tid, const char *name)
{
	uint64_t i;
	char *n = strdup(name);

	if (!n)
		return -ENOMEM;
	if (u64map__get(&r->names, tid, &i)) {
		free(r->tnames[i]);
		r->tnames[i] = n;
		return 0;
	}
	if (sonde_grow((void **)&r->tnames, &r->captnames, r->ntnames + 1, sizeof(char *)) ||
	    u64map__put(&r->names, tid, r->ntnames)) {
		free(n);
		return -ENOMEM;
	}
	r->tnames[r->ntnames++] = n;
	return 0;
}

/* ---- functions ---------------------------------------------------------------------------- */

static int func(struct smp_resolver *r, const char *module, const char *name, uint32_t *id)
{
	return sonde_calltrace__func(r->ct, module, 0, name, id);
}

static int fixed(struct smp_resolver *r, const char *name, uint32_t *id, bool *have)
{
	int rc = 0;

	if (!*have)
		rc = func(r, "[sonde]", name, id);
	*have = !rc;
	return rc;
}

static void ksyms_read(struct smp_resolver *r)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512];
	size_t cap = 0;

	r->ks_read = true;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char t, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &t, name) != 3 || !a ||
		    (t != 't' && t != 'T'))
			continue;
		if (sonde_grow((void **)&r->ks, &cap, r->nks + 1, sizeof(*r->ks)))
			break;
		r->ks[r->nks].addr = a;
		r->ks[r->nks].name = strdup(name);
		if (r->ks[r->nks].name)
			r->nks++;
	}
	fclose(f);
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* A kernel address: the kallsyms symbol it is in (kernel text is contiguous). */
static int kernel_frame(struct smp_resolver *r, uint64_t ip, uint32_t *id)
{
	size_t lo = 0, hi;

	r->kernel_frames++;
	if (!r->ks_read) {
		ksyms_read(r);
		qsort(r->ks, r->nks, sizeof(*r->ks), cmp_ksym);
	}
	hi = r->nks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->ks[mid].addr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo) /* kallsyms hides addresses (kptr_restrict) */
		return fixed(r, "[kernel]", &r->id_kernel, &r->have_kernel);
	return func(r, "[kernel.kallsyms]", r->ks[lo - 1].name, id);
}

static int push(uint32_t **v, size_t *n, size_t *cap, uint32_t id)
{
	if (sonde_grow((void **)v, cap, *n + 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*n)++] = id;
	return 0;
}

/*
 * The functions at a user address (innermost first) appended to out;
 * ra: the address is a return address (the call is just before it).
 */
static int user_frames(struct smp_resolver *r, const struct proc *p, uint64_t pc, bool ra,
		       uint32_t **out, size_t *n, size_t *cap)
{
	const struct smp_map *m = map_find(p, pc);
	uint64_t key, v, fa;
	size_t i, first = r->ncache;
	struct sonde_frame fr[16];
	int k, rc = 0;

	if (!m || !m->path) {
		uint32_t id;

		r->unknown_frames++;
		rc = fixed(r, "[unknown]", &r->id_unknown, &r->have_unknown);
		id = r->id_unknown;
		return rc ? rc : push(out, n, cap, id);
	}
	fa = pc - m->bias;
	key = ((uint64_t)m->obj << 48) ^ (fa << 1) ^ ra;
	if (!u64map__get(&r->frames, key, &v)) {
		const char *path = r->obj[m->obj].path, *file = r->obj[m->obj].file;

		k = file && file[0] == '/' ? sonde_symbols__resolve(r->sym, file, fa, ra, fr, 16)
					   : -ENOENT;
		if (k <= 0) {
			fr[0] = (struct sonde_frame){ .module = path, .offset = fa };
			k = 1;
		}
		for (i = 0; i < (size_t)k && !rc; i++) {
			char name[512];
			const char *base = strrchr(path, '/');
			uint32_t id;

			if (!fr[i].function)
				snprintf(name, sizeof(name), "%s+0x%" PRIx64,
					 base ? base + 1 : path, fa);
			rc = func(r, path, fr[i].function ? fr[i].function : name, &id);
			if (!rc)
				rc = push(&r->cache, &r->ncache, &r->capcache, id);
			if (!rc && fr[i].function &&
			    !strcmp(fr[i].function, "_PyEval_EvalFrameDefault"))
				rc = u64map__put(&r->evals, id, 1);
		}
		if (rc || u64map__put(&r->frames, key, (uint64_t)first << 8 | (uint64_t)k))
			return -ENOMEM;
		v = (uint64_t)first << 8 | (uint64_t)k;
	}
	for (i = 0; i < (v & 0xff) && !rc; i++)
		rc = push(out, n, cap, r->cache[(v >> 8) + i]);
	return rc;
}

/*
 * Sample s's stack as function ids, innermost first, into the scratch
 * vector st.
 */
static int stack_of(struct smp_resolver *r, struct proc *p, const struct smp_sample *s,
		    uint32_t **st, size_t *n, size_t *cap)
{
	uint64_t pcs[MAX_FRAMES];
	bool kernel = false, user = false;
	size_t i;
	int np = 0, rc = 0;

	*n = 0;
	for (i = 0; i < s->nr && !rc; i++) {
		uint64_t ip = s->ips[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			kernel = ip == (uint64_t)PERF_CONTEXT_KERNEL;
			user = ip == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (kernel) {
			uint32_t id;

			rc = kernel_frame(r, ip, &id);
			if (!rc)
				rc = push(st, n, cap, id);
		} else if (user && r->cfg.graph == SMP_FP) {
			pcs[np++] = ip;
			if (np == MAX_FRAMES)
				break;
		}
	}
	if (rc)
		return rc;
	if (r->cfg.graph == SMP_DWARF) {
		np = smp_unwind(r->unw, p->pid, p->generation, p->maps, p->nmaps, s, pcs,
				MAX_FRAMES);
		if (np < 0)
			return np;
		r->unwound++;
	} else if (r->cfg.graph == SMP_LBR) {
		pcs[np++] = s->ip;
		for (i = 0; i < s->nbr && np < MAX_FRAMES; i++)
			pcs[np++] = s->br[i].from;
	} else if (r->cfg.graph == SMP_NONE ||
		   (!np && s->ip < (uint64_t)PERF_CONTEXT_MAX && !(s->nr && s->ips[0] == s->ip))) {
		if (!np)
			pcs[np++] = s->ip;
	}
	if (np == MAX_FRAMES)
		r->truncated++;
	for (i = 0; i < (size_t)np && !rc; i++)
		rc = user_frames(r, p, pcs[i], i > 0, st, n, cap);
	return rc;
}

/* Keep a sample (stack innermost first) for process p. */
static int keep(struct proc *p, uint32_t tid, uint64_t ns, uint64_t weight, const uint32_t *st,
		size_t n)
{
	size_t i;

	if (sonde_grow((void **)&p->s, &p->caps, p->ns + 1, sizeof(*p->s)) ||
	    sonde_grow((void **)&p->ids, &p->capids, p->nids + n, sizeof(*p->ids)))
		return -ENOMEM;
	p->s[p->ns++] = (struct psample){ tid, ns, weight, p->nids, (uint32_t)n };
	for (i = 0; i < n; i++) /* outermost first, as the calltrace takes them */
		p->ids[p->nids++] = st[n - 1 - i];
	for (i = 0; i < p->ntids; i++)
		if (p->tids[i] == tid)
			return 0;
	return push(&p->tids, &p->ntids, &p->captids, tid);
}

static struct pending *pending(struct smp_resolver *r, uint32_t tid)
{
	size_t i;

	return u64map__element(&r->tpend, tid, (void **)&r->pend, &r->npend, &r->cappend,
			       sizeof(*r->pend), &i)
		       ? NULL
		       : &r->pend[i];
}

static int python_frames(struct smp_resolver *r, struct proc *p, const struct smp_sample *s,
			 uint32_t **st, size_t *n, size_t *cap);

/* ---- records ------------------------------------------------------------------------------ */

struct ord {
	uint64_t ns;
	size_t off;
	bool kernel; /* at the same time, sonde's records (Python frames) go first */
};

static int cmp_ord(const void *a, const void *b)
{
	const struct ord *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	if (x->kernel != y->kernel)
		return x->kernel ? 1 : -1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int on_mmap2(struct smp_resolver *r, const uint8_t *b, size_t len)
{
	uint32_t pid, prot;
	uint64_t addr, mlen, pgoff;
	struct smp_map m = { 0 };
	struct proc *p;
	uint32_t oi;
	const char *path;

	if (len < 8 + 24 + 24 + 8 + 1)
		return 0;
	memcpy(&pid, b, 4);
	memcpy(&addr, b + 8, 8);
	memcpy(&mlen, b + 16, 8);
	memcpy(&pgoff, b + 24, 8);
	memcpy(&prot, b + 56, 4);
	path = (const char *)b + 64;
	if (!memchr(path, 0, len - 64) || !(prot & PROT_EXEC))
		return 0;
	p = proc_get(r, pid);
	if (!p || obj_find(r, path, &oi))
		return -ENOMEM;
	m = (struct smp_map){ addr, addr + mlen, pgoff, 0, r->obj[oi].path, oi };
	m.bias = obj_bias(&r->obj[oi], addr, pgoff);
	if (!p->exe && path[0] == '/')
		p->exe = r->obj[oi].path;
	return map_add(p, &m);
}

/* The fallback runtime's records: a process image starts; an object it has loaded. */
static int on_rt(struct smp_resolver *r, uint32_t type, const uint8_t *b, size_t len)
{
	uint32_t pid, oi;
	struct proc *p;
	struct smp_map m = { 0 };
	const char *path = (const char *)b + 16 + 24;

	if (len < 17)
		return 0;
	memcpy(&pid, b, 4);
	p = proc_get(r, pid);
	if (!p)
		return -ENOMEM;
	if (type == SMP_REC_PROC) {
		p->nmaps = 0;
		p->generation++;
		p->exe = NULL;
		return 0;
	}
	if (len < 16 + 24 + 1 || !memchr(path, 0, len - 40))
		return 0;
	memcpy(&m.start, b + 16, 8);
	memcpy(&m.end, b + 24, 8);
	memcpy(&m.bias, b + 32, 8);
	if (obj_find(r, path, &oi))
		return -ENOMEM;
	m.path = r->obj[oi].path;
	m.obj = oi;
	if (!p->exe && path[0] == '/')
		p->exe = m.path;
	return map_add(p, &m);
}

static int on_comm(struct smp_resolver *r, const struct perf_event_header *h, const uint8_t *b,
		   size_t len)
{
	uint32_t pid, tid;
	struct proc *p;

	if (len < 9 || !memchr(b + 8, 0, len - 8))
		return 0;
	memcpy(&pid, b, 4);
	memcpy(&tid, b + 4, 4);
	if (h->misc & PERF_RECORD_MISC_COMM_EXEC) {
		p = proc_get(r, pid);
		if (!p)
			return -ENOMEM;
		p->nmaps = 0;
		p->generation++;
		p->exe = NULL;
	}
	return tname_set(r, tid, (const char *)b + 8);
}

static int on_fork(struct smp_resolver *r, const uint8_t *b, size_t len)
{
	uint32_t pid, ppid;
	struct proc *p, *pp;

	if (len < 16)
		return 0;
	memcpy(&pid, b, 4);
	memcpy(&ppid, b + 4, 4);
	if (pid == ppid)
		return 0;
	p = proc_get(r, pid);
	pp = p ? proc_get(r, ppid) : NULL; /* may move p */
	if (!pp)
		return -ENOMEM;
	p = proc_get(r, pid);
	if (sonde_grow((void **)&p->maps, &p->capmaps, pp->nmaps, sizeof(*p->maps)))
		return -ENOMEM;
	memcpy(p->maps, pp->maps, pp->nmaps * sizeof(*p->maps));
	p->nmaps = pp->nmaps;
	p->generation++;
	p->exe = pp->exe;
	return 0;
}

static int on_sample(struct smp_resolver *r, const struct perf_event_header *h, uint32_t **st,
		     size_t *n, size_t *cap)
{
	struct smp_sample s;
	struct proc *p;
	int ev, rc;

	if (smp_parse_sample(&r->cfg, h, &s)) {
		r->bad_records++;
		return 0;
	}
	ev = (int)s.id; /* record.c put the event's index there */
	p = proc_get(r, s.pid);
	if (!p)
		return -ENOMEM;
	rc = stack_of(r, p, &s, st, n, cap);
	if (!rc)
		rc = python_frames(r, p, &s, st, n, cap);
	if (rc)
		return rc;
	if (ev == SMP_EV_SWITCH) {
		struct pending *q = pending(r, s.tid);

		if (!q)
			return -ENOMEM;
		if (sonde_grow((void **)&q->st, &q->cap, *n + 1, sizeof(*q->st)))
			return -ENOMEM;
		memcpy(q->st, *st, *n * sizeof(**st));
		q->n = *n;
		q->pid = s.pid;
		q->out_ns = s.time;
		q->open = true;
		return 0;
	}
	r->samples++;
	return keep(p, s.tid, s.time, s.period, *st, *n);
}

/* ---- Python frames ------------------------------------------------------------------------ */

static int on_pycode(struct smp_resolver *r, const uint8_t *b, size_t len)
{
	uint32_t pid, line;
	uint16_t nl, fl;
	uint64_t code;
	struct proc *p;
	uint32_t id;
	char name[320], file[320];

	if (len < 32)
		return 0;
	memcpy(&pid, b, 4);
	memcpy(&code, b + 16, 8);
	memcpy(&line, b + 24, 4);
	memcpy(&nl, b + 28, 2);
	memcpy(&fl, b + 30, 2);
	if (32 + (size_t)nl + 1 + fl + 1 > len || nl >= sizeof(name) || fl >= sizeof(file))
		return 0;
	memcpy(name, b + 32, nl);
	name[nl] = 0;
	memcpy(file, b + 32 + nl + 1, fl);
	file[fl] = 0;
	p = proc_get(r, pid);
	if (!p || sonde_calltrace__func(r->ct, file, line, name, &id))
		return -ENOMEM;
	return u64map__put(&p->code, code, id);
}

static int on_pystack(struct smp_resolver *r, const uint8_t *b, size_t len)
{
	uint32_t pid, tid;
	uint64_t ns, n;
	size_t k;
	struct pystack *q;

	if (len < 24)
		return 0;
	memcpy(&pid, b, 4);
	memcpy(&tid, b + 4, 4);
	memcpy(&ns, b + 8, 8);
	memcpy(&n, b + 16, 8);
	if (n > (len - 24) / 8)
		return 0;
	if (u64map__element(&r->pyidx, tid, (void **)&r->py, &r->npy, &r->cappy, sizeof(*r->py),
			    &k))
		return -ENOMEM;
	q = &r->py[k];
	if (sonde_grow((void **)&q->code, &q->cap, n + 1, sizeof(*q->code)))
		return -ENOMEM;
	memcpy(q->code, b + 24, n * 8);
	q->n = n;
	q->ns = ns;
	q->pid = pid;
	return 0;
}

/*
 * Put the Python frames read at sample s into its native stack (innermost
 * first): each call of the eval loop (_PyEval_EvalFrameDefault) ran the
 * Python frames from one marked is_entry to the next, so the k-th group of
 * Python frames goes just inside the k-th eval loop frame, counted from the
 * innermost. When the counts differ (a native stack cut short, or frames
 * that moved on between the sample and the read), the groups are matched
 * from the innermost and the rest go inside the outermost eval loop frame;
 * such samples are counted.
 */
static int python_frames(struct smp_resolver *r, struct proc *p, const struct smp_sample *s,
			 uint32_t **st, size_t *n, size_t *cap)
{
	struct pystack *q;
	uint64_t i, v;
	size_t k = 0, g = 0, j, out = 0, pf = 0;
	int rc = 0;

	if (!u64map__get(&r->pyidx, s->tid, &i))
		return 0;
	q = &r->py[i];
	if (q->ns != s->time || q->pid != s->pid) {
		r->python_stale += q->ns < s->time;
		return 0;
	}
	q->ns = 0; /* used */
	if (!q->n)
		return 0;
	for (j = 0; j < *n; j++)
		k += u64map__get(&r->evals, (*st)[j], &v);
	for (j = 0; j < q->n; j++)
		g += q->code[j] & 1;
	if (!g || q->code[q->n - 1] % 2 == 0)
		g++; /* the outermost frames, entered from C without the mark */
	r->python_samples++;
	if (k != g)
		r->python_misaligned++;
	if (sonde_grow((void **)&r->mix, &r->capmix, *n + q->n + 1, sizeof(*r->mix)))
		return -ENOMEM;
	{
		size_t evals_seen = 0;

		for (j = 0; j < *n && !rc; j++) {
			bool eval = u64map__get(&r->evals, (*st)[j], &v);

			if (eval) {
				/* this eval frame's group: up to its entry frame, or all that is
				   left at the outermost eval frame */
				bool last = ++evals_seen == k;

				while (pf < q->n) {
					uint64_t c = q->code[pf++];

					if (u64map__get(&p->code, c & ~1ull, &v))
						r->mix[out++] = (uint32_t)v;
					if ((c & 1) && !last)
						break;
				}
			}
			r->mix[out++] = (*st)[j];
		}
		for (; pf < q->n; pf++) /* no eval frame at all: Python outside the natives */
			if (u64map__get(&p->code, q->code[pf] & ~1ull, &v))
				r->mix[out++] = (uint32_t)v;
	}
	if (sonde_grow((void **)st, cap, out, sizeof(**st)))
		return -ENOMEM;
	memcpy(*st, r->mix, out * sizeof(**st));
	*n = out;
	return rc;
}

/* A thread comes back on a CPU: its time off it is a sample where it left. */
static int on_switch(struct smp_resolver *r, const struct perf_event_header *h, uint32_t tid,
		     uint64_t ns, uint32_t **st, size_t *n, size_t *cap)
{
	struct pending *q;
	struct proc *p;
	uint32_t leaf;
	int rc;

	if (h->misc & PERF_RECORD_MISC_SWITCH_OUT) {
		q = pending(r, tid);
		if (!q)
			return -ENOMEM;
		q->preempted = (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
		return 0;
	}
	if (!u64map__get(&r->tpend, tid, &(uint64_t){ 0 }))
		return 0;
	q = pending(r, tid);
	if (!q->open || ns < q->out_ns)
		return 0;
	q->open = false;
	rc = q->preempted ? fixed(r, "[preempted]", &r->id_preempted, &r->have_preempted)
			  : fixed(r, "[off-cpu]", &r->id_offcpu, &r->have_offcpu);
	leaf = q->preempted ? r->id_preempted : r->id_offcpu;
	p = rc ? NULL : proc_get(r, q->pid);
	if (!p)
		return -ENOMEM;
	*n = 0;
	if ((rc = push(st, n, cap, leaf)))
		return rc;
	if (sonde_grow((void **)st, cap, q->n + 1, sizeof(**st)))
		return -ENOMEM;
	memcpy(*st + 1, q->st, q->n * sizeof(**st));
	*n = q->n + 1;
	r->offcpu_samples++;
	r->offcpu_ns += ns - q->out_ns;
	return keep(p, tid, q->out_ns, ns - q->out_ns, *st, *n);
}

static int replay(struct smp_resolver *r, struct smp_rec *rec)
{
	struct ord *o = NULL;
	size_t no = 0, cap = 0, off, i, n = 0, capst = 0;
	uint32_t *st = NULL;
	int rc = 0;

	for (off = 0; off + sizeof(struct perf_event_header) <= rec->len;) {
		const struct perf_event_header *h = (const void *)(rec->buf + off);
		uint64_t ns;
		uint32_t pid, tid;

		if (h->size < sizeof(*h) || off + h->size > rec->len)
			break;
		if (!smp_record_time(h, &ns, &pid, &tid))
			ns = 0;
		if (sonde_grow((void **)&o, &cap, no + 1, sizeof(*o))) {
			free(o);
			return -ENOMEM;
		}
		o[no++] = (struct ord){ ns, off, h->type < SMP_REC_PYSTACK };
		off += h->size;
	}
	qsort(o, no, sizeof(*o), cmp_ord);
	for (i = 0; i < no && !rc; i++) {
		const struct perf_event_header *h = (const void *)(rec->buf + o[i].off);
		const uint8_t *b = (const uint8_t *)(h + 1);
		size_t len = h->size - sizeof(*h);
		uint64_t ns;
		uint32_t pid, tid;

		switch (h->type) {
		case PERF_RECORD_MMAP2:
			rc = on_mmap2(r, b, len);
			break;
		case PERF_RECORD_COMM:
			rc = on_comm(r, h, b, len);
			break;
		case PERF_RECORD_FORK:
			rc = on_fork(r, b, len);
			break;
		case PERF_RECORD_SAMPLE:
			rc = on_sample(r, h, &st, &n, &capst);
			break;
		case PERF_RECORD_SWITCH:
			if (smp_record_time(h, &ns, &pid, &tid))
				rc = on_switch(r, h, tid, ns, &st, &n, &capst);
			break;
		case SMP_REC_PYCODE:
			rc = on_pycode(r, b, len);
			break;
		case SMP_REC_MAP:
		case SMP_REC_PROC:
			rc = on_rt(r, h->type, b, len);
			break;
		case SMP_REC_PYSTACK:
			rc = on_pystack(r, b, len);
			break;
		default:
			break;
		}
	}
	free(st);
	free(o);
	return rc;
}

int smp_resolver__run(struct smp_resolver *r, struct smp_rec *rec, struct sonde_calltrace *ct,
		      uint32_t pid, bool first)
{
	size_t i, j, order;
	int rc;

	r->ct = ct;
	clear_procs(r);
	if (!proc_get(r, pid))
		return -ENOMEM;
	rc = replay(r, rec);
	/* the run's process first (the calltrace is on it), then the others it started */
	for (order = 0; order < r->np && !rc; order++) {
		struct proc *p = &r->p[order];
		uint64_t t;

		if (!p->ns)
			continue;
		if (!first || order)
			rc = sonde_calltrace__process(ct, p->pid, p->exe);
		for (j = 0; j < p->ntids && !rc; j++)
			if (u64map__get(&r->names, p->tids[j], &t))
				rc = sonde_calltrace__thread_name(ct, p->tids[j], r->tnames[t]);
		for (i = 0; i < p->ns && !rc; i++)
			rc = sonde_calltrace__sample(ct, p->s[i].tid, p->s[i].ns, p->s[i].weight,
						     p->ids + p->s[i].off, p->s[i].n);
	}
	for (i = 0; i < r->ntnames; i++)
		free(r->tnames[i]);
	r->ntnames = 0;
	u64map__release(&r->names);
	return rc;
}

json_t *smp_resolver__stats(const struct smp_resolver *r)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "python_samples",
			 (json_int_t)r->python_samples, "python_misaligned",
			 (json_int_t)r->python_misaligned, "samples", (json_int_t)r->samples,
			 "off_cpu_samples", (json_int_t)r->offcpu_samples, "off_cpu_ns",
			 (json_int_t)r->offcpu_ns, "kernel_frames", (json_int_t)r->kernel_frames,
			 "unknown_frames", (json_int_t)r->unknown_frames, "truncated_stacks",
			 (json_int_t)r->truncated, "bad_records", (json_int_t)r->bad_records);
}

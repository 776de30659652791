/*
 * analysis.c - rebuild calls from the trace runtime's event blocks.
 *
 * The log holds each thread's records in the order it wrote them (a thread
 * writes one ring, and the drainer copies each ring in order), so one pass with
 * a call stack per thread is enough: no merge by time. A call ends at its exit
 * event, at an UNWIND event (the runtime saw it was skipped by longjmp or an
 * exception), or, when its thread's events stop first (exit(), exec, a crash),
 * at that thread's last event (counted as unfinished).
 *
 * Per function: calls, total (time in calls that are not inside another call
 * of the same function, so recursion is not counted twice), self (exclusive),
 * min, max, and per-call rows (a regular sample beyond --max-rows). Per calling
 * context: calls, inclusive and exclusive time (flame graphs, the call graph).
 * The first --max-slices calls in time become timed slices (timelines).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/clock.h>
#include <sonde/ring.h>
#include <sonde/stats.h>
#include <sonde/strbuf.h>
#include <sonde/warning.h>
#include "../../grow.h"
#include "../../json.h"
#include "../../strmap.h"
#include "binary.h"
#include "calltree.h"

struct module {
	uint64_t bias, start, end;
	char *path; /* a copy: a follower's log buffer is reused */
};

struct image {
	uint32_t serial, pid;
	uint64_t exe_bias;
	bool have_exe, have_proc;
	struct module *mods;
	size_t nmods, capmods;
	struct u64map addr; /* runtime address -> func + 1 */
	struct {
		uint64_t addr;
		uint32_t func1; /* func + 1; 0: empty */
	} seen[256];		/* the map's answers, direct-mapped by address */
};

struct frame {
	uint32_t func, node;
	uint64_t t0, child, size;
	int64_t slice;
	bool has_size, outer;
};

struct tr_thread {
	uint32_t serial, pid, tid;
	struct image *img;
	struct frame *stk;
	size_t depth, capstk;
	uint32_t *active; /* per func: open calls in this thread */
	size_t capactive;
	uint64_t last_ns;
	char name[17];
	uint32_t ctx;	/* the context (swapcontext) whose calls these are; 0: the thread's own */
	size_t running; /* the thread's own: the context it runs now (its index + 1; 0: itself) */
};

struct tr_feed {
	struct tr_analysis *a;
	uint64_t t0;
	struct image **imgs; /* each on its own: threads keep pointers to theirs */
	size_t nimgs, capimgs;
	struct u64map img_index; /* serial -> image + 1 */
	struct tr_thread *thr;
	size_t nthr, capthr;
	struct u64map thr_index; /* serial << 32 | tid -> thread + 1 */
	struct u64map ctx_index; /* thread << 16 | context -> thread + 1 (a context's calls) */
	/*
	 * Blocks of images whose executable is not known yet, kept in order (each
	 * a copy of its record) until the image's first module comes: --drop-oldest
	 * can drop the process's description, which its writer sends again after
	 * blocks already in the ring.
	 */
	struct pending {
		size_t thread;
		uint32_t len;
		uint32_t *rec;
	} * pending;
	size_t npending, cappending;
};

void tr_analysis__init(struct tr_analysis *a)
{
	memset(a, 0, sizeof(*a));
	sonde_strbuf__init(&a->stext);
	a->sym = sonde_symbols__new();
	a->func_index = json_object();
	a->threads = json_array();
	a->processes = json_array();
	a->max_rows = 10000;
	a->max_slices = 200000;
	/* node 0: the root of every thread's calls */
	if (!sonde_grow((void **)&a->nodes, &a->capnodes, 1, sizeof(*a->nodes)) &&
	    !sonde_grow((void **)&a->hints, &a->caphints, 1, sizeof(*a->hints)))
		a->nnodes = 1; /* its hints zero (none), as sonde_grow leaves them */
}

void tr_analysis__release(struct tr_analysis *a)
{
	size_t i;

	for (i = 0; i < a->nfuncs; i++) {
		free(a->funcs[i].module);
		free(a->funcs[i].name);
		free(a->funcs[i].display);
		free(a->funcs[i].rows);
		free(a->funcs[i].sizes);
		u64map__release(&a->funcs[i].size_index);
	}
	free(a->funcs);
	free(a->nodes);
	free(a->hints);
	for (i = 0; i < a->nsblk; i++)
		free(a->sblk[i]);
	free(a->sblk);
	sonde_strbuf__release(&a->stext);
	free(a->holes);
	free(a->samples);
	json_decref(a->sampling);
	free(a->calib);
	u64map__release(&a->node_index);
	json_decref(a->func_index);
	json_decref(a->threads);
	json_decref(a->processes);
	json_decref(a->engine_stats);
	if (a->has_filter)
		regfree(&a->filter);
	if (a->has_exclude)
		regfree(&a->exclude);
	sonde_symbols__free(a->sym);
	for (i = 0; i < a->nplt; i++) {
		free(a->plt[i].path);
		tr_named_free(a->plt[i].v, a->plt[i].n);
	}
	free(a->plt);
}

/* ---- functions and contexts ------------------------------------------------------------ */

static const char *func_name(struct tr_analysis *a, struct tr_func *f);

/* --filter keeps only the functions it matches, --exclude leaves out those it does. */
static void filter(struct tr_analysis *a, struct tr_func *f)
{
	const char *name;

	if (!a->has_filter && !a->has_exclude)
		return;
	name = func_name(a, f);
	f->hidden = (a->has_filter && regexec(&a->filter, name, 0, NULL, 0) != 0) ||
		    (a->has_exclude && regexec(&a->exclude, name, 0, NULL, 0) == 0);
}

int tr_analysis__func(struct tr_analysis *a, const char *module, uint64_t offset, const char *name,
		      uint32_t *out)
{
	char key[4400];
	json_t *idx;
	struct tr_func *f;

	snprintf(key, sizeof(key), "%s\x01%" PRIx64 "\x01%s", module, offset, name ? name : "");
	idx = json_object_get(a->func_index, key);
	if (idx) {
		*out = (uint32_t)json_integer_value(idx);
		return 0;
	}
	if (sonde_grow((void **)&a->funcs, &a->capfuncs, a->nfuncs + 1, sizeof(*a->funcs)))
		return -ENOMEM;
	f = &a->funcs[a->nfuncs];
	f->module = strdup(module);
	f->name = name ? strdup(name) : NULL;
	f->named = name != NULL;
	f->offset = offset;
	f->min = UINT64_MAX;
	f->keep_every = 1;
	/* nocheck: a path is bytes, not always UTF-8 (the key never leaves this map) */
	if (!f->module || (name && !f->name) ||
	    json_object_set_new_nocheck(a->func_index, key, json_integer((json_int_t)a->nfuncs))) {
		free(f->module);
		free(f->name);
		return -ENOMEM;
	}
	*out = (uint32_t)a->nfuncs++;
	filter(a, f);
	return 0;
}

/* The function at a runtime address of an image (cached per image). */
static int func_of(struct tr_feed *r, struct image *img, uint64_t addr, uint32_t *out)
{
	size_t slot = (size_t)(addr >> 4) % (sizeof(img->seen) / sizeof(img->seen[0])), i;
	const char *path = "?";
	uint64_t v, off = addr;
	int rc;

	if (img->seen[slot].func1 && img->seen[slot].addr == addr) {
		*out = img->seen[slot].func1 - 1;
		return 0;
	}
	if (u64map__get(&img->addr, addr, &v)) {
		*out = (uint32_t)(v - 1);
		img->seen[slot].addr = addr;
		img->seen[slot].func1 = (uint32_t)v;
		return 0;
	}
	/* the latest module mapped there: a library closed and another loaded in
	   its place (dlclose, dlopen) owns the range from its own record on */
	for (i = img->nmods; i-- > 0;)
		if (addr >= img->mods[i].start && addr < img->mods[i].end) {
			path = img->mods[i].path;
			off = addr - img->mods[i].bias;
			break;
		}
	rc = tr_analysis__func(r->a, path, off, NULL, out);
	if (!rc && u64map__put(&img->addr, addr, (uint64_t)*out + 1))
		rc = -ENOMEM;
	return rc;
}

/* node_of's answer from node_index, or a new node; the parent's hints updated. */
static __attribute__((noinline)) int node_find(struct tr_analysis *a, uint32_t parent,
					       uint32_t func, uint32_t *out)
{
	uint64_t key = (uint64_t)parent << 32 | func, v;
	struct tr_hint *h;

	if (!u64map__get(&a->node_index, key, &v)) {
		if (sonde_grow((void **)&a->nodes, &a->capnodes, a->nnodes + 1,
			       sizeof(*a->nodes)) ||
		    sonde_grow((void **)&a->hints, &a->caphints, a->nnodes + 1,
			       sizeof(*a->hints)) ||
		    u64map__put(&a->node_index, key, a->nnodes))
			return -ENOMEM;
		a->nodes[a->nnodes].parent = parent;
		a->nodes[a->nnodes].func = func; /* its hints: zero (none), from sonde_grow */
		v = a->nnodes++;
	}
	h = &a->hints[parent];
	h->func[1] = h->func[0];
	h->child[1] = h->child[0];
	h->func[0] = func;
	h->child[0] = (uint32_t)v;
	*out = (uint32_t)v;
	return 0;
}

/* The node of func called from context parent. */
static inline __attribute__((always_inline)) int node_of(struct tr_analysis *a, uint32_t parent,
							 uint32_t func, uint32_t *out)
{
	const struct tr_hint *h;

	if (__builtin_expect(!a->nnodes, 0)) /* no root: tr_analysis__init ran out of memory */
		return -ENOMEM;
	h = &a->hints[parent];
	if (h->child[0] && h->func[0] == func) {
		*out = h->child[0];
		return 0;
	}
	if (h->child[1] && h->func[1] == func) {
		*out = h->child[1];
		return 0;
	}
	return node_find(a, parent, func, out);
}

/* A call of a given size, into that size's aggregate. */
static int add_size(struct tr_func *f, const struct tr_row *row)
{
	struct tr_size *z;
	uint64_t v;

	if (u64map__get(&f->size_index, row->size, &v)) {
		z = &f->sizes[v - 1];
		z->calls++;
		z->sum += row->amount;
		if (row->amount < z->lo.amount)
			z->lo = *row;
		if (row->amount > z->hi.amount)
			z->hi = *row;
		/* the k-th call replaces the pick with probability 1/k */
		f->rng ^= f->rng << 13;
		f->rng ^= f->rng >> 7;
		f->rng ^= f->rng << 17;
		if (f->rng % z->calls == 0)
			z->pick = *row;
		return 0;
	}
	if (sonde_grow((void **)&f->sizes, &f->capsizes, f->nsizes + 1, sizeof(*f->sizes)) ||
	    u64map__put(&f->size_index, row->size, f->nsizes + 1))
		return -ENOMEM;
	if (!f->rng)
		f->rng = 0x9E3779B97F4A7C15ull;
	f->sizes[f->nsizes++] = (struct tr_size){ 1, row->amount, *row, *row, *row };
	return 0;
}

/*
 * Keep a regular sample of rows: every keep_every-th call, halving when full;
 * and, apart, each size's aggregate (written with the sample, see write_rows).
 */
static int add_row(struct tr_analysis *a, struct tr_func *f, const struct tr_row *row)
{
	size_t i, j;

	if (row->has_size && add_size(f, row))
		return -ENOMEM;
	/* keep_every is a power of two: a mask, not a division per call */
	if (f->seen++ & (f->keep_every - 1))
		return 0;
	if (a->max_rows && f->nrows >= a->max_rows) {
		for (i = j = 0; i < f->nrows; i += 2)
			f->rows[j++] = f->rows[i];
		f->nrows = j;
		f->keep_every *= 2;
		if ((f->seen - 1) & (f->keep_every - 1))
			return 0;
	}
	if (sonde_grow((void **)&f->rows, &f->caprows, f->nrows + 1, sizeof(*f->rows)))
		return -ENOMEM;
	f->rows[f->nrows++] = *row;
	return 0;
}

/* ---- calls ------------------------------------------------------------------------------- */

#define TR_SLICE_BLOCK 65536u /* slices a block (2 MiB: one huge page) */

/* Room for slice a->nslices, in a new block when the last is full. */
static struct tr_slice *new_slice(struct tr_analysis *a)
{
	size_t b = a->nslices / TR_SLICE_BLOCK;

	if (b == a->nsblk) {
		if (sonde_grow((void **)&a->sblk, &a->capsblk, b + 1, sizeof(*a->sblk)) ||
		    !(a->sblk[b] = sonde_alloc_huge(TR_SLICE_BLOCK * sizeof(**a->sblk))))
			return NULL;
		a->nsblk++;
	}
	return &a->sblk[b][a->nslices % TR_SLICE_BLOCK];
}

/* Slice i: in its block, or, its block freed, in its hole (it was open when written). */
static struct tr_slice *slice_at(struct tr_analysis *a, size_t i)
{
	struct tr_slice *blk = a->sblk[i / TR_SLICE_BLOCK];
	size_t lo = 0, hi = a->nholes;

	if (blk)
		return &blk[i % TR_SLICE_BLOCK];
	while (lo + 1 < hi) { /* the holes are in the slices' order */
		size_t mid = (lo + hi) / 2;

		if (a->holes[mid].slice <= i)
			lo = mid;
		else
			hi = mid;
	}
	return &a->holes[lo].x; /* a slice of a freed block that is no hole is never asked for */
}

static inline __attribute__((always_inline)) int push(struct tr_feed *r, struct tr_thread *t,
						      uint32_t func, uint64_t ns)
{
	struct tr_analysis *a = r->a;
	struct frame *f;
	uint32_t parent = t->depth ? t->stk[t->depth - 1].node : 0;

	if (sonde_grow((void **)&t->stk, &t->capstk, t->depth + 1, sizeof(*t->stk)) ||
	    sonde_grow((void **)&t->active, &t->capactive, func + 1, sizeof(*t->active)))
		return -ENOMEM;
	f = &t->stk[t->depth++];
	*f = (struct frame){ .func = func, .t0 = ns, .slice = -1 };
	if (a->verbose) /* ns since the start, pid, tid, depth, what, where */
		fprintf(a->verbose, "%llu %u %u %zu enter %s+0x%llx\n",
			(unsigned long long)(ns - r->t0), t->pid, t->tid, t->depth - 1,
			a->funcs[func].module ? a->funcs[func].module : "?",
			(unsigned long long)a->funcs[func].offset);
	f->outer = t->active[func]++ == 0;
	if (node_of(a, parent, func, &f->node))
		return -ENOMEM;
	if (a->nslices < a->max_slices) {
		struct tr_slice *x = new_slice(a);

		if (!x)
			return -ENOMEM;
		*x = (struct tr_slice){ t->pid,	    t->tid,    func, (uint32_t)(t->depth - 1),
					ns - r->t0, UINT64_MAX };
		f->slice = (int64_t)a->nslices++;
	} else {
		a->t.slices_dropped++;
	}
	return 0;
}

static int pop(struct tr_feed *r, struct tr_thread *t, uint64_t ns)
{
	struct tr_analysis *a = r->a;
	struct frame *f = &t->stk[--t->depth];
	struct tr_func *fn = &a->funcs[f->func];
	uint64_t dur = ns > f->t0 ? ns - f->t0 : 0, excl = dur > f->child ? dur - f->child : 0;
	struct tr_node *node = &a->nodes[f->node];
	struct tr_row row;

	if (a->verbose) /* ns since the start, pid, tid, depth, what, where, how long */
		fprintf(a->verbose, "%llu %u %u %zu exit %s+0x%llx %llu\n",
			(unsigned long long)(ns - r->t0), t->pid, t->tid, t->depth,
			fn->module ? fn->module : "?", (unsigned long long)fn->offset,
			(unsigned long long)dur);
	t->active[f->func]--;
	a->t.calls++;
	if (f->slice >= 0)
		slice_at(a, (size_t)f->slice)->dur = dur;
	if (fn->hidden || dur < a->min_time_ns) {
		a->t.filtered++;
		/* its own time stays its caller's own; the recorded calls it made are
		   its caller's callees now (--exclude of a function between two others) */
		if (t->depth)
			t->stk[t->depth - 1].child += f->child;
		return 0;
	}
	if (t->depth)
		t->stk[t->depth - 1].child += dur;
	node->calls++;
	node->incl += dur;
	node->excl += excl;
	fn->calls++;
	if (f->outer)
		fn->total += dur;
	fn->sum += dur;
	fn->self += excl;
	fn->min = dur < fn->min ? dur : fn->min;
	fn->max = dur > fn->max ? dur : fn->max;
	if (!f->has_size && (fn->seen & (fn->keep_every - 1))) {
		fn->seen++; /* add_row would keep nothing of this call */
		return 0;
	}
	row.amount = dur;
	row.exclusive = excl;
	row.ts = f->t0 - r->t0;
	row.order = fn->calls;
	row.size = f->size;
	row.has_size = f->has_size;
	row.tid = t->tid;
	return add_row(a, fn, &row);
}

/* ---- records ------------------------------------------------------------------------------ */

static struct image *image_of(struct tr_feed *r, uint32_t serial)
{
	uint64_t v;

	struct image *img;

	if (u64map__get(&r->img_index, serial, &v))
		return r->imgs[v - 1];
	if (sonde_grow((void **)&r->imgs, &r->capimgs, r->nimgs + 1, sizeof(*r->imgs)) ||
	    !(img = calloc(1, sizeof(*img))))
		return NULL;
	if (u64map__put(&r->img_index, serial, r->nimgs + 1)) {
		free(img);
		return NULL;
	}
	img->serial = serial;
	r->imgs[r->nimgs++] = img;
	return img;
}

struct tr_thread *tr_feed__thread(struct tr_feed *r, uint32_t serial, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)serial << 32 | tid, v;
	struct tr_thread *t;

	if (u64map__get(&r->thr_index, key, &v))
		return &r->thr[v - 1];
	if (sonde_grow((void **)&r->thr, &r->capthr, r->nthr + 1, sizeof(*r->thr)) ||
	    u64map__put(&r->thr_index, key, r->nthr + 1))
		return NULL;
	t = &r->thr[r->nthr++];
	t->serial = serial;
	t->pid = pid;
	t->tid = tid;
	t->img = image_of(r, serial);
	return t->img ? t : NULL;
}

/* Each thread's times stay monotonic, whatever the clock conversion does. */
static uint64_t at(struct tr_thread *t, uint64_t ns)
{
	if (ns < t->last_ns)
		ns = t->last_ns;
	t->last_ns = ns;
	return ns;
}

/* block()'s calls of the two below: direct, not through the library's PLT */
static inline int feed_enter(struct tr_feed *r, struct tr_thread *t, uint32_t func, uint64_t ns)
{
	return push(r, t, func, at(t, ns));
}

static inline int feed_exit(struct tr_feed *r, struct tr_thread *t, uint64_t ns)
{
	ns = at(t, ns);
	if (!t->depth) {
		r->a->t.unmatched++;
		return 0;
	}
	return pop(r, t, ns);
}

int tr_feed__enter(struct tr_feed *r, struct tr_thread *t, uint32_t func, uint64_t ns)
{
	return feed_enter(r, t, func, ns);
}

int tr_feed__exit(struct tr_feed *r, struct tr_thread *t, uint64_t ns)
{
	return feed_exit(r, t, ns);
}

int tr_feed__unwind(struct tr_feed *r, struct tr_thread *t, uint32_t depth, uint64_t ns)
{
	int rc = 0;

	ns = at(t, ns);
	while (t->depth > depth && !rc) {
		r->a->t.unwound++;
		rc = pop(r, t, ns);
	}
	return rc;
}

void tr_feed__size(struct tr_thread *t, uint64_t size)
{
	if (t->depth) {
		t->stk[t->depth - 1].size = size;
		t->stk[t->depth - 1].has_size = true;
	}
}

int tr_feed__sample(struct tr_feed *r, struct tr_thread *t, uint64_t ns, uint64_t weight,
		    const uint32_t *funcs, size_t n)
{
	struct tr_analysis *a = r->a;
	uint64_t seq = ++a->t.samples;
	uint32_t node = 0, leaf = 0;
	size_t i;

	ns = at(t, ns);
	a->t.sample_weight += weight;
	for (i = 0; i < n; i++) {
		struct tr_func *f = &a->funcs[funcs[i]];

		if (f->hidden)
			continue;
		if (node_of(a, node, funcs[i], &node))
			return -ENOMEM;
		a->nodes[node].calls++;
		a->nodes[node].incl += weight;
		if (f->sample_seq != seq) { /* a recursive function counts once */
			f->sample_seq = seq;
			f->samples++;
			f->total += weight;
		}
		leaf = funcs[i];
	}
	if (!node) {
		a->t.samples_empty++;
		return 0;
	}
	a->nodes[node].excl += weight;
	a->funcs[leaf].self += weight;
	if (a->nsamples >= a->max_slices) {
		a->t.samples_dropped++;
		return 0;
	}
	if (sonde_grow((void **)&a->samples, &a->capsamples, a->nsamples + 1, sizeof(*a->samples)))
		return -ENOMEM;
	a->samples[a->nsamples++] =
		(struct tr_sample){ t->pid, t->tid, node, ns > r->t0 ? ns - r->t0 : 0, weight };
	return 0;
}

void tr_feed__name(struct tr_thread *t, const char *name)
{
	snprintf(t->name, sizeof(t->name), "%s", name);
}

uint32_t tr_feed__depth(const struct tr_thread *t)
{
	return (uint32_t)t->depth;
}

int tr_feed__process(struct tr_feed *r, uint32_t serial, uint32_t pid, uint32_t parent_serial,
		     const char *exe, size_t exe_len)
{
	struct image *img = image_of(r, serial);

	if (!img)
		return -ENOMEM;
	if (img->have_proc)
		return 0; /* sent again: a full ring had dropped it (--drop-oldest) */
	img->have_proc = true;
	img->pid = pid;
	r->a->t.images++;
	return json_array_append_new(r->a->processes,
				     json_pack("{s:i, s:i, s:i, s:s#}", "pid", (int)pid, "serial",
					       (int)serial, "parent_serial", (int)parent_serial,
					       "exe", exe, (int)strnlen(exe, exe_len)))
		       ? -ENOMEM
		       : 0;
}

/*
 * TR_SP_CONTEXT: thread `self` (an index) runs context ctx from now on. Each
 * context is a tr_thread of its own (same process and tid), so its calls nest
 * among themselves, whatever runs in between.
 */
static int run_context(struct tr_feed *r, size_t self, uint32_t ctx)
{
	uint64_t key = (uint64_t)self << 16 | (ctx & 0xffff), v;
	struct tr_thread *b, *t;

	if (!ctx) {
		r->thr[self].running = 0;
		return 0;
	}
	if (!u64map__get(&r->ctx_index, key, &v)) {
		if (sonde_grow((void **)&r->thr, &r->capthr, r->nthr + 1, sizeof(*r->thr)) ||
		    u64map__put(&r->ctx_index, key, r->nthr + 1))
			return -ENOMEM;
		b = &r->thr[self];
		t = &r->thr[r->nthr];
		memset(t, 0, sizeof(*t));
		t->serial = b->serial;
		t->pid = b->pid;
		t->tid = b->tid;
		t->img = b->img;
		t->ctx = ctx;
		snprintf(t->name, sizeof(t->name), "uctx %u", ctx);
		v = ++r->nthr;
	}
	r->thr[self].running = (size_t)v;
	return 0;
}

/* The thread r->thr[me], or the context it runs. */
static struct tr_thread *running(struct tr_feed *r, size_t me)
{
	return r->thr[me].running ? &r->thr[r->thr[me].running - 1] : &r->thr[me];
}

static int block(struct tr_feed *r, struct tr_thread *self, const struct tr_block *b, uint32_t len)
{
	struct tr_analysis *a = r->a;
	uint32_t n = (len - (uint32_t)sizeof(*b)) / 4, i = 0;
	const uint32_t *ev = b->ev;
	size_t me = (size_t)(self - r->thr);
	/* the context the thread runs, until a switch (which may move r->thr) */
	struct tr_thread *t = running(r, me);
	struct image *img = t->img;
	int rc = 0;

	a->t.blocks++;
	a->t.sampled_out += b->sampled_out;
	a->t.lost += b->lost;
	a->t.dropped_calls += b->dropped;
	while (i < n && !rc) {
		uint32_t w = ev[i], tag = w >> TR_OFF_BITS;
		uint64_t ns = rt_clock__ns(&a->clock, b->base + (w & (TR_OFF_LIMIT - 1)));
		uint64_t addr;
		uint32_t func, kind, arg;

		if (w == TR_FILLER)
			break; /* the end of what the writer filled in */
		switch (tag) {
		case TR_TAG_ENTER:
			if (i + 2 > n)
				return -EINVAL;
			if (ev[i + 1] & TR_KEY_FAR) {
				if (i + 4 > n)
					return -EINVAL;
				addr = (uint64_t)ev[i + 2] | (uint64_t)ev[i + 3] << 32;
				i += 4;
			} else {
				addr = img->exe_bias + ev[i + 1];
				i += 2;
			}
			rc = func_of(r, img, addr, &func);
			if (!rc)
				rc = feed_enter(r, t, func, ns);
			break;
		case TR_TAG_EXIT:
			i++;
			rc = feed_exit(r, t, ns);
			break;
		case TR_TAG_SPECIAL:
			if (i + 2 > n)
				return -EINVAL;
			kind = ev[i + 1] >> 24;
			arg = ev[i + 1] & 0xffffffu;
			if (kind == TR_SP_UNWIND) {
				rc = tr_feed__unwind(
					r, t, t->depth > arg ? (uint32_t)(t->depth - arg) : 0, ns);
				i += 2;
			} else if (kind == TR_SP_SIZE) {
				if (i + 4 > n)
					return -EINVAL;
				tr_feed__size(t, (uint64_t)ev[i + 2] | (uint64_t)ev[i + 3] << 32);
				i += 4;
			} else if (kind == TR_SP_CONTEXT) {
				rc = run_context(r, me, arg);
				t = running(r, me);
				img = t->img;
				i += 2;
			} else {
				return -EINVAL;
			}
			break;
		default:
			return -EINVAL;
		}
	}
	return rc;
}

/*
 * The blocks held for an image (NULL: every image's, at the end, whatever is
 * known by then), decoded in the order they came; the others stay held.
 */
static int replay(struct tr_feed *r, const struct image *img)
{
	size_t i, k = 0;
	int rc = 0;

	for (i = 0; i < r->npending; i++) {
		struct pending *p = &r->pending[i];

		if (img && r->thr[p->thread].img != img) {
			r->pending[k++] = *p;
			continue;
		}
		if (!rc)
			rc = block(r, &r->thr[p->thread], (const void *)p->rec, p->len);
		free(p->rec);
	}
	r->npending = k;
	return rc;
}

static int on_record(void *ctx, const struct sonde_ring_chunk *c, const uint32_t *rec)
{
	struct tr_feed *r = ctx;
	struct tr_analysis *a = r->a;
	uint32_t type, len;
	struct tr_thread *t;
	struct image *img;

	if (!rec) { /* the rest of a chunk the target wrote over */
		a->t.malformed++;
		return 0;
	}
	type = SONDE_RING_REC_TYPE(rec[0]);
	len = SONDE_RING_REC_LEN(rec[0]);
	t = tr_feed__thread(r, c->serial, c->pid, c->tid);
	if (!t)
		return -ENOMEM;
	img = t->img;
	switch (type) {
	case TR_REC_PROC: {
		const struct rt_proc *p = (const void *)rec;

		if (len < sizeof(*p) + 1)
			return -EINVAL;
		return tr_feed__process(r, c->serial, p->pid, p->parent_serial, p->exe,
					len - sizeof(*p));
	}
	case TR_REC_MODULE: {
		const struct rt_module *m = (const void *)rec;

		if (len < sizeof(*m) + 1 || !memchr(m->path, 0, len - sizeof(*m)))
			return -EINVAL;
		bool first = !img->have_exe;
		size_t k;

		if (first) {
			img->exe_bias = m->bias; /* the first object is the executable */
			img->have_exe = true;
		}
		for (k = 0; k < img->nmods; k++) {
			const struct module *o = &img->mods[k];

			if (o->start < m->end && m->start < o->end &&
			    (o->bias != m->bias || strcmp(o->path, m->path))) {
				/* another object where one was (dlclose, then dlopen): the
				   addresses seen so far may now be its functions */
				u64map__clear(&img->addr);
				memset(img->seen, 0, sizeof(img->seen));
				break;
			}
		}
		if (sonde_grow((void **)&img->mods, &img->capmods, img->nmods + 1,
			       sizeof(*img->mods)))
			return -ENOMEM;
		img->mods[img->nmods] =
			(struct module){ m->bias, m->start, m->end, strdup(m->path) };
		if (!img->mods[img->nmods].path)
			return -ENOMEM;
		img->nmods++;
		return first ? replay(r, img) : 0;
	}
	case TR_REC_CALIB: {
		const struct tr_calib *k = (const void *)rec;
		double ticks;

		if (len < sizeof(*k))
			return -EINVAL;
		ticks = (double)k->ticks_x1024 / 1024.0;
		if (sonde_grow((void **)&a->calib, &a->capcalib, a->ncalib + 1, sizeof(double)))
			return -ENOMEM;
		a->calib[a->ncalib++] = a->clock.ns_per_tick ? ticks * a->clock.ns_per_tick : ticks;
		return 0;
	}
	case TR_REC_NAME: {
		const struct tr_name *nm = (const void *)rec;

		if (len >= sizeof(*nm)) {
			char name[17] = { 0 };

			memcpy(name, nm->name, 16);
			tr_feed__name(t, name);
		}
		return 0;
	}
	case TR_REC_BLOCK:
		if (len < sizeof(struct tr_block))
			return -EINVAL;
		if (!img->have_exe) { /* its addresses cannot be read yet: later */
			struct pending *p;

			if (sonde_grow((void **)&r->pending, &r->cappending, r->npending + 1,
				       sizeof(*r->pending)))
				return -ENOMEM;
			p = &r->pending[r->npending];
			p->thread = (size_t)(t - r->thr);
			p->len = len;
			p->rec = malloc(len);
			if (!p->rec)
				return -ENOMEM;
			memcpy(p->rec, rec, len);
			r->npending++;
			return 0;
		}
		return block(r, t, (const void *)rec, len);
	default:
		return 0; /* a record of a later version: skip it */
	}
}

struct tr_feed *tr_feed__new(struct tr_analysis *a, uint64_t t0)
{
	struct tr_feed *r = calloc(1, sizeof(*r));

	if (r) {
		r->a = a;
		r->t0 = t0;
	}
	return r;
}

int tr_feed__end(struct tr_feed *r, int rc)
{
	struct tr_analysis *a = r->a;
	size_t i, nctx = 0;

	/* blocks whose image's modules never came: decoded as they can be */
	if (rc >= 0 && r->npending) {
		int e = replay(r, NULL);

		rc = e < 0 ? e : rc;
	}
	for (i = 0; i < r->npending; i++)
		free(r->pending[i].rec);
	free(r->pending);

	/* calls still open when a thread's events stopped end at its last event */
	for (i = 0; i < r->nthr && rc >= 0; i++) {
		struct tr_thread *t = &r->thr[i];

		while (t->depth && rc >= 0) {
			a->t.unfinished++;
			rc = pop(r, t, t->last_ns);
		}
		if (json_array_append_new(a->threads,
					  json_pack("{s:i, s:i, s:i, s:s, s:i}", "pid", (int)t->pid,
						    "tid", (int)t->tid, "serial", (int)t->serial,
						    "name", t->name, "ucontext", (int)t->ctx)))
			rc = -ENOMEM;
		nctx += t->ctx != 0;
	}
	a->t.threads += r->nthr - nctx;
	a->t.ucontexts += nctx;
	for (i = 0; i < r->nthr; i++) {
		free(r->thr[i].stk);
		free(r->thr[i].active);
	}
	for (i = 0; i < r->nimgs; i++) {
		size_t m;

		for (m = 0; m < r->imgs[i]->nmods; m++)
			free(r->imgs[i]->mods[m].path);
		free(r->imgs[i]->mods);
		u64map__release(&r->imgs[i]->addr);
		free(r->imgs[i]);
	}
	free(r->thr);
	free(r->imgs);
	u64map__release(&r->thr_index);
	u64map__release(&r->ctx_index);
	u64map__release(&r->img_index);
	if (a->ncalib)
		a->t.cost_ns_per_call = sonde_stats__median_inplace(a->calib, a->ncalib);
	free(r);
	return rc;
}

/* [pid, tid, function, depth, start_ns, duration_ns] after a comma, as the profile has it */
static int slice_row(const struct tr_analysis *a, const struct tr_slice *x, struct sonde_strbuf *sb)
{
	json_int_t row[6] = { (json_int_t)x->pid,   (json_int_t)x->tid,	  (json_int_t)x->func,
			      (json_int_t)x->depth, (json_int_t)x->start, (json_int_t)x->dur };

	if (x->dur == UINT64_MAX || a->funcs[x->func].hidden || x->dur < a->min_time_ns)
		return 1; /* not on the timeline: never ended, or filtered */
	return sonde_json__put_row(sb, row, 6, 1, 2, 1);
}

/*
 * The blocks whose every slice is written (or a hole) are not needed: their
 * holes' slices are copied into the holes, and they are freed. The timeline's
 * rows then cost what their text does, not the text and the slices.
 */
static void free_written(struct tr_analysis *a)
{
	size_t b, h = 0;

	for (b = 0; b < a->stext_next / TR_SLICE_BLOCK; b++) {
		if (!a->sblk[b])
			continue;
		while (h < a->nholes && a->holes[h].slice < b * TR_SLICE_BLOCK)
			h++;
		for (; h < a->nholes && a->holes[h].slice < (b + 1) * TR_SLICE_BLOCK; h++)
			a->holes[h].x = a->sblk[b][a->holes[h].slice % TR_SLICE_BLOCK];
		free(a->sblk[b]);
		a->sblk[b] = NULL;
	}
}

/*
 * The slices' rows that can be written now, into a->stext: every slice up to
 * the last one made, a slice still open taken as a hole (its row is written
 * with the profile). A slice's row is final once it ends: its function's
 * filtering is known when the function is first seen.
 */
static int slices_text(struct tr_analysis *a)
{
	int rc = 0;

	/* room for the rows at once (~37 bytes a row, at most 64 MiB ahead): pages
	   are taken as they are written, and no doubling copies 4 MiB into 8 */
	if (!a->stext.alloc && a->nslices > a->stext_next &&
	    sonde_strbuf__grow(
		    &a->stext,
		    (a->max_slices < (64u << 20) / 40 ? a->max_slices : (64u << 20) / 40) * 40))
		return -ENOMEM;

	for (; a->stext_next < a->nslices && rc >= 0; a->stext_next++) {
		const struct tr_slice *x = slice_at(a, a->stext_next);

		if (x->dur == UINT64_MAX) {
			rc = sonde_grow((void **)&a->holes, &a->capholes, a->nholes + 1,
					sizeof(*a->holes));
			if (!rc)
				a->holes[a->nholes++] =
					(struct tr_hole){ a->stext_next, a->stext.len };
			continue;
		}
		rc = slice_row(a, x, &a->stext);
		a->stext_rows += rc == 0;
	}
	if (rc >= 0)
		free_written(a);
	return rc < 0 ? rc : 0;
}

int tr_feed__log(struct tr_feed *r, const void *log, size_t len)
{
	int rc;

	r->a->t.log_bytes += len;
	rc = sonde_ring_log__walk(log, len, on_record, r);
	/* while the follower has the analysis: the timeline's text, as far as it is known */
	return rc ? rc : slices_text(r->a);
}

int tr_analysis__run(struct tr_analysis *a, const void *log, size_t len, uint64_t t0)
{
	struct tr_feed *r = tr_feed__new(a, t0);
	uint64_t start = sonde_clock_ns();
	int rc;

	if (!r)
		return -ENOMEM;
	rc = tr_feed__end(r, tr_feed__log(r, log, len));
	a->t.analysis_ns += sonde_clock_ns() - start;
	a->t.after_run_ns += sonde_clock_ns() - start;
	return rc;
}

/* ---- the profile --------------------------------------------------------------------------- */

/* The function a PLT stub of module calls, when offset is one (a library call's key). */
static const char *plt_name(struct tr_analysis *a, const char *module, uint64_t offset)
{
	struct tr_plt_names *m = NULL;
	size_t i, lo, hi;

	for (i = 0; i < a->nplt && !m; i++)
		if (!strcmp(a->plt[i].path, module))
			m = &a->plt[i];
	if (!m) {
		if (sonde_grow((void **)&a->plt, &a->capplt, a->nplt + 1, sizeof(*a->plt)))
			return NULL;
		m = &a->plt[a->nplt++];
		memset(m, 0, sizeof(*m));
		m->path = strdup(module);
		if (!m->path || tr_elf_plt_stubs(module, &m->v, &m->n))
			m->n = 0;
	}
	for (lo = 0, hi = m->n; lo < hi;) {
		size_t mid = (lo + hi) / 2;

		if (m->v[mid].addr == offset)
			return m->v[mid].name;
		if (m->v[mid].addr < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static const char *func_name(struct tr_analysis *a, struct tr_func *f)
{
	struct sonde_frame fr[16];
	const char *plt;
	int n;

	if (f->display)
		return f->display;
	if (f->name)
		return f->name;
	if ((plt = plt_name(a, f->module, f->offset)) &&
	    (f->name = strdup(sonde_symbols__demangle(a->sym, plt))))
		return f->name;
	n = sonde_symbols__resolve(a->sym, f->module, f->offset, false, fr, 16);
	if (n > 0 && fr[n - 1].function)
		f->name = strdup(fr[n - 1].function);
	else if (asprintf(&f->name, "%s+0x%" PRIx64,
			  strrchr(f->module, '/') ? strrchr(f->module, '/') + 1 : f->module,
			  f->offset) < 0)
		f->name = NULL;
	return f->name ? f->name : "?";
}

/* A sampled profile's: samples, their weight, how they were taken; no call counts. */
static json_t *sampled_stats_json(const struct tr_analysis *a)
{
	const struct tr_totals *t = &a->t;
	json_t *s = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:O*}", "count", "samples",
			      "samples", (json_int_t)t->samples, "sample_weight_ns",
			      (json_int_t)t->sample_weight, "samples_without_frames",
			      (json_int_t)t->samples_empty, "timeline_samples_dropped",
			      (json_int_t)t->samples_dropped, "processes", (json_int_t)t->images,
			      "threads", (json_int_t)t->threads, "sampling", a->sampling);

	if (!s)
		return NULL;
	if (a->engine)
		json_object_set_new(s, "engine", json_string(a->engine));
	if (a->engine_stats)
		json_object_update(s, a->engine_stats);
	return s;
}

static json_t *stats_json(const struct tr_analysis *a)
{
	const struct tr_totals *t = &a->t;
	json_t *s;

	if (a->sampled)
		return sampled_stats_json(a);
	s = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
		      "s:I}",
		      "calls", (json_int_t)t->calls, "dropped_calls", (json_int_t)t->dropped_calls,
		      "sampled_out", (json_int_t)t->sampled_out, "lost", (json_int_t)t->lost,
		      "unwound", (json_int_t)t->unwound, "unfinished", (json_int_t)t->unfinished,
		      "unmatched_exits", (json_int_t)t->unmatched, "filtered",
		      (json_int_t)t->filtered, "blocks", (json_int_t)t->blocks, "log_bytes",
		      (json_int_t)t->log_bytes, "processes", (json_int_t)t->images, "ucontexts",
		      (json_int_t)t->ucontexts, "threads", (json_int_t)t->threads, "drain_cpu_ns",
		      (json_int_t)t->drain_cpu_ns, "analysis_ns", (json_int_t)t->analysis_ns,
		      "slices_dropped", (json_int_t)t->slices_dropped);

	if (!s)
		return NULL;
	if (!a->sampled && a->engine && !strcmp(a->engine, "instrument")) {
		json_object_set_new(s, "analysis_after_run_ns",
				    json_integer((json_int_t)t->after_run_ns));
		json_object_set_new(s, "log_bytes_analysed_during_run",
				    json_integer((json_int_t)t->live_bytes));
	}
	if (a->engine)
		json_object_set_new(s, "engine", json_string(a->engine));
	json_object_set_new(s, "rows", json_integer((json_int_t)t->rows));
	json_object_set_new(s, "malformed_chunks", json_integer((json_int_t)t->malformed));
	if (t->sampled_funcs)
		json_object_set_new(s, "rows_sampled",
				    json_pack("{s:I, s:I, s:I}", "functions",
					      (json_int_t)t->sampled_funcs, "calls",
					      (json_int_t)t->sampled_calls, "max_rows",
					      (json_int_t)a->max_rows));
	if (a->engine_stats)
		json_object_update(s, a->engine_stats);
	if (t->probes)
		json_object_set_new(s, "probes", json_integer((json_int_t)t->probes));
	if (t->calls)
		json_object_set_new(s, "bytes_per_call",
				    json_real((double)t->log_bytes / (double)t->calls));
	if (t->cost_ns_per_call > 0) {
		json_object_set_new(s, "cost_ns_per_call", json_real(t->cost_ns_per_call));
		json_object_set_new(
			s, "estimated_cost_ns",
			json_integer((json_int_t)((double)t->calls * t->cost_ns_per_call)));
	}
	return s;
}

static int cmp_size(const void *x, const void *y)
{
	const struct tr_size *a = *(const struct tr_size *const *)x,
			     *b = *(const struct tr_size *const *)y;

	return (a->lo.size > b->lo.size) - (a->lo.size < b->lo.size);
}

/* Per size, over every call: {size, calls, mean, min, max}, columns by size. */
static json_t *sizes_json(const struct tr_func *f)
{
	json_t *o =
		json_pack("{s:[], s:[], s:[], s:[], s:[]}", "size", "calls", "mean", "min", "max");
	const struct tr_size **ord = malloc(f->nsizes * sizeof(*ord));
	size_t i;

	if (!o || !ord) {
		json_decref(o);
		free(ord);
		return NULL;
	}
	for (i = 0; i < f->nsizes; i++)
		ord[i] = &f->sizes[i];
	qsort(ord, f->nsizes, sizeof(*ord), cmp_size);
	for (i = 0; i < f->nsizes; i++) {
		const struct tr_size *z = ord[i];

		json_array_append_new(json_object_get(o, "size"),
				      json_integer((json_int_t)z->lo.size));
		json_array_append_new(json_object_get(o, "calls"),
				      json_integer((json_int_t)z->calls));
		json_array_append_new(json_object_get(o, "mean"),
				      json_real((double)z->sum / (double)z->calls));
		json_array_append_new(json_object_get(o, "min"),
				      json_integer((json_int_t)z->lo.amount));
		json_array_append_new(json_object_get(o, "max"),
				      json_integer((json_int_t)z->hi.amount));
	}
	free(ord);
	return o;
}

static int cmp_row_order(const void *x, const void *y)
{
	const struct tr_row *a = x, *b = y;

	return (a->order > b->order) - (a->order < b->order);
}

/*
 * The rows of f: every call; or, when they were sampled, the sample and, for
 * each size the sample missed, one of its calls chosen at random, in call order
 * (a regular sample of calls whose sizes vary can miss the few largest: models
 * must see the whole range, without the bias extremes would bring).
 */
/*
 * A function's rows as its resource's columns, written as text (a column a
 * time; sonde_profile__set_columns_text): with --max-rows 0 every call is a
 * row, six values each, which as trees would be a malloc a value.
 */
static int rows_text(struct sonde_profile *p, long idx, const struct tr_row *rows, size_t n)
{
	static const char *const names[] = { "amount",	   "exclusive",		  "timestamp",
					     "call-order", "structure-unit-size", "thread" };
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	json_int_t *v = malloc(n * sizeof(*v));
	size_t c, i;
	int err = v ? sonde_strbuf__addch(&sb, '{') : -ENOMEM;

	for (c = 0; c < sizeof(names) / sizeof(names[0]) && !err; c++) {
		for (i = 0; i < n; i++) {
			const struct tr_row *w = &rows[i];

			v[i] = (json_int_t)(c == 0   ? w->amount
					    : c == 1 ? w->exclusive
					    : c == 2 ? w->ts
					    : c == 3 ? w->order
					    : c == 4 ? (w->has_size ? w->size : w->order)
						     : w->tid);
		}
		err = sonde_json__put_member(&sb, names[c], 0, 0, c == 0) |
		      sonde_json__put_row(&sb, v, n, 0, 0, 0);
	}
	err |= sonde_strbuf__addch(&sb, '}');
	free(v);
	err = err ? -ENOMEM : sonde_profile__set_columns_text(p, idx, &sb);
	sonde_strbuf__release(&sb);
	return err;
}

static int write_rows(struct tr_analysis *a, struct sonde_profile *p, long idx,
		      const struct tr_func *f)
{
	struct tr_row *rows = f->rows;
	size_t i, n = f->nrows;
	int err = 0;

	if (f->keep_every > 1) {
		struct u64map in = { 0 };
		uint64_t v;

		rows = malloc((f->nrows + f->nsizes) * sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		memcpy(rows, f->rows, f->nrows * sizeof(*rows));
		for (i = 0; i < n && !err; i++)
			if (rows[i].has_size)
				err = u64map__put(&in, rows[i].size, 1);
		for (i = 0; i < f->nsizes && !err; i++)
			if (!u64map__get(&in, f->sizes[i].pick.size, &v))
				rows[n++] = f->sizes[i].pick;
		u64map__release(&in);
		if (err) {
			free(rows);
			return err;
		}
		qsort(rows, n, sizeof(*rows), cmp_row_order);
		if (n < f->calls) {
			a->t.sampled_funcs++;
			a->t.sampled_calls += f->calls;
		}
	}
	a->t.rows += n;
	if (n)
		err = rows_text(p, idx, rows, n);
	if (rows != f->rows)
		free(rows);
	return err;
}

/* A member whose value is a tree, at depth 1 of the document (json.h). */
static int tree_member(struct sonde_strbuf *sb, const char *key, const json_t *v, bool first)
{
	return sonde_json__put_member(sb, key, 1, 1, first) | sonde_json__dump_layout(sb, v, 1, 2);
}

/*
 * The timeline's rows after the "[" that ends sb: a->stext with the holes'
 * rows in their places, the first row without its comma. a->stext's buffer
 * becomes sb's: its rows are moved up in place, back to front (each byte
 * once), and sb's head is copied before them, its "[" over the first row's
 * comma; the rows are not copied into a second buffer. Returns how many rows
 * there are, or -ENOMEM.
 */
static long slices_into(struct tr_analysis *a, struct sonde_strbuf *sb)
{
	struct sonde_strbuf hr = SONDE_STRBUF_INIT, old;
	size_t *hat = malloc((a->nholes + 1) * sizeof(*hat)), h, r, total;
	long n = hat ? (long)a->stext_rows : -ENOMEM;
	int rc;

	/* the holes' rows one after another in hr, hole h's from hat[h] */
	for (h = 0; h < a->nholes && n >= 0; h++) {
		hat[h] = hr.len;
		rc = slice_row(a, slice_at(a, a->holes[h].slice), &hr);
		n = rc < 0 ? rc : n + (rc == 0);
	}
	if (n <= 0 || !sb->len) {
		free(hat);
		sonde_strbuf__release(&hr);
		return n;
	}
	hat[a->nholes] = hr.len;
	r = sb->len - 1; /* the rows start on the "[" */
	total = r + a->stext.len + hr.len;
	if (sonde_strbuf__grow(&a->stext, total - a->stext.len + 65536)) {
		free(hat);
		sonde_strbuf__release(&hr);
		return -ENOMEM;
	}
	for (h = a->nholes + 1; h-- > 0;) { /* segment h of stext, after hole h - 1's row */
		size_t from = h ? a->holes[h - 1].at : 0;
		size_t to = h < a->nholes ? a->holes[h].at : a->stext.len;

		memmove(a->stext.buf + r + from + hat[h], a->stext.buf + from, to - from);
		if (h)
			memcpy(a->stext.buf + r + from + hat[h - 1], hr.buf + hat[h - 1],
			       hat[h] - hat[h - 1]);
	}
	memcpy(a->stext.buf, sb->buf, sb->len);
	a->stext.len = total;
	a->stext.buf[total] = '\0';
	old = *sb;
	*sb = a->stext;
	a->stext = old;
	free(hat);
	sonde_strbuf__release(&hr);
	return n;
}

/*
 * A context whose caller has no calls of its own written (a function left out
 * by --filter or --exclude: its calls were counted to no context) would name
 * a parent the profile does not hold. It hangs from the nearest caller that
 * is written instead, as the left-out function's time stays its caller's, and
 * is merged with the context of the same function there, if there is one
 * (main;leaf from main;walk;leaf and main;walk;walk;leaf with walk left out).
 * A node's parent comes before it, so one pass in order sees each parent's
 * place first.
 */
static int lift_contexts(struct tr_analysis *a)
{
	struct u64map twin = { 0 };
	uint32_t *place;
	size_t i;
	int err = 0;

	for (i = 1; i < a->nnodes && a->nodes[i].calls; i++)
		;
	if (i == a->nnodes)
		return 0;			    /* every context is written where it is */
	place = malloc(a->nnodes * sizeof(*place)); /* node -> the node written for it */
	if (!place)
		return -ENOMEM;
	place[0] = 0;
	for (i = 1; i < a->nnodes && !err; i++) {
		struct tr_node *nd = &a->nodes[i];
		uint32_t par = place[nd->parent];
		uint64_t *at;
		bool had;

		if (!nd->calls) { /* not written: its callees go to its caller's place */
			place[i] = par;
			continue;
		}
		nd->parent = par;
		at = u64map__upsert(&twin, (uint64_t)par << 32 | nd->func, &had);
		if (!at) {
			err = -ENOMEM;
		} else if (!had) {
			*at = i;
			place[i] = (uint32_t)i;
		} else { /* the twin takes this context's calls and times */
			struct tr_node *t = &a->nodes[*at];

			t->calls += nd->calls;
			t->incl += nd->incl;
			t->excl += nd->excl;
			nd->calls = 0;
			place[i] = (uint32_t)*at;
		}
	}
	u64map__release(&twin);
	free(place);
	return err;
}

/*
 * The trace member, written as text (sonde_profile__set_text): its contexts,
 * slices and samples are rows of integers, 1.2 million of them for 200 000
 * slices, which as a tree would be a malloc each.
 */
static int trace_text(struct tr_analysis *a, struct sonde_strbuf *sb)
{
	json_t *funcs = json_array();
	json_int_t row[6];
	size_t i, n;
	int err = funcs ? 0 : -ENOMEM;

	for (i = 0; i < a->nfuncs && !err; i++)
		err = json_array_append_new(funcs, json_pack("{s:s, s:s}", "name",
							     func_name(a, &a->funcs[i]), "module",
							     a->funcs[i].module));
	err |= sonde_strbuf__addch(sb, '{');
	err |= tree_member(sb, "functions", funcs, true);
	json_decref(funcs);
	/* [id, parent, function, calls, inclusive_ns, exclusive_ns] */
	err |= lift_contexts(a);
	err |= sonde_json__put_member(sb, "contexts", 1, 1, false) | sonde_strbuf__addch(sb, '[');
	for (i = 1, n = 0; i < a->nnodes && !err; i++) {
		const struct tr_node *nd = &a->nodes[i];

		if (!nd->calls)
			continue; /* every call of it was filtered, or it is merged into a twin */
		row[0] = (json_int_t)i;
		row[1] = (json_int_t)nd->parent;
		row[2] = (json_int_t)nd->func;
		row[3] = (json_int_t)nd->calls;
		row[4] = (json_int_t)nd->incl;
		row[5] = (json_int_t)nd->excl;
		err = sonde_json__put_row(sb, row, 6, 1, 2, n++);
	}
	err |= sonde_json__put_close(sb, ']', n, 1, 2);
	/* [pid, tid, function, depth, start_ns, duration_ns]: the rows written as the
	   slices ended, the holes' rows in their places */
	err |= sonde_json__put_member(sb, "slices", 1, 1, false) | sonde_strbuf__addch(sb, '[');
	if (!err && !(err = slices_text(a))) {
		long rows = slices_into(a, sb);

		err = rows < 0 ? (int)rows : 0;
		n = rows < 0 ? 0 : (size_t)rows;
	}
	sonde_strbuf__release(&a->stext); /* written (the analysis is written once) */
	err |= sonde_json__put_close(sb, ']', n, 1, 2);
	err |= tree_member(sb, "threads", a->threads, false);
	err |= tree_member(sb, "processes", a->processes, false);
	if (a->sampled) { /* [pid, tid, ts, context, weight] of the first max_slices samples */
		err |= sonde_json__put_member(sb, "count", 1, 1, false);
		err |= sonde_json__dump_string(sb, "samples");
		err |= sonde_json__put_member(sb, "samples", 1, 1, false);
		err |= sonde_strbuf__addch(sb, '[');
		for (i = 0; i < a->nsamples && !err; i++) {
			const struct tr_sample *x = &a->samples[i];

			row[0] = (json_int_t)x->pid;
			row[1] = (json_int_t)x->tid;
			row[2] = (json_int_t)x->ts;
			row[3] = (json_int_t)x->ctx;
			row[4] = (json_int_t)x->weight;
			err = sonde_json__put_row(sb, row, 5, 1, 2, i);
		}
		err |= sonde_json__put_close(sb, ']', a->nsamples, 1, 2);
	}
	err |= sonde_json__put_close(sb, '}', 1, 1, 1);
	return err ? -ENOMEM : 0;
}

/* Whether f is written: a call (or, sampled, a sample) and not left out. */
static bool written(const struct tr_analysis *a, const struct tr_func *f)
{
	return a->sampled ? f->samples != 0 : f->calls != 0;
}

/*
 * Functions an engine named (Python's: a qualified name in a file, at a line)
 * that share their name with another are told apart as cProfile does, by file
 * and line: "helper (a.py:1)", the file's base name where that is enough, else
 * its path. Each is its own row, in every view and in check.
 */
static int disambiguate(struct tr_analysis *a)
{
	struct sonde_strmap count = SONDE_STRMAP_INIT;
	size_t i;
	int pass, rc = 0;

	for (pass = 0; pass < 2 && !rc; pass++) {
		sonde_strmap__release(&count);
		memset(&count, 0, sizeof(count));
		for (i = 0; i < a->nfuncs && !rc; i++) {
			struct tr_func *f = &a->funcs[i];
			uint64_t *c;

			if (!f->named || !written(a, f))
				continue;
			c = sonde_strmap__upserts(&count, func_name(a, f), NULL);
			if (!c)
				rc = -ENOMEM;
			else
				(*c)++;
		}
		for (i = 0; i < a->nfuncs && !rc; i++) {
			struct tr_func *f = &a->funcs[i];
			const char *base = strrchr(f->module, '/');
			uint64_t *c;
			char *d;

			if (!f->named || !written(a, f))
				continue;
			c = sonde_strmap__gets(&count, func_name(a, f));
			if (!c || *c < 2)
				continue;
			/* the first pass with the base name, the second (still the same) with
			   the path */
			if (asprintf(&d, "%s (%s:%" PRIu64 ")", f->name,
				     pass == 0 && base ? base + 1 : f->module, f->offset) < 0) {
				rc = -ENOMEM;
				break;
			}
			free(f->display);
			f->display = d;
		}
	}
	sonde_strmap__release(&count);
	return rc;
}

int tr_analysis__write(struct tr_analysis *a, struct sonde_profile *p)
{
	size_t i;
	int rc = 0;

	if (a->written) /* the timeline's text and the slices behind it are gone */
		return -EINVAL;
	a->written = true;
	rc = disambiguate(a);

	for (i = 0; i < a->nfuncs && !rc; i++) {
		struct tr_func *f = &a->funcs[i];
		json_t *extra, *summary;
		long idx;

		if (a->sampled) { /* estimates from samples: no calls, no per-call rows */
			if (!f->samples)
				continue;
			summary = json_pack("{s:I, s:I, s:I}", "samples", (json_int_t)f->samples,
					    "total", (json_int_t)f->total, "self",
					    (json_int_t)f->self);
			extra = json_pack("{s:s, s:o}", "location", f->module, "summary", summary);
			idx = extra ? sonde_profile__resource(p, func_name(a, f), "mixed", "time",
							      extra)
				    : -ENOMEM;
			json_decref(extra);
			rc = idx < 0 ? (int)idx : 0;
			continue;
		}
		if (!f->calls)
			continue;
		summary = json_pack("{s:I, s:I, s:I, s:I, s:I, s:f}", "calls", (json_int_t)f->calls,
				    "total", (json_int_t)f->total, "self", (json_int_t)f->self,
				    "min", (json_int_t)f->min, "max", (json_int_t)f->max, "mean",
				    (double)f->sum / (double)f->calls);
		if (summary && f->keep_every > 1 && f->nsizes)
			json_object_set_new(summary, "sizes", sizes_json(f));
		extra = json_pack("{s:s, s:o}", "location", f->module, "summary", summary);
		idx = extra ? sonde_profile__resource(p, func_name(a, f), "mixed", "time", extra)
			    : -ENOMEM;
		json_decref(extra);
		rc = idx < 0 ? (int)idx : write_rows(a, p, idx, f);
	}
	if (!rc && a->t.sampled_funcs) {
		char msg[256];

		snprintf(msg, sizeof(msg),
			 "the rows of %" PRIu64 " function%s (%" PRIu64 " calls) are a sample: "
			 "every k-th call, at most %" PRIu64 " each, and one call chosen at random "
			 "of each size the sample missed; models fit those rows (summary.sizes "
			 "has every size's calls, mean, min and max)",
			 a->t.sampled_funcs, a->t.sampled_funcs == 1 ? "" : "s", a->t.sampled_calls,
			 a->max_rows);
		rc = sonde_profile__add_warning(
			p, sonde_warning__info(SONDE_WARN_ROWS_SAMPLED)->code, msg,
			sonde_warning__info(SONDE_WARN_ROWS_SAMPLED)->fix);
	}
	if (!rc) {
		struct sonde_strbuf tr = SONDE_STRBUF_INIT;
		json_t *st = stats_json(a);

		rc = trace_text(a, &tr);
		rc = rc ? rc : sonde_profile__set_text(p, "trace", &tr);
		sonde_strbuf__release(&tr);
		if (!rc)
			rc = st ? sonde_profile__set(sonde_profile__stats(p), "trace", st)
				: -ENOMEM;
		else
			json_decref(st);
	}
	return rc;
}

/*
 * analysis.c - from one run's drained log to sites, resources and totals.
 *
 * Pass 1 walks the log once: process images (PROC), their objects (MODULE),
 * their stacks (STACK), and the offsets of every event, per thread stream.
 * Pass 2 merges the thread streams by time and replays the heap (two stages,
 * on two threads where a second CPU is online): each allocation goes into a
 * live map (address -> allocation), each free takes it out. The replay yields
 * leaks (still live when the image ended; not those of an image replaced by
 * exec), temporaries (heaptrack's rule: a free that comes right after an
 * allocation of the same size from the same stack, in the image's merged
 * event order), the peak of live bytes over all processes and what each
 * resource held at that moment, the size histogram, the first run's timeline
 * and, with --sampling, a snapshot of live bytes per site every interval.
 *
 * Symbols are resolved once per distinct (image, stack), never per event.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/clock.h>
#include <sonde/parallel.h>
#include <sonde/ring.h>
#include <sonde/strbuf.h>
#include "../../grow.h"
#include "../../json.h"
#include "memory.h"

const char *const mem_op_names[MEM_OP__COUNT] = {
	[MEM_OP_MALLOC] = "malloc",
	[MEM_OP_CALLOC] = "calloc",
	[MEM_OP_REALLOC] = "realloc",
	[MEM_OP_REALLOCARRAY] = "reallocarray",
	[MEM_OP_POSIX_MEMALIGN] = "posix_memalign",
	[MEM_OP_ALIGNED_ALLOC] = "aligned_alloc",
	[MEM_OP_MEMALIGN] = "memalign",
	[MEM_OP_VALLOC] = "valloc",
	[MEM_OP_PVALLOC] = "pvalloc",
	[MEM_OP_NEW] = "new",
	[MEM_OP_NEW_ARRAY] = "new[]",
	[MEM_OP_MMAP] = "mmap",
	[MEM_OP_FREE] = "free",
	[MEM_OP_DELETE] = "delete",
	[MEM_OP_DELETE_ARRAY] = "delete[]",
	[MEM_OP_MUNMAP] = "munmap",
};

#define NO_RES UINT32_MAX

struct module {
	uint64_t bias, start, end;
	char *path; /* a copy */
};

/*
 * The resources of the keys asked for lately, one per slot of the key's hash
 * (key + 1; 0: none): a program allocates from a few stacks and frees from a
 * few callers again and again, and a map probe costs more than this look.
 */
#define RES_CACHE 64

struct res_cache {
	uint64_t key[RES_CACHE];
	uint32_t res[RES_CACHE];
};

static inline size_t res_slot(uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 58); /* 6 bits: RES_CACHE */
}

struct image {
	uint32_t serial, pid, parent_serial;
	struct module *mods;
	size_t nmods, capmods;
	struct u64map stacks;		  /* id -> offset of the STACK record << 16 | the
					     modules known when it was read (0xffff: more) */
	struct u64map live;		  /* address -> allocation index */
	struct u64map stack_res;	  /* id << 8 | op -> resource index */
	struct u64map free_res;		  /* caller << 8 | op -> resource index */
	struct res_cache stack_c, free_c; /* of stack_res and free_res */
	bool exec_replaced, flushed, started;
	bool last_set;	     /* the latest event was an allocation: */
	uint32_t last_stack; /* of this stack */
	uint64_t last_size;  /* and size */
};

/* A thread's events: the chunks of its ring, in order, read in place. */
struct stream {
	uint32_t image, tid;
	struct span {
		uint64_t off, len;
	} * chunk; /* each chunk's data in the log */
	size_t n, cap;
	size_t ci;	   /* cursor: chunk, and offset of the current event in it */
	uint64_t off, end; /* [off, end): what is left of the current chunk */
	uint64_t ts;	   /* time of the current event, in ns */
};

/* A live block. Slots are reused once freed: only the live set is in memory. */
struct alloc {
	uint32_t res, tid;
	uint32_t stack, pad;
	uint64_t ts, size;
	int64_t row; /* index in its resource's rows, or -1 */
};

struct mem_run {
	struct mem_analysis *a;
	const uint8_t *log;
	uint64_t t0;
	unsigned run;
	struct image *img;
	size_t nimg, capimg;
	struct u64map img_index; /* serial -> image */
	struct stream *st;
	size_t nst, capst;
	struct u64map st_index; /* serial << 32 | tid -> stream */
	struct u64map tids;
	struct alloc *al;
	size_t nal, capal;
	uint64_t *free_slots;
	size_t nfree, capfree;
	uint64_t events, allocs_seen, keep_every, first_ts, last_ts;
	uint64_t alloc_countdown, free_countdown; /* rows: keep one in keep_every */
	uint64_t tl_next, tl_slice;		  /* the timeline's current slice end */
	unsigned tl_i;
	/* pass 1 reads the log in parts (a follower's, while the target runs):
	   offsets in the run's log are (p - buf) + buf_at */
	const uint8_t *buf;
	uint64_t buf_at, fed;
	bool live;	   /* resolve each stack's symbols as it comes */
	uint64_t after_ns; /* pass 1 after the run (not live) */
	int64_t cur_chunk; /* offset of the chunk pass 1 is in; -1: none */
	uint64_t heap, peak, peak_epoch;
	uint64_t *res_live, *res_seen, *res_peak; /* per resource, grown with a->nres */
	size_t res_cap;
	uint64_t *site_live;
	size_t site_cap;
};

static inline uint64_t clock_ns(const struct rt_clock *k, uint64_t t)
{
	if (k->ns_per_tick == 0)
		return t;
	return k->ns0 +
	       (uint64_t)(int64_t)((double)((t - k->tick0) & MEM_TS_MASK) * k->ns_per_tick);
}

static inline uint64_t to_ns(const struct mem_analysis *a, uint64_t t)
{
	return clock_ns(&a->clock, t);
}

#define grow sonde_grow

void mem_analysis__init(struct mem_analysis *a)
{
	memset(a, 0, sizeof(*a));
	a->sym = sonde_symbols__new();
	a->site_index = json_object();
}

void mem_analysis__release(struct mem_analysis *a)
{
	size_t i;

	for (i = 0; i < a->nsites; i++) {
		free(a->sites[i].uid);
		json_decref(a->sites[i].uid_obj);
		json_decref(a->sites[i].trace);
	}
	free(a->sites);
	for (i = 0; i < a->nres; i++)
		free(a->res[i].rows);
	free(a->res);
	free(a->sizes);
	free(a->snaps);
	u64map__release(&a->res_index);
	json_decref(a->site_index);
	json_decref(a->no_source);
	json_decref(a->no_func);
	sonde_symbols__free(a->sym);
	memset(a, 0, sizeof(*a));
}

/* ---- pass 1 ------------------------------------------------------------------------------ */

static struct image *image_of(struct mem_run *r, uint32_t serial, bool create)
{
	uint64_t idx;

	if (u64map__get(&r->img_index, serial, &idx))
		return &r->img[idx];
	if (!create || grow((void **)&r->img, &r->capimg, r->nimg + 1, sizeof(*r->img)) ||
	    u64map__put(&r->img_index, serial, r->nimg))
		return NULL;
	r->img[r->nimg].serial = serial;
	return &r->img[r->nimg++];
}

/* The stream of (serial, tid); created on first sight. */
static struct stream *stream_of(struct mem_run *r, const struct sonde_ring_chunk *c)
{
	uint64_t key = ((uint64_t)c->serial << 32) | c->tid, idx;

	if (!u64map__get(&r->st_index, key, &idx)) {
		struct image *im = image_of(r, c->serial, true);

		if (!im || grow((void **)&r->st, &r->capst, r->nst + 1, sizeof(*r->st)) ||
		    u64map__put(&r->st_index, key, r->nst) || u64map__put(&r->tids, c->tid, 1))
			return NULL;
		idx = r->nst++;
		r->st[idx].image = (uint32_t)(im - r->img);
		r->st[idx].tid = c->tid;
	}
	return &r->st[idx];
}

/* Note the chunk of an event record, once per chunk. */
static int add_event(struct mem_run *r, const struct sonde_ring_chunk *c)
{
	const uint8_t *data = (const uint8_t *)(c + 1);
	uint64_t off = (uint64_t)(data - r->buf) + r->buf_at;
	struct stream *s;

	if (r->cur_chunk == (int64_t)off)
		return 0;
	r->cur_chunk = (int64_t)off;
	s = stream_of(r, c);
	if (!s || grow((void **)&s->chunk, &s->cap, s->n + 1, sizeof(*s->chunk)))
		return -ENOMEM;
	s->chunk[s->n++] = (struct span){ off, c->bytes };
	return 0;
}

/*
 * Whether a record is well formed: long enough for its type, its string ended
 * inside it, its stack inside it, its operation one its type can have. Every
 * byte of the log was written by the target: a record that is not is skipped
 * (and counted), never followed.
 */
static bool rec_ok(const uint32_t *rec)
{
	uint32_t len = SONDE_RING_REC_LEN(rec[0]);
	unsigned op = 0;

	switch (SONDE_RING_REC_TYPE(rec[0])) {
	case MEM_REC_PROC:
		return len > sizeof(struct rt_proc) &&
		       memchr(((const struct rt_proc *)(const void *)rec)->exe, 0,
			      len - sizeof(struct rt_proc));
	case MEM_REC_MODULE: {
		const struct rt_module *m = (const void *)rec;

		return len > sizeof(*m) && m->start <= m->end &&
		       memchr(m->path, 0, len - sizeof(*m));
	}
	case MEM_REC_STACK:
		return len >= sizeof(struct mem_stack) &&
		       ((const struct mem_stack *)(const void *)rec)->depth <=
			       (len - sizeof(struct mem_stack)) / sizeof(uint64_t);
	case MEM_REC_MISSED:
	case MEM_REC_DEEPBIND:
		return len >= sizeof(struct mem_missed);
	case MEM_REC_ALLOC:
	case MEM_REC_REALLOC:
	case MEM_REC_FREE:
		if (len < sizeof(struct mem_free))
			return false;
		op = (unsigned)(((const uint64_t *)(const void *)rec)[1] >> MEM_TS_BITS);
		if (SONDE_RING_REC_TYPE(rec[0]) == MEM_REC_FREE)
			return op >= MEM_OP_FREE && op < MEM_OP__COUNT;
		/* no block is 256 TiB: larger sizes are not sizes (and would overflow sums) */
		return op < MEM_OP_FREE &&
		       len >= (SONDE_RING_REC_TYPE(rec[0]) == MEM_REC_ALLOC
				       ? sizeof(struct mem_alloc)
				       : sizeof(struct mem_realloc)) &&
		       ((const struct mem_alloc *)(const void *)rec)->size < (1ull << 48);
	default:
		return true; /* a record type from a newer runtime: skipped */
	}
}

static void warm_stack(struct mem_analysis *a, const struct image *im, const struct mem_stack *st);

static int pass1(void *ctx, const struct sonde_ring_chunk *c, const uint32_t *rec)
{
	struct mem_run *r = ctx;
	uint32_t type;
	struct image *im;
	uint64_t ts;

	if (!rec || !rec_ok(rec)) { /* NULL: the rest of a chunk the target wrote over */
		r->a->t.malformed++;
		return 0;
	}
	type = SONDE_RING_REC_TYPE(rec[0]);

	switch (type) {
	case MEM_REC_PROC: {
		const struct rt_proc *p = (const void *)rec;

		im = image_of(r, c->serial, true);
		if (!im)
			return -ENOMEM;
		im->pid = p->pid;
		im->parent_serial = p->parent_serial;
		return 0;
	}
	case MEM_REC_MODULE: {
		const struct rt_module *m = (const void *)rec;
		size_t i;

		im = image_of(r, c->serial, true);
		if (!im)
			return -ENOMEM;
		for (i = 0; i < im->nmods; i++)
			if (im->mods[i].start == m->start && !strcmp(im->mods[i].path, m->path))
				return 0;
		if (grow((void **)&im->mods, &im->capmods, im->nmods + 1, sizeof(*im->mods)))
			return -ENOMEM;
		/* a copy: a follower's part of the log is read into a buffer it reuses */
		im->mods[im->nmods] = (struct module){ m->bias, m->start, m->end, strdup(m->path) };
		if (!im->mods[im->nmods].path)
			return -ENOMEM;
		im->nmods++;
		return 0;
	}
	case MEM_REC_STACK: {
		const struct mem_stack *s = (const void *)rec;

		im = image_of(r, c->serial, true);
		if (!im)
			return -ENOMEM;
		r->a->t.stacks++;
		if (r->live)
			warm_stack(r->a, im, s);
		/* its addresses are those of the modules mapped then (a library closed and
		   another loaded in its place comes later in the list) */
		return u64map__put(&im->stacks, s->id,
				   ((uint64_t)((const uint8_t *)rec - r->buf) + r->buf_at) << 16 |
					   (im->nmods < 0xffff ? im->nmods : 0xffff));
	}
	case MEM_REC_MISSED:
		r->a->t.missed += ((const struct mem_missed *)(const void *)rec)->count;
		return 0;
	case MEM_REC_DEEPBIND:
		r->a->t.deepbind += ((const struct mem_missed *)(const void *)rec)->count;
		return 0;
	case MEM_REC_ALLOC:
	case MEM_REC_REALLOC:
		r->allocs_seen++;
		/* fall through */
	case MEM_REC_FREE:
		ts = to_ns(r->a, ((const uint64_t *)(const void *)rec)[1] & MEM_TS_MASK);
		if (!r->events || ts < r->first_ts)
			r->first_ts = ts;
		if (ts > r->last_ts)
			r->last_ts = ts;
		r->events++;
		return add_event(r, c);
	default:
		return 0; /* a record type from a newer runtime: skip it */
	}
}

/* ---- symbols and sites --------------------------------------------------------------------- */

/* The module at pc among the first nmods of im (the latest mapped there wins). */
static const struct module *module_of(const struct image *im, uint64_t pc, size_t nmods)
{
	size_t i;

	for (i = nmods < im->nmods ? nmods : im->nmods; i-- > 0;)
		if (pc >= im->mods[i].start && pc < im->mods[i].end)
			return &im->mods[i];
	return NULL;
}

/*
 * The frames at return address pc of image im (an inlined call is a frame of
 * its own; an address in no object, one "[unknown]" frame): their count, or
 * -errno.
 */
static int frames_of(struct mem_analysis *a, const struct image *im, uint64_t pc, size_t nmods,
		     struct sonde_frame fr[32])
{
	const struct module *m = module_of(im, pc, nmods);

	if (!m) {
		fr[0] = (struct sonde_frame){ .module = "[unknown]", .offset = pc };
		return 1;
	}
	return sonde_symbols__resolve(a->sym, m->path, pc - m->bias, true, fr, 32);
}

/*
 * While the target runs (pass 1 following the log), a stack's frames are
 * resolved as site_of will ask for them, so that it finds them in the
 * symbols' cache and the debug information loaded (inflating a library's
 * DWARF takes a tenth of a second). What cannot be resolved is site_of's to say.
 */
static void warm_stack(struct mem_analysis *a, const struct image *im, const struct mem_stack *st)
{
	struct sonde_frame fr[32];
	uint32_t i;

	for (i = 0; i < st->depth; i++)
		frames_of(a, im, st->pc[i], im->nmods, fr);
}

/*
 * Frames of the allocator, left out of stacks unless --all: the allocation
 * functions themselves, the C++ allocators, and code instantiated from the
 * system's headers on the way (std::vector growing, ...), so that the site is
 * the user's line that asked for memory.
 */
static bool allocator_frame(const char *fn, const char *file)
{
	static const char *const exact[] = {
		"malloc",
		"calloc",
		"realloc",
		"reallocarray",
		"free",
		"posix_memalign",
		"aligned_alloc",
		"memalign",
		"valloc",
		"pvalloc",
		"__libc_malloc",
		"__libc_calloc",
		"__libc_realloc",
		"__libc_memalign",
		"strdup",
		"strndup",
		"__strdup",
		"__strndup",
		NULL,
	};
	static const char *const prefix[] = {
		"operator new",
		"operator delete",
		"std::allocator",
		"__gnu_cxx::new_allocator",
		"std::__new_allocator",
		"std::allocator_traits",
		NULL,
	};
	size_t i;

	if (file && !strncmp(file, "/usr/include/", 13))
		return true;
	if (!fn)
		return false;
	for (i = 0; exact[i]; i++)
		if (!strcmp(fn, exact[i]))
			return true;
	for (i = 0; prefix[i]; i++)
		if (!strncmp(fn, prefix[i], strlen(prefix[i])))
			return true;
	return false;
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p;
}

static bool matches_file(json_t *list, const char *file)
{
	size_t i;
	json_t *v;

	if (!file)
		return false;
	json_array_foreach(list, i, v)
	{
		const char *f = json_string_value(v);
		size_t fl, l;

		if (!f)
			continue;
		fl = strlen(f);
		l = strlen(file);
		if (!strcmp(f, file) || !strcmp(f, base_name(file)) ||
		    (l > fl && !strcmp(file + l - fl, f) && file[l - fl - 1] == '/'))
			return true;
	}
	return false;
}

static bool matches_func(json_t *list, const char *fn)
{
	size_t i;
	json_t *v;

	json_array_foreach(list, i, v) if (fn && json_string_value(v) &&
					   !strcmp(fn, json_string_value(v))) return true;
	return false;
}

/* One frame as JSON, and its part of the site key. */
static json_t *frame_json(const struct sonde_frame *f, struct sonde_strbuf *key)
{
	char fn[512];

	if (f->function)
		snprintf(fn, sizeof(fn), "%s", f->function);
	else
		snprintf(fn, sizeof(fn), "%s+0x%llx", base_name(f->module),
			 (unsigned long long)f->offset);
	sonde_strbuf__addf(key, "%s|%s|%u|%s;", fn, f->file ? f->file : "", f->line,
			   f->function ? "" : f->module);
	return json_pack("{s:s, s:s, s:i, s:s}", "function", fn, "source", f->file ? f->file : "",
			 "line", (int)f->line, "module", f->module);
}

/* The site of a list of return addresses (innermost first) in image im. */
static int site_of(struct mem_run *r, const struct image *im, const uint64_t *pc, uint32_t depth,
		   size_t nmods, uint32_t *site)
{
	struct mem_analysis *a = r->a;
	struct sonde_strbuf key = SONDE_STRBUF_INIT;
	struct sonde_frame fr[32];
	json_t *trace = json_array(), *hit;
	bool skipping = !a->all;
	struct mem_site *s;
	uint32_t i;
	int n, k, err = 0;

	for (i = 0; i < depth && !err; i++) {
		n = frames_of(a, im, pc[i], nmods, fr);
		if (n < 0) {
			err = n;
			break;
		}
		for (k = 0; k < n; k++) {
			if (skipping && allocator_frame(fr[k].function, fr[k].file) &&
			    !(i + 1 == depth && k + 1 == n && !json_array_size(trace)))
				continue;
			skipping = false;
			if (json_array_append_new(trace, frame_json(&fr[k], &key)))
				err = -ENOMEM;
		}
	}
	if (!err && !json_array_size(trace)) {
		json_array_append_new(trace, json_pack("{s:s, s:s, s:i, s:s}", "function",
						       "[unknown stack]", "source", "", "line", 0,
						       "module", ""));
		sonde_strbuf__adds(&key, "[unknown stack]");
	}
	if (err || !key.buf) {
		json_decref(trace);
		sonde_strbuf__release(&key);
		return err ? err : -ENOMEM;
	}
	hit = json_object_get(a->site_index, key.buf);
	if (hit) {
		*site = (uint32_t)json_integer_value(hit);
		json_decref(trace);
		sonde_strbuf__release(&key);
		return 0;
	}
	if (grow((void **)&a->sites, &a->capsites, a->nsites + 1, sizeof(*a->sites)))
		err = -ENOMEM;
	else {
		json_t *top = json_array_get(trace, 0);
		const char *fn = json_string_value(json_object_get(top, "function"));
		const char *src = json_string_value(json_object_get(top, "source"));
		json_int_t line = json_integer_value(json_object_get(top, "line"));
		struct sonde_strbuf uid = SONDE_STRBUF_INIT;

		s = &a->sites[a->nsites];
		s->trace = trace;
		s->uid_obj =
			json_pack("{s:s, s:s, s:I}", "function", fn, "source", src, "line", line);
		sonde_profile__uid_string(s->uid_obj, &uid);
		s->uid = sonde_strbuf__detach(&uid, NULL);
		s->excluded = (a->no_source && matches_file(a->no_source, src)) ||
			      (a->no_func && matches_func(a->no_func, fn));
		trace = NULL;
		if (!s->uid_obj || !s->uid ||
		    json_object_set_new(a->site_index, key.buf,
					json_integer((json_int_t)a->nsites)))
			err = -ENOMEM;
		else
			*site = (uint32_t)a->nsites++;
	}
	json_decref(trace);
	sonde_strbuf__release(&key);
	return err;
}

static int res_of_site(struct mem_run *r, uint32_t site, unsigned op, uint32_t *res)
{
	struct mem_analysis *a = r->a;
	uint64_t key = ((uint64_t)site << 8) | op, idx;

	if (a->sites[site].excluded) {
		*res = NO_RES;
		return 0;
	}
	if (!u64map__get(&a->res_index, key, &idx)) {
		if (grow((void **)&a->res, &a->capres, a->nres + 1, sizeof(*a->res)) ||
		    u64map__put(&a->res_index, key, a->nres))
			return -ENOMEM;
		a->res[a->nres].site = site;
		a->res[a->nres].op = (uint8_t)op;
		idx = a->nres++;
	}
	if (a->nres > r->res_cap) {
		size_t c1 = r->res_cap, c2 = r->res_cap, c3 = r->res_cap;

		if (grow((void **)&r->res_live, &c1, a->nres, 8) ||
		    grow((void **)&r->res_seen, &c2, a->nres, 8) ||
		    grow((void **)&r->res_peak, &c3, a->nres, 8))
			return -ENOMEM;
		r->res_cap = c1;
	}
	if (a->nsites > r->site_cap && grow((void **)&r->site_live, &r->site_cap, a->nsites, 8))
		return -ENOMEM;
	*res = (uint32_t)idx;
	return 0;
}

static int alloc_res(struct mem_run *r, struct image *im, uint32_t stack, unsigned op,
		     uint32_t *res)
{
	uint64_t key = ((uint64_t)stack << 8) | op, v, off;
	uint32_t site;
	int rc;

	size_t c = res_slot(key);

	if (im->stack_c.key[c] == key + 1) {
		*res = im->stack_c.res[c];
		return 0;
	}
	if (u64map__get(&im->stack_res, key, &v)) {
		*res = (uint32_t)v;
		im->stack_c.key[c] = key + 1;
		im->stack_c.res[c] = *res;
		return 0;
	}
	if (stack && u64map__get(&im->stacks, stack, &off)) {
		const struct mem_stack *s = (const void *)(r->log + (off >> 16));

		/* (0xffff: read after 65535 modules or more, every one known then) */
		rc = site_of(r, im, s->pc, s->depth,
			     (off & 0xffff) == 0xffff ? SIZE_MAX : (size_t)(off & 0xffff), &site);
	} else {
		rc = site_of(r, im, NULL, 0, 0, &site);
	}
	if (!rc)
		rc = res_of_site(r, site, op, res);
	if (!rc)
		rc = u64map__put(&im->stack_res, key, *res);
	return rc;
}

static int free_res(struct mem_run *r, struct image *im, uint64_t caller, unsigned op,
		    uint32_t *res)
{
	uint64_t key = (caller << 8) | op, v;
	uint32_t site;
	int rc;

	size_t c = res_slot(key);

	if (im->free_c.key[c] == key + 1) {
		*res = im->free_c.res[c];
		return 0;
	}
	if (u64map__get(&im->free_res, key, &v)) {
		*res = (uint32_t)v;
		im->free_c.key[c] = key + 1;
		im->free_c.res[c] = *res;
		return 0;
	}
	/* a free's caller, with every module known (a free from a library closed
	   since, where another was loaded, is named after the later one) */
	rc = site_of(r, im, &caller, 1, im->nmods, &site);
	if (!rc)
		rc = res_of_site(r, site, op, res);
	if (!rc)
		rc = u64map__put(&im->free_res, key, *res);
	return rc;
}

/* ---- pass 2: the replay -------------------------------------------------------------------- */

static void res_live_change(struct mem_run *r, uint32_t res, int64_t delta)
{
	if (res == NO_RES)
		return;
	if (r->res_seen[res] != r->peak_epoch) {
		r->res_peak[res] = r->res_live[res]; /* unchanged since the last peak */
		r->res_seen[res] = r->peak_epoch;
	}
	r->res_live[res] += (uint64_t)delta;
	r->site_live[r->a->res[res].site] += (uint64_t)delta;
}

static int add_row(struct mem_res *res, const struct mem_row *row, int64_t *at)
{
	if (grow((void **)&res->rows, &res->caprows, res->nrows + 1, sizeof(*res->rows)))
		return -ENOMEM;
	res->rows[res->nrows] = *row;
	if (at)
		*at = (int64_t)res->nrows;
	res->nrows++;
	return 0;
}

static void heap_change(struct mem_run *r, int64_t delta, uint64_t ts, uint32_t pid)
{
	r->heap += (uint64_t)delta;
	if (r->heap > r->peak) {
		r->peak = r->heap;
		r->peak_epoch++;
		if (r->peak > r->a->t.peak) {
			r->a->t.peak = r->peak;
			r->a->t.peak_ts = ts - r->t0;
			r->a->t.peak_pid = pid;
		}
	}
}

static void timeline(struct mem_run *r, uint64_t ts, uint64_t bytes, bool alloc)
{
	struct mem_totals *t = &r->a->t;
	uint64_t i;

	if (t->tl_done || !t->tl_slice_ns)
		return;
	while (ts >= r->tl_next && r->tl_i + 1 < MEM_TIMELINE) {
		r->tl_i++;
		r->tl_next += t->tl_slice_ns;
	}
	i = r->tl_i;
	if (alloc) {
		t->tl_alloc[i]++;
		t->tl_bytes[i] += bytes;
	}
	t->tl_heap[i] = r->heap + 1; /* +1: "set"; fixed up at the end */
	if (r->heap + 1 > t->tl_peak[i])
		t->tl_peak[i] = r->heap + 1;
}

static int snapshot(struct mem_run *r, uint32_t k, uint64_t ts)
{
	struct mem_analysis *a = r->a;
	size_t i;

	for (i = 0; i < a->nsites && i < r->site_cap; i++) {
		if (!r->site_live[i] || a->sites[i].excluded)
			continue;
		if (grow((void **)&a->snaps, &a->capsnaps, a->nsnaps + 1, sizeof(*a->snaps)))
			return -ENOMEM;
		a->snaps[a->nsnaps++] =
			(struct mem_snapshot_row){ (uint32_t)i, k, ts - r->t0, r->site_live[i] };
	}
	return 0;
}

/* The bytes a block counts for in the heap: none when its site is left out. */
static uint64_t heap_bytes(const struct alloc *al)
{
	return al->res == NO_RES ? 0 : al->size;
}

/* The blocks of an image replaced by exec are gone, not leaked. */
static void flush_image(struct mem_run *r, struct image *im)
{
	size_t i;

	for (i = 0; i < im->live.cap; i++) {
		struct alloc *al;

		if (im->live.k[i] == U64MAP_EMPTY)
			continue;
		al = &r->al[im->live.v[i]];
		res_live_change(r, al->res, -(int64_t)al->size);
		r->heap -= heap_bytes(al);
		r->free_slots[r->nfree++] = im->live.v[i];
		im->live.k[i] = U64MAP_EMPTY;
	}
	if (im->live.has_max) { /* a block at the address UINT64_MAX */
		struct alloc *al = &r->al[im->live.max_v];

		res_live_change(r, al->res, -(int64_t)al->size);
		r->heap -= heap_bytes(al);
		r->free_slots[r->nfree++] = im->live.max_v;
		im->live.has_max = false;
	}
	im->live.n = 0;
	im->flushed = true;
}

static int on_alloc(struct mem_run *r, uint32_t tid, struct image *im, uint32_t stack, unsigned op,
		    uint64_t ts, uint64_t addr, uint64_t size)
{
	struct mem_analysis *a = r->a;
	struct alloc al = { .tid = tid, .stack = stack, .ts = ts, .size = size, .row = -1 };
	uint64_t slot, *live;
	bool existed;
	unsigned b;
	int rc = alloc_res(r, im, stack, op, &al.res);

	if (rc)
		return rc;
	if (al.res == NO_RES) {
		a->t.excluded++;
	} else {
		struct mem_res *res = &a->res[al.res];

		res->count++;
		res->bytes += size;
		a->t.allocations++;
		a->t.bytes += size;
		b = size <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(size - 1); /* ceil(log2) */
		if (b >= MEM_HIST_BUCKETS)
			b = MEM_HIST_BUCKETS - 1;
		a->t.hist_count[b]++;
		a->t.hist_bytes[b] += size;
		a->t.rows_total++;
		if (--r->alloc_countdown == 0) {
			r->alloc_countdown = r->keep_every;
			struct mem_row row = { size, addr, ts - r->t0, -1, tid, r->run };

			if (add_row(res, &row, &al.row))
				return -ENOMEM;
			a->t.rows_kept++;
		}
	}
	/* one probe of the live map: the block's place, and what was there */
	live = u64map__upsert(&im->live, addr, &existed);
	if (!live)
		return -ENOMEM;
	if (existed) { /* a block we never saw freed */
		uint64_t old = *live;

		res_live_change(r, r->al[old].res, -(int64_t)r->al[old].size);
		r->heap -= heap_bytes(&r->al[old]);
		r->free_slots[r->nfree++] = old;
	}
	if (r->nfree) {
		slot = r->free_slots[--r->nfree];
	} else {
		if (grow((void **)&r->al, &r->capal, r->nal + 1, sizeof(*r->al)) ||
		    grow((void **)&r->free_slots, &r->capfree, r->nal + 1, sizeof(*r->free_slots)))
			return -ENOMEM;
		slot = r->nal++;
	}
	r->al[slot] = al;
	*live = slot;
	if (al.res == NO_RES)
		return 0; /* left out (--no-func, --no-source): in no total, peak or timeline */
	im->last_set = true;
	im->last_stack = stack;
	im->last_size = size;
	res_live_change(r, al.res, (int64_t)size);
	heap_change(r, (int64_t)size, ts, im->pid);
	timeline(r, ts, size, true);
	return 0;
}

static int on_free(struct mem_run *r, uint32_t tid, struct image *im, unsigned op, uint64_t ts,
		   uint64_t addr, uint64_t caller, bool from_realloc)
{
	struct mem_analysis *a = r->a;
	uint64_t idx;
	uint32_t fres = NO_RES;
	struct alloc *al = NULL;
	bool found = u64map__take(&im->live, addr, &idx);
	int rc;

	if (found && r->al[idx].res == NO_RES) {
		r->free_slots[r->nfree++] = idx; /* the free of a block left out: left out too */
		return 0;
	}
	if (found) {
		/* heaptrack's temporary: the event before this free allocated a block
		   of the same size from the same stack (not necessarily this one) */
		bool temporary = im->last_set && r->al[idx].stack == im->last_stack &&
				 r->al[idx].size == im->last_size;

		im->last_set = false;
		struct mem_res *res = &a->res[r->al[idx].res];

		al = &r->al[idx];
		res->freed++;
		if (al->row >= 0)
			res->rows[al->row].freed = (int64_t)(ts - r->t0);
		if (temporary) {
			res->temporary++;
			a->t.temporary++;
		}
		res_live_change(r, al->res, -(int64_t)al->size);
		heap_change(r, -(int64_t)al->size, ts, im->pid);
		r->free_slots[r->nfree++] = idx; /* al stays readable until the next alloc */
	} else if (!from_realloc) {
		a->t.unmatched_frees++;
	}
	timeline(r, ts, 0, false);
	if (from_realloc)
		return 0;
	a->t.frees++;
	rc = free_res(r, im, caller, op, &fres);
	if (rc || fres == NO_RES)
		return rc;
	{
		struct mem_res *res = &a->res[fres];

		res->count++;
		res->bytes += al ? al->size : 0;
		if (--r->free_countdown == 0) {
			r->free_countdown = r->keep_every;
			struct mem_row row = {
				al ? al->size : UINT64_MAX, addr, ts - r->t0, -1, tid, r->run
			};

			return add_row(res, &row, NULL);
		}
	}
	return 0;
}

static bool is_event(uint32_t type)
{
	return type == MEM_REC_ALLOC || type == MEM_REC_FREE || type == MEM_REC_REALLOC;
}

/*
 * The merge of the threads' streams: what it reads is its own (copies of the
 * log's place and the clock), so that the replay's stage on another CPU
 * writes nothing on the merge's cache lines.
 */
struct merge {
	_Alignas(64) const uint8_t *log; /* (and alone on its cache lines) */
	struct stream *st;
	struct rt_clock clock;
	uint32_t *heap; /* of the streams that have events left, by their next event's time */
	size_t n;
};

/* Move the stream's cursor to its next event (from off). false: no more. */
static bool seek_event(const struct merge *m, struct stream *s)
{
	for (;;) {
		while (s->off + 8 <= s->end) {
			const uint32_t *rec = (const void *)(m->log + s->off);
			uint32_t h = rec[0];

			/* the frame the walk found broken, if any, ends the chunk here too
			   (the walk kept the chunk's records before it) */
			if (SONDE_RING_REC_LEN(h) < 8 || (SONDE_RING_REC_LEN(h) & 7) ||
			    s->off + SONDE_RING_REC_LEN(h) > s->end)
				break;
			if (is_event(SONDE_RING_REC_TYPE(h)) && rec_ok(rec)) {
				s->ts = clock_ns(&m->clock,
						 ((const uint64_t *)(const void *)rec)[1] &
							 MEM_TS_MASK);
				return true;
			}
			s->off += SONDE_RING_REC_LEN(h);
		}
		if (++s->ci >= s->n)
			return false;
		s->off = s->chunk[s->ci].off;
		s->end = s->off + s->chunk[s->ci].len;
	}
}

static void sift_down(const struct merge *m, size_t i)
{
	uint32_t *h = m->heap;
	size_t n = m->n;

	for (;;) {
		size_t l = 2 * i + 1, c = i;
		uint32_t t;

		if (l < n && m->st[h[l]].ts < m->st[h[c]].ts)
			c = l;
		if (l + 1 < n && m->st[h[l + 1]].ts < m->st[h[c]].ts)
			c = l + 1;
		if (c == i)
			return;
		t = h[i];
		h[i] = h[c];
		h[c] = t;
		i = c;
	}
}

/* An event in the merged order of the run, read out of its record. */
struct merged {
	uint64_t ts, addr;
	uint64_t size; /* a free's: the caller */
	uint64_t old;  /* a realloc's */
	uint32_t image, tid, stack;
	uint8_t type, op;
};

/* The next events in time order across threads (the first stage of the replay). */
static size_t merge_next(void *ctx, void *buf, size_t cap)
{
	struct merge *m = ctx;
	struct merged *out = buf;
	size_t k = 0;

	while (k < cap && m->n) {
		struct stream *s = &m->st[m->heap[0]];
		const uint32_t *rec = (const void *)(m->log + s->off);
		struct merged *e = &out[k++];

		e->ts = s->ts;
		e->image = s->image;
		e->tid = s->tid;
		e->type = (uint8_t)SONDE_RING_REC_TYPE(rec[0]);
		e->op = (uint8_t)(((const uint64_t *)(const void *)rec)[1] >> MEM_TS_BITS);
		if (e->type == MEM_REC_FREE) {
			const struct mem_free *f = (const void *)rec;

			e->addr = f->addr;
			e->size = f->caller;
		} else {
			const struct mem_alloc *a = (const void *)rec;

			e->addr = a->addr;
			e->size = a->size;
			e->stack = a->stack;
			if (e->type == MEM_REC_REALLOC)
				e->old = ((const struct mem_realloc *)(const void *)rec)->old;
		}
		s->off += SONDE_RING_REC_LEN(rec[0]);
		if (!seek_event(m, s))
			m->heap[0] = m->heap[--m->n];
		sift_down(m, 0);
	}
	return k;
}

/* Where the replay is: the next snapshot (--sampling) and its number. */
struct replay_at {
	struct mem_run *r;
	uint64_t snap_every, next_snap;
	uint32_t k;
};

/* Apply merged events to the heap (the second stage of the replay). */
static int apply(void *ctx, const void *buf, size_t n)
{
	struct replay_at *at = ctx;
	struct mem_run *r = at->r;
	const struct merged *ev = buf;
	size_t e;
	int rc = 0;

	for (e = 0; e < n && !rc; e++) {
		const struct merged *v = &ev[e];
		struct image *im = &r->img[v->image];

		if (!im->started) {
			/* first event of an image: the image it replaced by exec is gone */
			size_t j;

			for (j = 0; j < r->nimg; j++)
				if (r->img[j].exec_replaced && r->img[j].pid == im->pid &&
				    r->img[j].serial < im->serial && !r->img[j].flushed)
					flush_image(r, &r->img[j]);
			im->started = true;
		}
		while (at->snap_every && v->ts >= at->next_snap && !rc) {
			rc = snapshot(r, at->k++, at->next_snap);
			at->next_snap += at->snap_every;
		}
		if (rc)
			break;
		switch (v->type) {
		case MEM_REC_ALLOC:
			rc = on_alloc(r, v->tid, im, v->stack, v->op, v->ts, v->addr, v->size);
			break;
		case MEM_REC_REALLOC:
			rc = on_free(r, v->tid, im, MEM_OP_FREE, v->ts, v->old, 0, true);
			if (!rc)
				rc = on_alloc(r, v->tid, im, v->stack, v->op, v->ts, v->addr,
					      v->size);
			break;
		case MEM_REC_FREE:
			rc = on_free(r, v->tid, im, v->op, v->ts, v->addr, v->size, false);
			break;
		}
	}
	return rc;
}

/*
 * Pass 2: the merge of the threads' streams and the heap's replay are two
 * stages; on a machine with a second CPU the merge runs on a thread of its
 * own, a few thousand events ahead.
 */
#define MERGE_BATCH 4096

static int replay(struct mem_run *r)
{
	struct mem_analysis *a = r->a;
	struct merge m = { .log = r->log,
			   .st = r->st,
			   .clock = a->clock,
			   .heap = calloc(r->nst + 1, sizeof(*m.heap)) };
	struct replay_at at = { .r = r };
	size_t i;
	int rc;

	if (!m.heap)
		return -ENOMEM;
	at.snap_every = a->sampling_s > 0 ? (uint64_t)(a->sampling_s * 1e9) : 0;
	at.next_snap = r->first_ts + at.snap_every;
	for (i = 0; i < r->nst; i++) {
		struct stream *s = &r->st[i];

		if (!s->n)
			continue;
		s->ci = 0;
		s->off = s->chunk[0].off;
		s->end = s->off + s->chunk[0].len;
		if (seek_event(&m, s))
			m.heap[m.n++] = (uint32_t)i;
	}
	for (i = m.n; i-- > 0;)
		sift_down(&m, i);
	rc = sonde_parallel__pipe(sizeof(struct merged), MERGE_BATCH, r->events, merge_next, &m,
				  apply, &at);
	free(m.heap);
	if (!rc && at.snap_every)
		rc = snapshot(r, at.k, r->last_ts);
	return rc;
}

/* Leaks: what is still live in images that ended by exit or crash. */
static int leaks(struct mem_run *r)
{
	struct mem_analysis *a = r->a;
	size_t i, j;

	for (i = 0; i < r->nimg; i++) {
		struct image *im = &r->img[i];

		if (im->exec_replaced)
			continue;
		for (j = 0; j <= im->live.cap; j++) { /* cap: the key UINT64_MAX */
			struct alloc *al;
			struct mem_res *res;
			uint64_t addr = j < im->live.cap ? im->live.k[j] : U64MAP_EMPTY;

			if (j < im->live.cap ? addr == U64MAP_EMPTY : !im->live.has_max)
				continue;
			al = &r->al[j < im->live.cap ? im->live.v[j] : im->live.max_v];
			if (al->res == NO_RES)
				continue;
			res = &a->res[al->res];
			res->leaked++;
			res->leaked_bytes += al->size;
			a->t.leaked++;
			a->t.leaked_bytes += al->size;
			if (al->row < 0) { /* every leak keeps its row */
				struct mem_row row = { al->size, addr,	  al->ts - r->t0,
						       -1,	 al->tid, r->run };

				if (add_row(res, &row, NULL))
					return -ENOMEM;
				a->t.rows_kept++;
			}
		}
	}
	return 0;
}

struct mem_run *mem_run__new(struct mem_analysis *a, uint64_t t0, bool live)
{
	struct mem_run *r = calloc(1, sizeof(*r));

	if (r) {
		r->a = a;
		r->t0 = t0;
		r->live = live;
		r->cur_chunk = -1;
	}
	return r;
}

int mem_run__feed(struct mem_run *r, const void *log, size_t len)
{
	uint64_t start = sonde_clock_ns();
	int rc;

	if (!r->a->sym || !r->a->site_index)
		return -ENOMEM;
	r->buf = log;
	r->buf_at = r->fed;
	rc = sonde_ring_log__walk(log, len, pass1, r);
	r->fed += len;
	start = sonde_clock_ns() - start;
	r->a->t.analysis_ns += start;
	if (!r->live)
		r->after_ns += start;
	return rc;
}

void mem_run__free(struct mem_run *r)
{
	size_t i, m;

	if (!r)
		return;
	for (i = 0; i < r->nimg; i++) {
		for (m = 0; m < r->img[i].nmods; m++)
			free(r->img[i].mods[m].path);
		free(r->img[i].mods);
		u64map__release(&r->img[i].stacks);
		u64map__release(&r->img[i].live);
		u64map__release(&r->img[i].stack_res);
		u64map__release(&r->img[i].free_res);
	}
	for (i = 0; i < r->nst; i++)
		free(r->st[i].chunk);
	free(r->img);
	free(r->st);
	free(r->al);
	free(r->free_slots);
	free(r->res_live);
	free(r->res_seen);
	free(r->res_peak);
	free(r->site_live);
	u64map__release(&r->img_index);
	u64map__release(&r->st_index);
	u64map__release(&r->tids);
	free(r);
}

int mem_run__finish(struct mem_run *r, const void *log, size_t len, unsigned run)
{
	struct mem_analysis *a = r->a;
	uint64_t start;
	size_t i, j;
	int rc = 0;

	r->run = run;
	r->live = false;  /* the run is over */
	if (r->fed < len) /* what pass 1 has not seen yet */
		rc = mem_run__feed(r, (const uint8_t *)log + r->fed, len - r->fed);
	start = sonde_clock_ns();
	if (rc)
		goto out;
	a->t.after_run_ns += r->after_ns; /* of pass 1, what came after the run */
	r->log = log;
	a->t.log_bytes += len;
	a->t.processes += r->nimg;
	a->t.threads += r->tids.n;
	r->keep_every = a->max_rows && r->allocs_seen > a->max_rows
				? (r->allocs_seen + a->max_rows - 1) / a->max_rows
				: 1;
	r->alloc_countdown = r->free_countdown = r->keep_every;
	/* an image is replaced by exec when a later one has the same pid */
	for (i = 0; i < r->nimg; i++)
		for (j = 0; j < r->nimg; j++)
			if (i != j && r->img[j].pid == r->img[i].pid &&
			    r->img[j].serial > r->img[i].serial)
				r->img[i].exec_replaced = true;
	if (!a->t.tl_done && r->events) {
		a->t.tl_slice_ns = (r->last_ts - r->first_ts) / MEM_TIMELINE + 1;
		a->t.tl_start_ns = r->first_ts > r->t0 ? r->first_ts - r->t0 : 0;
		r->tl_next = r->first_ts + a->t.tl_slice_ns;
	}
	rc = replay(r);
	if (!rc)
		rc = leaks(r);
	if (!rc) {
		/* what each resource held at the peak */
		for (i = 0; i < a->nres && i < r->res_cap; i++) {
			uint64_t at_peak =
				r->res_seen[i] == r->peak_epoch ? r->res_peak[i] : r->res_live[i];

			if (at_peak > a->res[i].peak_bytes && r->peak >= a->t.peak)
				a->res[i].peak_bytes = at_peak;
		}
		if (r->events)
			a->t.tl_done = true;
	}
out:
	mem_run__free(r);
	a->t.analysis_ns += sonde_clock_ns() - start;
	a->t.after_run_ns += sonde_clock_ns() - start;
	return rc;
}

int mem_analysis__run(struct mem_analysis *a, const void *log, size_t len, uint64_t t0,
		      unsigned run)
{
	struct mem_run *r = mem_run__new(a, t0, false);

	return r ? mem_run__finish(r, log, len, run) : -ENOMEM;
}

/* ---- the profile ---------------------------------------------------------------------------- */

static json_t *u64_array(const uint64_t *v, size_t n)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_integer((json_int_t)v[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int mem_analysis__size(struct mem_analysis *a, unsigned run, double size)
{
	size_t old = a->capsizes, i;

	if (sonde_grow((void **)&a->sizes, &a->capsizes, (size_t)run + 1, sizeof(*a->sizes)))
		return -ENOMEM;
	for (i = old; i < a->capsizes; i++)
		a->sizes[i] = NAN;
	a->sizes[run] = size;
	if (a->nsizes < (size_t)run + 1)
		a->nsizes = (size_t)run + 1;
	return 0;
}

/* Column c of the rows (write_rows' order), row w's value: NULL's mark is *null. */
enum { COL_AMOUNT, COL_ADDRESS, COL_TIMESTAMP, COL_FREED, COL_THREAD, COL_ORDER, COL_SIZE, NCOLS };

static const char *const col_names[NCOLS] = { "amount", "address", "timestamp",		 "freed",
					      "thread", "order",   "structure-unit-size" };

static int put_value(struct sonde_strbuf *sb, const struct mem_analysis *a, const struct mem_row *w,
		     int c)
{
	switch (c) {
	case COL_AMOUNT:
		return w->amount == UINT64_MAX ? sonde_strbuf__adds(sb, "null")
					       : sonde_json__put_integer(sb, (json_int_t)w->amount);
	case COL_ADDRESS:
		return sonde_json__put_integer(sb, (json_int_t)w->address);
	case COL_TIMESTAMP:
		return sonde_json__put_integer(sb, (json_int_t)w->ts);
	case COL_FREED:
		return w->freed < 0 ? sonde_strbuf__adds(sb, "null")
				    : sonde_json__put_integer(sb, w->freed);
	case COL_THREAD:
		return sonde_json__put_integer(sb, w->tid);
	case COL_ORDER:
		return sonde_json__put_integer(sb, (json_int_t)w->run + 1);
	default:
		return w->run < a->nsizes && !isnan(a->sizes[w->run])
			       ? sonde_json__put_real(sb, a->sizes[w->run])
			       : sonde_strbuf__adds(sb, "null");
	}
}

/*
 * A resource's rows as its columns, written as text a column at a time
 * (sonde_profile__set_columns_text): with --max-rows 0 every allocation is a
 * row of six or seven values, which as trees would be a malloc a value. A
 * free's rows have no freed column; structure-unit-size is there when the
 * runs had sizes.
 */
static int write_rows(const struct mem_analysis *a, struct sonde_profile *p, long idx,
		      const struct mem_res *res)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	bool is_free = res->op >= MEM_OP_FREE, first = true;
	size_t i;
	int c, err = sonde_strbuf__addch(&sb, '{');

	for (c = 0; c < NCOLS && !err; c++) {
		if ((c == COL_FREED && is_free) || (c == COL_SIZE && !a->nsizes))
			continue;
		err |= sonde_json__put_member(&sb, col_names[c], 0, 0, first);
		err |= sonde_strbuf__addch(&sb, '[');
		first = false;
		for (i = 0; i < res->nrows && !err; i++) {
			if (i)
				err |= sonde_strbuf__addch(&sb, ',');
			err |= put_value(&sb, a, &res->rows[i], c);
		}
		err |= sonde_strbuf__addch(&sb, ']');
	}
	err |= sonde_strbuf__addch(&sb, '}');
	err = err ? -ENOMEM : sonde_profile__set_columns_text(p, idx, &sb);
	sonde_strbuf__release(&sb);
	return err;
}

static int write_snapshots(struct mem_analysis *a, struct sonde_profile *p)
{
	size_t i;
	int err = 0;

	for (i = 0; i < a->nsnaps && !err; i++) {
		const struct mem_snapshot_row *s = &a->snaps[i];
		const struct mem_site *site = &a->sites[s->site];
		json_t *extra = json_pack("{s:O}", "uid_object", site->uid_obj);
		long idx = extra ? sonde_profile__resource(p, site->uid, "memory", "live", extra)
				 : -ENOMEM;

		json_decref(extra);
		if (idx < 0)
			return (int)idx;
		err |= sonde_profile__append(p, idx, "amount", json_integer((json_int_t)s->bytes));
		err |= sonde_profile__append(p, idx, "snapshot", json_integer(s->snapshot));
		err |= sonde_profile__append(p, idx, "timestamp", json_integer((json_int_t)s->ts));
	}
	return err;
}

static json_t *stats_json(const struct mem_analysis *a)
{
	const struct mem_totals *t = &a->t;
	json_t *hist = json_array(), *tl, *heap = json_array(), *peak = json_array();
	uint64_t last = 0;
	size_t i;

	for (i = 0; hist && i < MEM_HIST_BUCKETS; i++) {
		if (!t->hist_count[i])
			continue;
		json_array_append_new(
			hist,
			json_pack("{s:o, s:I, s:I}", "max_bytes",
				  i + 1 < MEM_HIST_BUCKETS ? json_integer(1ll << i) : json_null(),
				  "count", (json_int_t)t->hist_count[i], "bytes",
				  (json_int_t)t->hist_bytes[i]));
	}
	for (i = 0; heap && peak && i < MEM_TIMELINE; i++) {
		/* a slice starts with what the one before ended with */
		uint64_t high =
			t->tl_peak[i] && t->tl_peak[i] - 1 > last ? t->tl_peak[i] - 1 : last;

		if (t->tl_heap[i])
			last = t->tl_heap[i] - 1;
		json_array_append_new(heap, json_integer((json_int_t)last));
		json_array_append_new(peak, json_integer((json_int_t)high));
	}
	tl = json_pack("{s:I, s:I, s:o, s:o, s:o, s:o}", "start_ns", (json_int_t)t->tl_start_ns,
		       "slice_ns", (json_int_t)t->tl_slice_ns, "allocations",
		       u64_array(t->tl_alloc, MEM_TIMELINE), "bytes",
		       u64_array(t->tl_bytes, MEM_TIMELINE), "heap", heap, "heap_peak", peak);
	return json_pack(
		"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
		" s:{s:I, s:I}, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I}}",
		"allocations", (json_int_t)t->allocations, "frees", (json_int_t)t->frees,
		"allocated_bytes", (json_int_t)t->bytes, "peak_heap_bytes", (json_int_t)t->peak,
		"peak_heap_time_ns", (json_int_t)t->peak_ts, "peak_heap_pid",
		(json_int_t)t->peak_pid, "leaked_blocks", (json_int_t)t->leaked, "leaked_bytes",
		(json_int_t)t->leaked_bytes, "temporary_allocations", (json_int_t)t->temporary,
		"unmatched_frees", (json_int_t)t->unmatched_frees, "missed_events",
		(json_int_t)t->missed, "excluded_allocations", (json_int_t)t->excluded, "processes",
		(json_int_t)t->processes, "threads", (json_int_t)t->threads, "stacks",
		(json_int_t)t->stacks, "rows", "total", (json_int_t)t->rows_total, "kept",
		(json_int_t)t->rows_kept, "size_histogram", hist, "timeline", tl, "cost",
		"log_bytes", (json_int_t)t->log_bytes, "drain_cpu_ns", (json_int_t)t->drain_cpu_ns,
		"analysis_ns", (json_int_t)t->analysis_ns, "analysis_after_run_ns",
		(json_int_t)t->after_run_ns, "log_bytes_analysed_during_run",
		(json_int_t)t->live_bytes);
}

int mem_analysis__write(struct mem_analysis *a, struct sonde_profile *p)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < a->nres && !rc; i++) {
		const struct mem_res *res = &a->res[i];
		const struct mem_site *site = &a->sites[res->site];
		json_t *summary =
			res->op >= MEM_OP_FREE
				? json_pack("{s:I, s:I}", "count", (json_int_t)res->count, "bytes",
					    (json_int_t)res->bytes)
				: json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "count",
					    (json_int_t)res->count, "bytes", (json_int_t)res->bytes,
					    "freed", (json_int_t)res->freed, "leaked",
					    (json_int_t)res->leaked, "leaked_bytes",
					    (json_int_t)res->leaked_bytes, "temporary",
					    (json_int_t)res->temporary, "peak_bytes",
					    (json_int_t)res->peak_bytes);
		json_t *extra = json_pack("{s:O, s:O, s:o}", "uid_object", site->uid_obj, "trace",
					  site->trace, "summary", summary);
		long idx = extra ? sonde_profile__resource(p, site->uid, "memory",
							   mem_op_names[res->op], extra)
				 : -ENOMEM;

		json_decref(extra);
		rc = idx < 0 ? (int)idx : write_rows(a, p, idx, res);
	}
	if (!rc)
		rc = write_snapshots(a, p);
	if (!rc) {
		json_t *st = stats_json(a);

		if (st)
			json_object_set_new(st, "malformed_records",
					    json_integer((json_int_t)a->t.malformed));
		rc = st ? sonde_profile__set(sonde_profile__stats(p), "memory", st) : -ENOMEM;
	}
	return rc;
}

/*
 * stack.c - call stacks inside an allocation hook, fast where it is safe.
 *
 * Walking saved frame pointers costs a few ns per frame, libunwind's DWARF
 * unwinder several times more. A frame pointer is only worth following if the
 * function that saved it keeps rbp as its frame pointer, which we decide per
 * return address, once: find the function in the object's .eh_frame_hdr search
 * table (the table the C++ unwinder uses) and run its call frame information
 * up to the address: CFA = rbp + 16 there means a frame pointer (this sees
 * shrink-wrapped prologues, which a look at the first bytes would miss). The
 * verdict is cached in a small lock-free table keyed by the return address.
 *
 * Each step is also checked: the next frame must be above the current one,
 * 16-byte aligned and inside the thread's stack. A frame that fails, or a
 * function without a frame pointer in the chain, sends the whole capture to
 * unw_backtrace(). A chain ends cleanly at a saved frame pointer of 0, or at a
 * *root*: a function without frame pointers above which libunwind found at
 * most three frames, none with a frame pointer (the C library's start code,
 * a thread's start routine). Roots are learnt from the first fallback that
 * meets them and cached like the verdicts, so that every stack of a program
 * built with frame pointers does not end in a fallback.
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <libunwind.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "stack.h"

#define MAX_UNWIND 512

struct module {
	uintptr_t lo, hi;     /* executable segment */
	uintptr_t hdr;	      /* .eh_frame_hdr, or 0 */
	const int32_t *table; /* (initial location, fde) pairs relative to hdr */
	uint32_t count;
};

struct modtab {
	uint32_t n, cap;
	struct module m[];
};

static _Atomic(struct modtab *) modtab;
static _Atomic uint64_t fallbacks;
static uintptr_t self_lo, self_hi;

#define VCACHE_BITS 12
static _Atomic uint64_t vcache[1u << VCACHE_BITS]; /* pc << 3 | 4 (known) | verdict */

enum { V_NO_FP = 0, V_FP = 1, V_ROOT = 2 };

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct modtab *t = arg;
	struct module m = { 0 };
	int i;

	(void)size;
	if (!rt_exec_segment(info, &m.lo, &m.hi) || t->n == t->cap)
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			m.hdr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	if (m.hdr) {
		const uint8_t *h = (const uint8_t *)m.hdr;

		/* version 1; eh_frame_ptr pcrel|sdata4; count udata4; table datarel|sdata4 */
		if (h[0] == 1 && h[1] == 0x1b && h[2] == 0x03 && h[3] == 0x3b) {
			memcpy(&m.count, h + 8, 4);
			m.table = (const int32_t *)(const void *)(h + 12);
		}
	}
	t->m[t->n++] = m;
	return 0;
}

void rt_stack_modules_changed(void)
{
	struct modtab *t = rt_map_anon(sizeof(*t) + 512 * sizeof(struct module));
	Dl_info di;
	size_t i;

	if (!t)
		return;
	t->cap = 512;
	dl_iterate_phdr(add_module, t);
	/* the old table is left mapped: a reader may still be using it */
	atomic_store_explicit(&modtab, t, memory_order_release);
	for (i = 0; i < (1u << VCACHE_BITS); i++)
		atomic_store_explicit(&vcache[i], 0, memory_order_relaxed);
	if (!self_lo && dladdr((void *)rt_stack_capture, &di)) {
		for (i = 0; i < t->n; i++)
			if ((uintptr_t)rt_stack_capture >= t->m[i].lo &&
			    (uintptr_t)rt_stack_capture < t->m[i].hi) {
				self_lo = t->m[i].lo;
				self_hi = t->m[i].hi;
			}
	}
}

/* ---- a small CFA interpreter ----------------------------------------------------------- */

static uint64_t uleb(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end)
{
	int64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;

	while (*p < end) {
		b = *(*p)++;
		if (shift < 64)
			v |= (int64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= -((int64_t)1 << shift);
	return v;
}

struct cfa {
	uint64_t reg;
	int64_t off;
	bool unknown;
};

/*
 * Run CFA instructions [p, end) from location loc until it passes target.
 * Returns false when the location passed target (the state is final).
 */
static bool run_cfa(const uint8_t *p, const uint8_t *end, uintptr_t *loc, uintptr_t target,
		    uint64_t caf, struct cfa *c)
{
	struct cfa stack[8];
	unsigned depth = 0;

	while (p < end) {
		uint8_t op = *p++, low = op & 0x3f;
		uint64_t delta = 0;

		switch (op >> 6) {
		case 1:
			delta = low;
			break;
		case 2:
			uleb(&p, end);
			continue;
		case 3:
			continue;
		default:
			break;
		}
		if (op >> 6 == 0) {
			switch (low) {
			case 0x00: /* nop */
				continue;
			case 0x02:
				delta = p < end ? *p : 0;
				p += 1;
				break;
			case 0x03: {
				uint16_t d;

				memcpy(&d, p, 2);
				delta = d;
				p += 2;
				break;
			}
			case 0x04: {
				uint32_t d;

				memcpy(&d, p, 4);
				delta = d;
				p += 4;
				break;
			}
			case 0x05:
			case 0x09:
			case 0x14: /* reg, uleb */
				uleb(&p, end);
				uleb(&p, end);
				continue;
			case 0x11:
			case 0x15:
			case 0x2f: /* reg, sleb */
				uleb(&p, end);
				sleb(&p, end);
				continue;
			case 0x06:
			case 0x07:
			case 0x08:
			case 0x2e: /* one uleb */
				uleb(&p, end);
				continue;
			case 0x0a:
				if (depth < 8)
					stack[depth++] = *c;
				continue;
			case 0x0b:
				if (depth)
					*c = stack[--depth];
				continue;
			case 0x0c:
				c->reg = uleb(&p, end);
				c->off = (int64_t)uleb(&p, end);
				c->unknown = false;
				continue;
			case 0x0d:
				c->reg = uleb(&p, end);
				continue;
			case 0x0e:
				c->off = (int64_t)uleb(&p, end);
				continue;
			case 0x12:
				c->reg = uleb(&p, end);
				c->off = sleb(&p, end) * -8;
				continue;
			case 0x13:
				c->off = sleb(&p, end) * -8;
				continue;
			case 0x0f: { /* def_cfa_expression */
				uint64_t n = uleb(&p, end);

				p += n;
				c->unknown = true;
				continue;
			}
			case 0x10:
			case 0x16: { /* reg, block */
				uint64_t n;

				uleb(&p, end);
				n = uleb(&p, end);
				p += n;
				continue;
			}
			default: /* set_loc and anything unexpected: give up */
				c->unknown = true;
				return false;
			}
		}
		*loc += delta * caf;
		if (*loc > target)
			return false;
	}
	return true;
}

/*
 * Does the function containing pc keep rbp as its frame pointer at pc? True
 * when its call frame information says CFA = rbp + 16 there: the prologue has
 * pushed the caller's rbp and pointed rbp at it (shrink-wrapped prologues
 * included, which a look at the first bytes would miss).
 */
static bool compute_verdict(uintptr_t pc)
{
	struct modtab *t = atomic_load_explicit(&modtab, memory_order_acquire);
	const struct module *m = NULL;
	const uint8_t *cie, *cie_end, *fde_end, *p;
	uint32_t i, lo, hi, len;
	uintptr_t fn, fde, loc, target = pc - 1;
	int32_t begin, range, cie_off;
	uint64_t caf;
	bool has_z = false;
	struct cfa c = { 7, 8, false };
	const char *aug;

	if (!t)
		return false;
	for (i = 0; i < t->n; i++)
		if (pc >= t->m[i].lo && pc < t->m[i].hi) {
			m = &t->m[i];
			break;
		}
	if (!m || !m->table || !m->count)
		return false;
	/* the last entry whose initial location is <= pc - 1 (pc is a return address) */
	lo = 0;
	hi = m->count;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->hdr + (intptr_t)m->table[2 * mid] <= target)
			lo = mid;
		else
			hi = mid;
	}
	fn = m->hdr + (intptr_t)m->table[2 * lo];
	if (fn > target)
		return false;
	fde = m->hdr + (intptr_t)m->table[2 * lo + 1];
	/* FDE: length, CIE pointer, pc_begin (pcrel sdata4), pc_range, [aug], insns */
	memcpy(&len, (const void *)fde, 4);
	memcpy(&cie_off, (const void *)(fde + 4), 4);
	memcpy(&begin, (const void *)(fde + 8), 4);
	memcpy(&range, (const void *)(fde + 12), 4);
	if (len == 0xffffffffu || fde + 8 + (intptr_t)begin != fn ||
	    target >= fn + (uintptr_t)(uint32_t)range)
		return false;
	fde_end = (const uint8_t *)fde + 4 + len;
	cie = (const uint8_t *)(fde + 4) - cie_off;
	memcpy(&len, cie, 4);
	if (len == 0xffffffffu)
		return false;
	cie_end = cie + 4 + len;
	p = cie + 9; /* length, id, version */
	aug = (const char *)p;
	has_z = aug[0] == 'z';
	for (i = 0; aug[i]; i++)
		if (aug[i] != 'z' && aug[i] != 'R' && aug[i] != 'S')
			return false; /* personality or LSDA encodings we do not skip */
	p += i + 1;
	caf = uleb(&p, cie_end);
	sleb(&p, cie_end);
	if (cie[8] == 1)
		p++; /* return address register, a byte in version 1 */
	else
		uleb(&p, cie_end);
	if (has_z) {
		uint64_t n = uleb(&p, cie_end);

		p += n;
	}
	loc = fn;
	if (run_cfa(p, cie_end, &loc, target, caf, &c)) {
		p = (const uint8_t *)fde + 16;
		if (has_z) {
			uint64_t n = uleb(&p, fde_end);

			p += n;
		}
		run_cfa(p, fde_end, &loc, target, caf, &c);
	}
	return !c.unknown && c.reg == 6 && c.off == 16;
}

static inline void set_verdict(uintptr_t pc, unsigned v)
{
	uint64_t slot = (pc * 0x9e3779b97f4a7c15ull) >> (64 - VCACHE_BITS);

	atomic_store_explicit(&vcache[slot], ((uint64_t)pc << 3) | 4 | v, memory_order_relaxed);
}

static inline unsigned verdict(uintptr_t pc)
{
	uint64_t slot = (pc * 0x9e3779b97f4a7c15ull) >> (64 - VCACHE_BITS);
	uint64_t e = atomic_load_explicit(&vcache[slot], memory_order_relaxed);
	unsigned v;

	if ((e >> 3) == pc && (e & 4))
		return (unsigned)(e & 3);
	v = compute_verdict(pc) ? V_FP : V_NO_FP;
	set_verdict(pc, v);
	return v;
}

/*
 * libunwind opens a pipe when it starts (to probe addresses), on the lowest
 * free descriptors: a program started with stdin, stdout or stderr closed
 * would find that pipe there, reading EAGAIN or writing into it. It is started
 * before its first use (a library's constructor may be the first to allocate),
 * each closed one of the three held meanwhile by /dev/null and closed again
 * after: the pipe lands above them, as it does in any other program.
 */
static void start_unwinder(void)
{
	static atomic_bool started;
	int held[3], i;
	void *one[1];

	if (atomic_exchange(&started, true))
		return;
	for (i = 0; i < 3; i++)
		held[i] = fcntl(i, F_GETFD) < 0 ? open("/dev/null", O_RDWR | O_CLOEXEC) : -1;
	unw_backtrace(one, 1);
	for (i = 0; i < 3; i++)
		if (held[i] >= 0)
			close(held[i]);
}

/* The whole stack by libunwind; when `seen` (a return address without frame
 * pointer) turns out to be a root, remember it and end the stack there. */
static int unwind(uint64_t *pc, int max, int *truncated, uintptr_t seen)
{
	void *buf[MAX_UNWIND];
	int n, i, k = 0;

	atomic_fetch_add_explicit(&fallbacks, 1, memory_order_relaxed);
	start_unwinder();
	n = unw_backtrace(buf, MAX_UNWIND);
	/* drop the frames of this runtime (the hook and what it called) */
	for (i = 0; i < n && (uintptr_t)buf[i] >= self_lo && (uintptr_t)buf[i] < self_hi; i++)
		;
	for (; i < n && k < max; i++) {
		pc[k++] = (uint64_t)(uintptr_t)buf[i];
		if (seen && (uintptr_t)buf[i] == seen && n - i - 1 <= 3) {
			int j;

			for (j = i + 1; j < n && verdict((uintptr_t)buf[j]) != V_FP; j++)
				;
			if (j == n) {
				set_verdict(seen, V_ROOT);
				*truncated = 0;
				return k;
			}
		}
	}
	*truncated = i < n || n == MAX_UNWIND;
	return k;
}

int rt_stack_capture(void *frame, uint64_t *pc, int max, int *truncated, uintptr_t stack_lo,
		     uintptr_t stack_hi)
{
	uintptr_t fp = (uintptr_t)frame;
	unsigned v;
	int n = 0;

	*truncated = 0;
	if (!stack_hi)
		return unwind(pc, max, truncated, 0);
	while (n < max) {
		const uintptr_t *f = (const uintptr_t *)fp;
		uintptr_t ra = f[1], next = f[0];

		if (ra < 4096)
			return n;
		pc[n++] = ra;
		v = verdict(ra);
		if (v == V_ROOT)
			return n;
		if (v == V_NO_FP)
			return unwind(pc, max, truncated, ra);
		if (next == 0)
			return n; /* the outermost frame */
		if (next <= fp || (next & 15) || next + 16 > stack_hi || next < stack_lo)
			return unwind(pc, max, truncated, 0);
		fp = next;
	}
	*truncated = 1;
	return n;
}

uint64_t rt_stack_fallbacks(void)
{
	return atomic_load(&fallbacks);
}

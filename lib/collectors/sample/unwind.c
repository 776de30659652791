/*
 * unwind.c - user stacks from a copy (--call-graph dwarf): libdw's CFI
 * unwinder run over the registers and the stack bytes the kernel copied at
 * the sample.
 *
 * One Dwfl per process, with its executable mappings reported at their load
 * bias, kept while the mappings stay the same (their generation), so the
 * objects' CFI is read once, not once per sample as perf report does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdwfl.h>
#include <asm/perf_regs.h>
#include "sample.h"

struct proc_dwfl {
	uint32_t pid;
	unsigned generation;
	Dwfl *dwfl;
	bool attached;
};

struct smp_unwinder {
	struct proc_dwfl *p;
	size_t np, capp;
	const struct smp_sample *cur; /* the sample being unwound */
	uint64_t *pcs;
	int n, max;
};

static char *debuginfo_path;

static const Dwfl_Callbacks offline_callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
	.section_address = dwfl_offline_section_address,
	.find_elf = dwfl_build_id_find_elf,
};

struct smp_unwinder *smp_unwinder__new(void)
{
	return calloc(1, sizeof(struct smp_unwinder));
}

void smp_unwinder__free(struct smp_unwinder *u)
{
	size_t i;

	if (!u)
		return;
	for (i = 0; i < u->np; i++)
		if (u->p[i].dwfl)
			dwfl_end(u->p[i].dwfl);
	free(u->p);
	free(u);
}

/* ---- the thread callbacks: one thread, the current sample's ------------------------------ */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)arg;
	(void)thread_argp;
	return 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct smp_unwinder *u = arg;
	const struct smp_sample *s = u->cur;
	uint64_t sp;

	(void)dwfl;
	if (!s->regs || !s->stack)
		return false;
	sp = s->regs[PERF_REG_X86_SP];
	if (addr < sp || addr - sp + 8 > s->stack_size)
		return false;
	memcpy(result, s->stack + (addr - sp), 8);
	return true;
}

/* perf_regs.h's index of a register in the sampled array (DS..GS are not sampled). */
static size_t at(unsigned reg)
{
	return reg < PERF_REG_X86_DS ? reg : reg - 4;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct smp_unwinder *u = arg;
	const uint64_t *r = u->cur->regs;
	Dwarf_Word d[17];
	unsigned i;

	/* DWARF's x86-64 numbering: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */
	d[0] = r[at(PERF_REG_X86_AX)];
	d[1] = r[at(PERF_REG_X86_DX)];
	d[2] = r[at(PERF_REG_X86_CX)];
	d[3] = r[at(PERF_REG_X86_BX)];
	d[4] = r[at(PERF_REG_X86_SI)];
	d[5] = r[at(PERF_REG_X86_DI)];
	d[6] = r[at(PERF_REG_X86_BP)];
	d[7] = r[at(PERF_REG_X86_SP)];
	for (i = 0; i < 8; i++)
		d[8 + i] = r[at(PERF_REG_X86_R8 + i)];
	d[16] = r[at(PERF_REG_X86_IP)];
	return dwfl_thread_state_registers(thread, 0, 17, d);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- per process ------------------------------------------------------------------------ */

static Dwfl *build(const struct smp_map *maps, size_t n)
{
	Dwfl *d = dwfl_begin(&offline_callbacks);
	size_t i, j;

	if (!d)
		return NULL;
	dwfl_report_begin(d);
	for (i = 0; i < n; i++) {
		bool seen = false;

		if (!maps[i].path || maps[i].path[0] != '/')
			continue;
		for (j = 0; j < i && !seen; j++)
			seen = maps[j].path == maps[i].path;
		if (!seen)
			dwfl_report_elf(d, maps[i].path, maps[i].path, -1, maps[i].bias, true);
	}
	dwfl_report_end(d, NULL, NULL);
	return d;
}

static struct proc_dwfl *proc(struct smp_unwinder *u, uint32_t pid)
{
	size_t i;

	for (i = 0; i < u->np; i++)
		if (u->p[i].pid == pid)
			return &u->p[i];
	if (u->np == u->capp) {
		size_t cap = u->capp ? u->capp * 2 : 8;
		void *nw = realloc(u->p, cap * sizeof(*u->p));

		if (!nw)
			return NULL;
		u->p = nw;
		u->capp = cap;
	}
	u->p[u->np] = (struct proc_dwfl){ .pid = pid, .generation = ~0u };
	return &u->p[u->np++];
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct smp_unwinder *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	u->pcs[u->n++] = pc;
	return u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int smp_unwind(struct smp_unwinder *u, uint32_t pid, unsigned generation,
	       const struct smp_map *maps, size_t n, const struct smp_sample *s, uint64_t *pcs,
	       int max)
{
	struct proc_dwfl *p = proc(u, pid);

	if (!p)
		return -ENOMEM;
	if (!s->regs || !s->stack || max <= 0)
		return 0;
	if (p->generation != generation || !p->dwfl) {
		if (p->dwfl)
			dwfl_end(p->dwfl);
		p->dwfl = build(maps, n);
		p->generation = generation;
		p->attached = p->dwfl &&
			      dwfl_attach_state(p->dwfl, NULL, (pid_t)pid, &thread_callbacks, u);
	}
	if (!p->attached) {
		pcs[0] = s->regs[at(PERF_REG_X86_IP)];
		return 1;
	}
	u->cur = s;
	u->pcs = pcs;
	u->n = 0;
	u->max = max;
	dwfl_getthread_frames(p->dwfl, (pid_t)s->tid, frame_cb, u);
	if (!u->n) {
		pcs[0] = s->regs[at(PERF_REG_X86_IP)];
		u->n = 1;
	}
	return u->n;
}

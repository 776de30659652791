/*
 * rt.c - helpers shared by the preloaded runtimes (see rt.h).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../../lib/collectors/rt-proto.h"
#include "rt.h"

void *rt_map_anon(size_t len)
{
	long r = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return r < 0 && r > -4096 ? NULL : (void *)r;
}

void rt_unmap(void *p, size_t len)
{
	if (p)
		syscall(SYS_munmap, p, len);
}

bool rt_exec_segment(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	int i;

	*lo = *hi = 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			*lo = info->dlpi_addr + ph->p_vaddr;
			*hi = *lo + ph->p_memsz;
		}
	}
	return *lo != 0;
}

void rt_stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	*lo = *hi = 0;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
		*lo = (uintptr_t)addr;
		*hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

unsigned rt_env_uint(const char *name, unsigned def)
{
	const char *s = rt_env_get(name);
	unsigned v = 0;

	if (!s || !*s)
		return def;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (unsigned)(*s - '0');
	return v;
}

bool rt_claim_ring(struct sonde_ring_area *a, uint32_t serial, struct sonde_ring_writer *w)
{
	return sonde_ring__claim(a, (uint32_t)getpid(), (uint32_t)gettid(), serial, w) == 0;
}

static size_t exe_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n < 0)
		n = 0;
	buf[n] = '\0';
	return (size_t)n;
}

void rt_emit_proc(struct sonde_ring_writer *w, uint32_t parent_serial, uint64_t ts)
{
	char exe[PATH_MAX];
	size_t n = exe_path(exe, sizeof(exe));
	struct rt_proc *r =
		sonde_ring__reserve(w, RT_REC_PROC, (uint32_t)rt_pad8(sizeof(*r) + n + 1));

	if (!r)
		return;
	r->pid = (uint32_t)getpid();
	r->ppid = (uint32_t)getppid();
	r->parent_serial = parent_serial;
	r->ts = ts;
	memcpy(r->exe, exe, n + 1);
	sonde_ring__commit(w);
}

static int module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sonde_ring_writer *w = arg;
	char exe[PATH_MAX];
	const char *path = info->dlpi_name;
	struct rt_module *r;
	uintptr_t lo, hi;
	size_t n;

	(void)size;
	if (!rt_exec_segment(info, &lo, &hi))
		return 0;
	if (!path || !*path) {
		exe_path(exe, sizeof(exe));
		path = exe;
	}
	n = strlen(path);
	r = sonde_ring__reserve(w, RT_REC_MODULE, (uint32_t)rt_pad8(sizeof(*r) + n + 1));
	if (!r)
		return 0;
	r->pad = 0;
	r->bias = info->dlpi_addr;
	r->start = lo;
	r->end = hi;
	memcpy(r->path, path, n + 1);
	sonde_ring__commit(w);
	return 0;
}

void rt_emit_modules(struct sonde_ring_writer *w)
{
	dl_iterate_phdr(module_cb, w);
}

/*
 * rt.c - helpers shared by the preloaded runtimes (see rt.h).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../../proto/rt.h"
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

/*
 * Search list (a DT_RPATH/DT_RUNPATH or LD_LIBRARY_PATH value) for name, with
 * $ORIGIN as origin; the first readable file goes to out. false: none.
 */
static bool search_list(const char *list, const char *name, const char *origin, char *out,
			size_t len)
{
	while (list && *list) {
		size_t n = strcspn(list, ":;");
		int w;

		if (n >= 7 && !strncmp(list, "$ORIGIN", 7))
			w = snprintf(out, len, "%s%.*s/%s", origin, (int)(n - 7), list + 7, name);
		else if (n >= 9 && !strncmp(list, "${ORIGIN}", 9))
			w = snprintf(out, len, "%s%.*s/%s", origin, (int)(n - 9), list + 9, name);
		else
			w = snprintf(out, len, "%.*s/%s", (int)n, list, name);
		if (n && w > 0 && (size_t)w < len && access(out, R_OK) == 0)
			return true;
		list += n;
		list += *list != '\0';
	}
	return false;
}

void *rt_dlopen_as(void *(*real)(const char *, int), const char *file, int mode, const void *caller)
{
	const char *rpath = NULL, *runpath = NULL, *strtab = NULL;
	char origin[PATH_MAX], path[PATH_MAX];
	struct link_map *lm = NULL;
	const ElfW(Dyn) * d;
	Dl_info info;

	if (!file || strchr(file, '/') || !dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) ||
	    !lm || !lm->l_ld)
		return real(file, mode);
	for (d = lm->l_ld; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_STRTAB) /* relocated in place, except where it is read-only */
			strtab = (const char *)(d->d_un.d_ptr < lm->l_addr
							? d->d_un.d_ptr + lm->l_addr
							: d->d_un.d_ptr);
	for (d = lm->l_ld; strtab && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_RPATH)
			rpath = strtab + d->d_un.d_val;
		else if (d->d_tag == DT_RUNPATH)
			runpath = strtab + d->d_un.d_val;
	}
	if (!rpath && !runpath)
		return real(file, mode);
	if (lm->l_name && *lm->l_name) {
		snprintf(origin, sizeof(origin), "%s", lm->l_name);
	} else {
		ssize_t n = readlink("/proc/self/exe", origin, sizeof(origin) - 1);

		origin[n > 0 ? n : 0] = '\0';
	}
	*(strrchr(origin, '/') ? strrchr(origin, '/') : origin) = '\0';
	/* the dynamic linker's order: DT_RPATH (without DT_RUNPATH), LD_LIBRARY_PATH,
	   DT_RUNPATH; the cache and the system's directories are the real dlopen's */
	if ((!runpath && search_list(rpath, file, origin, path, sizeof(path))) ||
	    (runpath && (search_list(getenv("LD_LIBRARY_PATH"), file, origin, path, sizeof(path)) ||
			 search_list(runpath, file, origin, path, sizeof(path)))))
		return real(path, mode);
	return real(file, mode);
}

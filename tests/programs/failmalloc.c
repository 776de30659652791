/*
 * failmalloc.c - an LD_PRELOAD library for the allocation fault tests
 * (tests/e2e/faults.sh), after SQLite's test_malloc and curl's torture tests.
 *
 * Counts the allocation calls of the program after its start (malloc, calloc,
 * realloc, posix_memalign, aligned_alloc, memalign; the loader's and the C
 * library's own start-up are not counted) and, with SONDE_FAIL_AT=N, makes the
 * Nth fail as an exhausted heap does: NULL and errno ENOMEM. With
 * SONDE_FAIL_COUNT=FILE the number of calls is written there at exit. The
 * programs sonde starts (git) do not inherit it.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static _Atomic unsigned long calls;
static unsigned long fail_at;
static _Atomic int armed;

static int fail(void)
{
	unsigned long n;

	if (!atomic_load_explicit(&armed, memory_order_relaxed))
		return 0;
	n = atomic_fetch_add(&calls, 1) + 1;
	if (n != fail_at)
		return 0;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	return fail() ? NULL : __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	return fail() ? NULL : __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	return fail() ? NULL : __libc_realloc(p, n);
}

void *memalign(size_t al, size_t n)
{
	return fail() ? NULL : __libc_memalign(al, n);
}

void *aligned_alloc(size_t al, size_t n)
{
	return fail() ? NULL : __libc_memalign(al, n);
}

int posix_memalign(void **out, size_t al, size_t n)
{
	void *p;

	if (fail())
		return ENOMEM;
	p = __libc_memalign(al, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

static char count_path[4096];

static void write_count(void)
{
	const char *path = count_path[0] ? count_path : NULL;
	char buf[32];
	int fd, len;

	atomic_store(&armed, 0);
	if (!path)
		return;
	len = snprintf(buf, sizeof(buf), "%lu\n", atomic_load(&calls));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, buf, (size_t)len) < 0)
			len = 0;
		close(fd);
	}
}

__attribute__((constructor(65535))) static void arm(void)
{
	const char *at = getenv("SONDE_FAIL_AT"), *path = getenv("SONDE_FAIL_COUNT");

	fail_at = at ? strtoul(at, NULL, 10) : 0;
	if (path)
		snprintf(count_path, sizeof(count_path), "%s", path);
	/* the faults are sonde's: the programs it starts (git) run with their own heap */
	unsetenv("LD_PRELOAD");
	unsetenv("SONDE_FAIL_AT");
	unsetenv("SONDE_FAIL_COUNT");
	atexit(write_count);
	atomic_store(&armed, 1);
}

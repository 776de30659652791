/*
 * rt.h - what the preloaded runtimes share: anonymous memory that does not go
 * through an interposed mmap, the calling thread's stack bounds, claiming a
 * ring, and the process and module records every reader starts from.
 * Nothing here allocates through malloc, locks, or uses stdio, except
 * rt_stack_bounds (pthread_getattr_np), which is called once per thread.
 */
#ifndef SONDE_RUNTIME_RT_H
#define SONDE_RUNTIME_RT_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sonde/ring.h>

#define RT_EXPORT   __attribute__((visibility("default")))
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

void *rt_map_anon(size_t len);
void rt_unmap(void *p, size_t len);
/* An object's executable segment (false: it has none). */
bool rt_exec_segment(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);
/* The calling thread's stack, [lo, hi); both 0 when unknown. */
void rt_stack_bounds(uintptr_t *lo, uintptr_t *hi);
/*
 * Keep this runtime's variables (those starting with prefix, and its entry in
 * LD_PRELOAD) aside and take them out of environ; they go back into the
 * environment of every program the process starts (env.c). Call once, from the
 * runtime's constructor.
 */
void rt_env_take(const char *prefix);
/* A variable sonde gave this runtime (kept aside by rt_env_take), or NULL. */
const char *rt_env_get(const char *name);
/*
 * The ring area sonde named in the variable `name`, attached: 1 (*out set);
 * -1 when there is none (not run by sonde, or the area could not be
 * attached: the runtime stays off); 0 when it is too early to tell, and the
 * caller asks again at its next event. Too early is before rt_env_take, in
 * constructors that ld.so runs ahead of the runtime's own (a program that
 * defines malloc is initialized before the libraries whose calls bind to it,
 * libc included): the environment may not be readable yet, and a variable
 * missing then is no answer.
 */
int rt_env_area(const char *name, struct sonde_ring_area **out);
/* The same, as a decimal number, or def. */
unsigned rt_env_uint(const char *name, unsigned def);
/*
 * Claim a ring for the calling thread, without waiting (a thread that waited
 * for another to exit could wait forever: the other may be waiting on it).
 * false: every ring is taken; the caller counts what it cannot record with
 * sonde_ring_area__lost and tries again later.
 */
bool rt_claim_ring(struct sonde_ring_area *a, uint32_t serial, struct sonde_ring_writer *w);
/*
 * dlopen(file, mode) as `caller` would have it: the dynamic linker searches a
 * bare name through the calling object's DT_RPATH or DT_RUNPATH, and a
 * runtime's dlopen hook is not the program's object; the search is done here,
 * and real() gets the path found (or file as it was).
 */
void *rt_dlopen_as(void *(*real)(const char *, int), const char *file, int mode,
		   const void *caller);
/* RT_REC_PROC for this image, then one RT_REC_MODULE per loaded object. */
void rt_emit_proc(struct sonde_ring_writer *w, uint32_t parent_serial, uint64_t ts);
void rt_emit_modules(struct sonde_ring_writer *w);

static inline size_t rt_pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

#endif

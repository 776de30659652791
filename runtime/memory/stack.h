/*
 * stack.h - call stacks for the preloaded runtimes: frame-pointer walk where it
 * is valid, libunwind where it is not.
 */
#ifndef SONDE_RUNTIME_STACK_H
#define SONDE_RUNTIME_STACK_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../common/rt.h"

/* Rebuild the table of loaded objects (at start and after dlopen/dlclose). */
void rt_stack_modules_changed(void);
/*
 * Return addresses from the caller of the function whose frame is `frame`
 * (innermost first), at most max. *truncated is set when max was reached.
 */
int rt_stack_capture(void *frame, uint64_t *pc, int max, int *truncated, uintptr_t stack_lo,
		     uintptr_t stack_hi);
/* Statistics for the curious: how many captures fell back to libunwind. */
uint64_t rt_stack_fallbacks(void);

#endif

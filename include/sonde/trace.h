/*
 * trace.h - what a traced program may tell sonde.
 *
 * sonde_trace_size(n): the size of the problem the innermost function call
 * that is running now works on (elements sorted, nodes visited, ...). The trace
 * collector stores it as the call's structure-unit-size, the x value of the
 * complexity models `sonde postprocess ... regression` fits. Without it a call's
 * x value is its ordinal. Outside `sonde collect trace` the call does nothing
 * (a few ns): link with -lsonde and leave it in.
 */
#ifndef SONDE_TRACE_H
#define SONDE_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

void sonde_trace_size(unsigned long long n);

#ifdef __cplusplus
}
#endif

#endif

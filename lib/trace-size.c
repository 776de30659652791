/*
 * trace-size.c - sonde_trace_size() when the program is not being traced by
 * the instrument engine (whose preloaded runtime defines it first): a probe
 * point for the ebpf engine, and nothing else.
 */
#include <sonde/trace.h>

__attribute__((noinline)) void sonde_trace_size(unsigned long long n)
{
	__asm__ volatile("" : : "r"(n) : "memory");
}

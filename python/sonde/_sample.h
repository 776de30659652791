/*
 * _sample.h - the Python stack sampler of the CPU collector (mode "sampling").
 *
 * A thread of its own takes the GIL and hands a thread's stack of Python
 * functions over, weighted by the time since that thread's previous sample:
 * in CPU mode each time the thread's own CPU clock has run a period (a
 * trigger per thread, see _sample.c), in wall mode for every thread at each
 * tick of the wall clock.
 */
#ifndef SONDE_PY_SAMPLE_H
#define SONDE_PY_SAMPLE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The deepest stack a sample keeps: deeper ones keep their innermost frames (counted). */
#define PY_SAMPLE_MAX_DEPTH 2048

/* A code object's function id (the collector's); 0 or -1. Called holding the GIL. */
typedef int (*py_code_id_fn)(void *ctx, PyCodeObject *co, uint32_t *id);
/* What a py_sample_fn returns: bits. */
enum {
	PY_SAMPLE_KEPT = 1,	  /* counted in samples */
	PY_SAMPLE_RAN_PYTHON = 2, /* it ran Python code, which may have let the GIL go */
};
/*
 * One sample: thread tid's stack, ids outermost first, ran weight_ns. Holding
 * the GIL. Returns PY_SAMPLE_* bits.
 */
typedef int (*py_sample_fn)(void *ctx, uint32_t tid, uint64_t weight_ns, const uint32_t *ids,
			    uint32_t n);

struct py_sampler_stats {
	uint64_t ticks;	     /* periods that passed (CPU mode: of every thread's clock) */
	uint64_t late;	     /* of those, periods the sampler could not take (GIL held long) */
	uint64_t samples;    /* stacks handed over and kept */
	uint64_t truncated;  /* of those, deeper than PY_SAMPLE_MAX_DEPTH */
	uint64_t errors;     /* frames whose function could not be named (out of memory) */
	uint64_t untimed;    /* CPU mode: threads no trigger could be made for (not sampled) */
	uint64_t rerouted;   /* CPU mode: triggers moved to the sampler (the thread blocked the
				signal) */
	uint64_t cpu_ns;     /* CPU mode: the process's CPU time from start to stop, the
				sampler's own left out (0: not read) */
	uint64_t weighed_ns; /* of it, what the kept samples carry (their weights) */
	double hz;
	bool wall;
	uint32_t how; /* how samples were asked for: PYR_HOW_* bits (proto/python.h) */
};

struct py_sampler;

/*
 * Start sampling the interpreter of the calling thread (holding the GIL) at hz
 * (1 to 10 000); wall: weight by wall time and sample idle threads too, else
 * by CPU time. NULL with errno on failure.
 */
struct py_sampler *py_sampler__start(double hz, bool wall, py_code_id_fn code_id,
				     py_sample_fn sample, void *ctx);
/*
 * Frames outside root's (the program's own code, run by sonde's runner) are
 * not the program's: a stack that holds a frame of root starts there. NULL:
 * every frame counts. The reference is borrowed: clear it before root goes.
 */
void py_sampler__root(struct py_sampler *s, PyObject *root);
/*
 * Stop (holding the GIL; it is released while the sampler ends), fill *st,
 * free. In a child of fork() the sampler thread is not there: only freed.
 */
void py_sampler__stop(struct py_sampler *s, struct py_sampler_stats *st);

/* Whether py_gil_ask works here (_gil.c was built against this CPython's insides). */
bool py_gil_can_ask(void);
/*
 * Ask the thread that holds the GIL to let it go at its next check, as a
 * thread that waits for it does after the switch interval. Async-signal-safe.
 * The holder then waits until another thread has taken the GIL.
 */
void py_gil_ask(PyInterpreterState *interp);

#endif

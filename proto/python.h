/*
 * python.h - what sonde's Python runtime (python/sonde/_cpu.c) writes into
 * the rings `sonde collect python` gives it: the records, read back by the
 * python collector (lib/collectors/python/collector.c). Native byte order;
 * both ends are the same build. Times are the ring's clock ticks (the TSC
 * when sonde says so, else CLOCK_MONOTONIC ns), mapped by sonde.
 *
 * Every thread writes its calls into its own ring as batch records: a header
 * word, a pad word, then struct pyr_ev entries, filled in place (an open
 * record: what a crashed process had filled in is salvaged). The other
 * records go to one more ring, the metadata ring, as they happen: a function
 * when first seen, a thread's name, the collection's start and stop, and the
 * time a thread spent claiming its ring (its system calls are sonde's).
 * In sampling mode there are no batches: the samples go to the metadata ring.
 */
#ifndef SONDE_PYRING_H
#define SONDE_PYRING_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

/* environment: the ring area's path, and whether to stamp with the TSC ("1") */
#define PYR_ENV_RING "SONDE_PYTHON_RING"
#define PYR_ENV_TSC  "SONDE_PYTHON_TSC"

/* an event's type (struct pyr_ev) */
enum { PYR_CALL = 1, PYR_RETURN, PYR_C_CALL, PYR_C_RETURN, PYR_SIZE };

/* a ring record's type */
enum {
	PYR_BATCH = 16,
	PYR_FUNC,
	PYR_NAME,
	PYR_START,
	PYR_STOP,
	PYR_OWN,
	PYR_SAMPLE,
	PYR_TICKS,
	PYR_MEM,
	PYR_NUMA,
	PYR_TIMER,
	PYR_CPU
};

/*
 * How a sampling run's samples were asked for (PYR_TIMER's tid; bits). 0:
 * ticks of the wall clock (a timerfd, or ppoll with PYR_HOW_PPOLL).
 */
enum {
	PYR_HOW_TASK_CLOCK = 1,		 /* perf_event task-clock, signal to the thread */
	PYR_HOW_CPU_TIMER = 2,		 /* POSIX CPU timer, signal to the thread */
	PYR_HOW_CPU_TIMER_SAMPLER = 4,	 /* POSIX CPU timer, signal to the sampler */
	PYR_HOW_PPOLL = 8,		 /* wall ticks by ppoll (no timerfd) */
	PYR_HOW_TASK_CLOCK_SAMPLER = 16, /* perf_event task-clock, signal to the sampler */
	/* the main thread's trigger signals it, and it takes its own sample */
	PYR_HOW_TASK_CLOCK_IN_THREAD = 32,
	PYR_HOW_CPU_TIMER_IN_THREAD = 64,
};

/* Room for pyr_timer_name's longest answer, every trigger joined. */
#define PYR_TIMER_NAME_MAX 128

/*
 * stats.trace.sampling.timer for PYR_HOW_* bits, written to buf
 * (PYR_TIMER_NAME_MAX): the triggers, joined by '+'; "timerfd" for none.
 */
static inline const char *pyr_timer_name(uint32_t how, char *buf)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} t[] = {
		{ PYR_HOW_TASK_CLOCK_SAMPLER, "task-clock-sampler" },
		{ PYR_HOW_TASK_CLOCK, "task-clock" },
		{ PYR_HOW_TASK_CLOCK_IN_THREAD, "task-clock-in-thread" },
		{ PYR_HOW_CPU_TIMER_SAMPLER, "cpu-timer-sampler" },
		{ PYR_HOW_CPU_TIMER, "cpu-timer" },
		{ PYR_HOW_CPU_TIMER_IN_THREAD, "cpu-timer-in-thread" },
		{ PYR_HOW_PPOLL, "ppoll" },
	};
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (how & t[i].bit)
			n += (size_t)snprintf(buf + n, PYR_TIMER_NAME_MAX - n, "%s%s", n ? "+" : "",
					      t[i].name);
	return n ? buf : "timerfd";
}

/* Of a sampling's CPU time (ns), what no kept sample carries: cpu less the weights. */
static inline uint64_t pyr_unsampled(uint64_t cpu, uint64_t weighed)
{
	return cpu > weighed ? cpu - weighed : 0;
}

/*
 * stats.trace.sampling, as the in-process collector and `sonde collect
 * python` both write it: how (PYR_HOW_* bits; timed false: no run said, as
 * "unknown"), the periods, the stacks cut, the threads without a trigger of
 * their own; in CPU mode, where cpu (ns) was read, the process's CPU time
 * and how much of it no sample carries (cpu less weighed).
 */
static inline json_t *pyr_sampling_json(double hz, bool wall, bool timed, uint32_t how,
					uint64_t ticks, uint64_t late, uint64_t truncated,
					uint64_t untimed, uint64_t rerouted, uint64_t cpu,
					uint64_t weighed)
{
	char name[PYR_TIMER_NAME_MAX];
	json_t *j = json_pack(
		"{s:f, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s}", "hz", hz, "interval_ns",
		(json_int_t)(1e9 / hz), "weight", wall ? "wall" : "cpu", "timer",
		timed ? pyr_timer_name(how, name) : "unknown", "ticks", (json_int_t)ticks,
		"late_ticks", (json_int_t)late, "truncated_stacks", (json_int_t)truncated,
		"untimed_threads", (json_int_t)untimed, "rerouted_threads", (json_int_t)rerouted,
		"reader", "Python frames under the GIL");

	if (j && !wall && cpu &&
	    (json_object_set_new(j, "process_cpu_ns", json_integer((json_int_t)cpu)) ||
	     json_object_set_new(j, "unsampled_cpu_ns",
				 json_integer((json_int_t)pyr_unsampled(cpu, weighed))))) {
		json_decref(j);
		return NULL;
	}
	return j;
}

#define PYR_BATCH_HDR 8u

struct pyr_ev {
	uint32_t type;
	uint32_t func; /* CALL, C_CALL: the function's id (a PYR_FUNC record) */
	uint64_t ts;   /* ticks; SIZE: the size of the innermost open call */
};

struct pyr_func { /* then module and name, no NUL; padded to 8 bytes */
	uint32_t hdr, id;
	uint64_t line;
	uint32_t module_len, name_len;
};

struct pyr_name { /* then the name, no NUL; padded */
	uint32_t hdr, tid, name_len, pad;
};

/*
 * PYR_START, PYR_STOP: tid 0; PYR_OWN: a thread's [a, b]; PYR_TICKS (sampling,
 * before the stop): a timer periods, b of them late, tid stacks truncated;
 * PYR_TIMER (sampling, before the stop): tid PYR_HOW_* bits, a threads no
 * trigger could be made for, b threads whose trigger moved to the sampler;
 * PYR_CPU (sampling in CPU mode, before the stop): a the process's CPU time
 * from start to stop (the sampler's left out), b what the samples carry of it.
 */
struct pyr_mark {
	uint32_t hdr, tid;
	uint64_t a, b;
};

/*
 * PYR_SAMPLE (mode sampling, in the metadata ring): thread tid's stack at ts,
 * which ran `weight` ns since its previous sample; then n function ids
 * (uint32_t, outermost first), padded to 8 bytes.
 */
struct pyr_sample {
	uint32_t hdr, tid;
	uint64_t ts, weight;
	uint32_t n, pad;
};

/*
 * PYR_MEM (--memory, in the metadata ring): a sampled allocation, its free, or
 * its node at the end (kind: enum sonde_memsample_kind); func: the function
 * that allocated (UINT32_MAX: none); nodes -1 when not known. PYR_NUMA: a
 * struct pyr_name whose tid is 1 when libnuma answers, else 0 and the name
 * says why.
 */
struct pyr_mem {
	uint32_t hdr, tid;
	uint64_t ts, ptr, size;
	double weight;
	int32_t node, cpu_node;
	uint32_t func, kind;
};

#endif

/*
 * sample.h - what the parts of the sampling collector share.
 *
 * record.c opens the perf events and keeps every record the kernel writes
 * (a reader thread drains the rings while the target runs); resolve.c turns
 * them, in time order, into stacks of functions for a sampled calltrace;
 * unwind.c unwinds the copies of user stacks (--call-graph dwarf) with
 * libdw's CFI; pystack.c reads CPython's frames in the target's memory.
 */
#ifndef SONDE_SAMPLE_INT_H
#define SONDE_SAMPLE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>
#include <jansson.h>
#include <sonde/calltrace.h>
#include <sonde/strbuf.h>
#include "../../perf-rings.h"

enum smp_graph { SMP_FP, SMP_DWARF, SMP_LBR, SMP_NONE };

/* The events: 0 samples the chosen event; 1 (with off_cpu) every switch out. */
enum { SMP_EV_MAIN, SMP_EV_SWITCH };

/*
 * Records sonde adds to the kernel's, each starting with pid, tid, ns:
 * PYSTACK: n, then n code objects innermost first (bit 0: is_entry);
 * PYCODE: code, first line, name and file lengths, name, file.
 */
#define SMP_REC_PYSTACK 0x7f01
#define SMP_REC_PYCODE	0x7f02
/* The fallback runtime's: MAP start, end, bias, path; PROC (an image starts) exe. */
#define SMP_REC_MAP  0x7f03
#define SMP_REC_PROC 0x7f04

struct smp_cfg {
	uint32_t type; /* the event */
	uint64_t config, config1, config2;
	const char *event; /* its name */
	bool time_event;   /* cpu-clock, task-clock: periods are ns */
	unsigned hz;	   /* frequency, or */
	uint64_t period;   /* a fixed period (hz 0) */
	enum smp_graph graph;
	unsigned stack_user; /* dwarf: bytes of user stack copied per sample */
	bool kernel;	     /* kernel frames (allowed and wanted) */
	bool off_cpu;
	bool python;	   /* read CPython frames at samples */
	bool python_now;   /* the target is a CPython: wake the reader at each sample */
	size_t ring_bytes; /* per CPU */
};

/* The records of a run, as the kernel wrote them (user stacks cut to what was used). */
struct smp_rec {
	struct perf_rings *rings;
	struct smp_cfg cfg;
	uint8_t *buf;
	size_t len, cap;
	int err; /* the reader's first error (ENOMEM) */
	uint64_t lost, lost_samples, records;
	uint64_t last_id; /* the last sample's identifier, and its event */
	int last_ev;
	pthread_t reader;
	bool reading;
	int stop_fd; /* eventfd: the reader's end */
	struct smp_py *py;
};

/*
 * Open the events for the threads tids (launch: a stopped child, counting
 * from its exec; otherwise counting at once). A refusal is explained in why.
 */
int smp_rec__open(struct smp_rec *r, const struct smp_cfg *cfg, const pid_t *tids, size_t ntid,
		  bool launch, struct sonde_strbuf *why);
/*
 * Attaching: the records the kernel would have written when the process
 * mapped its objects and named its threads (from /proc), at the current time.
 */
int smp_rec__synthesize(struct smp_rec *r, uint32_t pid, const pid_t *tids, size_t ntid);
/* Keep a record (the reader thread's, or before it runs). */
int smp_rec__append(struct smp_rec *r, const void *rec, size_t len);
/* Start the reader thread. */
int smp_rec__start(struct smp_rec *r);
/* Stop counting, read what is left, stop the reader. */
int smp_rec__stop(struct smp_rec *r);
void smp_rec__close(struct smp_rec *r);
/* Forget the records (the next run starts empty). */
void smp_rec__clear(struct smp_rec *r);

/* A sample record, parsed. */
struct smp_sample {
	uint64_t id, ip, time, period;
	uint32_t pid, tid, cpu;
	uint64_t nr; /* callchain */
	const uint64_t *ips;
	uint64_t nbr; /* branch stack (lbr) */
	const struct perf_branch_entry *br;
	uint64_t abi; /* user registers */
	const uint64_t *regs;
	uint64_t stack_size; /* the user stack copy, from regs' SP up */
	const uint8_t *stack;
};
int smp_parse_sample(const struct smp_cfg *cfg, const struct perf_event_header *h,
		     struct smp_sample *s);
/* The time and tid of any record (sample_id_all); false without. */
bool smp_record_time(const struct perf_event_header *h, uint64_t *ns, uint32_t *pid, uint32_t *tid);

/* The x86-64 user registers sampled for dwarf unwinding (perf_regs.h numbering). */
uint64_t smp_regs_mask(void);

/* ---- unwinding ---------------------------------------------------------------------------- */

struct smp_map {
	uint64_t start, end, pgoff;
	uint64_t bias;	  /* runtime address = file address + bias */
	const char *path; /* interned; NULL for an anonymous mapping */
	uint32_t obj;	  /* resolve.c's index of the object */
};

struct smp_unwinder;
struct smp_unwinder *smp_unwinder__new(void);
void smp_unwinder__free(struct smp_unwinder *u);
/*
 * Unwind sample s of process pid whose executable mappings are maps (n,
 * sorted; generation changes when they change). Writes up to max return
 * addresses (the sample's IP first) into pcs; returns their count.
 */
int smp_unwind(struct smp_unwinder *u, uint32_t pid, unsigned generation,
	       const struct smp_map *maps, size_t n, const struct smp_sample *s, uint64_t *pcs,
	       int max);

/* ---- resolving --------------------------------------------------------------------------- */

struct smp_resolver;
struct smp_resolver *smp_resolver__new(const struct smp_cfg *cfg);
void smp_resolver__free(struct smp_resolver *r);
/*
 * Turn a run's records into samples of ct: process pid's first (first: the
 * calltrace was made for it), then those it started.
 */
int smp_resolver__run(struct smp_resolver *r, struct smp_rec *rec, struct sonde_calltrace *ct,
		      uint32_t pid, bool first);
/* What the resolver counted over all runs (new reference). */
json_t *smp_resolver__stats(const struct smp_resolver *r);

/* ---- CPython frames --------------------------------------------------------------------- */

/* Where CPython 3.11 keeps things (pyoffsets.c, from the build's headers). */
struct smp_pyoffsets {
	bool ok;
	unsigned long version_hex;
	size_t runtime_interp_head, interp_next, interp_threads_head, ts_next, ts_native_tid,
		ts_cframe, cframe_current, frame_code, frame_previous, frame_entry, frame_size,
		code_qualname, code_filename, code_firstlineno, str_length, str_state, ascii_size,
		compact_size;
};
extern const struct smp_pyoffsets smp_pyoffsets;

struct smp_py;
struct smp_py *smp_py__new(void);
void smp_py__free(struct smp_py *py);
/* Process pid exec'ed or mapped an object: look for an interpreter again. */
void smp_py__forget(struct smp_py *py, uint32_t pid);
/*
 * Read thread tid's (of process pid) Python frames now, innermost first, and
 * append them to r as an SMP_REC_PYSTACK record (after SMP_REC_PYCODE
 * records naming code objects not seen before). Not a Python process: 0 and
 * nothing. -ENOMEM only.
 */
int smp_py__read(struct smp_py *py, struct smp_rec *r, uint32_t pid, uint32_t tid, uint64_t ns);
/* What the reader did (new reference). */
json_t *smp_py__stats(const struct smp_py *py);

#endif

/*
 * gpu.h - the GPU engine: what sonde does with NVIDIA's libraries and with
 * the activity a GPU runtime recorded, for the gpu, power and system
 * collectors and the counter service's GPU agents.
 *
 *   - the libraries: libcuda (the driver), libcupti and libnvidia-ml (NVML),
 *     found and loaded with dlopen; where one is missing, one line says which
 *     and why (nothing here needs NVIDIA's headers: proto/cupti.h and the
 *     NVML declarations in nvml.c are the project's own);
 *   - the clock: CUPTI's timestamps mapped onto sonde's from pairs of readings
 *     of both clocks, with the uncertainty the pairs leave;
 *   - the analysis: per kernel (count, total, mean, min, max), per stream
 *     (busy time, time overlapped by another stream of the device), per copy
 *     direction (count, bytes, time, bandwidth).
 */
#ifndef SONDE_ENGINE_GPU_H
#define SONDE_ENGINE_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sonde/strbuf.h>
#include "proto/gpu.h"

/* ---- the libraries ---------------------------------------------------------------------- */

/*
 * Where libcupti.so is: `path` when given (--cupti), else $CUDA_HOME (or
 * $CUDA_PATH, then /usr/local/cuda) under extras/CUPTI/lib64, lib64 and
 * lib, then LD_LIBRARY_PATH and the system's library directories. Found by
 * its ELF header, not loaded (CUPTI's constructors are for the target). 0 with the path found in
 * out; -ENOENT with every place looked in `why`.
 */
int sonde_gpu__find_cupti(const char *path, struct sonde_strbuf *out, struct sonde_strbuf *why);
/* Whether the NVIDIA driver (libcuda.so.1) loads here; -ENOENT with why. */
int sonde_gpu__driver(struct sonde_strbuf *why);

/* ---- NVML --------------------------------------------------------------------------------- */

#define SONDE_NVML_MAX_DEVICES 64

struct sonde_nvml_device {
	unsigned index;
	void *handle;
	char name[96];
	char uuid[96];
	unsigned long long memory_total; /* bytes; 0: not read */
};

struct sonde_nvml;

/* NVML loaded and initialised, its devices listed; NULL with why. */
struct sonde_nvml *sonde_nvml__open(struct sonde_strbuf *why);
void sonde_nvml__close(struct sonde_nvml *n);
size_t sonde_nvml__count(const struct sonde_nvml *n);
const struct sonde_nvml_device *sonde_nvml__device(const struct sonde_nvml *n, size_t i);

/* One reading of a device; each figure NAN (or has_* false) where NVML refused it. */
struct sonde_nvml_reading {
	double power_w;	      /* nvmlDeviceGetPowerUsage */
	double energy_j;      /* nvmlDeviceGetTotalEnergyConsumption, since the driver loaded */
	double gpu_util_pct;  /* nvmlDeviceGetUtilizationRates: kernels running */
	double mem_util_pct;  /* memory being read or written */
	double memory_used;   /* bytes, nvmlDeviceGetMemoryInfo */
	double sm_clock_mhz;  /* nvmlDeviceGetClockInfo (SM) */
	double mem_clock_mhz; /* nvmlDeviceGetClockInfo (memory) */
	double temperature_c; /* nvmlDeviceGetTemperature (GPU die) */
};
void sonde_nvml__read(const struct sonde_nvml *n, size_t i, struct sonde_nvml_reading *out);
/* The device's energy counter (J since the driver loaded); false where NVML refused it. */
bool sonde_nvml__energy(const struct sonde_nvml *n, size_t i, double *joules);
/* NVML's words for a result code. */
const char *sonde_nvml__error(const struct sonde_nvml *n, int code);

/* ---- the clock ------------------------------------------------------------------------------ */

struct sonde_gpu_clock {
	/* host_ns = host0 + (gpu_ns - gpu0) * rate */
	uint64_t gpu0, host0;
	double rate;
	/* the largest distance of a pair from the fitted line plus the widest
	   spread of a pair's readings: how far a mapped time may be off */
	double uncertainty_ns;
	size_t pairs;
};

/*
 * Fit the mapping to n pairs (least squares; one pair: rate 1). -EINVAL
 * without a pair.
 */
int sonde_gpu_clock__fit(const struct gpu_clock *pairs, size_t n, struct sonde_gpu_clock *out);

static inline uint64_t sonde_gpu_clock__map(const struct sonde_gpu_clock *k, uint64_t gpu_ns)
{
	return k->host0 + (uint64_t)(int64_t)((double)(int64_t)(gpu_ns - k->gpu0) * k->rate);
}

/* ---- a run's records ------------------------------------------------------------------------- */

/* What the GPU runtime wrote during one run, read from the run's log. */
struct sonde_gpu_run {
	struct gpu_act *acts;
	size_t nacts, capacts;
	struct gpu_api *apis;
	size_t napis, capapis;
	struct gpu_clock *clocks;
	size_t nclocks, capclocks;
	struct gpu_marker *markers;
	size_t nmarkers, capmarkers;
	struct gpu_memory *mems;
	size_t nmems, capmems;
	char **names; /* by id (kernel ids from 1); API names are looked up with __name */
	uint32_t *name_ids;
	size_t nnames, capnames;
	uint64_t dropped;   /* records CUPTI could not keep (GPU_REC_DROPPED) */
	unsigned processes; /* images that initialised CUDA (GPU_REC_PROC) */
	char *status;	    /* the first reason CUPTI could not start, or NULL */
};

/*
 * Read a run's part of the log (ring.h's chunks of records) into r, adding to
 * what it holds. -EINVAL for a malformed log, -ENOMEM.
 */
int sonde_gpu_run__read(struct sonde_gpu_run *r, const void *log, size_t len);
/* The name of an id, or NULL. */
const char *sonde_gpu_run__name(const struct sonde_gpu_run *r, uint32_t id);
void sonde_gpu_run__free(struct sonde_gpu_run *r);
/* An API call's name id: the callback domain (1 driver, 2 runtime) and its id. */
#define SONDE_GPU_API_NAME(driver, cbid) (0x80000000u | ((driver) ? 1u << 24 : 2u << 24) | (cbid))

/* ---- the analysis ---------------------------------------------------------------------------- */

struct sonde_gpu_kernel_stats {
	uint32_t name; /* gpu_name id */
	uint64_t count;
	double total_ns, min_ns, max_ns;
};

struct sonde_gpu_stream_stats {
	uint32_t device, context, stream;
	uint64_t kernels, copies, memsets;
	double busy_ns;	      /* union of its work's intervals */
	double overlapped_ns; /* of that, time another stream of the device was busy too */
	double first_ns, last_ns;
};

struct sonde_gpu_copy_stats {
	uint8_t kind; /* enum sonde_cupti_copy */
	uint64_t count, bytes;
	double total_ns;
};

struct sonde_gpu_analysis {
	struct sonde_gpu_kernel_stats *kernels; /* by total time, largest first */
	size_t nkernels;
	struct sonde_gpu_stream_stats *streams; /* by device, context, stream */
	size_t nstreams;
	struct sonde_gpu_copy_stats *copies; /* by copy kind */
	size_t ncopies;
	uint64_t syncs;
	double sync_ns;
	/* per device: time any stream was busy, and time two or more were */
	double busy_ns, concurrent_ns;
};

/* An NVTX range (or mark: end == start) of a thread, its ends paired by id. */
struct sonde_gpu_range {
	uint32_t pid, tid, name;
	uint64_t start, end;
};

/*
 * The markers' ranges and marks, in start order; a start without its end (the
 * program exited inside the range) is counted in *unpaired, not shown as a
 * range. -ENOMEM.
 */
int sonde_gpu__ranges(const struct gpu_marker *m, size_t n, struct sonde_gpu_range **out,
		      size_t *nout, size_t *unpaired);

/* Device memory per device, from its allocations and releases. */
struct sonde_gpu_memory_stats {
	uint32_t device;
	uint64_t allocations, releases;
	uint64_t bytes_allocated; /* the allocations' bytes, added up */
	uint64_t peak;		  /* the most live at once */
	uint64_t live_end;	  /* allocated and not released by the end */
};

/*
 * Walk the memory records in time order; live (may be NULL) gets, for each
 * record, the device's live bytes after it (same order as the records after
 * a stable sort by time: *order gives the record index of each step). -ENOMEM.
 */
int sonde_gpu__memory(const struct gpu_memory *m, size_t n, struct sonde_gpu_memory_stats **out,
		      size_t *nout, uint64_t *live, size_t *order);

/* Analyse n activity records (times on any one clock). -ENOMEM. */
int sonde_gpu__analyse(const struct gpu_act *acts, size_t n, struct sonde_gpu_analysis *out);
void sonde_gpu_analysis__free(struct sonde_gpu_analysis *a);
/* A copy kind's name: "HtoD", "DtoH", "DtoD", ... */
const char *sonde_gpu__copy_name(unsigned kind);

/* ---- the profile -------------------------------------------------------------------------------
 */

struct sonde_gpu_totals {
	uint64_t acts, apis, dropped, clocks, processes;
	uint64_t left_out;	  /* spans and calls past max_spans: not on the timeline */
	uint64_t unmapped;	  /* runs without a reading of CUPTI's clock: no timeline */
	uint64_t unpaired_ranges; /* NVTX ranges started and not ended */
	unsigned runs_without_cuda;
	double uncertainty_ns; /* the widest of the runs' clock mappings */
	char *status;	       /* CUPTI's first refusal, or NULL */
};

struct sonde_profile;
struct sonde_gpu_builder;

/*
 * A gpu profile, run by run: t0 is the collection's start on sonde's clock
 * (the timeline counts from it), max_spans what the timeline keeps.
 */
struct sonde_gpu_builder *sonde_gpu_builder__new(uint64_t t0, long long max_spans);
void sonde_gpu_builder__set_t0(struct sonde_gpu_builder *b, uint64_t t0);
/* One run's records (index 0-based; its size where it has one). -ENOMEM. */
int sonde_gpu_builder__add_run(struct sonde_gpu_builder *b, const struct sonde_gpu_run *run,
			       unsigned index, bool has_size, double size);
const struct sonde_gpu_totals *sonde_gpu_builder__totals(const struct sonde_gpu_builder *b);
/* The rows, stats.gpu and the timeline into p. -ENOMEM. */
int sonde_gpu_builder__write(struct sonde_gpu_builder *b, struct sonde_profile *p);
void sonde_gpu_builder__free(struct sonde_gpu_builder *b);

#endif

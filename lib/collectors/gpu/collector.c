/*
 * collector.c - the gpu collector: what a CUDA program ran on its GPUs, from
 * CUPTI's activity records.
 *
 * The program is not changed: sonde names its runtime (libsonde-gpu.so) in
 * CUDA_INJECTION64_PATH, the NVIDIA driver loads it when the program
 * initialises CUDA, and the runtime hands the records CUPTI completes to
 * sonde through a ring (proto/gpu.h). Per run, the profile gets a row per
 * kernel (launches; total, mean, min, max time on the GPU), per stream (busy,
 * overlapped by another stream of its device), per copy direction (copies,
 * bytes, time, bandwidth), per CUDA API function (--level api|full: calls,
 * time on the host) and for synchronisation; stats.gpu says how CUPTI's
 * clock was mapped onto sonde's and what CUPTI dropped.
 *
 * Where there is no NVIDIA driver or no CUPTI, nothing is run: one line says
 * which is missing (exit 3).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/collector.h>
#include "../../runtime-file.h"
#include "../../engines/gpu/gpu.h"
#include "../../engines/preload/rt-host.h"

struct gpu_state {
	struct rt_host host;
	bool host_started;
	unsigned level;
	long long max_spans;
	struct sonde_gpu_builder *b; /* the profile, run by run */
};

static const char *const gpu_levels[] = { "kernel", "api", "full", NULL };

static int gpu_before(struct sonde_collection *c)
{
	struct gpu_state *st = calloc(1, sizeof(*st));
	const char *level = sonde_collection__param_str(c, "level", "kernel");
	struct sonde_strbuf why, cupti;
	struct rt_host_spec spec = {
		.collector = "gpu",
		.runtime = NULL, /* the driver loads it: CUDA_INJECTION64_PATH */
		.ring_env = GPU_ENV_RING,
		.rings = 16,
		.ring_bytes = 8u << 20,
	};
	char *runtime, num[16];
	int rc;

	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
	st->host.log_fd = -1;
	st->level = !strcmp(level, "api")    ? GPU_LEVEL_API
		    : !strcmp(level, "full") ? GPU_LEVEL_FULL
					     : GPU_LEVEL_KERNEL;
	st->max_spans = sonde_collection__param_int(c, "max-spans", 1000000);
	st->b = sonde_gpu_builder__new(0, st->max_spans);
	if (!st->b)
		return -ENOMEM;
	sonde_strbuf__init(&why);
	sonde_strbuf__init(&cupti);
	rc = sonde_gpu__driver(&why);
	if (!rc)
		rc = sonde_gpu__find_cupti(sonde_collection__param_str(c, "cupti", NULL), &cupti,
					   &why);
	if (rc) {
		sonde_collection__fail(c, "gpu: <not supported>: %s", why.buf);
		sonde_strbuf__release(&why);
		sonde_strbuf__release(&cupti);
		return -ENOTSUP;
	}
	sonde_strbuf__release(&why);
	runtime = sonde_runtime_file("libsonde-gpu.so");
	if (!runtime) {
		sonde_strbuf__release(&cupti);
		sonde_collection__fail(c, "cannot find the gpu runtime libsonde-gpu.so (set "
					  "SONDE_RUNTIME_DIR to the directory that holds it)");
		return -ENOENT;
	}
	snprintf(num, sizeof(num), "%u", st->level);
	rc = sonde_collection__setenv(c, "CUDA_INJECTION64_PATH", runtime);
	if (!rc)
		rc = sonde_collection__setenv(c, GPU_ENV_CUPTI, cupti.buf);
	if (!rc)
		rc = sonde_collection__setenv(c, GPU_ENV_LEVEL, num);
	/* NVTX hands its marks and ranges to the library named here: CUPTI */
	if (!rc && getenv("NVTX_INJECTION64_PATH"))
		sonde_collection__note(c,
				       "NVTX ranges are not recorded: NVTX_INJECTION64_PATH "
				       "names another tool (%s)",
				       getenv("NVTX_INJECTION64_PATH"));
	else if (!rc)
		rc = sonde_collection__setenv(c, "NVTX_INJECTION64_PATH", cupti.buf);
	free(runtime);
	sonde_strbuf__release(&cupti);
	if (!rc)
		rc = rt_host__ring_bytes(c, spec.ring_bytes, &spec.ring_bytes);
	if (!rc) {
		rc = rt_host__start(&st->host, c, &spec);
		st->host_started = true;
	}
	return rc;
}

static int analyse(void *ctx, const void *log, size_t len, const struct sonde_run_info *ri)
{
	struct gpu_state *st = ctx;
	struct sonde_gpu_run run = { 0 };
	int rc = sonde_gpu_run__read(&run, log, len);

	if (!rc)
		rc = sonde_gpu_builder__add_run(st->b, &run, ri->index, ri->has_size, ri->size);
	sonde_gpu_run__free(&run);
	return rc;
}

static int gpu_start(struct sonde_collection *c, pid_t pid)
{
	struct gpu_state *st = sonde_collection__priv(c);

	(void)pid;
	sonde_gpu_builder__set_t0(st->b, sonde_collection__t0_ns(c));
	return 0;
}

static int gpu_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct gpu_state *st = sonde_collection__priv(c);

	return rt_host__stop(&st->host, c, ri, analyse, st);
}

static int gpu_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct gpu_state *st = sonde_collection__priv(c);
	const struct sonde_gpu_totals *t = sonde_gpu_builder__totals(st->b);

	if (t->status && !t->acts && !t->apis) {
		sonde_collection__fail(c,
				       "gpu: <not supported>: CUPTI could not record in the "
				       "program: %s",
				       t->status);
		return -ENOTSUP;
	}
	if (!t->processes) {
		sonde_collection__fail(c,
				       "gpu: the program did not initialise CUDA: no GPU work "
				       "to record (is it a CUDA program, and does it see a GPU?)");
		return -ENOTSUP;
	}
	if (t->dropped)
		sonde_collection__dropped(c, t->dropped);
	if (t->runs_without_cuda)
		sonde_collection__note(c, "%u run(s) did not initialise CUDA: no rows for them",
				       t->runs_without_cuda);
	if (t->status)
		sonde_collection__note(c, "CUPTI: %s", t->status);
	if (t->left_out)
		sonde_collection__note(
			c,
			"the timeline keeps the first %lld spans and calls (--max-spans): "
			"%llu left out of it (the rows count them all)",
			st->max_spans, (unsigned long long)t->left_out);
	if (t->unmapped)
		sonde_collection__note(c,
				       "%llu run(s) without a reading of CUPTI's clock: not on the "
				       "timeline",
				       (unsigned long long)t->unmapped);
	return sonde_gpu_builder__write(st->b, p);
}

static void gpu_cleanup(struct sonde_collection *c)
{
	struct gpu_state *st = sonde_collection__priv(c);

	if (!st)
		return;
	if (st->host_started)
		rt_host__release(&st->host);
	sonde_gpu_builder__free(st->b);
	free(st);
}

static const char *const gpu_units[] = { "amount", "ns (busy, time); kernels: time on the GPU",
					 "bandwidth", "B/s", NULL };

static const struct sonde_option gpu_options[] = {
	{ SONDE_OPT_CHOICE, 0, "level", NULL, "LEVEL",
	  "kernel: kernels, copies, memsets and synchronisation (default); api: the CUDA "
	  "runtime and driver calls; full: both",
	  0, 0, gpu_levels },
	{ SONDE_OPT_STRING, 0, "cupti", NULL, "PATH",
	  "the libcupti.so to load (default: found under $CUDA_HOME or /usr/local/cuda)" },
	{ SONDE_OPT_INT, 0, "max-spans", NULL, "N",
	  "keep the first N kernels, copies and calls on the timeline (1000000); the rows "
	  "count them all",
	  1, 1e12 },
	RT_HOST_RING_OPTION("8 MiB"),
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_gpu = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "gpu",
	.summary = "kernels, copies, streams and CUDA calls of a CUDA program (NVIDIA, CUPTI)",
	.profile_type = "gpu",
	.units = gpu_units,
	.options = gpu_options,
	.flags = SONDE_COLLECTOR_ORDER_IS_RUN,
	.before = gpu_before,
	.start = gpu_start,
	.stop = gpu_stop,
	.after = gpu_after,
	.cleanup = gpu_cleanup,
};

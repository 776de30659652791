/*
 * nvml.c - NVIDIA's management library (NVML) and the CUDA libraries, found
 * and loaded at run time.
 *
 * The NVML functions are declared here from NVML's public API reference
 * (docs.nvidia.com/deploy/nvml-api): each returns an nvmlReturn_t (0:
 * success), devices are opaque handles, and the structures sonde reads are
 * nvmlUtilization_t (two unsigned percentages) and nvmlMemory_t (total, free,
 * used: unsigned long long bytes). tests/gpu/decls.sh checks them against the
 * real nvml.h on a machine that has it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu.h"

struct nvml_utilization {
	unsigned int gpu, memory;
};

struct nvml_memory {
	unsigned long long total, free, used;
};

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

struct sonde_nvml {
	void *lib;
	int (*shutdown)(void);
	const char *(*error_string)(int);
	int (*power)(void *, unsigned int *);	     /* mW */
	int (*energy)(void *, unsigned long long *); /* mJ */
	int (*utilization)(void *, struct nvml_utilization *);
	int (*memory)(void *, struct nvml_memory *);
	int (*clock)(void *, int, unsigned int *);	 /* MHz */
	int (*temperature)(void *, int, unsigned int *); /* °C */
	struct sonde_nvml_device dev[SONDE_NVML_MAX_DEVICES];
	size_t n;
};

static void *sym(void *lib, const char *name)
{
	return dlsym(lib, name);
}

struct sonde_nvml *sonde_nvml__open(struct sonde_strbuf *why)
{
	int (*init)(void), (*count)(unsigned *), (*handle)(unsigned, void **);
	int (*name)(void *, char *, unsigned), (*uuid)(void *, char *, unsigned);
	struct sonde_nvml *n;
	unsigned c = 0, i;
	int rc;

	n = calloc(1, sizeof(*n));
	if (!n) {
		sonde_strbuf__adds(why, "NVML: out of memory");
		return NULL;
	}
	n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		sonde_strbuf__adds(why, "NVML: libnvidia-ml.so.1 not found (no NVIDIA driver)");
		free(n);
		return NULL;
	}
	init = (int (*)(void))sym(n->lib, "nvmlInit_v2");
	count = (int (*)(unsigned *))sym(n->lib, "nvmlDeviceGetCount_v2");
	handle = (int (*)(unsigned, void **))sym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
	name = (int (*)(void *, char *, unsigned))sym(n->lib, "nvmlDeviceGetName");
	uuid = (int (*)(void *, char *, unsigned))sym(n->lib, "nvmlDeviceGetUUID");
	n->shutdown = (int (*)(void))sym(n->lib, "nvmlShutdown");
	n->error_string = (const char *(*)(int))sym(n->lib, "nvmlErrorString");
	n->power = (int (*)(void *, unsigned *))sym(n->lib, "nvmlDeviceGetPowerUsage");
	n->energy = (int (*)(void *, unsigned long long *))sym(
		n->lib, "nvmlDeviceGetTotalEnergyConsumption");
	n->utilization = (int (*)(void *, struct nvml_utilization *))sym(
		n->lib, "nvmlDeviceGetUtilizationRates");
	n->memory = (int (*)(void *, struct nvml_memory *))sym(n->lib, "nvmlDeviceGetMemoryInfo");
	n->clock = (int (*)(void *, int, unsigned *))sym(n->lib, "nvmlDeviceGetClockInfo");
	n->temperature = (int (*)(void *, int, unsigned *))sym(n->lib, "nvmlDeviceGetTemperature");
	if (!init || !count || !handle) {
		sonde_strbuf__adds(why, "NVML: libnvidia-ml.so.1 lacks nvmlInit_v2 or "
					"nvmlDeviceGetCount_v2 (a driver older than 2015?)");
		goto fail;
	}
	rc = init();
	if (rc) {
		sonde_strbuf__addf(why, "NVML: nvmlInit failed: %s", sonde_nvml__error(n, rc));
		goto fail;
	}
	rc = count(&c);
	if (rc) {
		sonde_strbuf__addf(why, "NVML: no device count: %s", sonde_nvml__error(n, rc));
		if (n->shutdown)
			n->shutdown();
		goto fail;
	}
	for (i = 0; i < c && n->n < SONDE_NVML_MAX_DEVICES; i++) {
		struct sonde_nvml_device *d = &n->dev[n->n];
		struct nvml_memory m;

		if (handle(i, &d->handle))
			continue;
		d->index = i;
		if (!name || name(d->handle, d->name, sizeof(d->name)))
			snprintf(d->name, sizeof(d->name), "NVIDIA GPU");
		if (!uuid || uuid(d->handle, d->uuid, sizeof(d->uuid)))
			d->uuid[0] = 0;
		if (n->memory && !n->memory(d->handle, &m))
			d->memory_total = m.total;
		n->n++;
	}
	if (!n->n) {
		sonde_strbuf__adds(why, "NVML: the driver lists no GPU");
		if (n->shutdown)
			n->shutdown();
		goto fail;
	}
	return n;
fail:
	dlclose(n->lib);
	free(n);
	return NULL;
}

void sonde_nvml__close(struct sonde_nvml *n)
{
	if (!n)
		return;
	if (n->shutdown)
		n->shutdown();
	dlclose(n->lib);
	free(n);
}

size_t sonde_nvml__count(const struct sonde_nvml *n)
{
	return n ? n->n : 0;
}

const struct sonde_nvml_device *sonde_nvml__device(const struct sonde_nvml *n, size_t i)
{
	return n && i < n->n ? &n->dev[i] : NULL;
}

const char *sonde_nvml__error(const struct sonde_nvml *n, int code)
{
	const char *s = n && n->error_string ? n->error_string(code) : NULL;

	return s ? s : "unknown NVML error";
}

void sonde_nvml__read(const struct sonde_nvml *n, size_t i, struct sonde_nvml_reading *r)
{
	void *h = n && i < n->n ? n->dev[i].handle : NULL;
	unsigned u;
	unsigned long long e;
	struct nvml_utilization ut;
	struct nvml_memory m;

	r->power_w = r->energy_j = r->gpu_util_pct = r->mem_util_pct = NAN;
	r->memory_used = r->sm_clock_mhz = r->mem_clock_mhz = r->temperature_c = NAN;
	if (!h)
		return;
	if (n->power && !n->power(h, &u))
		r->power_w = u / 1e3;
	if (n->energy && !n->energy(h, &e))
		r->energy_j = (double)e / 1e3;
	if (n->utilization && !n->utilization(h, &ut))
		r->gpu_util_pct = ut.gpu, r->mem_util_pct = ut.memory;
	if (n->memory && !n->memory(h, &m))
		r->memory_used = (double)m.used;
	if (n->clock && !n->clock(h, NVML_CLOCK_SM, &u))
		r->sm_clock_mhz = u;
	if (n->clock && !n->clock(h, NVML_CLOCK_MEM, &u))
		r->mem_clock_mhz = u;
	if (n->temperature && !n->temperature(h, NVML_TEMPERATURE_GPU, &u))
		r->temperature_c = u;
}

/* ---- the CUDA libraries ---------------------------------------------------------------------- */

int sonde_gpu__driver(struct sonde_strbuf *why)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);

	if (!h)
		h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();

		sonde_strbuf__addf(why, "no NVIDIA driver here (libcuda.so.1: %s)",
				   e && strstr(e, "No such file") ? "not found"
				   : e				  ? e
								  : "not found");
		return -ENOENT;
	}
	dlclose(h);
	return 0;
}

static bool loads(const char *path)
{
	void *h;

	if (strchr(path, '/') && access(path, R_OK))
		return false;
	h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
	if (!h)
		return false;
	dlclose(h);
	return true;
}

int sonde_gpu__find_cupti(const char *path, struct sonde_strbuf *out, struct sonde_strbuf *why)
{
	const char *homes[] = { getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda" };
	char buf[4096];
	size_t i;

	if (path) {
		if (loads(path))
			return sonde_strbuf__adds(out, path);
		sonde_strbuf__addf(why, "--cupti %s does not load (%s)", path,
				   access(path, R_OK) ? strerror(errno)
						      : "not a library for this machine");
		return -ENOENT;
	}
	sonde_strbuf__adds(why, "libcupti.so not found (looked in");
	for (i = 0; i < sizeof(homes) / sizeof(homes[0]); i++) {
		static const char *const under[] = { "extras/CUPTI/lib64", "lib64", "lib" };
		size_t j;

		if (!homes[i] || !*homes[i])
			continue;
		for (j = 0; j < sizeof(under) / sizeof(under[0]); j++) {
			snprintf(buf, sizeof(buf), "%s/%s/libcupti.so", homes[i], under[j]);
			if (loads(buf))
				return sonde_strbuf__adds(out, buf);
		}
		sonde_strbuf__addf(why, " %s/{extras/CUPTI/lib64,lib64,lib},", homes[i]);
	}
	if (loads("libcupti.so"))
		return sonde_strbuf__adds(out, "libcupti.so");
	sonde_strbuf__adds(why, " and the loader's path; give it with --cupti PATH)");
	return -ENOENT;
}

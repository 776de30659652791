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
#include <fcntl.h>
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
		sonde_strbuf__adds(why, "NVML: libnvidia-ml.so.1 not found");
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

bool sonde_nvml__energy(const struct sonde_nvml *n, size_t i, double *joules)
{
	unsigned long long mj;

	if (!n || i >= n->n || !n->energy || n->energy(n->dev[i].handle, &mj))
		return false;
	*joules = (double)mj / 1e3;
	return true;
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

/*
 * Whether path is a shared object this machine's loader can take: readable,
 * ELF, 64-bit, of this machine. CUPTI is not loaded into sonde to find out:
 * its constructors set up state (and memory) that only the target needs.
 */
static bool loadable(const char *path, const char **why)
{
	unsigned char h[20];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	uint16_t type, machine;

	if (fd < 0) {
		*why = strerror(errno);
		return false;
	}
	n = read(fd, h, sizeof(h));
	close(fd);
	*why = "not a shared library for this machine";
	if (n != (ssize_t)sizeof(h) || memcmp(h, "\177ELF", 4) || h[4] != 2 /* ELFCLASS64 */)
		return false;
	memcpy(&type, h + 16, 2);
	memcpy(&machine, h + 18, 2);
#if defined(__x86_64__)
	return type == 3 /* ET_DYN */ && machine == 62 /* EM_X86_64 */;
#elif defined(__aarch64__)
	return type == 3 && machine == 183 /* EM_AARCH64 */;
#else
	return type == 3;
#endif
}

int sonde_gpu__find_cupti(const char *path, struct sonde_strbuf *out, struct sonde_strbuf *why)
{
	const char *homes[] = { getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda" };
	/* where distributions put it (Debian's libcupti-dev: the multiarch dir) */
	static const char *const system[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
					      "/usr/lib" };
	const char *ld = getenv("LD_LIBRARY_PATH"), *e;
	char buf[4096];
	size_t i;

	if (path) {
		if (loadable(path, &e))
			return sonde_strbuf__adds(out, path);
		sonde_strbuf__addf(why, "--cupti %s does not load (%s)", path, e);
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
			if (loadable(buf, &e))
				return sonde_strbuf__adds(out, buf);
		}
		sonde_strbuf__addf(why, " %s/{extras/CUPTI/lib64,lib64,lib},", homes[i]);
	}
	/* LD_LIBRARY_PATH's directories, then the system's */
	while (ld && *ld) {
		size_t n = strcspn(ld, ":");

		if (n && n < sizeof(buf) - 16) {
			snprintf(buf, sizeof(buf), "%.*s/libcupti.so", (int)n, ld);
			if (loadable(buf, &e))
				return sonde_strbuf__adds(out, buf);
		}
		ld += n + (ld[n] == ':');
	}
	for (i = 0; i < sizeof(system) / sizeof(system[0]); i++) {
		snprintf(buf, sizeof(buf), "%s/libcupti.so", system[i]);
		if (loadable(buf, &e))
			return sonde_strbuf__adds(out, buf);
	}
	sonde_strbuf__adds(why, " LD_LIBRARY_PATH and /usr/lib; give it with --cupti PATH)");
	return -ENOENT;
}

/*
 * collector.c - the registry of built-in collectors and the plugin loader.
 *
 * Built-ins live in one table. A plugin's collector table lives in its shared
 * object, which therefore stays loaded for the life of the process.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sonde/collector.h>
#include "registry.h"

extern const struct sonde_collector sonde_collector_time;
extern const struct sonde_collector sonde_collector_external;
extern const struct sonde_collector sonde_collector_python;
extern const struct sonde_collector sonde_collector_memory;
extern const struct sonde_collector sonde_collector_trace;
extern const struct sonde_collector sonde_collector_counters;
extern const struct sonde_collector sonde_collector_sample;
extern const struct sonde_collector sonde_collector_system;
extern const struct sonde_collector sonde_collector_sched;
extern const struct sonde_collector sonde_collector_power;
extern const struct sonde_collector sonde_collector_gpu;

static const struct sonde_collector *const builtins[] = {
	&sonde_collector_time,	   &sonde_collector_memory, &sonde_collector_trace,
	&sonde_collector_counters, &sonde_collector_python, &sonde_collector_sample,
	&sonde_collector_system,   &sonde_collector_sched,  &sonde_collector_power,
	&sonde_collector_gpu,	   &sonde_collector_external,
};

/* the joins of profiles of one run (registry.h): their code is their collectors' */
extern int power_regions__join(struct sonde_profile *power, const struct sonde_profile *counters);
static const struct sonde_join joins[] = {
	{ "power", "counters", power_regions__join },
};

const struct sonde_join *sonde_collector__joins(size_t *n)
{
	*n = sizeof(joins) / sizeof(joins[0]);
	return joins;
}

const struct sonde_collector *const *sonde_collector__builtins(size_t *n)
{
	*n = sizeof(builtins) / sizeof(builtins[0]);
	return builtins;
}

const struct sonde_collector *sonde_collector__find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (!strcmp(builtins[i]->name, name))
			return builtins[i];
	errno = ENOENT;
	return NULL;
}

const struct sonde_collector *sonde_collector__load_plugin(const char *path,
							   struct sonde_strbuf *err)
{
	const struct sonde_collector *col;
	sonde_collector_entry_fn entry;
	void *h;

	/* dlopen searches the library path for a bare name: insist on a path. */
	if (!strchr(path, '/')) {
		sonde_strbuf__addf(err, "cannot load plugin '%s': give a path (./%s)", path, path);
		errno = ENOENT;
		return NULL;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();

		sonde_strbuf__addf(err, "cannot load plugin '%s': %s", path, e ? e : "unknown");
		errno = ENOEXEC;
		return NULL;
	}
	*(void **)&entry = dlsym(h, SONDE_COLLECTOR_ENTRY_NAME);
	if (!entry) {
		sonde_strbuf__addf(err, "plugin '%s' does not export %s()", path,
				   SONDE_COLLECTOR_ENTRY_NAME);
		dlclose(h);
		errno = ENOSYS;
		return NULL;
	}
	col = entry(SONDE_COLLECTOR_ABI);
	if (!col) /* a plugin built for ABI 1 (without exited()) */
		col = entry(1);
	if (!col || col->abi < 1 || col->abi > SONDE_COLLECTOR_ABI) {
		sonde_strbuf__addf(err, "plugin '%s' does not speak collector ABI 1 to %d", path,
				   SONDE_COLLECTOR_ABI);
		dlclose(h);
		errno = EPROTO;
		return NULL;
	}
	if (!col->name || !*col->name || !col->profile_type) {
		sonde_strbuf__addf(err, "plugin '%s' has no collector name or profile type", path);
		dlclose(h);
		errno = EPROTO;
		return NULL;
	}
	return col;
}

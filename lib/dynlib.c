/*
 * dynlib.c - libpfm4 and capstone, loaded on first use (see dynlib.h).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include "dynlib.h"

/* Open soname and fill n function pointers at fns from names; false if any is missing. */
static bool load(const char *soname, void **fns, const char *const *names, size_t n)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	if (!h)
		return false;
	for (i = 0; i < n; i++) {
		fns[i] = dlsym(h, names[i]);
		if (!fns[i]) {
			dlclose(h);
			return false;
		}
	}
	return true; /* kept open for the process's life */
}

static struct sonde_pfm pfm;
static bool pfm_loaded;

static void pfm_load(void)
{
	static const char *const names[] = { "pfm_initialize", "pfm_get_pmu_info",
					     "pfm_get_event_next", "pfm_get_event_info",
					     "pfm_get_os_event_encoding" };

	_Static_assert(sizeof(pfm) == sizeof(names) / sizeof(*names) * sizeof(void *),
		       "one name a function");
	pfm_loaded = load(SONDE_PFM_SONAME, (void **)&pfm, names, sizeof(names) / sizeof(*names));
}

const struct sonde_pfm *sonde_pfm(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, pfm_load);
	return pfm_loaded ? &pfm : NULL;
}

#if SONDE_HAVE_CAPSTONE
static struct sonde_cs cs;
static bool cs_loaded;

static void cs_load(void)
{
	static const char *const names[] = { "cs_open",	       "cs_option", "cs_malloc",
					     "cs_disasm_iter", "cs_free",   "cs_close" };

	_Static_assert(sizeof(cs) == sizeof(names) / sizeof(*names) * sizeof(void *),
		       "one name a function");
	cs_loaded =
		load(SONDE_CAPSTONE_SONAME, (void **)&cs, names, sizeof(names) / sizeof(*names));
}

const struct sonde_cs *sonde_cs(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, cs_load);
	return cs_loaded ? &cs : NULL;
}
#endif

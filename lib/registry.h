/*
 * registry.h - what the library knows of its built-in collectors beyond their
 * tables (lib/collector.c): the profiles of one run that complete each other.
 * Generic code (the session) asks here, and never names a collector.
 */
#ifndef SONDE_REGISTRY_H
#define SONDE_REGISTRY_H

#include <stddef.h>
#include <sonde/profile.h>

/*
 * When a run's collectors made a profile of type `type` and one of type
 * `with`, join(that, other) completes the first from the second (power: the
 * energy of each region the counters collector recorded). 0 or -errno.
 */
struct sonde_join {
	const char *type, *with;
	int (*join)(struct sonde_profile *p, const struct sonde_profile *with);
};
const struct sonde_join *sonde_collector__joins(size_t *n);

#endif

/*
 * regions.h - energy per region: a power profile's series shared out among the
 * region executions another profile of the same run recorded (the counters
 * collector's sonde_region_begin/end dispatches), on the run's one clock.
 */
#ifndef SONDE_POWER_REGIONS_H
#define SONDE_POWER_REGIONS_H

#include <sonde/profile.h>

/*
 * Add to power, for each domain and each region execution in spans, the
 * execution's energy (J) and average power (W): the watts of the series'
 * intervals it overlaps, weighted by the overlap; the part of an execution no
 * interval covers is taken at the covered part's average; an execution no
 * interval covers at all gets null. Returns the number of executions
 * attributed (0 when spans has no regions, or power no series), or -errno.
 */
long power_regions__attribute(struct sonde_profile *power, const struct sonde_profile *spans);
/* The join of the registry (lib/registry.h): attribute, and say how in stats.power.regions. */
int power_regions__join(struct sonde_profile *power, const struct sonde_profile *counters);

#endif

/*
 * sysinfo.h - the machine a profile was measured on.
 */
#ifndef SONDE_SYSINFO_H
#define SONDE_SYSINFO_H

#include <stdbool.h>
#include <jansson.h>

/*
 * A new object {architecture, system, release, host, cpu, cpus, memory} read from
 * uname(2), /proc/cpuinfo and /proc/meminfo; a value that could not be read is null.
 * NULL on ENOMEM.
 */
json_t *sonde_sysinfo__machine(void);
/* Whether /proc/cpuinfo lists flag ("constant_tsc", ...) for the CPUs. */
bool sonde_sysinfo__cpu_flag(const char *flag);

#endif

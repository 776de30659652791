/*
 * sonde.h - the umbrella header of libsonde.
 *
 * Conventions of the whole library:
 *  - functions returning int give 0 on success and a negative errno on failure;
 *  - functions returning a pointer give NULL and set errno on failure;
 *  - __new/__open/__load hand the caller an object it frees with __free (NULL is fine);
 *  - getters return borrowed pointers, valid while their owner lives;
 *  - the library never exits and never prints: it logs through sonde_log__set_callback().
 */
#ifndef SONDE_SONDE_H
#define SONDE_SONDE_H

#include <sonde/clock.h>
#include <sonde/strbuf.h>
#include <sonde/log.h>
#include <sonde/option.h>
#include <sonde/file.h>
#include <sonde/profile.h>
#include <sonde/stats.h>
#include <sonde/parallel.h>
#include <sonde/format.h>
#include <sonde/table.h>
#include <sonde/warning.h>
#include <sonde/collector.h>
#include <sonde/runner.h>
#include <sonde/session.h>
#include <sonde/store.h>
#include <sonde/git.h>
#include <sonde/sysinfo.h>
#include <sonde/postprocess.h>
#include <sonde/check.h>
#include <sonde/view.h>
#include <sonde/timer.h>

/* The library's version string, e.g. "0.1.0". */
const char *sonde_version(void);

#endif

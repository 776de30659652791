/*
 * warning.h - the closed list of measurement warnings.
 *
 * Every warning sonde records has a stable code, a message template and a fix the
 * user can apply (after hyperfine's warnings). Profiles store them in
 * stats.warnings as {code, message, fix}.
 */
#ifndef SONDE_WARNING_H
#define SONDE_WARNING_H

enum sonde_warning {
	SONDE_WARN_SHORT_RUN,	     /* runs under 5 ms */
	SONDE_WARN_COLD_FIRST_RUN,   /* the first run much slower than the rest */
	SONDE_WARN_OUTLIERS,	     /* outliers by hyperfine's rule (stats.h) */
	SONDE_WARN_NONZERO_EXIT,     /* runs exited non-zero (measured with --ignore-failure) */
	SONDE_WARN_TIMED_OUT,	     /* a run was killed by --timeout */
	SONDE_WARN_INTERRUPTED,	     /* the series was interrupted */
	SONDE_WARN_LEFTOVER,	     /* the target left processes behind; they were killed */
	SONDE_WARN_EVENTS_DROPPED,   /* events were dropped */
	SONDE_WARN_DIRTY_TREE,	     /* measured on a work tree with uncommitted changes */
	SONDE_WARN_ROWS_SAMPLED,     /* per-call rows are a sample (trace --max-rows) */
	SONDE_WARN_RSS_NOT_MEASURED, /* max-rss could not be the target's own */
	SONDE_WARN_BIMODAL,	     /* the run times form two groups */
	SONDE_WARN_EVENTS_MISSED,    /* the kernel did not deliver some tracepoint calls */
	SONDE_WARN__COUNT,
};

struct sonde_warning_info {
	const char *code;
	const char *fix;
};

/* The code and fix of a warning; NULL for an unknown one. */
const struct sonde_warning_info *sonde_warning__info(enum sonde_warning w);

#endif

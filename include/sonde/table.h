/*
 * table.h - the summary table of a profile: one row per resource, with summary
 * statistics of its amount column. Used by `sonde show PROFILE table` and by
 * `sonde collect` after a collection.
 */
#ifndef SONDE_TABLE_H
#define SONDE_TABLE_H

#include <stddef.h>
#include <sonde/profile.h>
#include <sonde/stats.h>

struct sonde_table_row {
	const char *uid; /* borrowed from the profile */
	const char *type;
	const char *subtype;
	const char *region;	/* counters: the region measured; NULL when none */
	const char *workload;	/* NULL when the resource has none */
	const char *unit;	/* the resource's own unit, else header.units[type]; NULL: none */
	struct sonde_summary s; /* of the numeric amounts; nulls (not measured) are left out */
	/*
	 * What the row is, for people: the metric of a profile whose resources are
	 * the command (time), else the uid (function, site, counter), with the
	 * subtype when the profile has several (malloc, free), the region and the
	 * workload ("make:a.c:16 (malloc)", "cycles [region solve]", "real @100"),
	 * at most 255 bytes; in the rows' block, freed with it.
	 */
	const char *label;
};

/*
 * Rows for every resource with at least one numeric amount, in resource order.
 * The caller frees *rows with free(). Returns 0 or -errno.
 */
int sonde_table__rows(const struct sonde_profile *p, struct sonde_table_row **rows, size_t *n);

#endif

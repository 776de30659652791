/*
 * view.h - what a profile looks like: the text views (the summary table, the
 * memory, trace and counters views), the drawn ones (SVG bars, flow and
 * scatter charts, flame graphs, plain and differential) and the self-contained
 * HTML report. The CLI and the Python binding draw through this one API.
 *
 * Every view appends to a strbuf the caller owns and returns 0 or -errno;
 * -EINVAL means the view does not apply to the profile (a memory view of a
 * trace profile, a chart with nothing to draw). Every name drawn in SVG or
 * HTML is escaped with sonde_view__escape.
 */
#ifndef SONDE_VIEW_H
#define SONDE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <sonde/profile.h>
#include <sonde/strbuf.h>

/* The text views' formats. */
enum sonde_view_format {
	SONDE_VIEW_TEXT,
	SONDE_VIEW_JSON,
	SONDE_VIEW_CSV,
	SONDE_VIEW_MARKDOWN,
};
extern const char *const sonde_view__formats[]; /* "text", "json", "csv", "markdown", NULL */
/* The format called name; SONDE_VIEW_TEXT for NULL or an unknown name. */
enum sonde_view_format sonde_view__format_of(const char *name);

/*
 * The profile as CSV: a line per value row of every resource: uid, type,
 * subtype, then every column any resource has (empty where it has none).
 */
int sonde_view__csv(const struct sonde_profile *p, struct sonde_strbuf *out);
/* s as one RFC 4180 CSV field: quoted, quotes doubled. */
int sonde_view__csv_quote(struct sonde_strbuf *sb, const char *s);
/* A measured number as JSON: null when it is NaN or infinite (not measured). New reference. */
json_t *sonde_view__json_number(double v);

/*
 * The profile's warnings, one line per kind with its fix, each line starting
 * with prefix ("sonde: " on stderr); with notes, its notes too.
 */
int sonde_view__warnings(const struct sonde_profile *p, const char *prefix, bool notes,
			 struct sonde_strbuf *out);
/*
 * The summary table of a profile. JSON carries the warnings and notes; the
 * other forms leave them to sonde_view__warnings.
 */
int sonde_view__table(const struct sonde_profile *p, enum sonde_view_format fmt,
		      struct sonde_strbuf *out);
/* The memory view of a memory profile (top: sites and leaks listed). */
int sonde_view__memory(const struct sonde_profile *p, enum sonde_view_format fmt, unsigned top,
		       struct sonde_strbuf *out);
/*
 * The counters view of a counters profile (perf stat's layout; JSON/CSV: the
 * table). notes: end the text with the collection's notes (false where they
 * were already said as the run went, as `sonde collect` logs them).
 */
int sonde_view__counters(const struct sonde_profile *p, enum sonde_view_format fmt, bool notes,
			 struct sonde_strbuf *out);

/* Trace profiles: the flat report (sorted by one of sonde_view__trace_sort_keys). */
extern const char *const sonde_view__trace_sort_keys[];
int sonde_view__trace_report(const struct sonde_profile *p, enum sonde_view_format fmt,
			     const char *sort, unsigned top, struct sonde_strbuf *out);
/* Trace profiles: the calling-context tree (text) or the caller/callee edges. */
int sonde_view__trace_graph(const struct sonde_profile *p, enum sonde_view_format fmt, unsigned top,
			    struct sonde_strbuf *out);
/* Sched profiles: per thread on-CPU, waits, switches, interference; system calls. */
int sonde_view__sched(const struct sonde_profile *p, enum sonde_view_format fmt,
		      struct sonde_strbuf *out);
/* System profiles: each metric's mean, p95, peak (and total for rates). */
int sonde_view__system(const struct sonde_profile *p, enum sonde_view_format fmt,
		       struct sonde_strbuf *out);

/*
 * The Chrome/Perfetto trace-event JSON of one profile's timeline (trace and
 * sampled profiles: a track per thread; sched: thread states; system, power,
 * counters -I, memory: counter tracks; time: the runs). -EINVAL: it has none.
 */
int sonde_view__perfetto(const struct sonde_profile *p, struct sonde_strbuf *out);
/*
 * The profiles of one run (the same header.run_id) on one timeline, in the same
 * format. -EXDEV when they come from different runs, -EINVAL when none has a
 * timeline.
 */
int sonde_view__timeline(const struct sonde_profile *const *p, size_t n, struct sonde_strbuf *out);
/*
 * How the profiles' clocks were laid on one timeline, where any is a rank of
 * a distributed job (one host: exactly; several: through their wall clocks,
 * within a stated bound or not bounded): one sentence in buf, 1; 0 when none
 * is a rank.
 */
int sonde_view__timeline_alignment(const struct sonde_profile *const *p, size_t n, char *buf,
				   size_t len);
/*
 * The ranks of one distributed job (profiles with metadata.job) side by side:
 * per collector and metric (each rank's mean), the lowest, mean and highest
 * over the ranks, max/mean and the highest rank with its host; the ranks of
 * the job that have no profile are named. -EINVAL: no profile of a rank.
 */
int sonde_view__ranks(const struct sonde_profile *const *p, size_t n, enum sonde_view_format fmt,
		      struct sonde_strbuf *out);
/*
 * The same run drawn as SVG for the HTML report: a lane per track (the runs,
 * each thread's scheduler states, each counter that moves). -EXDEV and
 * -EINVAL as sonde_view__timeline().
 */
int sonde_view__timeline_svg(const struct sonde_profile *const *p, size_t n,
			     struct sonde_strbuf *out);

/* XML-escape s (text and attribute values): & < > " ' and control characters. */
int sonde_view__escape(struct sonde_strbuf *sb, const char *s);
/* JSON of v that is safe inside an HTML <script> element (no '<', U+2028/9). */
int sonde_view__html_json(struct sonde_strbuf *sb, json_t *v);
/* A colour for a name: a stable hue in a palette ("warm", "cool", "green"). */
void sonde_view__color(const char *name, const char *palette, char out[24]);

/*
 * The folded stacks of a profile ("a;b;c WEIGHT" lines), weighted by weight:
 * memory "bytes" or "count" (allocated), "leaked_bytes" or "leaked" (still
 * allocated at the end), "peak_bytes" (held at the peak); trace "time" or
 * "calls". -ENOTSUP: the profile has no stacks (or none of that weight).
 */
int sonde_view__folded(const struct sonde_profile *p, const char *weight, struct sonde_strbuf *out);
/*
 * The profile's stacks in pprof's format (profile.proto, gzipped): each stack
 * a sample with two values, how many (calls, samples, allocations) and how
 * much (time in ns, bytes), as go tool pprof and speedscope read it; gzip
 * false: the protobuf bare (for a writer that compresses it). -ENOTSUP: the
 * profile has no stacks.
 */
int sonde_view__pprof(const struct sonde_profile *p, bool gzip, struct sonde_strbuf *out);
/* The default flame-graph weight of a profile, and its unit in *unit. */
const char *sonde_view__flame_weight(const struct sonde_profile *p, const char **unit);

/*
 * A flame graph of folded stacks as a standalone interactive SVG (click to zoom,
 * search, tooltips). With base (folded stacks of a baseline), a differential
 * flame graph: widths from folded, colours by the change against base.
 */
int sonde_view__flame(const char *folded, const char *base, const char *title, const char *unit,
		      struct sonde_strbuf *out);

/*
 * The table beside a differential flame graph: each function's inclusive
 * weight (once per stack, however deep it recurses) in base and in folded
 * (folded stacks, as sonde_view__folded writes them), in unit, the top
 * largest changes first (0: 20). Text.
 */
int sonde_view__diff_table(const char *base, const char *folded, const char *unit, unsigned top,
			   struct sonde_strbuf *out);

enum sonde_view_agg {
	SONDE_AGG_SUM,
	SONDE_AGG_MEAN,
	SONDE_AGG_COUNT,
	SONDE_AGG_MIN,
	SONDE_AGG_MAX,
};
extern const char *const sonde_view__aggs[]; /* "sum", "mean", "count", "min", "max", NULL */

struct sonde_chart_opts {
	size_t sz;	  /* sizeof(struct sonde_chart_opts) */
	const char *of;	  /* the column aggregated (amount) */
	const char *per;  /* the category (bars: a property or column; flow: a numeric column) */
	const char *by;	  /* the group (a property or column), or NULL */
	const char *type; /* only resources of this type, or NULL for all */
	enum sonde_view_agg func;
	bool stacked;
	unsigned top; /* categories (bars) or groups shown; the rest is "other" */
	const char *title;
	/* resources of these subtypes (comma-separated) are left out: a memory
	   profile's frees, say, where bytes allocated are drawn; NULL: none */
	const char *skip_subtypes;
};

/* Bars: func(of) per category, grouped or stacked by group. */
int sonde_view__bars(const struct sonde_profile *p, const struct sonde_chart_opts *o,
		     struct sonde_strbuf *out);
/* Flow: func(of) over a numeric per (snapshots, sizes, time), a line or stacked area per group. */
int sonde_view__flow(const struct sonde_profile *p, const struct sonde_chart_opts *o,
		     struct sonde_strbuf *out);
/* Scatter: (per, of) points per uid with every fitted model of that pair drawn. */
int sonde_view__scatter(const struct sonde_profile *p, const struct sonde_chart_opts *o,
			struct sonde_strbuf *out);

/*
 * A model of the profile's models (postprocess) as one line: its name, formula
 * and coefficients with their units (b0 in y_unit, a slope in y_unit per
 * x_unit in the singular), and R², as the scatter's legend says it.
 */
void sonde_view__model_text(json_t *model, const char *y_unit, const char *x_unit, char *buf,
			    size_t len);

/*
 * The HTML report of n profiles (names: how to call them), one file with no
 * outside references. Each profile is compared with the nearest earlier one of
 * the same collector and command.
 */
int sonde_view__report(struct sonde_profile *const *p, const char *const *names, size_t n,
		       struct sonde_strbuf *out);

/*
 * The registry of views: every view sonde shows, by name, read by `collect`,
 * `show`, `export` and the Python binding, so that which view a profile gets
 * is decided here only.
 */
enum {
	SONDE_VIEW_DRAWN = 1u << 0, /* an SVG chart: drawn by its own call, not by show() */
	SONDE_VIEW_OWN =
		1u << 1, /* a collector's own view: tried for a profile with no view named */
	SONDE_VIEW_TOP = 1u << 2,  /* reads top */
	SONDE_VIEW_SORT = 1u << 3, /* reads sort (sonde_view__trace_sort_keys) */
};
struct sonde_view_args {
	size_t sz; /* sizeof(struct sonde_view_args) */
	enum sonde_view_format fmt;
	unsigned top;	  /* rows (sites, functions, callees); 0: all */
	const char *sort; /* report: a sort key (NULL: total) */
	bool notes;	  /* counters: end with the collection's notes */
	bool warnings;	  /* table as text: the warnings and notes after it */
};
struct sonde_view_info {
	const char *name;
	const char *summary;   /* one line, for --help */
	const char *reads;     /* the profiles it reads ("memory profiles"), for --help */
	const char *collector; /* the collector whose profiles it reads; NULL: any */
	unsigned flags;
	int (*show)(const struct sonde_profile *p, const struct sonde_view_args *a,
		    struct sonde_strbuf *out);
};
/* Every view, in the order --help lists them. */
const struct sonde_view_info *sonde_view__list(size_t *n);
/* The view called name, or NULL (errno ENOENT). */
const struct sonde_view_info *sonde_view__find(const char *name);
/*
 * Show p with the view called name (not a drawn one). With name NULL, the
 * profile's own view: the first of the collectors' own views (SONDE_VIEW_OWN,
 * in registry order) that reads it, else the table. -EINVAL: the view does
 * not apply to p; -ENOENT: no such view; -ENOTSUP: a drawn view.
 */
int sonde_view__show(const struct sonde_profile *p, const char *name,
		     const struct sonde_view_args *a, struct sonde_strbuf *out);

#endif

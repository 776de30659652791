/*
 * views.h - what the views share inside libsonde.
 */
#ifndef SONDE_VIEWS_H
#define SONDE_VIEWS_H

#include <sonde/sonde.h>
#include <sonde/view.h>

/* Append doc as JSON (jansson's flags) and a newline. Returns 0 or -ENOMEM. */
int sonde_view__json(struct sonde_strbuf *out, json_t *doc, size_t flags);

/* The folded stacks of a trace profile, each frame written by frame (escaping ';'). */
int view_trace_folded(const struct sonde_profile *p, bool by_calls, struct sonde_strbuf *out,
		      void (*frame)(struct sonde_strbuf *, const char *));

/* The timeline's pieces (timeline.c): a time in µs with three decimals, a JSON value. */
void view_add_us(struct sonde_strbuf *out, long long ns);
void view_add_json(struct sonde_strbuf *out, const json_t *v);
/*
 * Where one profile's tracks go on a timeline of several ranks (timeline.c):
 * process ids moved by pid_base (a rank's own range), times by shift_ns (its
 * host's clock onto the first's), process names after prefix. NULL: as they are.
 */
struct view_place {
	long long pid_base, shift_ns;
	const char *prefix;
};
long long view_place_pid(const struct view_place *pl, long long pid);
/* A trace profile's timeline events, after others when !*first; -EINVAL: none. */
int view_trace_events(const struct sonde_profile *p, const struct view_place *pl,
		      struct sonde_strbuf *out, bool *first);

#endif

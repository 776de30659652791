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
/* A trace profile's timeline events, after others when !*first; -EINVAL: none. */
int view_trace_events(const struct sonde_profile *p, struct sonde_strbuf *out, bool *first);

#endif

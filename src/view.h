/*
 * view.h - the graphical views: SVG charts (bars, flow, scatter), flame graphs
 * (plain and differential) and the self-contained HTML report. Every view
 * appends to a strbuf; every name drawn goes through svg_escape.
 */
#ifndef SONDE_VIEW_H
#define SONDE_VIEW_H

#include <stdbool.h>
#include "cli.h"

/* XML-escape s (text and attribute values): & < > " ' and control characters. */
int svg_escape(struct sonde_strbuf *sb, const char *s);
/* JSON of v that is safe inside an HTML <script> element (no '<', U+2028/9). */
int html_json(struct sonde_strbuf *sb, json_t *v);
/* A colour for a name: a stable hue in a palette ("warm", "cool", "green"). */
void svg_color(const char *name, const char *palette, char out[24]);

/* The folded stacks of a profile (memory: bytes or count; trace: time or calls). -ENOTSUP: none. */
int cli_folded(const struct sonde_profile *p, const char *weight, struct sonde_strbuf *out);
/* The default flame-graph weight of a profile and its unit. */
const char *cli_flame_weight(const struct sonde_profile *p, const char **unit);

/*
 * A flame graph of folded stacks as a standalone interactive SVG (click to zoom,
 * search, tooltips). With base (folded stacks of a baseline), a differential
 * flame graph: widths from folded, colours by the change against base.
 */
int view_flame(const char *folded, const char *base, const char *title, const char *unit,
	       struct sonde_strbuf *out);

enum view_agg { AGG_SUM, AGG_MEAN, AGG_COUNT, AGG_MIN, AGG_MAX };
extern const char *const view_aggs[]; /* "sum", "mean", "count", "min", "max", NULL */

struct chart_options {
	const char *of;	  /* the column aggregated (amount) */
	const char *per;  /* the category (bars: a property or column; flow: a numeric column) */
	const char *by;	  /* the group (a property or column), or NULL */
	const char *type; /* only resources of this type, or NULL for all */
	enum view_agg func;
	bool stacked;
	unsigned top; /* categories (bars) or groups shown; the rest is "other" */
	const char *title;
};

/* Bars: func(of) per category, grouped or stacked by group. -EINVAL: nothing to draw. */
int view_bars(const struct sonde_profile *p, const struct chart_options *o,
	      struct sonde_strbuf *out);
/* Flow: func(of) over a numeric per (snapshots, sizes, time), a line or stacked area per group. */
int view_flow(const struct sonde_profile *p, const struct chart_options *o,
	      struct sonde_strbuf *out);
/* Scatter: (per, of) points per uid with every fitted model of that pair drawn. */
int view_scatter(const struct sonde_profile *p, const struct chart_options *o,
		 struct sonde_strbuf *out);

/*
 * The HTML report of n profiles (names: how to call them). Each profile is
 * compared with the nearest earlier one of the same collector and command.
 */
int view_report(struct sonde_profile *const *p, const char *const *names, size_t n,
		struct sonde_strbuf *out);

/* Write buf atomically to path (or stdout for NULL / "-"). Returns 0 or -errno. */
int cli_write_output(const char *path, const char *buf, size_t len);

#endif

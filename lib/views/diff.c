/*
 * diff.c - the table of a comparison of two profiles' stacks (see view.h,
 * sonde_view__diff_table): each function's inclusive weight in the baseline
 * and in the target, the largest changes first.
 *
 * Inclusive, as perf diff and the flame graph count it: a function counts once
 * per stack, however deep it recurses in it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include <sonde/view.h>
#include "../grow.h"
#include "../strmap.h"

struct drow {
	const char *name; /* in a folded text's copy */
	size_t len;
	double w[2];
	bool in[2];
};

struct dtab {
	struct sonde_strmap index; /* name -> row + 1 */
	struct drow *r;
	size_t n, cap;
};

/* Add the weights of one side's folded stacks (side 0: the baseline). */
static int add_side(struct dtab *t, char *text, int side)
{
	char *line, *save = NULL;
	uint64_t *seen_gen = NULL;
	size_t capgen = 0;
	uint64_t gen = 0;
	int rc = 0;

	for (line = strtok_r(text, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *f, *fs = NULL;
		double x;

		if (!sp)
			continue;
		*sp = 0;
		x = strtod(sp + 1, NULL);
		gen++;
		for (f = strtok_r(line, ";", &fs); f; f = strtok_r(NULL, ";", &fs)) {
			bool existed;
			uint64_t *slot = sonde_strmap__upsert(&t->index, f, strlen(f), &existed);
			size_t i;

			if (!slot) {
				rc = -ENOMEM;
				break;
			}
			if (!existed) {
				if (sonde_grow((void **)&t->r, &t->cap, t->n + 1, sizeof(*t->r)) ||
				    sonde_grow((void **)&seen_gen, &capgen, t->n + 1,
					       sizeof(*seen_gen))) {
					rc = -ENOMEM;
					break;
				}
				memset(&t->r[t->n], 0, sizeof(t->r[t->n]));
				t->r[t->n].name = f;
				*slot = ++t->n;
			}
			i = (size_t)*slot - 1;
			if (i >= capgen &&
			    sonde_grow((void **)&seen_gen, &capgen, i + 1, sizeof(*seen_gen))) {
				rc = -ENOMEM;
				break;
			}
			if (!existed)
				seen_gen[i] = 0;
			if (seen_gen[i] == gen)
				continue; /* recursion: once per stack */
			seen_gen[i] = gen;
			t->r[i].w[side] += x;
			t->r[i].in[side] = true;
		}
	}
	free(seen_gen);
	return rc;
}

static int by_change(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	double dx = fabs(x->w[1] - x->w[0]), dy = fabs(y->w[1] - y->w[0]);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->name, y->name);
}

int sonde_view__diff_table(const char *base, const char *folded, const char *unit, unsigned top,
			   struct sonde_strbuf *out)
{
	struct dtab t = { .index = SONDE_STRMAP_INIT };
	char *copy[2] = { strdup(base ? base : ""), strdup(folded ? folded : "") };
	size_t i;
	int rc = copy[0] && copy[1] ? 0 : -ENOMEM;

	if (!rc)
		rc = add_side(&t, copy[0], 0);
	if (!rc)
		rc = add_side(&t, copy[1], 1);
	if (!rc) {
		qsort(t.r, t.n, sizeof(*t.r), by_change);
		rc = sonde_strbuf__addf(out, "  %-48s %12s %12s %9s\n", "function (inclusive)",
					"baseline", "target", "change");
	}
	for (i = 0; !rc && i < t.n && i < (top ? top : 20); i++) {
		const struct drow *r = &t.r[i];
		char a[40] = "-", b[40] = "-", ch[24] = "new";

		if (r->in[0])
			sonde_format__value(r->w[0], unit, a, sizeof(a));
		if (r->in[1])
			sonde_format__value(r->w[1], unit, b, sizeof(b));
		if (!r->in[1])
			snprintf(ch, sizeof(ch), "gone");
		else if (r->in[0] && r->w[0] != 0)
			snprintf(ch, sizeof(ch), "%+.1f%%", 100 * (r->w[1] - r->w[0]) / r->w[0]);
		rc = sonde_strbuf__addf(out, "  %*s %*s %*s %9s\n", SONDE_COLS(r->name, -48),
					SONDE_COLS(a, 12), SONDE_COLS(b, 12), ch);
	}
	sonde_strmap__release(&t.index);
	free(t.r);
	free(copy[0]);
	free(copy[1]);
	return rc;
}

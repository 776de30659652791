/*
 * fuzz-profile: the profile loader and every view fed arbitrary bytes. A
 * profile is a file anyone can hand to sonde, so whatever it holds, loading it
 * and drawing it ends in an answer or an error: no crash, no hang, no leak.
 * Bytes that start as gzip or zstd data go through the decompressor first.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "sonde/check.h"
#include "sonde/compress.h"
#include "sonde/profile.h"
#include "sonde/strbuf.h"
#include "sonde/view.h"
#include "views/views.h"

static void fold_frame(struct sonde_strbuf *sb, const char *name)
{
	sonde_strbuf__adds(sb, name);
}

static void charts(const struct sonde_profile *p)
{
	static const char *const cols[] = { "amount", "snapshot", "size", "subtype", "uid", NULL };
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;

	for (size_t i = 0; cols[i]; i++) {
		struct sonde_chart_opts o = {
			.of = "amount",
			.per = cols[i],
			.by = "uid",
			.func = (enum sonde_view_agg)(i % 5),
			.stacked = i & 1,
			.top = 5,
			.title = "t",
		};
		sonde_view__bars(p, &o, &sb);
		sonde_strbuf__reset(&sb);
		sonde_view__flow(p, &o, &sb);
		sonde_strbuf__reset(&sb);
		sonde_view__scatter(p, &o, &sb);
		sonde_strbuf__reset(&sb);
	}
	sonde_strbuf__release(&sb);
}

static void views(struct sonde_profile *p)
{
	struct sonde_strbuf a = SONDE_STRBUF_INIT, b = SONDE_STRBUF_INIT;
	const char *unit = NULL, *weight = sonde_view__flame_weight(p, &unit);
	const char *name = "fuzz";

	sonde_view__table(p, SONDE_VIEW_TEXT, &a);
	sonde_view__warnings(p, "", true, &a);
	sonde_view__table(p, SONDE_VIEW_JSON, &a);
	sonde_view__table(p, SONDE_VIEW_CSV, &a);
	sonde_view__memory(p, SONDE_VIEW_TEXT, 5, &a);
	sonde_view__memory(p, SONDE_VIEW_JSON, 5, &a);
	sonde_view__trace_report(p, SONDE_VIEW_TEXT, "total", 5, &a);
	sonde_view__trace_report(p, SONDE_VIEW_CSV, "calls", 5, &a);
	sonde_view__trace_graph(p, SONDE_VIEW_TEXT, 5, &a);
	sonde_view__trace_graph(p, SONDE_VIEW_JSON, 5, &a);
	sonde_view__counters(p, SONDE_VIEW_TEXT, true, &a);
	sonde_view__counters(p, SONDE_VIEW_MARKDOWN, false, &a);
	sonde_strbuf__reset(&a);
	view_trace_folded(p, true, &a, fold_frame);
	sonde_strbuf__reset(&a);
	sonde_view__perfetto(p, &a);
	sonde_strbuf__reset(&a);
	sonde_view__pprof(p, false, &a);
	sonde_strbuf__reset(&a);
	{
		const struct sonde_profile *one = p;

		sonde_view__timeline_svg(&one, 1, &a);
	}
	sonde_strbuf__reset(&a);
	sonde_view__sched(p, SONDE_VIEW_TEXT, &a);
	sonde_view__sched(p, SONDE_VIEW_JSON, &a);
	sonde_view__system(p, SONDE_VIEW_TEXT, &a);
	sonde_strbuf__reset(&a);
	if (weight && !sonde_view__folded(p, weight, &a) && !sonde_view__folded(p, weight, &b)) {
		struct sonde_strbuf f = SONDE_STRBUF_INIT;

		sonde_view__flame(a.buf ? a.buf : "", NULL, "t", unit, &f);
		sonde_strbuf__reset(&f);
		sonde_view__flame(a.buf ? a.buf : "", b.buf ? b.buf : "", "t", unit, &f);
		sonde_strbuf__release(&f);
	}
	charts(p);
	sonde_strbuf__reset(&a);
	sonde_view__report(&p, &name, 1, &a);
	{
		struct sonde_check_options o = { 0 };
		struct sonde_check_result *r = NULL;
		size_t n = 0;

		if (!sonde_check__compare(p, p, &o, &r, &n))
			sonde_check__free(r, n);
	}
	sonde_strbuf__release(&a);
	sonde_strbuf__release(&b);
}

/* The same scalar, read from the tape and from the tree. */
static bool same_scalar(const struct sonde_scalar *a, const struct sonde_scalar *b)
{
	return a->type == b->type && a->i == b->i &&
	       (a->d == b->d || (a->d != a->d && b->d != b->d)) &&
	       (!a->s || !b->s ? a->s == b->s : !strcmp(a->s, b->s));
}

/*
 * A loaded profile read through its accessors before and after its trees are
 * made, and written before and after: the same answers, the same bytes.
 */
static void packed(struct sonde_profile *p)
{
	static const char *const names[] = { "uid", "type", "subtype", "workload", "n" };
	size_t n = sonde_profile__resource_count(p), i, k, l0, l1, cap = 0, cap2 = 0;
	struct sonde_scalar a[5], b;
	double *v = NULL, *w = NULL;
	const char **f = NULL, *f0[8];
	size_t fcap = 0;
	json_t *fixed, *cols;
	char *t0 = sonde_profile__dump(p, &l0), *t1;

	for (i = 0; i < n && i < 1000; i++) {
		long got = sonde_profile__numbers(p, i, "amount", &v, &cap), again;
		long nf = sonde_profile__fixed_strings(p, i, "trace", "function", &f, &fcap);
		struct sonde_scalar m0, m1;
		struct sonde_strbuf u0 = SONDE_STRBUF_INIT, u1 = SONDE_STRBUF_INIT;
		int r0 = sonde_profile__uid_text(p, i, &u0), r1;

		for (k = 0; k < 5; k++)
			sonde_profile__fixed_scalar(p, i, names[k], &a[k]);
		sonde_profile__fixed_member(p, i, "summary", "bytes", &m0);
		for (k = 0; nf > 0 && k < (size_t)nf && k < 8; k++) /* borrowed: live with p */
			f0[k] = f[k];
		if (sonde_profile__resource_at(p, i, NULL, &fixed, &cols))
			continue;
		again = sonde_profile__numbers(p, i, "amount", &w, &cap2);
		if (got != again)
			abort();
		for (k = 0; got > 0 && k < (size_t)got; k++)
			if (v[k] != w[k] && !(v[k] != v[k] && w[k] != w[k]))
				abort();
		for (k = 0; k < 5; k++)
			if (sonde_profile__fixed_scalar(p, i, names[k], &b) != a[k].type ||
			    !same_scalar(&a[k], &b))
				abort();
		if (sonde_profile__fixed_member(p, i, "summary", "bytes", &m1) != m0.type ||
		    !same_scalar(&m0, &m1))
			abort();
		if (sonde_profile__fixed_strings(p, i, "trace", "function", &f, &fcap) != nf)
			abort();
		for (k = 0; nf > 0 && k < (size_t)nf && k < 8; k++)
			if (!f[k] != !f0[k] || (f[k] && strcmp(f[k], f0[k])))
				abort();
		r1 = sonde_profile__uid_text(p, i, &u1);
		if (r0 != r1 || (u0.buf && u1.buf ? strcmp(u0.buf, u1.buf) : u0.buf != u1.buf))
			abort();
		sonde_strbuf__release(&u0);
		sonde_strbuf__release(&u1);
	}
	free(f);
	free(v);
	free(w);
	sonde_profile__root(p); /* every tree made */
	t1 = sonde_profile__dump(p, &l1);
	if (t0 && t1 && strcmp(t0, t1))
		abort();
	free(t0);
	free(t1);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct sonde_profile *p;
	char *plain = NULL;
	size_t len;

	if (sonde_compress__by_magic(d, n) != SONDE_COMPRESS_NONE) {
		if (sonde_compress__decode(d, n, 16u << 20, &plain, &len))
			return 0;
		d = (const uint8_t *)plain;
		n = len;
	}
	p = sonde_profile__parse((const char *)d, n, "fuzz", NULL);
	free(plain);
	if (!p)
		return 0;
	packed(p);
	views(p);
	sonde_profile__free(p);
	return 0;
}

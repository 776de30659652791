/*
 * fuzz-profile: the profile loader and every view fed arbitrary bytes. A
 * profile is a file anyone can hand to sonde, so whatever it holds, loading it
 * and drawing it ends in an answer or an error: no crash, no hang, no leak.
 * Bytes that start as gzip or zstd data go through the decompressor first.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>
#include "sonde/check.h"
#include "sonde/compress.h"
#include "sonde/profile.h"
#include "sonde/strbuf.h"
#include "cli.h"
#include "view.h"

static FILE *sink;

static void fold_frame(struct sonde_strbuf *sb, const char *name)
{
	sonde_strbuf__adds(sb, name);
}

static void charts(const struct sonde_profile *p)
{
	static const char *const cols[] = { "amount", "snapshot", "size", "subtype", "uid", NULL };
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;

	for (size_t i = 0; cols[i]; i++) {
		struct chart_options o = {
			.of = "amount",
			.per = cols[i],
			.by = "uid",
			.func = (enum view_agg)(i % 5),
			.stacked = i & 1,
			.top = 5,
			.title = "t",
		};
		view_bars(p, &o, &sb);
		sonde_strbuf__reset(&sb);
		view_flow(p, &o, &sb);
		sonde_strbuf__reset(&sb);
		view_scatter(p, &o, &sb);
		sonde_strbuf__reset(&sb);
	}
	sonde_strbuf__release(&sb);
}

static void views(struct sonde_profile *p)
{
	struct sonde_strbuf a = SONDE_STRBUF_INIT, b = SONDE_STRBUF_INIT;
	const char *unit = NULL, *weight = cli_flame_weight(p, &unit);
	const char *name = "fuzz";

	cli_show_table(p, FMT_TEXT, sink, true);
	cli_show_table(p, FMT_JSON, sink, false);
	cli_show_table(p, FMT_CSV, sink, false);
	cli_show_memory(p, FMT_TEXT, 5, sink);
	cli_show_memory(p, FMT_JSON, 5, sink);
	cli_show_report(p, FMT_TEXT, "total", 5, sink);
	cli_show_report(p, FMT_CSV, "calls", 5, sink);
	cli_show_graph(p, FMT_TEXT, 5, sink);
	cli_show_graph(p, FMT_JSON, 5, sink);
	cli_show_counters(p, FMT_TEXT, sink);
	cli_show_counters(p, FMT_MARKDOWN, sink);
	cli_trace_folded(p, true, &a, fold_frame);
	sonde_strbuf__reset(&a);
	cli_trace_perfetto(p, &a);
	sonde_strbuf__reset(&a);
	if (weight && !cli_folded(p, weight, &a) && !cli_folded(p, weight, &b)) {
		struct sonde_strbuf f = SONDE_STRBUF_INIT;

		view_flame(a.buf ? a.buf : "", NULL, "t", unit, &f);
		sonde_strbuf__reset(&f);
		view_flame(a.buf ? a.buf : "", b.buf ? b.buf : "", "t", unit, &f);
		sonde_strbuf__release(&f);
	}
	charts(p);
	sonde_strbuf__reset(&a);
	view_report(&p, &name, 1, &a);
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

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct sonde_profile *p;
	char *plain = NULL;
	size_t len;

	if (!sink)
		sink = fopen("/dev/null", "w");
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
	views(p);
	sonde_profile__free(p);
	return 0;
}

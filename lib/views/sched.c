/*
 * sched.c - the views of the sched and system collectors' profiles: per
 * thread how the scheduler treated it (as perf sched latency and BCC's
 * runqlat/syscount show it, in one report), and the system metrics' summary.
 * Text, or the same rows as JSON. What was not measured is not printed: the
 * /proc source's missing columns are left out and said so.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include "views.h"

static const char *sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* One thread's (or the sum's) metrics, summed over the runs. */
struct trow {
	long long tid, pid;
	const char *name;
	double v[12];
	bool has[12];
};

static const char *const tmetric[12] = { "on-cpu",
					 "runqueue",
					 "sleeping",
					 "blocked",
					 "preempted",
					 "irq",
					 "softirq",
					 "switches-voluntary",
					 "switches-involuntary",
					 "migrations",
					 "wakeups",
					 "interference-index" };

static int tmetric_of(const char *s)
{
	int k;

	for (k = 0; s && k < 12; k++)
		if (!strcmp(tmetric[k], s))
			return k;
	return -1;
}

static double sum_amount(json_t *cols)
{
	json_t *a = json_object_get(cols, "amount"), *v;
	double s = 0;
	size_t i;

	json_array_foreach(a, i, v) s += json_number_value(v);
	return s;
}

static void dur(struct sonde_strbuf *out, double ns, int width)
{
	char b[32];

	sonde_format__duration(ns, b, sizeof(b));
	sonde_strbuf__addf(out, " %*s", SONDE_COLS(b, width));
}

int sonde_view__sched(const struct sonde_profile *p, enum sonde_view_format fmt,
		      struct sonde_strbuf *out)
{
	json_t *st = json_object_get(sonde_profile__stats(p), "sched"), *fixed, *cols, *h, *x;
	size_t n = sonde_profile__resource_count(p), i, nt = 0, k, runs;
	struct trow *t = calloc(n + 1, sizeof(*t));
	bool bpf = sget(st, "source") && !strcmp(sget(st, "source"), "ebpf");
	json_t *calls = json_array();
	int err = 0;

	if (!t || !calls) {
		free(t);
		json_decref(calls);
		return -ENOMEM;
	}
	if (!st || !sonde_profile__type(p) || strcmp(sonde_profile__type(p), "sched")) {
		free(t);
		json_decref(calls);
		return -EINVAL;
	}
	runs = (size_t)json_integer_value(json_object_get(sonde_profile__stats(p), "runs"));
	for (i = 0; i < n; i++) {
		const char *type;
		int m;

		if (sonde_profile__resource_at(p, i, NULL, &fixed, &cols)) {
			free(t); /* a thread left out would read as one that never ran */
			json_decref(calls);
			return -ENOMEM;
		}
		type = sget(fixed, "type");
		if (!sget(fixed, "uid") || !sget(fixed, "subtype")) /* not sonde's: left out */
			continue;
		if (type && !strcmp(type, "syscall")) {
			json_t *c = NULL;

			json_array_foreach(calls, k, x) if (!strcmp(sget(x, "name"),
								    sget(fixed, "uid"))) c = x;
			if (!c) {
				c = json_pack("{s:s}", "name", sget(fixed, "uid"));
				json_array_append_new(calls, c);
			}
			if (!strcmp(sget(fixed, "subtype"), "max")) {
				json_t *a = json_object_get(cols, "amount"), *v;
				double mx = 0;

				json_array_foreach(a, k, v) if (json_number_value(v) > mx) mx =
					json_number_value(v);
				json_object_set_new(c, "max", json_real(mx));
			} else {
				json_object_set_new(c, sget(fixed, "subtype"),
						    json_real(sum_amount(cols)));
			}
			continue;
		}
		if (!type || (strcmp(type, "thread") && strcmp(type, "threads")))
			continue;
		m = tmetric_of(sget(fixed, "subtype"));
		if (m < 0)
			continue;
		for (k = 0; k < nt; k++)
			if (t[k].tid == json_integer_value(json_object_get(fixed, "tid")) &&
			    !strcmp(t[k].name, sget(fixed, "uid")))
				break;
		if (k == nt) {
			t[nt].tid = json_integer_value(json_object_get(fixed, "tid"));
			t[nt].pid = json_integer_value(json_object_get(fixed, "pid"));
			t[nt++].name = sget(fixed, "uid");
		}
		if (m == 11) /* the index is not a sum: recomputed below */
			continue;
		t[k].v[m] = sum_amount(cols);
		t[k].has[m] = true;
	}
	for (k = 0; k < nt; k++) {
		double runnable = t[k].v[0] + t[k].v[1];

		t[k].v[11] = runnable > 0 ? (t[k].v[1] + t[k].v[5] + t[k].v[6]) / runnable : NAN;
		t[k].has[11] = runnable > 0;
	}
	if (fmt == SONDE_VIEW_JSON) {
		json_t *doc = json_object(), *rows = json_array();

		for (k = 0; k < nt; k++) {
			json_t *r = json_pack("{s:s}", "thread", t[k].name);
			int m;

			if (t[k].tid)
				json_object_set_new(r, "tid", json_integer(t[k].tid));
			for (m = 0; m < 12; m++)
				if (t[k].has[m])
					json_object_set_new(r, tmetric[m], json_real(t[k].v[m]));
			json_array_append_new(rows, r);
		}
		json_object_set_new(doc, "threads", rows);
		json_object_set_new(doc, "syscalls", calls);
		json_object_set_new(doc, "source", json_string(bpf ? "ebpf" : "proc"));
		free(t);
		err = sonde_view__json(out, doc, JSON_INDENT(2));
		json_decref(doc);
		return err;
	}
	sonde_strbuf__addf(
		out, "\n Scheduler of '%s' (%zu run%s%s, from %s)\n\n",
		sget(sonde_profile__header(p), "cmd") ? sget(sonde_profile__header(p), "cmd") : "?",
		runs, runs == 1 ? "" : "s", runs > 1 ? ", summed" : "", bpf ? "eBPF" : "/proc");
	sonde_strbuf__addf(out, "  %8s  %-16s %11s %11s", "tid", "thread", "on-CPU", "run-queue");
	if (bpf)
		sonde_strbuf__addf(out, " %11s %11s %11s %11s", "sleeping", "blocked", "preempted",
				   "irq+soft");
	sonde_strbuf__addf(out, " %9s %9s", "vol sw", "invol sw");
	if (bpf)
		sonde_strbuf__addf(out, " %6s", "migr");
	sonde_strbuf__addf(out, " %12s\n", "interference");
	for (k = 0; k < nt; k++) {
		char id[24];

		snprintf(id, sizeof(id), "%lld", t[k].tid);
		sonde_strbuf__addf(out, "  %8s  %*.16s", t[k].tid ? id : "",
				   SONDE_COLS(t[k].name, -16));
		dur(out, t[k].v[0], 11);
		dur(out, t[k].v[1], 11);
		if (bpf) {
			dur(out, t[k].v[2], 11);
			dur(out, t[k].v[3], 11);
			dur(out, t[k].v[4], 11);
			dur(out, t[k].v[5] + t[k].v[6], 11);
		}
		sonde_strbuf__addf(out, " %9.0f %9.0f", t[k].v[7], t[k].v[8]);
		if (bpf)
			sonde_strbuf__addf(out, " %6.0f", t[k].v[9]);
		if (t[k].has[11])
			sonde_strbuf__addf(out, " %12.3f\n", t[k].v[11]);
		else
			sonde_strbuf__addf(out, " %12s\n", "-");
	}
	sonde_strbuf__addf(out, "\n interference index = (run-queue + irq + softirq) / (on-CPU + "
				"run-queue): 0 nothing in the way, 1 always waiting\n");
	if (!bpf) {
		json_t *w = json_object_get(st, "runs_total");

		sonde_strbuf__addf(out,
				   " not measured from /proc: off-CPU time by reason, "
				   "interrupts, migrations, system calls (%s)\n",
				   sget(st, "why_proc") ? sget(st, "why_proc") : "");
		for (k = 0; k < nt && json_is_object(w); k++) {
			double cpu = json_number_value(json_object_get(w, "cpu_ns")),
			       sw = json_number_value(json_object_get(w, "voluntary_switches")) +
				    json_number_value(json_object_get(w, "involuntary_switches"));
			char a[32], b[32];

			if (t[k].tid || strcmp(t[k].name, "all"))
				continue;
			sonde_format__duration(t[k].v[0], a, sizeof(a));
			sonde_format__duration(cpu, b, sizeof(b));
			sonde_strbuf__addf(
				out,
				" the threads read add up to %s of the %s on a CPU that "
				"wait4 gives the whole tree (%.0f %%), and %.0f of its %.0f "
				"switches: a thread that starts and ends between two "
				"readings is not seen\n",
				a, b, cpu > 0 ? 100.0 * t[k].v[0] / cpu : 0.0,
				t[k].v[7] + t[k].v[8], sw);
		}
	} else if (json_is_null(json_object_get(st, "syscall_histograms")))
		sonde_strbuf__adds(out, " system calls: not traced (sonde collect sched --syscalls "
					"traces them)\n");
	h = json_object_get(st, "runqueue_histogram");
	if (json_array_size(h)) {
		double most = 1;

		json_array_foreach(h, i,
				   x) if (json_number_value(json_object_get(x, "count")) > most)
			most = json_number_value(json_object_get(x, "count"));
		sonde_strbuf__adds(out, "\n run-queue latency, all threads\n");
		json_array_foreach(h, i, x)
		{
			char a[32], b[32];
			double c = json_number_value(json_object_get(x, "count"));
			int bar = (int)(40 * c / most + 0.5), j;

			sonde_format__duration(json_number_value(json_object_get(x, "from_ns")), a,
					       sizeof(a));
			sonde_format__duration(json_number_value(json_object_get(x, "to_ns")), b,
					       sizeof(b));
			sonde_strbuf__addf(out, "  %*s .. %*s %9.0f |", SONDE_COLS(a, 10),
					   SONDE_COLS(b, -10), c);
			for (j = 0; j < bar; j++)
				sonde_strbuf__adds(out, "#");
			sonde_strbuf__addch(out, '\n');
		}
	}
	if (json_array_size(calls)) {
		size_t shown = 0;
		bool *done = calloc(json_array_size(calls), sizeof(bool));

		sonde_strbuf__addf(out,
				   "\n system calls, by time (%zu kinds)\n  %-20s %10s %8s "
				   "%11s %11s %11s\n",
				   json_array_size(calls), "call", "calls", "errors", "total",
				   "mean", "max");
		while (done && shown < 15 && shown < json_array_size(calls)) {
			size_t best = 0;
			double bt = -1;

			json_array_foreach(
				calls, i, x) if (!done[i] &&
						 json_number_value(json_object_get(x, "time")) > bt)
			{
				bt = json_number_value(json_object_get(x, "time"));
				best = i;
			}
			done[best] = true;
			x = json_array_get(calls, best);
			{
				double cnt = json_number_value(json_object_get(x, "count"));

				sonde_strbuf__addf(out, "  %-20.20s %10.0f %8.0f",
						   sget(x, "name") ? sget(x, "name") : "?", cnt,
						   json_number_value(json_object_get(x, "errors")));
				dur(out, bt, 11);
				dur(out, cnt > 0 ? bt / cnt : 0, 11);
				dur(out, json_number_value(json_object_get(x, "max")), 11);
				sonde_strbuf__addch(out, '\n');
			}
			shown++;
		}
		free(done);
	}
	free(t);
	json_decref(calls);
	return sonde_strbuf__addch(out, '\n') ? -ENOMEM : 0;
}

/* A system metric's value with its unit: 12.5 %, 3.1 MiB, 40.0 MiB/s, 120.0/s. */
static char *fmt_val(double v, const char *unit, char *buf, size_t len)
{
	char b[32];

	if (!unit || !strcmp(unit, "count"))
		return sonde_format__value(v, NULL, buf, len);
	if (!strcmp(unit, "%"))
		snprintf(buf, len, "%.1f %%", v);
	else if (!strcmp(unit, "B"))
		sonde_format__bytes(v, buf, len);
	else if (!strcmp(unit, "B/s"))
		snprintf(buf, len, "%s/s", sonde_format__bytes(v, b, sizeof(b)));
	else if (!strcmp(unit, "1/s"))
		snprintf(buf, len, "%.1f/s", v);
	else
		sonde_format__value(v, unit, buf, len);
	return buf;
}

int sonde_view__system(const struct sonde_profile *p, enum sonde_view_format fmt,
		       struct sonde_strbuf *out)
{
	json_t *sys = json_object_get(sonde_profile__stats(p), "system");
	json_t *sum = json_object_get(sys, "summary"), *x;
	const char *key;

	if (!json_is_object(sum) || !sonde_profile__type(p) ||
	    strcmp(sonde_profile__type(p), "system"))
		return -EINVAL;
	if (fmt == SONDE_VIEW_JSON)
		return sonde_view__json(out, sys, JSON_INDENT(2));
	sonde_strbuf__addf(
		out, "\n System while '%s' ran: %lld samples every %g ms",
		sget(sonde_profile__header(p), "cmd") ? sget(sonde_profile__header(p), "cmd") : "?",
		(long long)json_integer_value(json_object_get(sys, "samples")),
		json_number_value(json_object_get(sys, "interval_ms")));
	x = json_object_get(sys, "machine_interval_ms");
	if (json_is_number(x) &&
	    json_number_value(x) != json_number_value(json_object_get(sys, "interval_ms")))
		sonde_strbuf__addf(out, " (the machine's every %g ms)", json_number_value(x));
	sonde_strbuf__addf(out, ", %lld CPUs\n\n  %-24s %12s %12s %12s %14s\n",
			   (long long)json_integer_value(json_object_get(sys, "cpus")), "metric",
			   "mean", "p95", "peak", "total");
	json_object_foreach(sum, key, x)
	{
		const char *unit = sget(x, "unit");
		char a[40], b[40], c[40], d[40];

		if (json_is_null(x)) {
			sonde_strbuf__addf(out, "  %-24s %12s\n", key, "<not supported>");
			continue;
		}
		fmt_val(json_number_value(json_object_get(x, "mean")), unit, a, sizeof(a));
		fmt_val(json_number_value(json_object_get(x, "p95")), unit, b, sizeof(b));
		fmt_val(json_number_value(json_object_get(x, "peak")), unit, c, sizeof(c));
		if (json_object_get(x, "total"))
			fmt_val(json_number_value(json_object_get(x, "total")),
				unit && !strcmp(unit, "B/s") ? "B" : "count", d, sizeof(d));
		else
			snprintf(d, sizeof(d), "-");
		sonde_strbuf__addf(out, "  %-24s %*s %*s %*s %*s\n", key, SONDE_COLS(a, 12),
				   SONDE_COLS(b, 12), SONDE_COLS(c, 12), SONDE_COLS(d, 14));
	}
	if (json_is_number(json_object_get(sys, "own_cpu_share")))
		sonde_strbuf__addf(out, "\n sampling cost: %.2f %% of one CPU\n",
				   json_number_value(json_object_get(sys, "own_cpu_share")));
	return sonde_strbuf__addch(out, '\n') ? -ENOMEM : 0;
}

/*
 * table.c - summarise each resource's amount column (see table.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/table.h>

/* A row's label (at most 255 bytes) into buf[256]; its length. */
static size_t make_label(const struct sonde_table_row *r, const char *cmd, bool subtypes, char *buf)
{
	const char *metric = r->subtype ? r->subtype : r->type ? r->type : "amount";
	size_t len = 256, k;

	if (!r->uid || (cmd && !strcmp(r->uid, cmd)))
		k = (size_t)snprintf(buf, len, "%s", metric);
	else if (subtypes && r->subtype && strcmp(r->subtype, r->uid))
		k = (size_t)snprintf(buf, len, "%s (%s)", r->uid, r->subtype);
	else
		k = (size_t)snprintf(buf, len, "%s", r->uid);
	if (r->region && k < len)
		k += (size_t)snprintf(buf + k, len - k, " [region %s]", r->region);
	if (r->workload && k < len)
		snprintf(buf + k, len - k, " @%s", r->workload);
	return strlen(buf);
}

int sonde_table__rows(const struct sonde_profile *p, struct sonde_table_row **rows, size_t *n)
{
	size_t count = sonde_profile__resource_count(p), i, k = 0;
	json_t *units = json_object_get(sonde_profile__header(p), "units");
	struct sonde_table_row *v = calloc(count ? count : 1, sizeof(*v));
	double *x = NULL;
	size_t xcap = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		struct sonde_table_row *r = &v[k];
		long got = sonde_profile__numbers(p, i, "amount", &x, &xcap), j;
		size_t m = 0;

		if (got == -ENOMEM) {
			free(x);
			free(v);
			return -ENOMEM;
		}
		for (j = 0; j < got; j++) /* the numbers, in place */
			if (!isnan(x[j]))
				x[m++] = x[j];
		if (!m)
			continue;
		r->uid = sonde_profile__fixed_string(p, i, "uid");
		r->type = sonde_profile__fixed_string(p, i, "type");
		r->subtype = sonde_profile__fixed_string(p, i, "subtype");
		r->workload = sonde_profile__fixed_string(p, i, "workload");
		r->region = sonde_profile__fixed_string(p, i, "region");
		r->unit = sonde_profile__fixed_string(p, i, "unit");
		if (!r->unit && r->type) /* by type; a mixed profile's by subtype (trace: time) */
			r->unit = json_string_value(json_object_get(units, r->type));
		if (!r->unit && r->subtype)
			r->unit = json_string_value(json_object_get(units, r->subtype));
		if (sonde_stats__summarize(x, m, &r->s)) {
			free(x);
			free(v);
			return -ENOMEM;
		}
		k++;
	}
	free(x);
	{
		const char *cmd =
			json_string_value(json_object_get(sonde_profile__header(p), "cmd"));
		bool subtypes = false;

		for (i = 1; i < k && !subtypes; i++)
			subtypes =
				v[i].subtype && v[0].subtype && strcmp(v[i].subtype, v[0].subtype);
		char label[256], *at;
		size_t total = 0;
		struct sonde_table_row *w;

		/* the labels after the rows, in the same block: freed with it */
		for (i = 0; i < k; i++)
			total += make_label(&v[i], cmd, subtypes, label) + 1;
		w = realloc(v, k * sizeof(*v) + total + 1); /* + 1: never 0 bytes */
		if (!w) {
			free(v);
			return -ENOMEM;
		}
		v = w;
		at = (char *)(v + k);
		for (i = 0; i < k; i++) {
			size_t len = make_label(&v[i], cmd, subtypes, label);

			memcpy(at, label, len + 1);
			v[i].label = at;
			at += len + 1;
		}
	}
	*rows = v;
	*n = k;
	return 0;
}

/*
 * table.c - summarise each resource's amount column (see table.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/table.h>

static void make_label(struct sonde_table_row *r, const char *cmd, bool subtypes)
{
	const char *metric = r->subtype ? r->subtype : r->type ? r->type : "amount";
	size_t len = sizeof(r->label), k;

	if (!r->uid || (cmd && !strcmp(r->uid, cmd)))
		k = (size_t)snprintf(r->label, len, "%s", metric);
	else if (subtypes && r->subtype && strcmp(r->subtype, r->uid))
		k = (size_t)snprintf(r->label, len, "%s (%s)", r->uid, r->subtype);
	else
		k = (size_t)snprintf(r->label, len, "%s", r->uid);
	if (r->region && k < len)
		k += (size_t)snprintf(r->label + k, len - k, " [region %s]", r->region);
	if (r->workload && k < len)
		snprintf(r->label + k, len - k, " @%s", r->workload);
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
		json_t *fixed, *cols, *amount, *a;
		struct sonde_table_row *r = &v[k];
		size_t j, m = 0;

		sonde_profile__resource_at(p, i, NULL, &fixed, &cols);
		amount = json_object_get(cols, "amount");
		if (json_array_size(amount) > xcap) {
			double *nx = realloc(x, json_array_size(amount) * sizeof(*nx));

			if (!nx) {
				free(x);
				free(v);
				return -ENOMEM;
			}
			x = nx;
			xcap = json_array_size(amount);
		}
		json_array_foreach(amount, j, a)
		{
			if (json_is_number(a))
				x[m++] = json_number_value(a);
		}
		if (!m)
			continue;
		r->uid = json_string_value(json_object_get(fixed, "uid"));
		r->type = json_string_value(json_object_get(fixed, "type"));
		r->subtype = json_string_value(json_object_get(fixed, "subtype"));
		r->workload = json_string_value(json_object_get(fixed, "workload"));
		r->region = json_string_value(json_object_get(fixed, "region"));
		r->unit = json_string_value(json_object_get(fixed, "unit"));
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
		for (i = 0; i < k; i++)
			make_label(&v[i], cmd, subtypes);
	}
	*rows = v;
	*n = k;
	return 0;
}

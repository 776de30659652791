/*
 * csv.c - a profile as CSV (see view.h, sonde_view__csv): one line per value
 * row of every resource: uid, type, subtype, then every column any resource
 * has, empty where a resource has none. What `sonde export -f csv` writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <sonde/view.h>

static void csv_field(struct sonde_strbuf *sb, json_t *v)
{
	if (json_is_string(v)) {
		sonde_view__csv_quote(sb, json_string_value(v));
	} else if (v && !json_is_null(v)) {
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));

		if (s)
			sonde_strbuf__adds(sb, s);
		else
			sonde_strbuf__fail(sb, -ENOMEM);
		free(s);
	}
}

int sonde_view__csv(const struct sonde_profile *p, struct sonde_strbuf *out)
{
	size_t n = sonde_profile__resource_count(p), i, r, k, rows;
	json_t *names = json_array(), *seen = json_object();
	const char *key;
	json_t *v, *fixed, *cols;
	int err = !names || !seen;

	for (i = 0; i < n && !err; i++) {
		err |= sonde_profile__resource_at(p, i, NULL, &fixed, &cols);
		json_object_foreach(cols, key, v)
		{
			if (!json_object_get(seen, key)) {
				err |= json_object_set_new(seen, key, json_true());
				err |= json_array_append_new(names, json_string(key));
			}
		}
	}
	sonde_strbuf__adds(out, "uid,type,subtype");
	json_array_foreach(names, k, v) sonde_strbuf__addf(out, ",%s", json_string_value(v));
	sonde_strbuf__addch(out, '\n');
	for (i = 0; i < n && !err; i++) {
		if ((err = sonde_profile__resource_at(p, i, NULL, &fixed, &cols)))
			break;
		rows = 0;
		json_object_foreach(cols, key, v) if (json_array_size(v) > rows) rows =
			json_array_size(v);
		for (r = 0; r < rows; r++) {
			csv_field(out, json_object_get(fixed, "uid"));
			sonde_strbuf__addch(out, ',');
			csv_field(out, json_object_get(fixed, "type"));
			sonde_strbuf__addch(out, ',');
			csv_field(out, json_object_get(fixed, "subtype"));
			json_array_foreach(names, k, v)
			{
				sonde_strbuf__addch(out, ',');
				csv_field(out,
					  json_array_get(
						  json_object_get(cols, json_string_value(v)), r));
			}
			err |= sonde_strbuf__addch(out, '\n');
		}
	}
	json_decref(names);
	json_decref(seen);
	return err ? -ENOMEM : 0;
}

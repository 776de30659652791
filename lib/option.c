/*
 * option.c - table-driven option parsing and --help generation.
 *
 * Accepted forms: -x, -xVALUE, -x VALUE, combined short flags (-vv), --name,
 * --name=VALUE, --name VALUE, "--" to end options. -h/--help are always known.
 * Messages name the option as the user wrote it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/format.h>
#include <sonde/option.h>

void sonde_strlist__release(struct sonde_strlist *l)
{
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

int sonde_strlist__push(struct sonde_strlist *l, const char *s)
{
	const char **v = realloc(l->items, (l->n + 2) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	v[l->n++] = s;
	v[l->n] = NULL;
	l->items = v;
	return 0;
}

void sonde_optparse__release(struct sonde_optparse *st)
{
	sonde_strbuf__release(&st->err);
}

static const struct sonde_option *find_long(const struct sonde_option *o, const char *name,
					    size_t len)
{
	for (; o->type != SONDE_OPT_END; o++) {
		if (o->type == SONDE_OPT_GROUP) {
			const struct sonde_option *f = o->sub ? find_long(o->sub, name, len) : NULL;

			if (f)
				return f;
			continue;
		}
		if (o->long_name && strlen(o->long_name) == len &&
		    !strncmp(o->long_name, name, len))
			return o;
	}
	return NULL;
}

static const struct sonde_option *find_short(const struct sonde_option *o, char c)
{
	for (; o->type != SONDE_OPT_END; o++) {
		if (o->type == SONDE_OPT_GROUP) {
			const struct sonde_option *f = o->sub ? find_short(o->sub, c) : NULL;

			if (f)
				return f;
			continue;
		}
		if (o->short_name && o->short_name == c)
			return o;
	}
	return NULL;
}

bool sonde_option__takes_value(const struct sonde_option *o)
{
	return o->type != SONDE_OPT_FLAG && o->type != SONDE_OPT_COUNT;
}

int sonde_option__value_name(const struct sonde_option *o, struct sonde_strbuf *out)
{
	const char *const *c;
	int rc = 0;

	if (o->argname)
		return sonde_strbuf__adds(out, o->argname);
	if (o->type == SONDE_OPT_DURATION)
		return sonde_strbuf__adds(out, "DURATION");
	if (o->type != SONDE_OPT_CHOICE || !o->choices)
		return sonde_strbuf__adds(out, "VALUE");
	for (c = o->choices; *c; c++)
		rc |= sonde_strbuf__addf(out, "%s%s", c == o->choices ? "" : "|", *c);
	return rc;
}

static const char *param_key(const struct sonde_option *o, char buf[2])
{
	if (o->long_name)
		return o->long_name;
	buf[0] = o->short_name;
	buf[1] = '\0';
	return buf;
}

static int range_error(struct sonde_optparse *st, const char *shown, const char *arg,
		       const struct sonde_option *o)
{
	if (o->min == o->max)
		return 0;
	if (o->type == SONDE_OPT_DURATION) {
		double u = o->unit_s > 0 ? o->unit_s : 1;
		char lo[32], hi[32];

		sonde_strbuf__addf(&st->err,
				   "invalid value '%s' for '%s': must be between %s and %s", arg,
				   shown, sonde_format__duration(o->min * u * 1e9, lo, sizeof(lo)),
				   sonde_format__duration(o->max * u * 1e9, hi, sizeof(hi)));
		return -EINVAL;
	}
	if (isinf(o->max) || o->max >= 1e300)
		sonde_strbuf__addf(&st->err, "invalid value '%s' for '%s': must be at least %.15g",
				   arg, shown, o->min);
	else
		sonde_strbuf__addf(&st->err,
				   "invalid value '%s' for '%s': must be between %.15g and %.15g",
				   arg, shown, o->min, o->max);
	return -EINVAL;
}

static int set_value(const struct sonde_option *o, const char *shown, const char *arg,
		     struct sonde_optparse *st)
{
	char kbuf[2];
	const char *key = param_key(o, kbuf);
	json_t *jv = NULL;
	char *end;

	switch (o->type) {
	case SONDE_OPT_FLAG:
		if (o->value)
			*(bool *)o->value = true;
		jv = json_true();
		break;
	case SONDE_OPT_COUNT: {
		json_t *old = st->params ? json_object_get(st->params, key) : NULL;

		if (o->value)
			(*(int *)o->value)++;
		jv = json_integer(old ? json_integer_value(old) + 1 : 1);
		break;
	}
	case SONDE_OPT_INT: {
		long long v;

		errno = 0;
		v = strtoll(arg, &end, 10);
		if (!*arg || *end || errno) {
			sonde_strbuf__addf(&st->err,
					   "invalid value '%s' for '%s': expected an integer", arg,
					   shown);
			return -EINVAL;
		}
		if (o->min != o->max && (v < o->min || v > o->max))
			return range_error(st, shown, arg, o);
		if (o->value)
			*(long long *)o->value = v;
		jv = json_integer(v);
		break;
	}
	case SONDE_OPT_DOUBLE: {
		double v;

		errno = 0;
		v = strtod(arg, &end);
		if (!*arg || *end || errno || !isfinite(v)) {
			sonde_strbuf__addf(&st->err,
					   "invalid value '%s' for '%s': expected a number", arg,
					   shown);
			return -EINVAL;
		}
		if (o->min != o->max && (v < o->min || v > o->max))
			return range_error(st, shown, arg, o);
		if (o->value)
			*(double *)o->value = v;
		jv = json_real(v);
		break;
	}
	case SONDE_OPT_DURATION: {
		double unit = o->unit_s > 0 ? o->unit_s : 1, secs, v;

		if (sonde_format__parse_duration(arg, unit, &secs)) {
			sonde_strbuf__addf(&st->err,
					   "invalid value '%s' for '%s': expected a duration such "
					   "as 500ms, 2s or 1m (a plain number is in %s)",
					   arg, shown,
					   unit == 1	  ? "seconds"
					   : unit == 1e-3 ? "milliseconds"
					   : unit == 1e-6 ? "microseconds"
					   : unit == 1e-9 ? "nanoseconds"
							  : "the option's unit");
			return -EINVAL;
		}
		v = secs / unit;
		if (o->min != o->max && (v < o->min || v > o->max))
			return range_error(st, shown, arg, o);
		if (o->value)
			*(double *)o->value = v;
		jv = json_real(v);
		break;
	}
	case SONDE_OPT_CHOICE: {
		const char *const *c;

		for (c = o->choices; c && *c; c++)
			if (!strcmp(*c, arg))
				break;
		if (!c || !*c) {
			sonde_strbuf__addf(&st->err,
					   "invalid value '%s' for '%s': expected one of ", arg,
					   shown);
			for (c = o->choices; c && *c; c++)
				sonde_strbuf__addf(&st->err, "%s%s", c == o->choices ? "" : ", ",
						   *c);
			return -EINVAL;
		}
	}
		/* fall through */
	case SONDE_OPT_STRING:
		if (o->value)
			*(const char **)o->value = arg;
		jv = json_string(arg);
		break;
	case SONDE_OPT_LIST:
		if (o->value && sonde_strlist__push(o->value, arg))
			return -ENOMEM;
		if (st->params) {
			json_t *arr = json_object_get(st->params, key);

			if (!arr &&
			    (!(arr = json_array()) || json_object_set_new(st->params, key, arr)))
				return -ENOMEM;
			if (json_array_append_new(arr, json_string(arg)))
				return -ENOMEM;
		}
		return 0;
	default:
		return -EINVAL;
	}
	/* the parameters are the profile's record of how it was made: none left out */
	if (!st->params) {
		json_decref(jv);
		return 0;
	}
	return !jv || json_object_set_new(st->params, key, jv) ? -ENOMEM : 0;
}

int sonde_options__parse(const struct sonde_option *opts, int argc, char **argv,
			 struct sonde_optparse *st)
{
	char **pos = calloc((size_t)argc + 1, sizeof(*pos));
	int npos = 0, i, k, err = 0;

	if (!pos)
		return -ENOMEM;
	for (i = 0; i < argc; i++) {
		char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || a[1] == '\0') {
			if (!(st->flags & SONDE_OPTPARSE_PERMUTE))
				break;
			pos[npos++] = a;
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			const struct sonde_option *o = find_long(opts, name, len);
			char shown[128];

			snprintf(shown, sizeof(shown), "--%.*s", (int)len, name);
			if (!o && len == 4 && !strncmp(name, "help", 4)) {
				st->help = true;
				continue;
			}
			if (!o) {
				const char **names = sonde_options__names(opts);
				char *word = strndup(name, len);
				const char *near =
					names && word ? sonde_options__suggest(word, names) : NULL;

				sonde_strbuf__addf(&st->err, "unknown option '%s'", shown);
				if (near)
					sonde_strbuf__addf(&st->err, "; did you mean '--%s'?",
							   near);
				free(names);
				free(word);
				err = -EINVAL;
				goto out;
			}
			if (!sonde_option__takes_value(o)) {
				if (eq) {
					sonde_strbuf__addf(&st->err, "option '%s' takes no value",
							   shown);
					err = -EINVAL;
					goto out;
				}
				err = set_value(o, shown, NULL, st);
			} else if (eq) {
				err = set_value(o, shown, eq + 1, st);
			} else if (i + 1 < argc) {
				err = set_value(o, shown, argv[++i], st);
			} else {
				sonde_strbuf__addf(&st->err, "option '%s' needs a value", shown);
				err = -EINVAL;
			}
			if (err)
				goto out;
			continue;
		}
		for (k = 1; a[k]; k++) {
			const struct sonde_option *o = find_short(opts, a[k]);
			char shown[3] = { '-', a[k], '\0' };

			if (!o && a[k] == 'h') {
				st->help = true;
				continue;
			}
			if (!o) {
				sonde_strbuf__addf(&st->err, "unknown option '%s'", shown);
				err = -EINVAL;
				goto out;
			}
			if (!sonde_option__takes_value(o)) {
				err = set_value(o, shown, NULL, st);
				if (err)
					goto out;
				continue;
			}
			if (a[k + 1])
				err = set_value(o, shown, a + k + 1, st);
			else if (i + 1 < argc)
				err = set_value(o, shown, argv[++i], st);
			else {
				sonde_strbuf__addf(&st->err, "option '%s' needs a value", shown);
				err = -EINVAL;
			}
			if (err)
				goto out;
			break;
		}
	}
	/* Positionals first seen go before the unparsed rest, in order. */
	{
		int rest = argc - i, first = argc - rest - npos;

		memmove(argv + first + npos, argv + i, (size_t)rest * sizeof(*argv));
		memcpy(argv + first, pos, (size_t)npos * sizeof(*argv));
		err = first;
	}
out:
	free(pos);
	return err;
}

static int help_table(const struct sonde_option *o, struct sonde_strbuf *out)
{
	for (; o->type != SONDE_OPT_END; o++) {
		struct sonde_strbuf left = SONDE_STRBUF_INIT;

		if (o->type == SONDE_OPT_GROUP) {
			if (o->help)
				sonde_strbuf__addf(out, "\n%s:\n", o->help);
			if (o->sub)
				help_table(o->sub, out);
			continue;
		}
		sonde_strbuf__adds(&left, "  ");
		if (o->short_name)
			sonde_strbuf__addf(&left, "-%c%s", o->short_name, o->long_name ? ", " : "");
		else
			sonde_strbuf__adds(&left, "    ");
		if (o->long_name)
			sonde_strbuf__addf(&left, "--%s", o->long_name);
		if (sonde_option__takes_value(o)) {
			sonde_strbuf__addch(&left, ' ');
			sonde_option__value_name(o, &left);
		}
		if (left.len < 30)
			sonde_strbuf__addf(out, "%-30s%s\n", left.buf, o->help ? o->help : "");
		else
			sonde_strbuf__addf(out, "%s\n%-30s%s\n", left.buf, "",
					   o->help ? o->help : "");
		sonde_strbuf__release(&left);
	}
	return 0;
}

int sonde_options__help(const struct sonde_option *opts, struct sonde_strbuf *out)
{
	help_table(opts, out);
	return sonde_strbuf__addf(out, "  -h, --help                  show this help\n");
}

static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, row[64], prev, tmp;

	if (la >= 63 || lb >= 63)
		return (size_t)-1;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			/* a swap of two neighbours counts one */
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    best > prev)
				best = prev;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

const char *sonde_options__suggest(const char *word, const char *const *cands)
{
	size_t len = strlen(word), limit = len / 3, best = (size_t)-1, d;
	const char *pick = NULL, *prefix = NULL;
	int prefixes = 0;

	if (!len)
		return NULL;
	if (limit < 1)
		limit = 1;
	if (limit > 3)
		limit = 3;
	for (; *cands; cands++) {
		if (!strncmp(*cands, word, len)) {
			prefixes++;
			prefix = *cands;
		}
		d = distance(word, *cands);
		if (d < best) {
			best = d;
			pick = *cands;
		}
	}
	if (prefixes == 1)
		return prefix;
	return best <= limit ? pick : NULL;
}

static void collect_names(const struct sonde_option *o, struct sonde_strlist *l)
{
	for (; o->type != SONDE_OPT_END; o++) {
		if (o->type == SONDE_OPT_GROUP) {
			if (o->sub)
				collect_names(o->sub, l);
		} else if (o->long_name) {
			sonde_strlist__push(l, o->long_name);
		}
	}
}

const char **sonde_options__names(const struct sonde_option *opts)
{
	struct sonde_strlist l = { 0 };

	collect_names(opts, &l);
	sonde_strlist__push(&l, "help");
	return l.items;
}

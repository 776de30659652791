/*
 * config.c - sonde's YAML configuration (config.h): libyaml's document
 * loader and emitter on one side, jansson trees on the other.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>
#include <sonde/config.h>
#include <sonde/file.h>
#include <sonde/store.h>

#define MAX_NODES 100000 /* past this a document is refused (aliases can expand it) */

int sonde_config__xdg_dir(const char *var, const char *fallback, char **dir)
{
	const char *xdg = getenv(var), *home = getenv("HOME");
	int n;

	*dir = NULL;
	if (xdg && *xdg == '/')
		n = asprintf(dir, "%s/sonde", xdg);
	else if (home && *home == '/')
		n = asprintf(dir, "%s/%s/sonde", home, fallback);
	else
		return -ENOENT;
	if (n < 0) {
		*dir = NULL;
		return -ENOMEM;
	}
	return 0;
}

int sonde_config__path(enum sonde_config_scope scope, const char *dir, char **path)
{
	const char *env = getenv("SONDE_CONFIG");
	char *top;
	int n, rc;

	*path = NULL;
	switch (scope) {
	case SONDE_CONFIG_LOCAL:
		top = sonde_store__find(dir ? dir : ".");
		if (!top)
			return -ENOENT;
		n = asprintf(path, "%s/.sonde/config.yaml", strcmp(top, "/") ? top : "");
		free(top);
		break;
	case SONDE_CONFIG_USER:
		if (env && *env) {
			n = asprintf(path, "%s", env);
			break;
		}
		rc = sonde_config__xdg_dir("XDG_CONFIG_HOME", ".config", &top);
		if (rc)
			return rc;
		n = asprintf(path, "%s/config.yaml", top);
		free(top);
		break;
	default:
		return -EINVAL;
	}
	if (n < 0) {
		*path = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- reading ----------------------------------------------------------------------------- */

/* A plain scalar as YAML 1.2's core schema types it. */
static json_t *plain(const char *s)
{
	char *end;
	long long i;
	double d;

	if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
	    !strcmp(s, "NULL"))
		return json_null();
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return json_true();
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return json_false();
	if (strspn(s, "+-0123456789") && !strpbrk(s, " \t")) {
		errno = 0;
		i = strtoll(s, &end, 10);
		if (!*end && !errno && end != s)
			return json_integer(i);
		d = strtod(s, &end);
		if (!*end && end != s && isfinite(d) && !strpbrk(s, "xXpP"))
			return json_real(d);
	}
	if (*s == '.' && s[1] >= '0' && s[1] <= '9') {
		d = strtod(s, &end);
		if (!*end && isfinite(d))
			return json_real(d);
	}
	return json_string(s);
}

struct conv {
	yaml_document_t *doc;
	const char *name;
	struct sonde_strbuf *err;
	size_t nodes;
	int depth;
};

static int conv_bad(struct conv *c, const yaml_node_t *n, const char *what)
{
	sonde_strbuf__addf(c->err, "%s:%zu:%zu: %s", c->name, n ? n->start_mark.line + 1 : 0,
			   n ? n->start_mark.column + 1 : 0, what);
	return -EINVAL;
}

static int to_json(struct conv *c, yaml_node_t *n, json_t **out)
{
	yaml_node_item_t *it;
	yaml_node_pair_t *pr;
	json_t *v = NULL;
	int rc = 0;

	*out = NULL;
	if (++c->nodes > MAX_NODES) {
		sonde_strbuf__addf(c->err,
				   "%s: more than %d values (each use of an alias counts the "
				   "values it names again)",
				   c->name, MAX_NODES);
		return -E2BIG;
	}
	if (++c->depth > 64) {
		c->depth--;
		return conv_bad(c, n, "nested deeper than 64 levels");
	}
	switch (n->type) {
	case YAML_SCALAR_NODE: {
		const char *s = (const char *)n->data.scalar.value;

		if (strlen(s) != n->data.scalar.length)
			rc = conv_bad(c, n, "a NUL character in a value");
		else
			v = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain(s)
									    : json_string(s);
		if (!rc && !v)
			rc = conv_bad(c, n, "a value that is not UTF-8");
		break;
	}
	case YAML_SEQUENCE_NODE:
		v = json_array();
		for (it = n->data.sequence.items.start; v && !rc && it < n->data.sequence.items.top;
		     it++) {
			json_t *x;

			rc = to_json(c, yaml_document_get_node(c->doc, *it), &x);
			if (!rc && json_array_append_new(v, x))
				rc = -ENOMEM;
		}
		break;
	case YAML_MAPPING_NODE:
		v = json_object();
		for (pr = n->data.mapping.pairs.start; v && !rc && pr < n->data.mapping.pairs.top;
		     pr++) {
			yaml_node_t *k = yaml_document_get_node(c->doc, pr->key);
			json_t *x;

			if (!k || k->type != YAML_SCALAR_NODE) {
				rc = conv_bad(c, k, "a key that is not a plain value");
				break;
			}
			rc = to_json(c, yaml_document_get_node(c->doc, pr->value), &x);
			if (!rc && json_object_set_new(v, (const char *)k->data.scalar.value, x))
				rc = conv_bad(c, k, "a key that is not UTF-8");
		}
		break;
	default:
		rc = conv_bad(c, n, "an empty node");
	}
	c->depth--;
	if (!rc && !v)
		rc = -ENOMEM;
	if (rc) {
		json_decref(v);
		return rc;
	}
	*out = v;
	return 0;
}

/*
 * Collections nested deeper than 64, found by a first pass over libyaml's
 * events that stops at the 65th level: its scanner looks at every open flow
 * level for each token, so loading 100 000 nested [ took 22 s before the
 * depth check of to_json could refuse them. Errors of the text are left to
 * the loader (which says them with its own place). Returns 0 or -EINVAL.
 */
static int depth_ok(const char *yaml, size_t len, const char *name, struct sonde_strbuf *err)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, rc = 0;
	bool done = false;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	while (!done && !rc && yaml_parser_parse(&parser, &ev)) {
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
			if (++depth > 64) {
				sonde_strbuf__addf(err, "%s:%zu:%zu: nested deeper than 64 levels",
						   name, ev.start_mark.line + 1,
						   ev.start_mark.column + 1);
				rc = -EINVAL;
			}
		} else if (ev.type == YAML_SEQUENCE_END_EVENT ||
			   ev.type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return rc;
}

static int parse_any(const char *yaml, size_t len, const char *name, json_t **out,
		     struct sonde_strbuf *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	int rc;

	*out = NULL;
	rc = depth_ok(yaml, len, name, err);
	if (rc)
		return rc;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &doc)) {
		sonde_strbuf__addf(err, "%s:%zu:%zu: %s", name, parser.problem_mark.line + 1,
				   parser.problem_mark.column + 1,
				   parser.problem ? parser.problem : "not YAML");
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		*out = json_null(); /* no document */
		rc = 0;
	} else {
		struct conv c = { &doc, name, err, 0, 0 };

		rc = to_json(&c, root, out);
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return rc;
}

int sonde_config__parse(const char *yaml, size_t len, const char *name, json_t **out,
			struct sonde_strbuf *err)
{
	int rc = parse_any(yaml, len, name, out, err);

	if (rc)
		return rc;
	if (json_is_null(*out)) {
		*out = json_object();
		return *out ? 0 : -ENOMEM;
	}
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		sonde_strbuf__addf(err, "%s: the top is not a mapping of keys to values", name);
		return -EINVAL;
	}
	return 0;
}

int sonde_config__read(const char *path, json_t **out, struct sonde_strbuf *err)
{
	char *buf;
	size_t len;
	int rc = sonde_file__read(path, &buf, &len);

	*out = NULL;
	if (rc == -ENOENT) {
		*out = json_object();
		return *out ? 0 : -ENOMEM;
	}
	if (rc) {
		sonde_strbuf__addf(err, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = sonde_config__parse(buf, len, path, out, err);
	free(buf);
	return rc;
}

json_t *sonde_config__merge(json_t *near, json_t *far)
{
	const char *k;
	json_t *v, *r;
	size_t i, j;

	if (json_is_object(near) && json_is_object(far)) {
		r = json_deep_copy(far);
		json_object_foreach(near, k, v)
		{
			json_t *m = sonde_config__merge(v, json_object_get(far, k));

			if (!r || !m || json_object_set_new(r, k, m)) {
				json_decref(r);
				return NULL;
			}
		}
		return r;
	}
	if (json_is_array(near) && json_is_array(far)) {
		r = json_deep_copy(near);
		json_array_foreach(far, i, v)
		{
			for (j = 0;
			     r && j < json_array_size(r) && !json_equal(json_array_get(r, j), v);
			     j++)
				;
			if (r && j == json_array_size(r) && json_array_append(r, v)) {
				json_decref(r);
				return NULL;
			}
		}
		return r;
	}
	return json_deep_copy(near ? near : far);
}

int sonde_config__load(enum sonde_config_scope scope, const char *dir, json_t **out,
		       struct sonde_strbuf *err)
{
	json_t *local = NULL, *user = NULL;
	char *path = NULL;
	int rc;

	*out = NULL;
	if (scope != SONDE_CONFIG_MERGED) {
		rc = sonde_config__path(scope, dir, &path);
		if (rc == -ENOENT && scope == SONDE_CONFIG_LOCAL)
			sonde_strbuf__adds(err, "no sonde store here or above (sonde init)");
		else if (rc == -ENOENT)
			sonde_strbuf__adds(err, "no user configuration: HOME is not set");
		if (!rc)
			rc = sonde_config__read(path, out, err);
		free(path);
		return rc;
	}
	rc = sonde_config__path(SONDE_CONFIG_LOCAL, dir, &path);
	if (!rc)
		rc = sonde_config__read(path, &local, err);
	else if (rc == -ENOENT)
		rc = 0;
	free(path);
	path = NULL;
	if (!rc) {
		rc = sonde_config__path(SONDE_CONFIG_USER, dir, &path);
		if (!rc)
			rc = sonde_config__read(path, &user, err);
		else if (rc == -ENOENT)
			rc = 0;
		free(path);
	}
	if (!rc) {
		*out = sonde_config__merge(local ? local : user, local ? user : NULL);
		if (!*out)
			*out = json_object();
		if (!*out)
			rc = -ENOMEM;
	}
	json_decref(local);
	json_decref(user);
	return rc;
}

/* ---- keys -------------------------------------------------------------------------------- */

/* The next part of a dotted key into part (NUL-terminated); NULL at the end. */
static const char *next_part(const char *key, char *part, size_t size, int *bad)
{
	size_t n;

	if (!key)
		return NULL;
	n = strcspn(key, ".");
	if (!n || n >= size)
		*bad = 1;
	snprintf(part, size, "%.*s", (int)n, key);
	return key[n] ? key + n + 1 : NULL;
}

static bool index_of(const char *part, size_t *i)
{
	char *end;
	unsigned long v;

	if (!*part || strspn(part, "0123456789") != strlen(part))
		return false;
	v = strtoul(part, &end, 10);
	*i = (size_t)v;
	return true;
}

json_t *sonde_config__get(json_t *cfg, const char *key)
{
	char part[256];
	int bad = 0;
	size_t i;

	while (cfg && key) {
		key = next_part(key, part, sizeof(part), &bad);
		if (bad)
			return NULL;
		if (json_is_array(cfg) && index_of(part, &i))
			cfg = json_array_get(cfg, i);
		else
			cfg = json_object_get(cfg, part);
	}
	return cfg;
}

/*
 * The keys sonde reads (docs/config.md), and Perun's that it does not: an
 * object key with ".*" takes any member (registered_collectors' names).
 */
static const char *const read_keys[] = {
	"cmds",
	"args",
	"workloads",
	"collectors",
	"postprocessors",
	"execute.pre_run",
	"generators.workload",
	"generators.workload_dir",
	"profile_for_each_workload",
	"profiles.register_after_run",
	"degradation.strategies",
	"degradation.cutoff",
	"degradation.apply",
	"registered_collectors.*",
	"format.output_profile_template",
	NULL,
};
static const char *const perun_keys[] = {
	"vcs.*",
	"general.*",
	"format.status",
	"format.shortlog",
	"format.output_show_template",
	"format.sort_profiles_by",
	"degradation.collect_before_check",
	"degradation.log_collect",
	"degradation.location_filter",
	NULL,
};

/* 1: key is in the list, 2: key is an object the list has members of, 0: neither. */
static int listed(const char *const *list, const char *key)
{
	size_t n = strlen(key), i;
	int r = 0;

	for (i = 0; list[i]; i++) {
		size_t m = strlen(list[i]);

		if (!strcmp(list[i], key))
			return 1;
		if (m > 2 && !strcmp(list[i] + m - 2, ".*") && !strncmp(list[i], key, m - 2) &&
		    (key[m - 2] == '.' || !key[m - 2]))
			return 1;
		if (m > n && !strncmp(list[i], key, n) && list[i][n] == '.')
			r = 2;
	}
	return r;
}

static size_t unread(json_t *obj, const char *prefix,
		     void (*fn)(void *ctx, const char *key, bool perun), void *ctx)
{
	const char *k;
	json_t *v;
	size_t count = 0;

	json_object_foreach(obj, k, v)
	{
		char key[512];
		int r, p;

		snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", k);
		r = listed(read_keys, key);
		p = listed(perun_keys, key);
		if (r == 1)
			continue;
		if ((r == 2 || p == 2) && json_is_object(v)) {
			count += unread(v, key, fn, ctx);
			continue;
		}
		fn(ctx, key, p == 1);
		count++;
	}
	return count;
}

size_t sonde_config__unread_keys(json_t *cfg, void (*fn)(void *ctx, const char *key, bool perun),
				 void *ctx)
{
	return json_is_object(cfg) ? unread(cfg, "", fn, ctx) : 0;
}

/* What a missing part becomes: a list when the next part is a number, else a mapping. */
static json_t *container_for(const char *rest)
{
	char part[256];
	int bad = 0;
	size_t i;

	next_part(rest, part, sizeof(part), &bad);
	return !bad && index_of(part, &i) ? json_array() : json_object();
}

int sonde_config__set(json_t *cfg, const char *key, json_t *value)
{
	char part[256];
	int bad = 0;
	size_t i;

	if (!value)
		return -ENOMEM;
	while (key) {
		const char *rest = next_part(key, part, sizeof(part), &bad);
		json_t *next;

		if (bad)
			break;
		if (json_is_array(cfg)) {
			if (!index_of(part, &i) || i > json_array_size(cfg)) {
				bad = 1;
				break;
			}
			if (!rest) {
				if (i == json_array_size(cfg) ? json_array_append_new(cfg, value)
							      : json_array_set_new(cfg, i, value))
					return -ENOMEM;
				return 0;
			}
			next = json_array_get(cfg, i);
			if (!next) {
				next = container_for(rest);
				if (!next || json_array_append_new(cfg, next)) {
					json_decref(value);
					return -ENOMEM;
				}
			}
		} else if (json_is_object(cfg)) {
			if (!rest)
				return json_object_set_new(cfg, part, value) ? -ENOMEM : 0;
			next = json_object_get(cfg, part);
			if (!next) {
				next = container_for(rest);
				if (!next || json_object_set_new(cfg, part, next)) {
					json_decref(value);
					return -ENOMEM;
				}
			}
		} else {
			bad = 1;
			break;
		}
		cfg = next;
		key = rest;
	}
	json_decref(value);
	return -EINVAL;
}

int sonde_config__value(const char *text, json_t **out, struct sonde_strbuf *err)
{
	struct sonde_strbuf ignored = SONDE_STRBUF_INIT;
	int rc = parse_any(text, strlen(text), "the value", out, &ignored);

	sonde_strbuf__release(&ignored);
	(void)err;
	if (rc == -EINVAL) { /* not YAML ("%d-%s", "a: b: c"): the text itself */
		*out = json_string(text);
		return *out ? 0 : -ENOMEM;
	}

	if (!rc && json_is_null(*out) && *text && strcmp(text, "~") && strcmp(text, "null")) {
		json_decref(*out); /* a comment, or only spaces: the text as it is */
		*out = json_string(text);
	}
	return rc;
}

/* ---- writing ----------------------------------------------------------------------------- */

struct sb_sink {
	struct sonde_strbuf *sb;
	int err;
};

static int sink_write(void *data, unsigned char *buf, size_t size)
{
	struct sb_sink *s = data;

	if (sonde_strbuf__add(s->sb, buf, size)) {
		s->err = -ENOMEM;
		return 0;
	}
	return 1;
}

static int scalar_event(yaml_emitter_t *e, const char *text, bool is_string)
{
	yaml_event_t ev;
	json_t *back = NULL;
	bool quote = false;

	if (is_string) { /* a string that would read back as something else is quoted */
		back = *text ? plain(text) : NULL;
		quote = !*text || !json_is_string(back);
		json_decref(back);
	}
	if (!yaml_scalar_event_initialize(
		    &ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), !quote, 1,
		    quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE))
		return -ENOMEM;
	return yaml_emitter_emit(e, &ev) ? 0 : -EINVAL;
}

static int emit(yaml_emitter_t *e, json_t *v)
{
	yaml_event_t ev;
	const char *k;
	json_t *x;
	size_t i;
	char num[64];
	int rc = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							 YAML_BLOCK_MAPPING_STYLE) ||
		    !yaml_emitter_emit(e, &ev))
			return -EINVAL;
		json_object_foreach(v, k, x)
		{
			rc = scalar_event(e, k, true);
			if (!rc)
				rc = emit(e, x);
			if (rc)
				return rc;
		}
		return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev)
			       ? 0
			       : -EINVAL;
	case JSON_ARRAY:
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							  YAML_BLOCK_SEQUENCE_STYLE) ||
		    !yaml_emitter_emit(e, &ev))
			return -EINVAL;
		json_array_foreach(v, i, x)
		{
			rc = emit(e, x);
			if (rc)
				return rc;
		}
		return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev)
			       ? 0
			       : -EINVAL;
	case JSON_STRING:
		return scalar_event(e, json_string_value(v), true);
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		return scalar_event(e, num, false);
	case JSON_REAL:
		snprintf(num, sizeof(num), "%.17g", json_real_value(v));
		if (!strpbrk(num, ".eE"))
			strcat(num, ".0");
		return scalar_event(e, num, false);
	case JSON_TRUE:
		return scalar_event(e, "true", false);
	case JSON_FALSE:
		return scalar_event(e, "false", false);
	default:
		return scalar_event(e, "null", false);
	}
}

int sonde_config__dump(json_t *cfg, struct sonde_strbuf *out)
{
	yaml_emitter_t e;
	yaml_event_t ev;
	struct sb_sink s = { out, 0 };
	int rc = -EINVAL;

	if (!yaml_emitter_initialize(&e))
		return -ENOMEM;
	yaml_emitter_set_output(&e, sink_write, &s);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_indent(&e, 2);
	if (yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
	    yaml_emitter_emit(&e, &ev) &&
	    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
	    yaml_emitter_emit(&e, &ev) && !emit(&e, cfg) &&
	    yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev) &&
	    yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev) &&
	    yaml_emitter_flush(&e))
		rc = 0;
	yaml_emitter_delete(&e);
	return s.err ? s.err : rc;
}

int sonde_config__write_text(const char *path, const char *text, size_t len)
{
	char *dir = strdup(path), *slash;

	if (!dir)
		return -ENOMEM;
	/* the user's directory (~/.config/sonde) may not exist yet, nor ~/.config */
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		char *up;

		*slash = 0;
		up = strrchr(dir, '/');
		if (up && up != dir) {
			*up = 0;
			mkdir(dir, 0755);
			*up = '/';
		}
		mkdir(dir, 0755);
	}
	free(dir);
	return sonde_file__write_atomic(path, text, len);
}

int sonde_config__write(const char *path, json_t *cfg)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	int rc = sonde_config__dump(cfg, &sb);

	if (!rc)
		rc = sonde_config__write_text(path, sb.buf, sb.len);
	sonde_strbuf__release(&sb);
	return rc;
}

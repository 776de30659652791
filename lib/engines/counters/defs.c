/*
 * defs.c - the counter_defs.yaml loader (rocprofiler-sdk's format), on
 * libyaml's document API.
 *
 *   NAME:
 *     architectures:
 *       ARCH[/ARCH...]:
 *         block: PMU        # hardware: a libpfm4 PMU, or "perf" (an alias of
 *         event: EVENT      #   one of perf's generic events)
 *         expression: EXPR  # derived (never with block/event)
 *         description: TEXT # optional, per architecture
 *     description: TEXT
 *     unit: UNIT            # optional (sonde's addition): "ns", "%", "/s", ...
 *
 * and one top-level key for groups (sonde's addition):
 *
 *   groups:
 *     NAME:
 *       description: TEXT
 *       architectures:
 *         ARCH[/ARCH...]:
 *           counters: [COUNTER, ...]   # events and derived metrics
 *
 * Every entry is checked, whichever architecture it is for; the one handed
 * over is the entry for arch, else the one for "generic". The walk only
 * follows the schema's fixed depth, so aliases cannot make it explode.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>
#include "counters.h"

#define DEFS_MAX_BYTES (4u << 20)

struct walk {
	yaml_document_t *doc;
	const char *file;
	struct sonde_strbuf *err;
};

static int bad(struct walk *w, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(struct walk *w, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;

	sonde_strbuf__addf(w->err, "%s:%zu:%zu: ", w->file, n ? n->start_mark.line + 1 : 1,
			   n ? n->start_mark.column + 1 : 1);
	va_start(ap, fmt);
	sonde_strbuf__vaddf(w->err, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static bool valid_name(const char *s)
{
	size_t i;

	if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return false;
	for (i = 1; s[i]; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return false;
	return i <= 128;
}

/* Whether the '/'-separated list keys names arch. */
bool cnt_defs__arch_listed(const char *keys, const char *arch)
{
	size_t len = strlen(arch);
	const char *p = keys;

	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n == len && !strncmp(p, arch, len))
			return true;
		if (!slash)
			break;
		p = slash + 1;
	}
	return false;
}

/* One architectures entry: fill d from it (checked). */
static int read_entry(struct walk *w, const char *name, yaml_node_t *key, yaml_node_t *val,
		      struct cnt_def *d)
{
	yaml_node_pair_t *pr;

	if (!scalar(key) || !*scalar(key))
		return bad(w, key, "%s: an architecture name must be a non-empty string", name);
	if (val->type != YAML_MAPPING_NODE)
		return bad(w, val, "%s: architecture '%s' must map block/event or expression", name,
			   scalar(key));
	d->block = d->event = d->expression = NULL;
	for (pr = val->data.mapping.pairs.start; pr < val->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, pr->value);
		const char *ks = scalar(k), *vs = scalar(v);

		if (!ks)
			return bad(w, k, "%s: keys must be strings", name);
		if (!vs)
			return bad(w, v, "%s: '%s' must be a string", name, ks);
		if (!strcmp(ks, "block")) {
			d->block = vs;
		} else if (!strcmp(ks, "event")) {
			d->event = vs;
		} else if (!strcmp(ks, "expression")) {
			d->expression = vs;
			d->expr_line = (int)v->start_mark.line + 1;
			d->expr_col = (int)v->start_mark.column + 1 +
				      (v->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
				       v->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE);
		} else if (!strcmp(ks, "description")) {
			if (!d->description)
				d->description = vs;
		} else {
			return bad(w, k,
				   "%s: unknown key '%s' (expected block, event, expression, "
				   "description)",
				   name, ks);
		}
	}
	if (d->expression && (d->block || d->event))
		return bad(w, val, "%s: a derived metric has an expression and no block or event",
			   name);
	if (!d->expression && (!d->block || !d->event || !*d->block || !*d->event))
		return bad(w, val, "%s: give either block and event, or expression", name);
	if (d->expression && !*d->expression)
		return bad(w, val, "%s: empty expression", name);
	return 0;
}

static int read_counter(struct walk *w, yaml_node_t *key, yaml_node_t *val, const char *arch,
			int (*fn)(void *, const struct cnt_def *, struct sonde_strbuf *), void *ctx)
{
	const char *name = scalar(key);
	yaml_node_t *archs = NULL, *chosen_k = NULL, *chosen_v = NULL, *generic_k = NULL,
		    *generic_v = NULL;
	struct cnt_def d = { 0 }, tmp;
	yaml_node_pair_t *pr;
	int rc;

	if (!valid_name(name))
		return bad(w, key,
			   "'%s' is not a counter name (letters, digits, '_', '.', '-'; "
			   "starting with a letter or '_')",
			   name ? name : "(not a string)");
	if (val->type != YAML_MAPPING_NODE)
		return bad(w, val, "%s: expected a mapping with architectures and description",
			   name);
	d.name = name;
	d.line = (int)key->start_mark.line + 1;
	d.col = (int)key->start_mark.column + 1;
	for (pr = val->data.mapping.pairs.start; pr < val->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, pr->value);
		const char *ks = scalar(k);

		if (!ks)
			return bad(w, k, "%s: keys must be strings", name);
		if (!strcmp(ks, "architectures")) {
			if (v->type != YAML_MAPPING_NODE)
				return bad(w, v, "%s: architectures must be a mapping", name);
			archs = v;
		} else if (!strcmp(ks, "description") || !strcmp(ks, "unit")) {
			if (!scalar(v))
				return bad(w, v, "%s: %s must be a string", name, ks);
			if (ks[0] == 'd')
				d.description = scalar(v);
			else
				d.unit = scalar(v);
		} else {
			return bad(
				w, k,
				"%s: unknown key '%s' (expected architectures, description, unit)",
				name, ks);
		}
	}
	if (!archs || archs->data.mapping.pairs.start == archs->data.mapping.pairs.top)
		return bad(w, val, "%s: no architectures", name);
	for (pr = archs->data.mapping.pairs.start; pr < archs->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, pr->value);

		tmp = d;
		rc = read_entry(w, name, k, v, &tmp);
		if (rc)
			return rc;
		if (!arch) { /* every entry, as written */
			tmp.arch = scalar(k);
			rc = fn ? fn(ctx, &tmp, w->err) : 0;
			if (rc)
				return rc;
			continue;
		}
		if (!chosen_k && cnt_defs__arch_listed(scalar(k), arch)) {
			chosen_k = k;
			chosen_v = v;
		}
		if (!generic_k && cnt_defs__arch_listed(scalar(k), "generic")) {
			generic_k = k;
			generic_v = v;
		}
	}
	if (!arch)
		return 0;
	if (!chosen_k) {
		chosen_k = generic_k;
		chosen_v = generic_v;
	}
	if (!chosen_k || !fn)
		return 0;
	read_entry(w, name, chosen_k, chosen_v, &d);
	d.arch = cnt_defs__arch_listed(scalar(chosen_k), arch) ? arch : "generic";
	return fn(ctx, &d, w->err);
}

/* One group's entry for an architecture: its counters, a sequence of names. */
static int read_group_entry(struct walk *w, const char *name, yaml_node_t *key, yaml_node_t *val,
			    struct cnt_group *g)
{
	yaml_node_pair_t *pr;
	yaml_node_item_t *it;
	yaml_node_t *list = NULL;

	if (!scalar(key) || !*scalar(key))
		return bad(w, key, "group %s: an architecture name must be a non-empty string",
			   name);
	if (val->type != YAML_MAPPING_NODE)
		return bad(w, val, "group %s: architecture '%s' must map counters", name,
			   scalar(key));
	for (pr = val->data.mapping.pairs.start; pr < val->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, pr->key);

		if (!scalar(k) || strcmp(scalar(k), "counters"))
			return bad(w, k, "group %s: unknown key '%s' (expected counters)", name,
				   scalar(k) ? scalar(k) : "(not a string)");
		list = yaml_document_get_node(w->doc, pr->value);
	}
	if (!list || list->type != YAML_SEQUENCE_NODE ||
	    list->data.sequence.items.start == list->data.sequence.items.top)
		return bad(w, val, "group %s: counters must be a list of counter names", name);
	g->n = 0;
	for (it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
		yaml_node_t *c = yaml_document_get_node(w->doc, *it);

		if (!valid_name(scalar(c)))
			return bad(w, c, "group %s: '%s' is not a counter name", name,
				   scalar(c) ? scalar(c) : "(not a string)");
		if (g->n == CNT_GROUP_MAX)
			return bad(w, c, "group %s: more than %d counters", name, CNT_GROUP_MAX);
		g->counters[g->n++] = scalar(c);
	}
	return 0;
}

/* The groups: key: each group's entry for arch (else "generic") goes to fn. */
static int read_groups(struct walk *w, yaml_node_t *val, const char *arch,
		       int (*fn)(void *, const struct cnt_group *, struct sonde_strbuf *),
		       void *ctx)
{
	yaml_node_pair_t *pr, *ar;

	if (val->type != YAML_MAPPING_NODE)
		return bad(w, val, "groups: expected a mapping of group names to groups");
	for (pr = val->data.mapping.pairs.start; pr < val->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, pr->value);
		yaml_node_t *archs = NULL, *chosen_k = NULL, *chosen_v = NULL, *generic_k = NULL,
			    *generic_v = NULL;
		struct cnt_group g = { 0 }, tmp;
		yaml_node_pair_t *q;
		int rc;

		g.name = scalar(k);
		if (!valid_name(g.name))
			return bad(w, k, "'%s' is not a group name",
				   g.name ? g.name : "(not a string)");
		g.line = (int)k->start_mark.line + 1;
		if (v->type != YAML_MAPPING_NODE)
			return bad(w, v, "group %s: expected description and architectures",
				   g.name);
		for (q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
			yaml_node_t *qk = yaml_document_get_node(w->doc, q->key);
			yaml_node_t *qv = yaml_document_get_node(w->doc, q->value);
			const char *ks = scalar(qk);

			if (ks && !strcmp(ks, "description") && scalar(qv))
				g.description = scalar(qv);
			else if (ks && !strcmp(ks, "architectures") &&
				 qv->type == YAML_MAPPING_NODE)
				archs = qv;
			else
				return bad(w, qk,
					   "group %s: unknown or malformed key '%s' (expected "
					   "description, architectures)",
					   g.name, ks ? ks : "(not a string)");
		}
		if (!archs || archs->data.mapping.pairs.start == archs->data.mapping.pairs.top)
			return bad(w, v, "group %s: no architectures", g.name);
		for (ar = archs->data.mapping.pairs.start; ar < archs->data.mapping.pairs.top;
		     ar++) {
			yaml_node_t *ak = yaml_document_get_node(w->doc, ar->key);
			yaml_node_t *av = yaml_document_get_node(w->doc, ar->value);

			tmp = g;
			rc = read_group_entry(w, g.name, ak, av, &tmp);
			if (rc)
				return rc;
			if (!arch) {
				tmp.arch = scalar(ak);
				rc = fn ? fn(ctx, &tmp, w->err) : 0;
				if (rc)
					return rc;
				continue;
			}
			if (!chosen_k && cnt_defs__arch_listed(scalar(ak), arch)) {
				chosen_k = ak;
				chosen_v = av;
			}
			if (!generic_k && cnt_defs__arch_listed(scalar(ak), "generic")) {
				generic_k = ak;
				generic_v = av;
			}
		}
		if (!chosen_k) {
			chosen_k = generic_k;
			chosen_v = generic_v;
		}
		if (!arch || !chosen_k || !fn)
			continue;
		read_group_entry(w, g.name, chosen_k, chosen_v, &g);
		g.arch = cnt_defs__arch_listed(scalar(chosen_k), arch) ? arch : "generic";
		rc = fn(ctx, &g, w->err);
		if (rc)
			return rc;
	}
	return 0;
}

int cnt_defs__parse(const char *yaml, size_t len, const char *file, const char *arch,
		    int (*fn)(void *ctx, const struct cnt_def *d, struct sonde_strbuf *err),
		    int (*gfn)(void *ctx, const struct cnt_group *g, struct sonde_strbuf *err),
		    void *ctx, struct sonde_strbuf *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct walk w = { &doc, file, err };
	yaml_node_t *root;
	yaml_node_pair_t *pr;
	int rc = 0;

	if (len > DEFS_MAX_BYTES) {
		sonde_strbuf__addf(err, "%s: larger than %u MiB", file, DEFS_MAX_BYTES >> 20);
		return -EFBIG;
	}
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &doc)) {
		sonde_strbuf__addf(err, "%s:%zu:%zu: %s", file, parser.problem_mark.line + 1,
				   parser.problem_mark.column + 1,
				   parser.problem ? parser.problem : "malformed YAML");
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	root = yaml_document_get_root_node(&doc);
	if (root && root->type != YAML_MAPPING_NODE)
		rc = bad(&w, root, "the top level must map counter names to definitions");
	for (pr = root && !rc ? root->data.mapping.pairs.start : NULL;
	     pr && !rc && pr < root->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(&doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(&doc, pr->value);

		if (scalar(k) && !strcmp(scalar(k), "groups"))
			rc = read_groups(&w, v, arch, gfn, ctx);
		else
			rc = read_counter(&w, k, v, arch, fn, ctx);
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return rc;
}

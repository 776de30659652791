/*
 * postprocess.c - run a postprocessor over a profile: collect (x, y) points per
 * uid, type and subtype, fit or smooth them, and store the results in the
 * profile's `models` (Perun's model form, extended; docs/analysis.md).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/parallel.h>
#include <sonde/postprocess.h>
#include "../grow.h"
#include "../strmap.h"

const char *const sonde_postprocessors[] = {
	"regression", "moving-average", "regressogram", "kernel-regression", NULL,
};

void sonde_postprocess__defaults(const char *type, const char **of, const char **per)
{
	*of = "amount";
	if (type && !strcmp(type, "memory"))
		*per = "snapshot";
	else if (type && !strcmp(type, "counters"))
		*per = "timestamp";
	else
		*per = "structure-unit-size";
}

void sonde_points__free(struct sonde_points *g, size_t n)
{
	size_t i;

	for (i = 0; g && i < n; i++) {
		free(g[i].uid);
		free(g[i].type);
		free(g[i].subtype);
		free(g[i].x);
		free(g[i].y);
	}
	free(g);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Room for n doubles (a group's points grow a resource at a time). */
static int extend(double **a, size_t n)
{
	double *v = realloc(*a, (n ? n : 1) * sizeof(double));

	if (!v)
		return -ENOMEM;
	*a = v;
	return 0;
}

int sonde_points__collect(const struct sonde_profile *p, const char *of, const char *per,
			  struct sonde_points **out, size_t *nout)
{
	size_t n = sonde_profile__resource_count(p), i, cap = 0, ng = 0, ycap = 0, xcap = 0;
	struct sonde_points *g = NULL;
	struct sonde_strmap index = SONDE_STRMAP_INIT; /* uid, type, subtype -> group */
	struct sonde_strbuf key = SONDE_STRBUF_INIT, uid = SONDE_STRBUF_INIT;
	double *ys = NULL, *xs = NULL;
	int rc = 0;

	/* the values and names read without making the resources' trees */
	for (i = 0; i < n && !rc; i++) {
		long len = sonde_profile__numbers(p, i, of, &ys, &ycap), j,
		     xlen = len > 0 ? sonde_profile__row_numbers(p, i, per, (size_t)len, &xs, &xcap)
				    : 0;
		uint64_t *at;
		bool hit;
		const char *type, *sub;
		struct sonde_points *pt;

		if (len == -ENOMEM || xlen == -ENOMEM) {
			rc = -ENOMEM;
			break;
		}
		if (len <= 0 || xlen != len)
			continue;
		type = sonde_profile__fixed_string(p, i, "type");
		sub = sonde_profile__fixed_string(p, i, "subtype");
		sonde_strbuf__reset(&uid);
		sonde_strbuf__reset(&key);
		rc = sonde_profile__uid_text(p, i, &uid);
		rc |= sonde_strbuf__addf(&key, "%s\x1f%s\x1f%s", uid.buf ? uid.buf : "",
					 type ? type : "", sub ? sub : "");
		if (rc)
			break;
		at = sonde_strmap__upsert(&index, key.buf, key.len, &hit);
		if (at && hit) {
			pt = &g[*at];
		} else {
			rc = at ? sonde_grow((void **)&g, &cap, ng + 1, sizeof(*g)) : -ENOMEM;
			if (rc) {
				rc = -ENOMEM;
				break;
			}
			*at = ng;
			pt = &g[ng++];
			pt->uid = strdup(uid.buf ? uid.buf : "");
			pt->type = dup_or_null(type);
			pt->subtype = dup_or_null(sub);
			if (!pt->uid || (type && !pt->type) || (sub && !pt->subtype)) {
				rc = -ENOMEM;
				break;
			}
		}
		rc = extend(&pt->x, pt->n + (size_t)len);
		rc = rc ? rc : extend(&pt->y, pt->n + (size_t)len);
		if (rc)
			break;
		for (j = 0; j < len; j++) {
			if (isnan(xs[j]) || isnan(ys[j]))
				continue;
			pt->x[pt->n] = xs[j];
			pt->y[pt->n++] = ys[j];
		}
	}
	free(ys);
	free(xs);
	sonde_strmap__release(&index);
	sonde_strbuf__release(&key);
	sonde_strbuf__release(&uid);
	if (rc) {
		sonde_points__free(g, ng);
		return rc;
	}
	*out = g;
	*nout = ng;
	return 0;
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* The members every model of one group starts with. */
static json_t *model_head(const struct sonde_points *g, const struct sonde_postprocess_options *o,
			  const char *model, const char *method)
{
	json_t *m = json_object();

	json_object_set_new(m, "uid", json_string(g->uid));
	if (g->type)
		json_object_set_new(m, "type", json_string(g->type));
	if (g->subtype)
		json_object_set_new(m, "subtype", json_string(g->subtype));
	json_object_set_new(m, "postprocessor", json_string(o->name));
	json_object_set_new(m, "model", json_string(model));
	json_object_set_new(m, "method", json_string(method));
	json_object_set_new(m, "of", json_string(o->of));
	json_object_set_new(m, "per", json_string(o->per));
	return m;
}

static json_t *coeff(const char *name, double v, double lo, double hi)
{
	json_t *c = json_object();

	json_object_set_new(c, "name", json_string(name));
	json_object_set_new(c, "value", num(v));
	json_object_set_new(c, "ci_low", num(lo));
	json_object_set_new(c, "ci_high", num(hi));
	return c;
}

static json_t *fit_json(const struct sonde_points *g, const struct sonde_postprocess_options *o,
			const struct sonde_fit *f, bool best)
{
	json_t *m = model_head(g, o, sonde_model_names[f->kind],
			       sonde_regression_methods[o->method]),
	       *cs = json_array();

	json_object_set_new(m, "r_square", num(f->r_square));
	json_object_set_new(m, "x_start", num(f->x_start));
	json_object_set_new(m, "x_end", num(f->x_end));
	json_object_set_new(m, "n", json_integer((json_int_t)f->n));
	json_object_set_new(m, "best", json_boolean(best));
	json_array_append_new(cs, coeff("b0", f->b[0], f->ci_low[0], f->ci_high[0]));
	if (f->kind == SONDE_MODEL_CONSTANT)
		json_array_append_new(cs, coeff("b1", 0, NAN, NAN));
	else
		json_array_append_new(cs, coeff("b1", f->b[1], f->ci_low[1], f->ci_high[1]));
	if (f->kind == SONDE_MODEL_QUADRATIC)
		json_array_append_new(cs, coeff("b2", f->b[2], f->ci_low[2], f->ci_high[2]));
	json_object_set_new(m, "coeffs", cs);
	return m;
}

static json_t *curve_json(const struct sonde_points *g, const struct sonde_postprocess_options *o,
			  const struct sonde_curve *c, const char *model, const char *method,
			  const char *param)
{
	json_t *m = model_head(g, o, model, method), *xs = json_array(), *ys = json_array();
	size_t max = o->max_points ? o->max_points : 1000, i, k, prev = (size_t)-1;
	double xmin = INFINITY, xmax = -INFINITY;

	for (i = 0; i < g->n; i++) {
		xmin = fmin(xmin, g->x[i]);
		xmax = fmax(xmax, g->x[i]);
	}
	json_object_set_new(m, "r_square", num(c->r_square));
	json_object_set_new(m, "x_start", num(xmin));
	json_object_set_new(m, "x_end", num(xmax));
	json_object_set_new(m, "n", json_integer((json_int_t)g->n));
	json_object_set_new(m, param, num(c->param));
	/* At most max points, evenly by index, always the last. */
	for (k = 0; k < c->n && k < max; k++) {
		i = c->n <= max ? k : (size_t)((double)k * (double)(c->n - 1) / (double)(max - 1));
		if (i == prev)
			continue;
		prev = i;
		json_array_append_new(xs, num(c->x[i]));
		json_array_append_new(ys, num(c->y[i]));
	}
	json_object_set_new(m, "x", xs);
	json_object_set_new(m, "y", ys);
	return m;
}

static const char *const average_names[] = { "sma", "smm", "ema" };

/* One group's regression, computed apart from its JSON (in parallel, see fit_all). */
struct group_fit {
	struct sonde_fit *f;
	size_t nf, best;
	int rc;
};

struct fitting {
	const struct sonde_points *g;
	const struct sonde_postprocess_options *o;
	struct group_fit *out;
};

static void fit_one(void *ctx, size_t i)
{
	struct fitting *w = ctx;
	struct group_fit *r = &w->out[i];

	r->rc = sonde_regression__run(w->o->method, w->o->models, w->o->steps, w->g[i].x, w->g[i].y,
				      w->g[i].n, &r->f, &r->nf, &r->best);
}

/* Every group's regression, the groups on several threads. NULL: out of memory. */
static struct group_fit *fit_all(const struct sonde_points *g, size_t ng,
				 const struct sonde_postprocess_options *o)
{
	struct fitting w = { .g = g, .o = o, .out = calloc(ng ? ng : 1, sizeof(*w.out)) };

	if (w.out)
		sonde_parallel__for(ng, 16, fit_one, &w);
	return w.out;
}

/*
 * The models of one group appended to arr (a regression's from fit, already
 * computed). Returns the count or -errno.
 */
static long run_group(const struct sonde_points *g, const struct sonde_postprocess_options *o,
		      struct group_fit *fit, json_t *arr)
{
	struct sonde_curve c;
	long added = 0;
	int rc;

	if (fit) {
		bool single = o->method == SONDE_REGRESSION_FULL;
		size_t i;

		if (fit->rc)
			return fit->rc == -ENOMEM ? fit->rc : 0;
		for (i = 0; i < fit->nf; i++, added++)
			json_array_append_new(
				arr, fit_json(g, o, &fit->f[i], single ? i == fit->best : true));
		return added;
	}
	if (!strcmp(o->name, "moving-average")) {
		rc = sonde_smooth__moving_average(o->average, o->window, o->alpha, g->x, g->y, g->n,
						  &c);
		if (rc)
			return rc == -ENOMEM ? rc : 0;
		json_array_append_new(
			arr, curve_json(g, o, &c, "moving_average", average_names[o->average],
					o->average == SONDE_AVG_EMA ? "alpha" : "window"));
	} else if (!strcmp(o->name, "regressogram")) {
		rc = sonde_smooth__regressogram(o->buckets, o->median, g->x, g->y, g->n, &c);
		if (rc)
			return rc == -ENOMEM ? rc : 0;
		json_array_append_new(arr,
				      curve_json(g, o, &c, "regressogram",
						 o->median ? "median" : "mean", "bucket_width"));
	} else {
		double h = o->bandwidth > 0
				   ? o->bandwidth
				   : sonde_smooth__bandwidth(o->bandwidth_rule, g->x, g->n);

		if (!(h > 0))
			return 0; /* every x equal: no bandwidth */
		rc = sonde_smooth__kernel(o->local_linear, h, 0, g->x, g->y, g->n, &c);
		if (rc)
			return rc == -ENOMEM ? rc : 0;
		json_array_append_new(
			arr, curve_json(g, o, &c, "kernel",
					o->local_linear ? "local-linear" : "nadaraya-watson",
					"bandwidth"));
	}
	sonde_curve__release(&c);
	return 1;
}

static json_t *params_json(const struct sonde_postprocess_options *o)
{
	json_t *p = json_object();

	json_object_set_new(p, "of", json_string(o->of));
	json_object_set_new(p, "per", json_string(o->per));
	if (!strcmp(o->name, "regression")) {
		json_t *ms = json_array();
		int k;

		json_object_set_new(p, "method", json_string(sonde_regression_methods[o->method]));
		for (k = 0; k < SONDE_MODEL_COUNT; k++)
			if (!o->models || (o->models & (1u << k)))
				json_array_append_new(ms, json_string(sonde_model_names[k]));
		json_object_set_new(p, "models", ms);
		json_object_set_new(p, "steps", json_integer(o->steps ? o->steps : 3));
	} else if (!strcmp(o->name, "moving-average")) {
		json_object_set_new(p, "average", json_string(average_names[o->average]));
		if (o->average == SONDE_AVG_EMA)
			json_object_set_new(p, "alpha", num(o->alpha));
		else if (o->window)
			json_object_set_new(p, "window", json_integer((json_int_t)o->window));
	} else if (!strcmp(o->name, "regressogram")) {
		json_object_set_new(p, "statistic", json_string(o->median ? "median" : "mean"));
		if (o->buckets)
			json_object_set_new(p, "buckets", json_integer((json_int_t)o->buckets));
	} else {
		json_object_set_new(
			p, "estimator",
			json_string(o->local_linear ? "local-linear" : "nadaraya-watson"));
		if (o->bandwidth > 0)
			json_object_set_new(p, "bandwidth", num(o->bandwidth));
		else
			json_object_set_new(p, "bandwidth_rule",
					    json_string(o->bandwidth_rule == SONDE_BW_SCOTT
								? "scott"
								: "silverman"));
	}
	return p;
}

static bool same(json_t *m, const char *key, const char *v)
{
	const char *s = json_string_value(json_object_get(m, key));

	return s && v && !strcmp(s, v);
}

int sonde_postprocess__apply(struct sonde_profile *p, const struct sonde_postprocess_options *o,
			     size_t *added, struct sonde_strbuf *err)
{
	json_t *models = sonde_profile__part(p, "models"), *fresh,
	       *pp = sonde_profile__part(p, "postprocessors"), *rec;
	struct sonde_points *g;
	struct group_fit *fits;
	size_t ng, i, total = 0;
	const char *const *k;
	int rc;

	*added = 0;
	for (k = sonde_postprocessors; *k && (!o->name || strcmp(*k, o->name)); k++)
		;
	if (!*k) {
		sonde_strbuf__addf(err, "unknown postprocessor '%s'", o->name ? o->name : "");
		return -EINVAL;
	}
	if (!strcmp(o->name, "moving-average") && o->average == SONDE_AVG_EMA &&
	    !(o->alpha > 0 && o->alpha <= 1)) {
		sonde_strbuf__addf(err, "the ema smoothing factor must be in (0, 1]");
		return -EINVAL;
	}
	rc = sonde_points__collect(p, o->of, o->per, &g, &ng);
	if (rc)
		return rc;
	for (i = 0; i < ng; i++)
		total += g[i].n;
	if (!total) {
		sonde_points__free(g, ng);
		sonde_strbuf__addf(err,
				   "no resource has numeric '%s' and '%s' columns (choose them "
				   "with --of and --per)",
				   o->of, o->per);
		return -EINVAL;
	}
	fits = strcmp(o->name, "regression") ? NULL : fit_all(g, ng, o);
	fresh = !strcmp(o->name, "regression") && !fits ? NULL : json_array();
	for (i = 0; i < ng && fresh; i++) {
		long n = run_group(&g[i], o, fits ? &fits[i] : NULL, fresh);

		if (n < 0) {
			json_decref(fresh);
			fresh = NULL;
			rc = (int)n;
			break;
		}
		*added += (size_t)n;
	}
	for (i = 0; fits && i < ng; i++)
		free(fits[i].f);
	free(fits);
	sonde_points__free(g, ng);
	if (!fresh && rc)
		return rc;
	if (!fresh)
		return -ENOMEM;
	if (!json_is_array(models)) {
		models = json_array();
		sonde_profile__set_part(p, "models", models);
	}
	/* Running a postprocessor again replaces its earlier models of the same data. */
	for (i = json_array_size(models); i-- > 0;) {
		json_t *m = json_array_get(models, i);

		if (same(m, "postprocessor", o->name) && same(m, "of", o->of) &&
		    same(m, "per", o->per))
			json_array_remove(models, i);
	}
	json_array_extend(models, fresh);
	json_decref(fresh);
	if (!json_is_array(pp)) {
		pp = json_array();
		sonde_profile__set_part(p, "postprocessors", pp);
	}
	rec = json_object();
	json_object_set_new(rec, "name", json_string(o->name));
	json_object_set_new(rec, "params", params_json(o));
	json_object_set_new(rec, "models", json_integer((json_int_t)*added));
	return json_array_append_new(pp, rec) ? -ENOMEM : 0;
}

int sonde_fit__from_json(json_t *m, struct sonde_fit *out)
{
	int k = sonde_model__kind(json_string_value(json_object_get(m, "model")));
	json_t *cs = json_object_get(m, "coeffs"), *c;
	size_t i;

	if (k < 0 || !json_is_array(cs))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->kind = (enum sonde_model_kind)k;
	out->b[1] = out->b[2] = NAN;
	out->p_slope = NAN;
	json_array_foreach(cs, i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name"));
		json_t *v = json_object_get(c, "value");
		int idx = name && name[0] == 'b' && name[1] >= '0' && name[1] <= '2' && !name[2]
				  ? name[1] - '0'
				  : -1;

		if (idx < 0 || !json_is_number(v))
			continue;
		out->b[idx] = json_number_value(v);
		out->ci_low[idx] = json_is_number(json_object_get(c, "ci_low"))
					   ? json_number_value(json_object_get(c, "ci_low"))
					   : NAN;
		out->ci_high[idx] = json_is_number(json_object_get(c, "ci_high"))
					    ? json_number_value(json_object_get(c, "ci_high"))
					    : NAN;
	}
	out->r_square = json_number_value(json_object_get(m, "r_square"));
	/* Perun's older profiles name the range x_interval_start/end */
	out->x_start = json_number_value(json_object_get(m, "x_start")
						 ? json_object_get(m, "x_start")
						 : json_object_get(m, "x_interval_start"));
	out->x_end = json_number_value(json_object_get(m, "x_end")
					       ? json_object_get(m, "x_end")
					       : json_object_get(m, "x_interval_end"));
	out->n = (size_t)json_integer_value(json_object_get(m, "n"));
	if (k != SONDE_MODEL_CONSTANT && isnan(out->b[1]))
		return -EINVAL;
	/* A quadratic with two coefficients: Perun reads b2 as 0; sonde's own
	   quadratic was b0 + b1 x^2 before it took Perun's form (sonde's models
	   carry "best") */
	if (k == SONDE_MODEL_QUADRATIC && isnan(out->b[2])) {
		out->b[2] = json_object_get(m, "best") ? out->b[1] : 0;
		if (json_object_get(m, "best"))
			out->b[1] = 0;
	}
	return 0;
}

/*
 * sonde marks its best model ("best": true); Perun stores its models without
 * the mark, type or subtype, and takes the one of highest R² of each uid. A
 * model with no "best" member is read Perun's way.
 */
int sonde_postprocess__best(const struct sonde_profile *p, const char *uid, const char *type,
			    const char *subtype, struct sonde_fit *out)
{
	return sonde_postprocess__model(p, uid, type, subtype, -1, out);
}

int sonde_postprocess__model(const struct sonde_profile *p, const char *uid, const char *type,
			     const char *subtype, int kind, struct sonde_fit *out)
{
	json_t *models = sonde_profile__part(p, "models"), *m;
	struct sonde_fit f;
	bool found = false;
	size_t i;

	json_array_foreach(models, i, m)
	{
		const char *s = json_string_value(json_object_get(m, "subtype"));
		json_t *best = json_object_get(m, "best"),
		       *pp = json_object_get(m, "postprocessor");
		bool perun = !best;

		if ((pp && !same(m, "postprocessor", "regression") &&
		     !same(m, "postprocessor", "regression_analysis")) ||
		    !same(m, "uid", uid) || (kind < 0 && best && !json_is_true(best)) ||
		    (kind >= 0 && !same(m, "model", sonde_model_names[kind])))
			continue;
		if (!perun && ((type && !same(m, "type", type)) || (!s) != (!subtype) ||
			       (s && strcmp(s, subtype))))
			continue;
		if (sonde_fit__from_json(m, &f))
			continue;
		if (perun) { /* the highest R² */
			if (!found || f.r_square > out->r_square) {
				*out = f;
				found = true;
			}
			continue;
		}
		/* Piecewise methods mark each interval's model: the widest stands for all. */
		if (!found || f.n > out->n) {
			*out = f;
			found = true;
		}
	}
	return found ? 0 : -ENOENT;
}

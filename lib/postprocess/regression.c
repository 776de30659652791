/*
 * regression.c - least-squares fits of Perun's parametric models and its five
 * computation methods (full, iterative, interval, initial guess, bisection).
 *
 * Every model but the quadratic is fitted as a straight line v = a + c u
 * through transformed points (u = f(x), v = g(y)): u is 1, ln x, x or x ln x,
 * and v is ln y for the power and exponential models, which are linearised as
 * Perun does. The quadratic is Perun's polynomial b0 + b1 x + b2 x^2, fitted on
 * centred and scaled x (x^4 of sizes in the millions would swamp the normal
 * equations otherwise). The coefficients' 95 % confidence intervals are
 * Student-t intervals (mapped through exp where the model exponentiates them).
 * R^2 is computed on the original scale, 1 - SSE / SST, so that models fitted in
 * different spaces are compared on the same footing (Perun compares the
 * linearised R^2).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/postprocess.h>
#include <sonde/stats.h>
#include "../grow.h"

const char *const sonde_model_names[] = {
	"constant",  "logarithmic", "linear",	   "linearithmic",
	"quadratic", "power",	    "exponential", NULL,
};

const char *const sonde_regression_methods[] = {
	"full", "iterative", "interval", "initial_guess", "bisection", NULL,
};

int sonde_model__kind(const char *name)
{
	int i;

	for (i = 0; name && sonde_model_names[i]; i++)
		if (!strcmp(name, sonde_model_names[i]))
			return i;
	return -1;
}

static bool log_y(enum sonde_model_kind k)
{
	return k == SONDE_MODEL_POWER || k == SONDE_MODEL_EXPONENTIAL;
}

/* u = f(x); NaN where the model does not apply. */
static double transform_x(enum sonde_model_kind k, double x)
{
	switch (k) {
	case SONDE_MODEL_CONSTANT:
		return 0;
	case SONDE_MODEL_LOGARITHMIC:
	case SONDE_MODEL_POWER:
		return x > 0 ? log(x) : NAN;
	case SONDE_MODEL_LINEARITHMIC:
		return x > 0 ? x * log(x) : NAN;
	case SONDE_MODEL_LINEAR:
	case SONDE_MODEL_EXPONENTIAL:
	default:
		return x;
	}
}

double sonde_fit__eval(const struct sonde_fit *f, double x)
{
	double b0 = f->b[0], b1 = f->b[1];

	switch (f->kind) {
	case SONDE_MODEL_CONSTANT:
		return b0;
	case SONDE_MODEL_POWER:
		return b0 * pow(x, b1);
	case SONDE_MODEL_EXPONENTIAL:
		return b0 * pow(b1, x);
	case SONDE_MODEL_QUADRATIC:
		return b0 + b1 * x + f->b[2] * x * x;
	default:
		return b0 + b1 * transform_x(f->kind, x);
	}
}

double sonde_fit__integral(const struct sonde_fit *f, double a, double b)
{
	double b0 = f->b[0], b1 = f->b[1], w = b - a;

	switch (f->kind) {
	case SONDE_MODEL_CONSTANT:
		return b0 * w;
	case SONDE_MODEL_LOGARITHMIC:
		return b0 * w + b1 * ((b * log(b) - b) - (a * log(a) - a));
	case SONDE_MODEL_LINEAR:
		return b0 * w + b1 * (b * b - a * a) / 2;
	case SONDE_MODEL_LINEARITHMIC:
		return b0 * w +
		       b1 * ((b * b / 2 * log(b) - b * b / 4) - (a * a / 2 * log(a) - a * a / 4));
	case SONDE_MODEL_QUADRATIC:
		return b0 * w + b1 * (b * b - a * a) / 2 + f->b[2] * (b * b * b - a * a * a) / 3;
	case SONDE_MODEL_POWER:
		if (fabs(b1 + 1) < 1e-12)
			return b0 * log(b / a);
		return b0 * (pow(b, b1 + 1) - pow(a, b1 + 1)) / (b1 + 1);
	case SONDE_MODEL_EXPONENTIAL:
		if (fabs(b1 - 1) < 1e-12)
			return b0 * w;
		return b0 * (pow(b1, b) - pow(b1, a)) / log(b1);
	default:
		return NAN;
	}
}

/*
 * Points, with the logs of x and y that the models share taken once for all
 * of them (lx, ly; NaN where x or y is not positive), or NULL: taken as needed.
 */
struct pts {
	const double *x, *y, *lx, *ly;
};

static struct pts pts_from(struct pts p, size_t off)
{
	return (struct pts){ p.x + off, p.y + off, p.lx ? p.lx + off : NULL,
			     p.ly ? p.ly + off : NULL };
}

/* The model's u = f(x) of point i: transform_x, through the shared log where there is one. */
static double u_of(enum sonde_model_kind k, const struct pts *p, size_t i)
{
	if (!p->lx)
		return transform_x(k, p->x[i]);
	switch (k) {
	case SONDE_MODEL_LOGARITHMIC:
	case SONDE_MODEL_POWER:
		return p->lx[i];
	case SONDE_MODEL_LINEARITHMIC:
		return p->x[i] > 0 ? p->x[i] * p->lx[i] : NAN;
	default:
		return transform_x(k, p->x[i]);
	}
}

/* The inverse of the symmetric 3x3 matrix a in v; false when a is singular. */
static bool invert3(const double a[3][3], double v[3][3])
{
	double det;
	int i, j;

	v[0][0] = a[1][1] * a[2][2] - a[1][2] * a[2][1];
	v[0][1] = a[0][2] * a[2][1] - a[0][1] * a[2][2];
	v[0][2] = a[0][1] * a[1][2] - a[0][2] * a[1][1];
	v[1][0] = a[1][2] * a[2][0] - a[1][0] * a[2][2];
	v[1][1] = a[0][0] * a[2][2] - a[0][2] * a[2][0];
	v[1][2] = a[0][2] * a[1][0] - a[0][0] * a[1][2];
	v[2][0] = a[1][0] * a[2][1] - a[1][1] * a[2][0];
	v[2][1] = a[0][1] * a[2][0] - a[0][0] * a[2][1];
	v[2][2] = a[0][0] * a[1][1] - a[0][1] * a[1][0];
	det = a[0][0] * v[0][0] + a[0][1] * v[1][0] + a[0][2] * v[2][0];
	/* the scaled x make a's entries of order n: a relative test */
	if (!(fabs(det) > 1e-12 * a[0][0] * a[0][0] * a[0][0]))
		return false;
	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
			v[i][j] /= det;
	return true;
}

/*
 * Perun's quadratic model, b0 + b1 x + b2 x^2, by least squares on z = (x - mx)
 * / sx, then mapped back to x: b = T c with T the change of basis, and the
 * coefficients' covariance T Cov(c) T'. p_slope is the larger p-value of the
 * F-test of b1 = b2 = 0 and the t-test of b2 = 0.
 */
static int fit_quadratic(const struct pts *in, size_t n, struct sonde_fit *out)
{
	const double *x = in->x, *y = in->y;
	double mx = 0, sx = 0, my = 0, a[3][3] = { { 0 } }, r[3] = { 0 }, v[3][3], c[3], tm[3][3],
	       cov[3][3], sse = 0, sst = 0;
	size_t i, m = 0, df;
	int j, l, q;

	for (i = 0; i < n; i++)
		if (!isnan(x[i]) && !isnan(y[i])) {
			out->x_start = m ? fmin(out->x_start, x[i]) : x[i];
			out->x_end = m ? fmax(out->x_end, x[i]) : x[i];
			mx += x[i];
			my += y[i];
			m++;
		}
	out->n = m;
	if (m < 3)
		return m < n ? -EDOM : -EINVAL;
	mx /= (double)m;
	my /= (double)m;
	for (i = 0; i < n; i++)
		if (!isnan(x[i]) && !isnan(y[i]))
			sx += (x[i] - mx) * (x[i] - mx);
	sx = sqrt(sx / (double)m);
	if (!(sx > 0))
		return -EDOM;
	for (i = 0; i < n; i++) {
		double z, p[3];

		if (isnan(x[i]) || isnan(y[i]))
			continue;
		z = (x[i] - mx) / sx;
		p[0] = 1;
		p[1] = z;
		p[2] = z * z;
		for (j = 0; j < 3; j++) {
			for (l = 0; l < 3; l++)
				a[j][l] += p[j] * p[l];
			r[j] += p[j] * y[i];
		}
	}
	if (!invert3(a, v))
		return -EDOM; /* two distinct x: a line fits them exactly, not a parabola */
	for (j = 0; j < 3; j++)
		c[j] = v[j][0] * r[0] + v[j][1] * r[1] + v[j][2] * r[2];
	/* y = c0 + c1 (x - mx)/sx + c2 (x - mx)^2/sx^2, as b0 + b1 x + b2 x^2 */
	memset(tm, 0, sizeof(tm));
	tm[0][0] = 1;
	tm[0][1] = -mx / sx;
	tm[0][2] = mx * mx / (sx * sx);
	tm[1][1] = 1 / sx;
	tm[1][2] = -2 * mx / (sx * sx);
	tm[2][2] = 1 / (sx * sx);
	for (j = 0; j < 3; j++)
		out->b[j] = tm[j][0] * c[0] + tm[j][1] * c[1] + tm[j][2] * c[2];
	for (i = 0; i < n; i++) {
		double z, e;

		if (isnan(x[i]) || isnan(y[i]))
			continue;
		z = (x[i] - mx) / sx;
		e = y[i] - (c[0] + c[1] * z + c[2] * z * z);
		sse += e * e;
		sst += (y[i] - my) * (y[i] - my);
	}
	if (sst > 0)
		out->r_square = 1 - sse / sst;
	else
		out->r_square = sse <= 1e-24 * (1 + my * my) ? 1 : 0;
	df = m - 3;
	if (!df)
		return 0;
	{
		double s2 = sse / (double)df, t = sonde_stats__t_quantile(0.975, (double)df),
		       f = sse > 0 ? (sst - sse) / 2 / s2 : INFINITY;

		/* Cov(b) = T (s2 V) T' */
		for (j = 0; j < 3; j++)
			for (l = 0; l < 3; l++) {
				double sum = 0;

				for (q = 0; q < 3; q++) {
					int u;

					for (u = 0; u < 3; u++)
						sum += tm[j][q] * v[q][u] * tm[l][u];
				}
				cov[j][l] = s2 * sum;
			}
		for (j = 0; j < 3; j++) {
			double se = sqrt(fmax(cov[j][j], 0));

			out->ci_low[j] = out->b[j] - t * se;
			out->ci_high[j] = out->b[j] + t * se;
		}
		/* nested in it, the line always fits a little worse: the quadratic
		   counts only where its x^2 term is significant as well */
		{
			double se2 = sqrt(fmax(cov[2][2], 0)),
			       p2 = se2 > 0 ? 2 * (1 - sonde_stats__t_cdf(fabs(out->b[2] / se2),
									  (double)df))
					    : 0;

			out->p_slope = fmax(sonde_stats__f_sf(f, 2, (double)df), p2);
		}
	}
	return 0;
}

static int fit(enum sonde_model_kind k, const struct pts *in, size_t n, struct sonde_fit *out)
{
	const double *x = in->x, *y = in->y;
	double su = 0, sv = 0, suu = 0, suv = 0, mu, mv, a, c, sse_v = 0, sse = 0, sst = 0, my = 0,
	       s2, t, small[2 * 256], *uv = small;
	size_t i, m = 0;

	memset(out, 0, sizeof(*out));
	out->kind = k;
	out->b[1] = out->ci_low[1] = out->ci_high[1] = out->p_slope = NAN;
	out->b[2] = out->ci_low[2] = out->ci_high[2] = NAN;
	out->ci_low[0] = out->ci_high[0] = NAN;
	if (k == SONDE_MODEL_QUADRATIC)
		return fit_quadratic(in, n, out);
	/* each point's u = f(x) and v = y or log y, once: the passes below reuse them
	   (a log per point and pass was most of a regression's time) */
	if (n > 256 && !(uv = malloc(2 * n * sizeof(*uv))))
		return -ENOMEM;
	/* Perun's way: a model that takes a log fits the points where it is defined */
	for (i = 0; i < n; i++) {
		double u = u_of(k, in, i);

		if (isnan(u) || isnan(y[i]) || (log_y(k) && !(y[i] > 0))) {
			uv[2 * i] = NAN;
			continue;
		}
		uv[2 * i] = u;
		uv[2 * i + 1] = !log_y(k) ? y[i] : in->ly ? in->ly[i] : log(y[i]);
		out->x_start = m ? fmin(out->x_start, x[i]) : x[i];
		out->x_end = m ? fmax(out->x_end, x[i]) : x[i];
		su += u;
		sv += uv[2 * i + 1];
		my += y[i];
		m++;
	}
	out->n = m;
	if (m < (k == SONDE_MODEL_CONSTANT ? 1u : 2u)) {
		if (uv != small)
			free(uv);
		return m < n ? -EDOM : -EINVAL;
	}
	mu = su / (double)m;
	mv = sv / (double)m;
	my /= (double)m;
	for (i = 0; i < n; i++) {
		double u, v;

		if (isnan(uv[2 * i]))
			continue;
		u = uv[2 * i] - mu;
		v = uv[2 * i + 1] - mv;
		suu += u * u;
		suv += u * v;
	}
	if (k != SONDE_MODEL_CONSTANT && !(suu > 0)) {
		if (uv != small)
			free(uv);
		return -EDOM;
	}
	c = k == SONDE_MODEL_CONSTANT ? 0 : suv / suu;
	a = mv - c * mu;
	out->b[0] = log_y(k) ? exp(a) : a;
	if (k != SONDE_MODEL_CONSTANT)
		out->b[1] = k == SONDE_MODEL_EXPONENTIAL ? exp(c) : c;
	for (i = 0; i < n; i++) {
		double r, e;

		if (isnan(uv[2 * i]))
			continue;
		r = uv[2 * i + 1] - (a + c * uv[2 * i]);
		/* the model's value at x: a + c u, or exp of it where y was logged
		   (b0 x^b1 and b0 b1^x, evaluated through the logs already taken) */
		e = y[i] - (log_y(k) ? exp(a + c * uv[2 * i]) : a + c * uv[2 * i]);
		sse_v += r * r;
		sse += e * e;
		sst += (y[i] - my) * (y[i] - my);
	}
	if (uv != small)
		free(uv);
	if (sst > 0)
		out->r_square = 1 - sse / sst;
	else
		out->r_square = sse <= 1e-24 * (1 + my * my) ? 1 : 0;
	n = m;
	/* Confidence intervals: n - p degrees of freedom (p = 1 or 2 coefficients). */
	{
		size_t p = k == SONDE_MODEL_CONSTANT ? 1 : 2;
		double se_a, se_c;

		if (n <= p)
			return 0;
		s2 = sse_v / (double)(n - p);
		t = sonde_stats__t_quantile(0.975, (double)(n - p));
		if (k == SONDE_MODEL_CONSTANT) {
			se_a = sqrt(s2 / (double)n);
			out->ci_low[0] = a - t * se_a;
			out->ci_high[0] = a + t * se_a;
			return 0;
		}
		se_c = sqrt(s2 / suu);
		out->p_slope =
			se_c > 0 ? 2 * (1 - sonde_stats__t_cdf(fabs(c / se_c), (double)(n - 2)))
				 : 0;
		se_a = sqrt(s2 * (1 / (double)n + mu * mu / suu));
		out->ci_low[0] = a - t * se_a;
		out->ci_high[0] = a + t * se_a;
		out->ci_low[1] = c - t * se_c;
		out->ci_high[1] = c + t * se_c;
		if (log_y(k)) {
			out->ci_low[0] = exp(out->ci_low[0]);
			out->ci_high[0] = exp(out->ci_high[0]);
		}
		if (k == SONDE_MODEL_EXPONENTIAL) {
			out->ci_low[1] = exp(out->ci_low[1]);
			out->ci_high[1] = exp(out->ci_high[1]);
		}
	}
	return 0;
}

int sonde_regression__fit(enum sonde_model_kind k, const double *x, const double *y, size_t n,
			  struct sonde_fit *out)
{
	struct pts p = { x, y, NULL, NULL };

	return fit(k, &p, n, out);
}

/* A growing list of fits. */
struct fits {
	struct sonde_fit *v;
	size_t n, cap;
};

static int push(struct fits *f, const struct sonde_fit *x)
{
	int rc = sonde_grow((void **)&f->v, &f->cap, f->n + 1, sizeof(*f->v));

	if (!rc)
		f->v[f->n++] = *x;
	return rc;
}

/*
 * Whether a model is told apart from the constant one at 5 % (the slope's
 * two-sided t-test; the quadratic's F-test), Bonferroni-corrected for the
 * `tests` sloped models tried on the same points. Unknown (too few points)
 * counts as yes, but for the quadratic.
 */
static bool slope_significant(const struct sonde_fit *f, unsigned tests)
{
	/* three points: a parabola passes through any three, and says nothing */
	if (f->kind == SONDE_MODEL_QUADRATIC && isnan(f->p_slope))
		return false;
	if (f->kind == SONDE_MODEL_CONSTANT || isnan(f->p_slope))
		return true;
	return f->p_slope < 0.05 / (tests ? tests : 1);
}

/*
 * The best of every model in the mask on n points: R^2 decides, the simpler
 * model wins a tie, and a model whose slope is not significant never beats the
 * constant model (noise alone raises R^2 above the constant's 0). Returns 0 or
 * -EINVAL when no model applies.
 */
static int best_fit(unsigned models, struct pts p, size_t n, struct sonde_fit *best,
		    struct fits *all)
{
	struct sonde_fit f;
	bool found = false, constant = models & 1u << SONDE_MODEL_CONSTANT;
	unsigned sloped = (unsigned)__builtin_popcount(models & ~(1u << SONDE_MODEL_CONSTANT));
	int k, rc;

	for (k = 0; k < SONDE_MODEL_COUNT; k++) {
		if (!(models & (1u << k)) || fit(k, &p, n, &f))
			continue;
		if (all && (rc = push(all, &f)))
			return rc;
		if (constant && !slope_significant(&f, sloped))
			continue;
		if (!found || f.r_square > best->r_square + 1e-12) {
			*best = f;
			found = true;
		}
	}
	return found ? 0 : -EINVAL;
}

struct pt {
	double x, y;
};

/* x's bits as an unsigned number in x's order; -0 is 0 */
static uint64_t x_key(double x)
{
	uint64_t u;

	if (x == 0)
		x = 0;
	memcpy(&u, &x, sizeof(u));
	return u >> 63 ? ~u : u | 1ull << 63;
}

/*
 * The points in ascending x, points of equal x in the order given: a
 * least-significant-digit radix sort, a byte of x_key a pass, skipping the
 * bytes every point shares (most of a double's, for sizes). 0, or -ENOMEM.
 */
static int sort_by_x(struct pt *p, size_t n)
{
	size_t count[8][256] = { { 0 } }, i, b, c;
	struct pt *tmp, *from = p, *to;

	if (n < 2)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint64_t k = x_key(p[i].x);

		for (b = 0; b < 8; b++)
			count[b][(k >> (8 * b)) & 255]++;
	}
	to = tmp;
	for (b = 0; b < 8; b++) {
		size_t sum = 0;
		struct pt *t;

		if (count[b][(x_key(p[0].x) >> (8 * b)) & 255] == n)
			continue;
		for (c = 0; c < 256; c++) {
			size_t here = count[b][c];

			count[b][c] = sum;
			sum += here;
		}
		for (i = 0; i < n; i++)
			to[count[b][(x_key(from[i].x) >> (8 * b)) & 255]++] = from[i];
		t = from, from = to, to = t;
	}
	if (from != p)
		memcpy(p, from, n * sizeof(*p));
	free(tmp);
	return 0;
}

/* Split pts (sorted or shuffled) back into x and y arrays. */
static void unzip(const struct pt *p, size_t n, double *x, double *y)
{
	size_t i;

	for (i = 0; i < n; i++) {
		x[i] = p[i].x;
		y[i] = p[i].y;
	}
}

/* The end of chunk i (0-based) of n points split into steps nearly equal parts. */
static size_t chunk_end(size_t n, unsigned steps, unsigned i)
{
	return (size_t)((double)n * (i + 1) / steps);
}

static int bisect(unsigned models, struct pts p, size_t n, const struct sonde_fit *last,
		  struct fits *out, unsigned depth)
{
	struct sonde_fit half[2];
	size_t mid = n / 2, off[2] = { 0, mid }, len[2] = { mid, n - mid };
	int i, rc;

	if (depth > 40 || len[0] < 3 || len[1] < 3 || best_fit(models, p, mid, &half[0], NULL) ||
	    best_fit(models, pts_from(p, mid), n - mid, &half[1], NULL))
		return push(out, last);
	if (half[0].kind == last->kind && half[1].kind == last->kind)
		return push(out, last);
	for (i = 0; i < 2; i++) {
		if (half[i].kind != last->kind)
			rc = bisect(models, pts_from(p, off[i]), len[i], &half[i], out, depth + 1);
		else
			rc = push(out, &half[i]);
		if (rc)
			return rc;
	}
	return 0;
}

int sonde_regression__run(enum sonde_regression_method method, unsigned models, unsigned steps,
			  const double *x, const double *y, size_t n, struct sonde_fit **out,
			  size_t *nout, size_t *best)
{
	struct fits f = { 0 };
	struct pt *p = NULL;
	double *xs = NULL, *ys = NULL, *lx = NULL, *ly = NULL;
	struct pts all;
	struct sonde_fit one;
	size_t i;
	int rc = 0;

	*out = NULL;
	*nout = *best = 0;
	models = models ? models & SONDE_MODELS_ALL : SONDE_MODELS_ALL;
	steps = steps ? steps : 3;
	if (n == 0)
		return -EINVAL;
	p = malloc(n * sizeof(*p));
	xs = malloc(n * sizeof(*xs));
	ys = malloc(n * sizeof(*ys));
	lx = malloc(n * sizeof(*lx));
	ly = malloc(n * sizeof(*ly));
	if (!p || !xs || !ys || !lx || !ly) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		p[i] = (struct pt){ x[i], y[i] };
	if (method == SONDE_REGRESSION_ITERATIVE || method == SONDE_REGRESSION_INITIAL_GUESS) {
		/* A fixed-seed shuffle (xorshift64): the same input, the same models. */
		uint64_t s = 0x9E3779B97F4A7C15ull;

		for (i = n; i > 1; i--) {
			size_t j;
			struct pt t;

			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			j = (size_t)(s % i);
			t = p[i - 1];
			p[i - 1] = p[j];
			p[j] = t;
		}
	} else if ((rc = sort_by_x(p, n))) {
		goto out;
	}
	unzip(p, n, xs, ys);
	for (i = 0; i < n; i++) { /* the logs three models of x and two of y take */
		lx[i] = xs[i] > 0 ? log(xs[i]) : NAN;
		ly[i] = ys[i] > 0 ? log(ys[i]) : NAN;
	}
	all = (struct pts){ xs, ys, lx, ly };
	if (steps > n)
		steps = (unsigned)n;

	switch (method) {
	case SONDE_REGRESSION_FULL:
		rc = best_fit(models, all, n, &one, &f);
		for (i = 0; !rc && i < f.n; i++)
			if (f.v[i].kind == one.kind)
				*best = i;
		break;
	case SONDE_REGRESSION_INITIAL_GUESS:
		rc = best_fit(models, all, chunk_end(n, steps, 0), &one, NULL);
		if (!rc)
			rc = fit(one.kind, &all, n, &one) ? -EINVAL : push(&f, &one);
		break;
	case SONDE_REGRESSION_ITERATIVE: {
		struct sonde_fit cur[SONDE_MODEL_COUNT];
		unsigned done[SONDE_MODEL_COUNT] = { 0 }, alive = 0;
		int k, b;

		for (k = 0; k < SONDE_MODEL_COUNT; k++)
			if ((models & (1u << k)) &&
			    !fit(k, &all, chunk_end(n, steps, 0), &cur[k])) {
				done[k] = 1;
				alive |= 1u << k;
			}
		for (;;) {
			for (b = -1, k = 0; k < SONDE_MODEL_COUNT; k++)
				if ((alive & (1u << k)) &&
				    (b < 0 || cur[k].r_square > cur[b].r_square + 1e-12))
					b = k;
			if (b < 0) {
				rc = -EINVAL;
				break;
			}
			if (done[b] == steps) {
				rc = push(&f, &cur[b]);
				break;
			}
			if (fit(b, &all, chunk_end(n, steps, done[b]), &cur[b]))
				alive &= ~(1u << b);
			done[b]++;
		}
		break;
	}
	case SONDE_REGRESSION_INTERVAL: {
		size_t start = 0;
		unsigned s;

		rc = -EINVAL;
		for (s = 0; s < steps; s++) {
			size_t end = chunk_end(n, steps, s);

			if (!best_fit(models, pts_from(all, start), end - start, &one, NULL)) {
				rc = push(&f, &one);
				if (rc)
					break;
			}
			start = end;
		}
		break;
	}
	case SONDE_REGRESSION_BISECTION:
		rc = best_fit(models, all, n, &one, NULL);
		if (!rc)
			rc = bisect(models, all, n, &one, &f, 0);
		break;
	default:
		rc = -EINVAL;
	}
	if (!rc && f.n == 0)
		rc = -EINVAL;
	if (!rc) {
		if (method != SONDE_REGRESSION_FULL)
			for (i = 1; i < f.n; i++)
				if (f.v[i].r_square > f.v[*best].r_square + 1e-12)
					*best = i;
		*out = f.v;
		*nout = f.n;
		f.v = NULL;
	}
out:
	free(f.v);
	free(p);
	free(xs);
	free(ys);
	free(lx);
	free(ly);
	return rc;
}

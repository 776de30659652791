/*
 * smooth.c - non-parametric models: moving averages (simple mean, simple
 * median, exponential), the regressogram (equal-width buckets), and kernel
 * regression (Nadaraya-Watson and local linear, Gaussian kernel, Scott's or
 * Silverman's bandwidth).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/postprocess.h>
#include <sonde/stats.h>

struct xy {
	double x, y;
};

static int cmp_xy(const void *a, const void *b)
{
	double x = ((const struct xy *)a)->x, y = ((const struct xy *)b)->x;

	return (x > y) - (x < y);
}

void sonde_curve__release(struct sonde_curve *c)
{
	free(c->x);
	free(c->y);
	memset(c, 0, sizeof(*c));
}

static int curve_alloc(struct sonde_curve *c, size_t n)
{
	memset(c, 0, sizeof(*c));
	c->x = malloc((n ? n : 1) * sizeof(double));
	c->y = malloc((n ? n : 1) * sizeof(double));
	if (!c->x || !c->y) {
		sonde_curve__release(c);
		return -ENOMEM;
	}
	return 0;
}

/* The points sorted by x (caller frees). */
static struct xy *sorted(const double *x, const double *y, size_t n)
{
	struct xy *p = malloc((n ? n : 1) * sizeof(*p));
	size_t i;

	if (!p)
		return NULL;
	for (i = 0; i < n; i++)
		p[i] = (struct xy){ x[i], y[i] };
	qsort(p, n, sizeof(*p), cmp_xy);
	return p;
}

/*
 * R^2 of a curve against the points: the curve is read as a step function
 * through its points for the moving averages (fitted[i] given), otherwise
 * linearly interpolated at each point's x.
 */
static double r_square(const struct xy *p, size_t n, const double *fitted,
		       const struct sonde_curve *c)
{
	double my = 0, sse = 0, sst = 0;
	size_t i, j = 0;

	for (i = 0; i < n; i++)
		my += p[i].y;
	my /= (double)n;
	for (i = 0; i < n; i++) {
		double f;

		if (fitted) {
			f = fitted[i];
		} else {
			while (j + 1 < c->n && c->x[j + 1] <= p[i].x)
				j++;
			if (c->n == 1 || p[i].x <= c->x[0])
				f = c->y[0];
			else if (j + 1 >= c->n)
				f = c->y[c->n - 1];
			else
				f = c->y[j] + (c->y[j + 1] - c->y[j]) * (p[i].x - c->x[j]) /
						      (c->x[j + 1] - c->x[j]);
		}
		sse += (p[i].y - f) * (p[i].y - f);
		sst += (p[i].y - my) * (p[i].y - my);
	}
	return sst > 0 ? 1 - sse / sst : (sse == 0 ? 1 : 0);
}

double sonde_decay__alpha(enum sonde_decay form, double v)
{
	switch (form) {
	case SONDE_DECAY_COM:
		return v >= 0 ? 1 / (1 + v) : NAN;
	case SONDE_DECAY_SPAN:
		return v >= 1 ? 2 / (v + 1) : NAN;
	case SONDE_DECAY_HALFLIFE:
		return v > 0 ? 1 - exp(-M_LN2 / v) : NAN;
	case SONDE_DECAY_ALPHA:
		return v > 0 && v <= 1 ? v : NAN;
	}
	return NAN;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int sonde_smooth__moving_average(enum sonde_average kind, size_t window, double alpha,
				 const double *x, const double *y, size_t n,
				 struct sonde_curve *out)
{
	struct xy *p;
	double *win = NULL, sum = 0;
	size_t i;
	int rc;

	if (n == 0 || (kind == SONDE_AVG_EMA && !(alpha > 0 && alpha <= 1)))
		return -EINVAL;
	if (!window)
		window = n / 10 ? n / 10 : 1;
	if (window > n)
		window = n;
	p = sorted(x, y, n);
	if (!p)
		return -ENOMEM;
	rc = curve_alloc(out, n);
	if (!rc && kind == SONDE_AVG_SMM && !(win = malloc(window * sizeof(*win))))
		rc = -ENOMEM;
	if (rc) {
		free(p);
		return rc;
	}
	for (i = 0; i < n; i++) {
		size_t lo = i + 1 >= window ? i + 1 - window : 0;

		out->x[i] = p[i].x;
		switch (kind) {
		case SONDE_AVG_SMA:
			sum += p[i].y;
			if (i >= window)
				sum -= p[i - window].y;
			out->y[i] = sum / (double)(i - lo + 1);
			break;
		case SONDE_AVG_SMM:
			for (size_t j = lo; j <= i; j++)
				win[j - lo] = p[j].y;
			out->y[i] = sonde_stats__median_inplace(win, i - lo + 1);
			break;
		case SONDE_AVG_EMA:
			out->y[i] = i ? alpha * p[i].y + (1 - alpha) * out->y[i - 1] : p[i].y;
			break;
		}
	}
	out->n = n;
	out->param = kind == SONDE_AVG_EMA ? alpha : (double)window;
	out->r_square = r_square(p, n, out->y, out);
	free(win);
	free(p);
	return 0;
}

int sonde_smooth__regressogram(size_t buckets, bool median, const double *x, const double *y,
			       size_t n, struct sonde_curve *out)
{
	struct xy *p;
	double lo, hi, w, *tmp;
	size_t i, start = 0, b;
	int rc;

	if (n == 0)
		return -EINVAL;
	if (!buckets)
		buckets = (size_t)ceil(log2((double)n)) + 1;
	p = sorted(x, y, n);
	tmp = malloc(n * sizeof(*tmp));
	rc = !p || !tmp ? -ENOMEM : curve_alloc(out, buckets);
	if (rc) {
		free(p);
		free(tmp);
		return rc;
	}
	lo = p[0].x;
	hi = p[n - 1].x;
	w = hi > lo ? (hi - lo) / (double)buckets : 1;
	for (b = 0; b < buckets && start < n; b++) {
		double edge = b + 1 == buckets ? INFINITY : lo + w * (double)(b + 1), s = 0;
		size_t end = start;

		while (end < n && p[end].x < edge)
			end++;
		if (end == start)
			continue;
		for (i = start; i < end; i++) {
			tmp[i - start] = p[i].y;
			s += p[i].y;
		}
		out->x[out->n] = lo + w * ((double)b + 0.5);
		out->y[out->n++] = median ? sonde_stats__median_inplace(tmp, end - start)
					  : s / (double)(end - start);
		start = end;
	}
	out->param = w;
	/* Each point is fitted by its bucket's value: a step function. */
	{
		size_t k = 0;

		for (i = 0; i < n; i++) {
			while (k + 1 < out->n && p[i].x >= out->x[k] + w / 2)
				k++;
			tmp[i] = out->y[k];
		}
	}
	out->r_square = r_square(p, n, tmp, out);
	free(tmp);
	free(p);
	return 0;
}

double sonde_smooth__bandwidth(enum sonde_bandwidth rule, const double *x, size_t n)
{
	struct sonde_summary s;
	double *tmp, iqr, spread, h;

	if (n < 2 || sonde_stats__summarize(x, n, &s))
		return NAN;
	if (rule == SONDE_BW_SCOTT) {
		h = 1.059 * s.stddev * pow((double)n, -0.2);
		return h > 0 ? h : NAN;
	}
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return NAN;
	memcpy(tmp, x, n * sizeof(*tmp));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	iqr = tmp[(3 * (n - 1)) / 4] - tmp[(n - 1) / 4];
	free(tmp);
	spread = iqr > 0 ? fmin(s.stddev, iqr / 1.349) : s.stddev;
	h = 0.9 * spread * pow((double)n, -0.2);
	return h > 0 ? h : NAN;
}

int sonde_smooth__kernel(bool local_linear, double h, size_t points, const double *x,
			 const double *y, size_t n, struct sonde_curve *out)
{
	struct xy *p;
	double lo, hi;
	size_t i, m, first = 0;
	int rc;

	if (n == 0 || !(h > 0))
		return -EINVAL;
	if (!points)
		points = 200;
	p = sorted(x, y, n);
	if (!p)
		return -ENOMEM;
	lo = p[0].x;
	hi = p[n - 1].x;
	m = hi > lo ? points : 1;
	rc = curve_alloc(out, m);
	if (rc) {
		free(p);
		return rc;
	}
	for (i = 0; i < m; i++) {
		double x0 = m > 1 ? lo + (hi - lo) * (double)i / (double)(m - 1) : lo;
		double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0, v;
		size_t j;

		/* Points beyond 6 bandwidths weigh less than 1e-8: skip them. */
		while (first < n && p[first].x < x0 - 6 * h)
			first++;
		for (j = first; j < n && p[j].x <= x0 + 6 * h; j++) {
			double d = p[j].x - x0, k = exp(-0.5 * (d / h) * (d / h));

			s0 += k;
			s1 += k * d;
			s2 += k * d * d;
			t0 += k * p[j].y;
			t1 += k * d * p[j].y;
		}
		if (!(s0 > 0))
			continue;
		v = t0 / s0;
		if (local_linear && s0 * s2 - s1 * s1 > 1e-12 * s0 * s2)
			v = (s2 * t0 - s1 * t1) / (s0 * s2 - s1 * s1);
		out->x[out->n] = x0;
		out->y[out->n++] = v;
	}
	out->param = h;
	out->r_square = out->n ? r_square(p, n, NULL, out) : NAN;
	free(p);
	return out->n ? 0 : -EINVAL;
}

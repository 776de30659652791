/*
 * linear.c - linear forms over variables (linear.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "linear.h"

long long lin_coef(const struct lin *a, const char *v)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (!strcmp(a->var[i], v))
			return a->k[i];
	return 0;
}

static bool add_term(struct lin *a, const char *v, long long k)
{
	size_t i;

	if (!k)
		return true;
	for (i = 0; i < a->n; i++)
		if (!strcmp(a->var[i], v)) {
			a->k[i] += k;
			if (!a->k[i]) { /* gone: the last takes its place */
				a->n--;
				if (i < a->n) {
					memcpy(a->var[i], a->var[a->n], sizeof(a->var[i]));
					a->k[i] = a->k[a->n];
				}
			}
			return true;
		}
	if (a->n == LIN_VARS || strlen(v) >= sizeof(a->var[0]))
		return false;
	snprintf(a->var[a->n], sizeof(a->var[0]), "%s", v);
	a->k[a->n++] = k;
	return true;
}

bool lin_add(struct lin *a, const struct lin *b, long long s)
{
	size_t i;

	a->c += s * b->c;
	for (i = 0; i < b->n; i++)
		if (!add_term(a, b->var[i], s * b->k[i]))
			return false;
	return true;
}

void lin_scale(struct lin *a, long long k)
{
	size_t i;

	a->c *= k;
	for (i = 0; i < a->n; i++)
		a->k[i] *= k;
	if (!k)
		a->n = 0;
}

bool lin_subst(struct lin *a, const char *v, const struct lin *r)
{
	long long k = lin_coef(a, v);
	struct lin t = *r;

	if (!k)
		return true;
	if (!add_term(a, v, -k))
		return false;
	lin_scale(&t, k);
	return lin_add(a, &t, 1);
}

/* ---- parsing: expr = term {(+|-) term}; term = factor {* factor}; factor = lit | id | (expr) |
 * -factor */

struct parser {
	const char *const *tok;
	size_t n, at;
	int depth;
};

static const char *peek(const struct parser *p)
{
	return p->at < p->n ? p->tok[p->at] : "";
}

static bool expr(struct parser *p, struct lin *out);

static bool integer(const char *s, long long *v)
{
	char *end;
	size_t len = strlen(s);

	/* 10, 10u, 10UL, 0x1f: the suffixes say its type, not its value */
	while (len && strchr("uUlL", s[len - 1]))
		len--;
	if (!len || !isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	*v = strtoll(s, &end, 0);
	return !errno && (size_t)(end - s) == len && *v < (1LL << 40);
}

static bool factor(struct parser *p, struct lin *out)
{
	const char *t = peek(p);
	long long v;

	memset(out, 0, sizeof(*out));
	if (++p->depth > 32)
		return false;
	if (!strcmp(t, "-")) {
		p->at++;
		if (!factor(p, out))
			return false;
		lin_scale(out, -1);
	} else if (!strcmp(t, "+")) {
		p->at++;
		if (!factor(p, out))
			return false;
	} else if (!strcmp(t, "(")) {
		p->at++;
		if (!expr(p, out) || strcmp(peek(p), ")"))
			return false;
		p->at++;
	} else if (integer(t, &v)) {
		p->at++;
		out->c = v;
	} else if (isalpha((unsigned char)t[0]) || t[0] == '_') {
		p->at++;
		if (!strcmp(peek(p), "(") || !strcmp(peek(p), "[") || !strcmp(peek(p), ".") ||
		    !strcmp(peek(p), "->"))
			return false; /* a call, an element, a member: not a variable */
		if (!add_term(out, t, 1))
			return false;
	} else {
		return false;
	}
	p->depth--;
	return true;
}

static bool term(struct parser *p, struct lin *out)
{
	struct lin f;

	if (!factor(p, out))
		return false;
	while (!strcmp(peek(p), "*")) {
		p->at++;
		if (!factor(p, &f))
			return false;
		if (out->n && f.n)
			return false; /* a product of variables */
		if (out->n)
			lin_scale(out, f.c);
		else {
			long long c = out->c;

			*out = f;
			lin_scale(out, c);
		}
	}
	return true;
}

static bool expr(struct parser *p, struct lin *out)
{
	struct lin t;

	if (!term(p, out))
		return false;
	for (;;) {
		const char *op = peek(p);

		if (strcmp(op, "+") && strcmp(op, "-"))
			return true;
		p->at++;
		if (!term(p, &t) || !lin_add(out, &t, op[0] == '+' ? 1 : -1))
			return false;
	}
}

bool lin_parse(const char *const *tok, size_t n, struct lin *out)
{
	struct parser p = { tok, n, 0, 0 };

	return n && expr(&p, out) && p.at == n;
}

void lin_print(const struct lin *a, struct sonde_strbuf *out)
{
	size_t i;
	bool first = true;

	for (i = 0; i < a->n; i++) {
		long long k = a->k[i];

		if (first)
			sonde_strbuf__adds(out, k < 0 ? "-" : "");
		else
			sonde_strbuf__adds(out, k < 0 ? " - " : " + ");
		if (llabs(k) != 1)
			sonde_strbuf__addf(out, "%lld * ", llabs(k));
		sonde_strbuf__adds(out, a->var[i]);
		first = false;
	}
	if (first)
		sonde_strbuf__addf(out, "%lld", a->c);
	else if (a->c)
		sonde_strbuf__addf(out, " %c %lld", a->c < 0 ? '-' : '+', llabs(a->c));
}

/*
 * expr.c - parse and evaluate derived-metric expressions (see expr.h).
 *
 * A recursive-descent parser with a depth limit (a fuzzed input cannot blow
 * the stack), and an evaluator over vectors that never reads past what a
 * lookup handed it.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../grow.h"
#include "expr.h"

struct parser {
	const char *src, *p;
	int depth;
	struct expr_error *err;
	bool (*known)(void *ctx, const char *name); /* names that hold a '-' */
	void *ctx;
};

static void fail(struct parser *ps, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct parser *ps, const char *at, const char *fmt, ...)
{
	va_list ap;

	if (ps->err->msg[0])
		return; /* keep the first error */
	ps->err->col = (int)(at - ps->src) + 1;
	va_start(ap, fmt);
	vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
	va_end(ap);
}

static void skip_space(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

static bool name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9') || c == ':' || c == '.';
}

/*
 * The length of the name at `at`: its name characters, then "-part"s while the
 * longer name is one the caller knows (perf's task-clock, say), so that a '-'
 * is a minus sign except inside a known name.
 */
static size_t name_len(const struct parser *ps, const char *at)
{
	size_t len = 0, more;
	char buf[256];

	while (name_char(at[len]))
		len++;
	while (ps->known && at[len] == '-' && name_start(at[len + 1])) {
		for (more = len + 1; name_char(at[more]); more++)
			;
		if (more >= sizeof(buf))
			break;
		memcpy(buf, at, more);
		buf[more] = 0;
		if (!ps->known(ps->ctx, buf))
			break;
		len = more;
	}
	return len;
}

static struct expr_node *node(struct parser *ps, enum expr_kind k, const char *at)
{
	struct expr_node *n = calloc(1, sizeof(*n));

	if (!n) {
		fail(ps, at, "out of memory");
		return NULL;
	}
	n->kind = k;
	n->col = (int)(at - ps->src) + 1;
	return n;
}

/* The next token as text, for messages. */
static const char *token_text(const char *p, char *buf, size_t len)
{
	size_t i = 0;

	if (!*p)
		return "the end";
	if (name_start(*p) || (*p >= '0' && *p <= '9')) {
		while (p[i] && name_char(p[i]) && i + 3 < len)
			i++;
	} else {
		i = 1;
	}
	snprintf(buf, len, "'%.*s'", (int)i, p);
	return buf;
}

static struct expr_node *parse_expr(struct parser *ps);

/* A bare word inside reduce()/accumulate(): the operation or resolution. */
static int parse_word(struct parser *ps, const char *const *words, const char *what)
{
	const char *at;
	size_t len = 0, i;
	char tok[48];

	skip_space(ps);
	at = ps->p;
	while (name_char(at[len]))
		len++;
	for (i = 0; words[i]; i++)
		if (strlen(words[i]) == len && !strncmp(words[i], at, len)) {
			ps->p += len;
			return (int)i;
		}
	fail(ps, at, "expected %s, found %s", what, token_text(at, tok, sizeof(tok)));
	return -1;
}

static bool expect(struct parser *ps, char c, const char *after)
{
	char tok[48];

	skip_space(ps);
	if (*ps->p == c) {
		ps->p++;
		return true;
	}
	fail(ps, ps->p, "expected '%c' %s, found %s", c, after,
	     token_text(ps->p, tok, sizeof(tok)));
	return false;
}

static struct expr_node *parse_call(struct parser *ps, struct expr_node *n)
{
	static const char *const reduce_ops[] = { "sum", "avr", "min", "max", NULL };
	static const char *const res[] = { "NONE", "HIGH_RES", "LOW_RES", NULL };
	int w;

	ps->p++; /* '(' */
	if (n->kind == EN_REDUCE) {
		n->a = parse_expr(ps);
		if (!n->a || !expect(ps, ',', "after reduce's expression"))
			return NULL;
		w = parse_word(ps, reduce_ops, "sum, avr, min or max");
	} else {
		const char *at;
		size_t len = 0;

		skip_space(ps);
		at = ps->p;
		while (name_char(at[len]))
			len++;
		if (!len || !name_start(*at)) {
			char tok[48];

			fail(ps, at, "accumulate() takes a counter name, found %s",
			     token_text(at, tok, sizeof(tok)));
			return NULL;
		}
		n->name = strndup(at, len);
		if (!n->name) {
			fail(ps, at, "out of memory");
			return NULL;
		}
		ps->p += len;
		if (!expect(ps, ',', "after accumulate's counter"))
			return NULL;
		w = parse_word(ps, res, "HIGH_RES, LOW_RES or NONE");
	}
	if (w < 0)
		return NULL;
	n->op = w;
	if (!expect(ps, ')', n->kind == EN_REDUCE ? "to close reduce(" : "to close accumulate("))
		return NULL;
	return n;
}

static struct expr_node *parse_primary(struct parser *ps)
{
	struct expr_node *n;
	const char *at;
	char tok[48];

	skip_space(ps);
	at = ps->p;
	if (*at == '(') {
		ps->p++;
		n = parse_expr(ps);
		if (n && !expect(ps, ')', "to close '('")) {
			expr_free(n);
			return NULL;
		}
		return n;
	}
	if ((*at >= '0' && *at <= '9') || *at == '.') {
		char *end;
		double v = strtod(at, &end);

		if (end == at || name_start(*end) || !isfinite(v)) {
			fail(ps, at, "malformed number %s", token_text(at, tok, sizeof(tok)));
			return NULL;
		}
		n = node(ps, EN_NUM, at);
		if (!n)
			return NULL;
		n->num = v;
		ps->p = end;
		return n;
	}
	if (name_start(*at)) {
		size_t len = name_len(ps, at);
		const char *q;

		q = at + len;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q == '(' && ((len == 6 && !strncmp(at, "reduce", 6)) ||
				  (len == 10 && !strncmp(at, "accumulate", 10)))) {
			n = node(ps, len == 6 ? EN_REDUCE : EN_ACCUM, at);
			if (!n)
				return NULL;
			ps->p = q;
			if (!parse_call(ps, n)) {
				expr_free(n);
				return NULL;
			}
			return n;
		}
		if (*q == '(') {
			fail(ps, at, "unknown function '%.*s' (functions: reduce, accumulate)",
			     (int)len, at);
			return NULL;
		}
		n = node(ps, EN_NAME, at);
		if (!n)
			return NULL;
		n->name = strndup(at, len);
		if (!n->name) {
			expr_free(n);
			fail(ps, at, "out of memory");
			return NULL;
		}
		ps->p += len;
		return n;
	}
	fail(ps, at, "expected a number, a name or '(', found %s",
	     token_text(at, tok, sizeof(tok)));
	return NULL;
}

static struct expr_node *parse_unary(struct parser *ps)
{
	struct expr_node *n;
	const char *at;

	if (++ps->depth > EXPR_MAX_DEPTH) {
		fail(ps, ps->p, "expression nested deeper than %d levels", EXPR_MAX_DEPTH);
		return NULL;
	}
	skip_space(ps);
	at = ps->p;
	if (*at == '-' || *at == '+') {
		ps->p++;
		n = parse_unary(ps);
		if (n && *at == '-') {
			struct expr_node *neg = node(ps, EN_NEG, at);

			if (!neg) {
				expr_free(n);
				n = NULL;
			} else {
				neg->a = n;
				n = neg;
			}
		}
	} else {
		n = parse_primary(ps);
	}
	ps->depth--;
	return n;
}

static struct expr_node *parse_binary(struct parser *ps, bool additive)
{
	struct expr_node *l = additive ? parse_binary(ps, false) : parse_unary(ps);

	while (l) {
		struct expr_node *r, *n;
		const char *at;
		enum expr_kind k;

		skip_space(ps);
		at = ps->p;
		if (additive && (*at == '+' || *at == '-'))
			k = *at == '+' ? EN_ADD : EN_SUB;
		else if (!additive && (*at == '*' || *at == '/'))
			k = *at == '*' ? EN_MUL : EN_DIV;
		else
			break;
		ps->p++;
		r = additive ? parse_binary(ps, false) : parse_unary(ps);
		n = r ? node(ps, k, at) : NULL;
		if (!n) {
			expr_free(l);
			expr_free(r);
			return NULL;
		}
		n->a = l;
		n->b = r;
		l = n;
	}
	return l;
}

static struct expr_node *parse_expr(struct parser *ps)
{
	struct expr_node *n;

	if (++ps->depth > EXPR_MAX_DEPTH) {
		fail(ps, ps->p, "expression nested deeper than %d levels", EXPR_MAX_DEPTH);
		return NULL;
	}
	n = parse_binary(ps, true);
	ps->depth--;
	return n;
}

struct expr_node *expr_parse(const char *src, struct expr_error *err)
{
	return expr_parse_names(src, NULL, NULL, err);
}

struct expr_node *expr_parse_names(const char *src, bool (*known)(void *ctx, const char *name),
				   void *ctx, struct expr_error *err)
{
	struct parser ps = { src, src, 0, err, known, ctx };
	struct expr_node *n;
	char tok[48];

	err->col = 0;
	err->msg[0] = '\0';
	if (strlen(src) > EXPR_MAX_LEN) {
		snprintf(err->msg, sizeof(err->msg), "expression longer than %d characters",
			 EXPR_MAX_LEN);
		errno = EINVAL;
		return NULL;
	}
	skip_space(&ps);
	if (!*ps.p) {
		fail(&ps, ps.p, "empty expression");
		errno = EINVAL;
		return NULL;
	}
	n = parse_expr(&ps);
	if (n) {
		skip_space(&ps);
		if (*ps.p) {
			fail(&ps, ps.p, "unexpected %s after the expression",
			     token_text(ps.p, tok, sizeof(tok)));
			expr_free(n);
			n = NULL;
		}
	}
	if (!n)
		errno = strcmp(err->msg, "out of memory") ? EINVAL : ENOMEM;
	return n;
}

void expr_free(struct expr_node *n)
{
	if (!n)
		return;
	expr_free(n->a);
	expr_free(n->b);
	free(n->name);
	free(n);
}

int expr_names(const struct expr_node *n, int (*fn)(void *ctx, const char *name, int col),
	       void *ctx)
{
	int rc = 0;

	if (!n)
		return 0;
	if (n->kind == EN_NAME || n->kind == EN_ACCUM)
		rc = fn(ctx, n->name, n->col);
	if (!rc)
		rc = expr_names(n->a, fn, ctx);
	if (!rc)
		rc = expr_names(n->b, fn, ctx);
	return rc;
}

/* ---- evaluation ----------------------------------------------------------------------- */

static int eval_fail(struct expr_error *err, int col, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int eval_fail(struct expr_error *err, int col, int rc, const char *fmt, ...)
{
	va_list ap;

	err->col = col;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return rc;
}

static int lookup(const struct expr_node *n, const char *name, struct expr_env *env,
		  struct expr_vec *v, struct expr_error *err)
{
	int rc;

	err->msg[0] = '\0';
	rc = env->lookup(env->ctx, name, v, err);
	if (rc == -ENOENT && !err->msg[0])
		return eval_fail(err, n->col, rc, "unknown counter or constant '%s'", name);
	if (rc) {
		if (!err->col)
			err->col = n->col;
		return rc;
	}
	if (v->n == 0 || v->n > EXPR_MAX_VEC)
		return eval_fail(err, n->col, -E2BIG, "'%s' has %zu values (1 to %d allowed)", name,
				 v->n, EXPR_MAX_VEC);
	return 0;
}

static struct expr_accum *accum_slot(struct expr_env *env, const struct expr_node *n)
{
	size_t i;

	for (i = 0; i < env->naccum; i++)
		if (env->accum[i].node == n && env->accum[i].scope == env->scope)
			return &env->accum[i];
	if (sonde_grow((void **)&env->accum, &env->accum_cap, env->naccum + 1, sizeof(*env->accum)))
		return NULL;
	env->accum[env->naccum] = (struct expr_accum){ .node = n, .scope = env->scope };
	return &env->accum[env->naccum++];
}

static int eval_accum(const struct expr_node *n, struct expr_env *env, double *out, size_t cap,
		      size_t *outn, struct expr_error *err)
{
	struct expr_accum *a;
	struct expr_vec v;
	double sum = 0;
	size_t i;
	int rc = lookup(n, n->name, env, &v, err);

	if (rc)
		return rc;
	if (n->op == RES_NONE || !env->series) {
		if (v.n > cap)
			return eval_fail(err, n->col, -E2BIG, "value too long");
		memcpy(out, v.v, v.n * sizeof(double));
		*outn = v.n;
		return 0;
	}
	/* a series is summed over its dimension instances: one running total */
	for (i = 0; i < v.n; i++)
		sum += v.v[i];
	a = accum_slot(env, n);
	if (!a)
		return eval_fail(err, n->col, -ENOMEM, "out of memory");
	a->total += sum;
	a->samples++;
	if (n->op == RES_HIGH || a->samples % 4 == 0 || env->last_sample)
		a->held = a->total;
	out[0] = n->op == RES_HIGH ? a->total : a->held;
	*outn = 1;
	return 0;
}

static int eval_reduce(int op, const double *v, size_t n, double *out)
{
	double r = op == RED_MIN ? INFINITY : op == RED_MAX ? -INFINITY : 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (op == RED_MIN)
			r = v[i] < r ? v[i] : r;
		else if (op == RED_MAX)
			r = v[i] > r ? v[i] : r;
		else
			r += v[i];
	}
	if (op == RED_AVR)
		r /= (double)n;
	*out = r;
	return 0;
}

int expr_eval(const struct expr_node *n, struct expr_env *env, double *out, size_t cap,
	      size_t *outn, struct expr_error *err)
{
	double small[16], *tmp = small;
	size_t an = 0, bn = 0, i, len;
	struct expr_vec v;
	int rc;

	if (cap < 1)
		return eval_fail(err, n->col, -E2BIG, "no room for a value");
	switch (n->kind) {
	case EN_NUM:
		out[0] = n->num;
		*outn = 1;
		return 0;
	case EN_NAME:
		rc = lookup(n, n->name, env, &v, err);
		if (rc)
			return rc;
		if (v.n > cap)
			return eval_fail(err, n->col, -E2BIG, "'%s' has too many values", n->name);
		memcpy(out, v.v, v.n * sizeof(double));
		*outn = v.n;
		return 0;
	case EN_ACCUM:
		return eval_accum(n, env, out, cap, outn, err);
	case EN_NEG:
		rc = expr_eval(n->a, env, out, cap, outn, err);
		for (i = 0; !rc && i < *outn; i++)
			out[i] = -out[i];
		return rc;
	case EN_REDUCE:
		tmp = cap > 16 ? malloc(cap * sizeof(double)) : small;
		if (!tmp)
			return eval_fail(err, n->col, -ENOMEM, "out of memory");
		rc = expr_eval(n->a, env, tmp, cap, &an, err);
		if (!rc) {
			eval_reduce(n->op, tmp, an, out);
			*outn = 1;
		}
		if (tmp != small)
			free(tmp);
		return rc;
	default:
		break;
	}
	/* binary */
	rc = expr_eval(n->a, env, out, cap, &an, err);
	if (rc)
		return rc;
	tmp = cap > 16 ? malloc(cap * sizeof(double)) : small;
	if (!tmp)
		return eval_fail(err, n->col, -ENOMEM, "out of memory");
	rc = expr_eval(n->b, env, tmp, cap, &bn, err);
	if (!rc && an != bn && an != 1 && bn != 1)
		rc = eval_fail(err, n->col, -EINVAL,
			       "operands have %zu and %zu dimension instances (use reduce())", an,
			       bn);
	if (rc) {
		if (tmp != small)
			free(tmp);
		return rc;
	}
	len = an > bn ? an : bn;
	for (i = len; i-- > 0;) {
		double a = out[an == 1 ? 0 : i], b = tmp[bn == 1 ? 0 : i];

		switch (n->kind) {
		case EN_ADD:
			out[i] = a + b;
			break;
		case EN_SUB:
			out[i] = a - b;
			break;
		case EN_MUL:
			out[i] = a * b;
			break;
		default:
			if (b == 0) {
				out[i] = NAN;
				if (!env->div0_col)
					env->div0_col = n->col;
			} else {
				out[i] = a / b;
			}
			break;
		}
	}
	*outn = len;
	if (tmp != small)
		free(tmp);
	return 0;
}

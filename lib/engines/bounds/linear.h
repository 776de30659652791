/*
 * linear.h - linear forms over variables (c0 + c1*x1 + ...), the arithmetic
 * the bounds collector needs to bound loops safely: parse C tokens into one,
 * add, subtract, substitute a variable by its least or greatest value, print.
 */
#ifndef SONDE_BOUNDS_LINEAR_H
#define SONDE_BOUNDS_LINEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <sonde/strbuf.h>

#define LIN_VARS 8
#define LIN_NAME 128 /* a variable, or a term the bounds collector names (max(0, n - 1)) */

struct lin {
	long long c; /* the constant */
	size_t n;
	char var[LIN_VARS][LIN_NAME];
	long long k[LIN_VARS]; /* the coefficient of var[i], never 0 */
};

/*
 * Parse tokens (C spellings: integer literals, identifiers, + - * ( )) into
 * a linear form; false for anything else (a call, a division, a product of
 * variables, a member, a literal that is not an integer).
 */
bool lin_parse(const char *const *tok, size_t n, struct lin *out);
/* a + s * b (s: +1 or -1); false when the result has too many variables. */
bool lin_add(struct lin *a, const struct lin *b, long long s);
/* The coefficient of v (0 when absent). */
long long lin_coef(const struct lin *a, const char *v);
/* a * k. */
void lin_scale(struct lin *a, long long k);
/* a with v replaced by the form r. */
bool lin_subst(struct lin *a, const char *v, const struct lin *r);
/* "n - 1", "2 * n + m", "0". */
void lin_print(const struct lin *a, struct sonde_strbuf *out);

#endif

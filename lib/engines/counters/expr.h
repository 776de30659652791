/*
 * expr.h - the expression language of derived metrics (docs/counters.md).
 *
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/') unary)*
 *   unary   := ('-' | '+') unary | primary
 *   primary := NUMBER | NAME | '(' expr ')'
 *            | 'reduce' '(' expr ',' ('sum' | 'avr' | 'min' | 'max') ')'
 *            | 'accumulate' '(' NAME ',' ('HIGH_RES' | 'LOW_RES' | 'NONE') ')'
 *
 * A NAME is [A-Za-z_][A-Za-z0-9_:.]* (a counter, a derived metric or a
 * constant); '-' inside a perf event name is written '_' (task_clock).
 *
 * A value is a vector: one element per dimension instance (per CPU when
 * counted per CPU), or a scalar. Arithmetic works element-wise, a scalar
 * stretches to any length, vectors of different lengths are an error; reduce()
 * turns a vector into a scalar. Division by zero gives NaN and is reported
 * with its column.
 *
 * accumulate(C, RES) reads C over the samples of a series (the intervals of
 * `-I`): HIGH_RES is the running total of C up to and including this sample;
 * LOW_RES is that running total advanced only every fourth sample and at the
 * last one (held in between); NONE is C itself. For a single reading (no
 * series) all three equal C.
 */
#ifndef SONDE_COUNTERS_EXPR_H
#define SONDE_COUNTERS_EXPR_H

#include <stdbool.h>
#include <stddef.h>

#define EXPR_MAX_LEN   4096
#define EXPR_MAX_DEPTH 64
#define EXPR_MAX_VEC   4096 /* elements of one value */

enum expr_kind {
	EN_NUM,
	EN_NAME,
	EN_NEG,
	EN_ADD,
	EN_SUB,
	EN_MUL,
	EN_DIV,
	EN_REDUCE,
	EN_ACCUM,
};

enum expr_reduce { RED_SUM, RED_AVR, RED_MIN, RED_MAX };
enum expr_res { RES_NONE, RES_HIGH, RES_LOW };

struct expr_node {
	enum expr_kind kind;
	int col; /* 1-based column in the source, for messages */
	int op;	 /* EN_REDUCE: enum expr_reduce; EN_ACCUM: enum expr_res */
	double num;
	char *name; /* EN_NAME, EN_ACCUM */
	struct expr_node *a, *b;
};

struct expr_error {
	int col; /* 1-based; 0: not tied to a column */
	char msg[160];
};

/* Parse src; NULL with err filled (errno EINVAL, or ENOMEM). */
struct expr_node *expr_parse(const char *src, struct expr_error *err);
/*
 * The same, where a name may hold a '-' (perf's task-clock) when known(ctx,
 * name) says it is one: otherwise '-' is a minus sign, as in the definitions.
 */
struct expr_node *expr_parse_names(const char *src, bool (*known)(void *ctx, const char *name),
				   void *ctx, struct expr_error *err);
void expr_free(struct expr_node *n);

/* Call fn on every NAME the expression reads (accumulate's counter included). */
int expr_names(const struct expr_node *n, int (*fn)(void *ctx, const char *name, int col),
	       void *ctx);

/* A value: a scalar (n == 1) or a vector of n elements. */
struct expr_vec {
	size_t n;
	const double *v;
};

/* Running state of one accumulate() node over a series. */
struct expr_accum {
	const struct expr_node *node;
	const void *scope; /* which definition the node belongs to */
	double total, held;
	unsigned long long samples;
};

struct expr_env {
	/*
	 * The value of a name for this sample: fill out (v stays valid during the
	 * evaluation). Return 0, or -ENOENT (unknown name), or another -errno
	 * with a message in err.
	 */
	int (*lookup)(void *ctx, const char *name, struct expr_vec *out, struct expr_error *err);
	void *ctx;
	/* accumulate(): series is set when the readings are samples of a series */
	bool series;
	struct expr_accum *accum;
	size_t naccum, accum_cap;
	const void *scope;
	bool last_sample; /* this sample ends the series (LOW_RES catches up) */
	/* out: the first division by zero met (column), 0 when none */
	int div0_col;
};

/*
 * Evaluate n. The result is written to out (n elements, at most cap; a scalar
 * has n == 1). Returns 0, or -errno with err filled (unknown name, shape
 * mismatch, vector too long).
 */
int expr_eval(const struct expr_node *n, struct expr_env *env, double *out, size_t cap,
	      size_t *outn, struct expr_error *err);

#endif

/* libFuzzer target: the derived-metric expression parser and evaluator. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/engines/counters/expr.h"

static const double vals[3] = { 1, 0, 3 };

static int lookup(void *ctx, const char *name, struct expr_vec *out, struct expr_error *err)
{
	(void)ctx;
	(void)err;
	out->v = vals;
	out->n = name[0] == 'v' ? 3 : 1; /* names starting with v are vectors */
	return name[0] == 'u' ? -ENOENT : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct expr_env env = { .lookup = lookup, .series = size & 1, .last_sample = size & 2 };
	struct expr_error err;
	struct expr_node *n;
	char *src = malloc(size + 1);
	double out[64];
	size_t k;

	if (!src)
		return 0;
	memcpy(src, data, size);
	src[size] = '\0';
	n = expr_parse(src, &err);
	if (n) {
		expr_eval(n, &env, out, 64, &k, &err);
		expr_eval(n, &env, out, 64, &k, &err);
	}
	expr_free(n);
	free(env.accum);
	free(src);
	return 0;
}

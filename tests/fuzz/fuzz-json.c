/*
 * fuzz-json: the fast JSON reader against jansson on arbitrary bytes. Both
 * refuse a document or both read it to the same tree, and a tree read is
 * written back by the fast writer byte for byte as jansson writes it, compact
 * and indented. Any
 * difference aborts, so libFuzzer keeps the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "sonde/strbuf.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t je, fe;
	json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
	json_t *f = sonde_json__load((const char *)data, size, 0, &fe);
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	char *want;

	if (!j != !f) {
		fprintf(stderr, "jansson %s, the fast reader %s\n", j ? "reads" : "refuses",
			f ? "reads" : "refuses");
		abort();
	}
	if (!j) {
		if (strcmp(je.text, fe.text))
			abort();
		return 0;
	}
	if (!json_equal(j, f))
		abort();
	want = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
	if (want && (sonde_json__dump_compact(&sb, f) || strcmp(want, sb.buf)))
		abort();
	free(want);
	want = json_dumps(j, JSON_ENCODE_ANY | JSON_INDENT(1) | JSON_REAL_PRECISION(15));
	sonde_strbuf__reset(&sb);
	if (want && (sonde_json__dump_indented(&sb, f, 1, 0) || strcmp(want, sb.buf)))
		abort();
	free(want);
	sonde_strbuf__release(&sb);
	json_decref(j);
	json_decref(f);
	return 0;
}

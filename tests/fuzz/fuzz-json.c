/*
 * fuzz-json: the fast JSON reader against jansson on arbitrary bytes. Both
 * refuse a document or both read it to the same tree, and a tree read is
 * written back by the fast writer byte for byte as jansson writes it, compact
 * and indented. The reader that keeps a profile's resources on the tape
 * (sonde_json__load_packed) gives the same tree once they are made. Any
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

/* The packed reader's tree with its resources made, in the document's order. */
static json_t *packed(const uint8_t *data, size_t size, json_error_t *err)
{
	struct sonde_json_pack *pk = NULL;
	json_t *root = sonde_json__load_packed((const char *)data, size, 0, err, &pk), *rtm, *res;
	size_t i, n;

	if (!pk)
		return root;
	rtm = json_object_get(root, "resource_type_map");
	res = json_object_get(root, "resources");
	if (json_object_size(rtm) || json_object_size(res))
		abort();
	n = sonde_json_pack__count(pk);
	for (i = 0; i < n; i++)
		if (json_object_set_new(rtm, sonde_json_pack__key(pk, i),
					sonde_json_pack__fixed(pk, i)))
			abort();
	n = sonde_json_pack__res_count(pk);
	for (i = 0; i < n; i++) {
		size_t k = sonde_json_pack__res_order(pk, i);

		if (json_object_set_new(res, sonde_json_pack__key(pk, k),
					sonde_json_pack__columns(pk, k)))
			abort();
	}
	sonde_json_pack__free(pk);
	return root;
}

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
		json_t *g;

		if (strcmp(je.text, fe.text))
			abort();
		g = packed(data, size, &fe);
		if (g || strcmp(je.text, fe.text))
			abort();
		return 0;
	}
	if (!json_equal(j, f))
		abort();
	{
		json_t *g = packed(data, size, &fe);

		if (!g || !json_equal(j, g))
			abort();
		json_decref(g);
	}
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

/*
 * libFuzzer target: the configuration reader (YAML into JSON) and writer. A
 * document it reads must come back the same after it is written and read
 * again, and merging it with itself must leave its mappings' keys as they are.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sonde/config.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT, out = SONDE_STRBUF_INIT;
	json_t *a = NULL, *b = NULL, *m;

	if (sonde_config__parse((const char *)data, size, "fuzz", &a, &err) == 0) {
		if (sonde_config__dump(a, &out))
			abort(); /* anything read can be written */
		sonde_strbuf__reset(&err);
		if (sonde_config__parse(out.buf, out.len, "again", &b, &err) || !json_equal(a, b))
			abort(); /* and reads back the same */
		m = sonde_config__merge(a, a);
		if (!m || json_object_size(m) != json_object_size(a))
			abort();
		sonde_config__get(a, "a.0.b");
		json_decref(m);
	}
	json_decref(a);
	json_decref(b);
	sonde_strbuf__release(&err);
	sonde_strbuf__release(&out);
	return 0;
}

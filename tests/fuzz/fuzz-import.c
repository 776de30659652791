/*
 * fuzz-import: sonde import fed arbitrary bytes. A pprof file or perf script's
 * output comes from another tool, maybe cut short or damaged: whatever it
 * holds, the import ends in a profile or one error, never a crash or a leak,
 * and a profile it makes is one every view reads (the pprof export again).
 */
#include <stdint.h>
#include <stdlib.h>
#include "sonde/import.h"
#include "sonde/profile.h"
#include "sonde/strbuf.h"
#include "sonde/view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT, out = SONDE_STRBUF_INIT;
	struct sonde_profile *p = NULL;

	sonde_import__detect(data, size);
	if (!sonde_import__load(data, size, "fuzz", &p, &err) && p) {
		sonde_view__pprof(p, false, &out);
		sonde_profile__free(p);
	}
	sonde_strbuf__release(&err);
	sonde_strbuf__release(&out);
	return 0;
}

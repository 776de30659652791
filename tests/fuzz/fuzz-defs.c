/* libFuzzer target: the counter_defs.yaml loader (and the expressions in it). */
#include <stdint.h>
#include <sonde/counters.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;

	sonde_counters__check_defs((const char *)data, size, "fuzz", &err);
	sonde_strbuf__release(&err);
	return 0;
}

/*
 * fuzz-ringlog: the event-log readers of the memory and trace collectors fed
 * arbitrary bytes. The log is written by the target, so every byte of it is
 * untrusted input: no crash, no hang, no leak, whatever it holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collectors/memory/memory.h"
#include "engines/calltree/calltree.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct mem_analysis m;
	struct tr_analysis t;
	void *buf = malloc(n ? n : 1); /* 8-byte aligned, as the mapped log is */

	if (!buf)
		return 0;
	memcpy(buf, d, n);
	mem_analysis__init(&m);
	mem_analysis__run(&m, buf, n, 0, 1);
	mem_analysis__release(&m);
	tr_analysis__init(&t);
	tr_analysis__run(&t, buf, n, 0);
	tr_analysis__release(&t);
	free(buf);
	return 0;
}

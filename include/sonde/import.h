/*
 * import.h - profiles other tools recorded, as sonde profiles: pprof files
 * (profile.proto, gzipped or not: go tool pprof, Pyroscope, Parca, py-spy's
 * and perf's converters) and `perf script` output (perf record -g, read by
 * perf script). Their stacks become a sampled trace profile, as `sonde
 * collect sample` writes it: per function samples, self and total time, calling
 * contexts; every view, check and report reads it. docs/pprof.md says what
 * maps to what, and what is lost.
 */
#ifndef SONDE_IMPORT_H
#define SONDE_IMPORT_H

#include <stddef.h>
#include <sonde/profile.h>
#include <sonde/strbuf.h>

enum sonde_import_format {
	SONDE_IMPORT_UNKNOWN = 0,
	SONDE_IMPORT_PPROF,
	SONDE_IMPORT_PERF_SCRIPT,
};

/* What len bytes (decompressed) are, from their first bytes. */
enum sonde_import_format sonde_import__detect(const void *buf, size_t len);
const char *sonde_import__format_name(enum sonde_import_format f);

/*
 * buf (len bytes, gzip or zstd compressed or not) as a new profile in *out,
 * named after `name` (the file) in its metadata. 0, or -EINVAL (malformed or
 * unknown input), -ENOTSUP (a pprof profile whose values sonde cannot read as
 * time or samples: a heap profile, say), -ENOMEM; err gets one line saying
 * why.
 */
int sonde_import__load(const void *buf, size_t len, const char *name, struct sonde_profile **out,
		       struct sonde_strbuf *err);

#endif

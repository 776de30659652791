/*
 * bounds.h - static loop bounds of C sources (the bounds collector,
 * docs/bounds.md): for each loop the number of iterations of one entry
 * (local) and over one call of its function (total) as an expression over the
 * function's variables, and its complexity class; a loop it cannot bound is
 * "unbounded" with the reason, never guessed.
 *
 * libclang parses the sources; it is loaded at run time (dlopen), so sonde
 * runs without it and says so here.
 */
#ifndef SONDE_BOUNDS_H
#define SONDE_BOUNDS_H

#include <stddef.h>
#include <sonde/profile.h>
#include <sonde/strbuf.h>

/*
 * Analyse the files (C sources) with the compiler arguments args (-I, -D) into
 * a new profile of type "bound" (*out). -ENOTSUP when libclang cannot be
 * loaded, -EINVAL when a file does not parse (err: the first error), -ENOENT
 * when one cannot be read; err says which.
 */
int sonde_bounds__analyse(const char *const *files, size_t n, const char *const *args, size_t nargs,
			  struct sonde_profile **out, struct sonde_strbuf *err);

#endif

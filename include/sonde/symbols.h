/*
 * symbols.h - offline symbolisation: addresses recorded in a target, resolved
 * afterwards in the sonde process with elfutils' libdw.
 *
 * An address is given as an object file path and a file address (the runtime
 * address minus the object's load bias). The result is one frame per function
 * at that address: inlined functions first (innermost), then the function that
 * contains them, each with source file and line where the debug information
 * has them. Without a symbol that covers the address the frame says so
 * (function NULL) and carries module and offset: never the nearest symbol.
 */
#ifndef SONDE_SYMBOLS_H
#define SONDE_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>

struct sonde_frame {
	const char *function; /* demangled; NULL when no symbol covers the address */
	const char *file;     /* NULL without line information */
	unsigned line;
	const char *module; /* the object's path */
	uint64_t offset;    /* the file address */
	bool inlined;	    /* inlined into the next frame */
};

struct sonde_symbols;

struct sonde_symbols *sonde_symbols__new(void);
void sonde_symbols__free(struct sonde_symbols *s);

/*
 * Resolve addr (a file address in the object at path). return_address: addr
 * is where a call returns to, so the call itself (addr - 1) is looked up.
 * Writes up to max frames into out and returns their count (>= 1) or -errno.
 * Strings live as long as s. Results are cached per (path, addr).
 */
int sonde_symbols__resolve(struct sonde_symbols *s, const char *path, uint64_t addr,
			   bool return_address, struct sonde_frame *out, int max);

/*
 * Keep what objects' addresses resolved to under dir/symbols/, one file per
 * object build id, read by later runs instead of the object's debug
 * information (dir NULL: no cache, the default). Process-wide; set it before
 * any sonde_symbols is made. Returns 0 or -ENOMEM.
 */
int sonde_symbols__set_cache_dir(const char *dir);

/* Demangle a C++ name (when libstdc++ is there); returns name itself otherwise. */
const char *sonde_symbols__demangle(struct sonde_symbols *s, const char *name);

#endif

/*
 * callgraph.h - the static call graph of an ELF file: which of its functions
 * call which, read from their direct call instructions (x86-64, decoded with
 * capstone) without running anything; Perun's --only-extract-cg.
 */
#ifndef SONDE_CALLGRAPH_H
#define SONDE_CALLGRAPH_H

#include <stddef.h>

struct sonde_call_edge {
	char *caller, *callee; /* callee: a function of the file, or NAME@plt */
	unsigned sites;	       /* call instructions from caller to callee */
};

/*
 * Every caller -> callee edge of the file's defined functions, sorted by
 * caller then callee (*out: free with sonde_callgraph__free). Indirect calls
 * (through a register or memory) have no static target and are not edges;
 * *indirect counts them. 0, -ENOTSUP (not x86-64, or no decoder built in),
 * -ENOEXEC (not ELF), -ENOMEM, -errno.
 */
int sonde_callgraph__static(const char *path, struct sonde_call_edge **out, size_t *n,
			    size_t *indirect);
void sonde_callgraph__free(struct sonde_call_edge *e, size_t n);

#endif

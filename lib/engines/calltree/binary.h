/*
 * binary.h - what the trace collector reads from the traced ELF files: their
 * functions, the libraries they need, their USDT probes, and where an address
 * lies in the file (uprobes are placed by file offset).
 */
#ifndef SONDE_TRACE_BINARY_H
#define SONDE_TRACE_BINARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One function: its name and ELF address and size. Non-zero stops the walk. */
typedef int (*tr_func_fn)(void *ctx, const char *name, uint64_t addr, uint64_t size);

/* Every defined function of an ELF file (its symtab, else its dynsym). -errno on failure. */
int tr_elf_functions(const char *path, tr_func_fn fn, void *ctx);

/* Whether the file has a dynamic reference to `sym` (e.g. __cyg_profile_func_enter). */
bool tr_elf_references(const char *path, const char *sym);

/* A library given by name: the file the dynamic linker would find (malloc'ed), or NULL. */
char *tr_find_lib(const char *lib);
/*
 * lib as the program `binary` finds it: one of the objects it links (a file
 * name, or its stem without the version: libfoo.so for libfoo.so.1), through
 * its RUNPATH and $ORIGIN, else as tr_find_lib. Malloc'ed real path, or NULL.
 */
char *tr_find_lib_of(const char *binary, const char *lib);

/* The file's DT_NEEDED libraries, found (malloc'ed paths, NULL-terminated), or NULL. */
char **tr_elf_needed(const char *path);
void tr_strv_free(char **v);

/* A USDT probe from the .note.stapsdt notes; addresses are ELF addresses. */
struct tr_usdt {
	char provider[64], name[64];
	uint64_t pc, semaphore; /* semaphore 0: none */
};
/* The file's USDT probes (*out malloc'ed). -errno on failure; none: 0 and *n = 0. */
int tr_elf_usdt(const char *path, struct tr_usdt **out, size_t *n);

/* The loadable segments of a file, to turn ELF addresses into file offsets. */
struct tr_segs {
	size_t n;
	struct {
		uint64_t vaddr, size, offset;
	} s[16];
};
int tr_elf_segs(const char *path, struct tr_segs *segs);
/* The file offset of an ELF address; false when no segment holds it. */
bool tr_segs__offset(const struct tr_segs *segs, uint64_t vaddr, uint64_t *off);

/*
 * The function of an ELF file named name (or, name NULL, the one holding the
 * ELF address vaddr): its start and size, and *found its name (malloc'ed;
 * found may be NULL). 0, -ENOENT, or -errno.
 */
int tr_elf_function_of(const char *path, const char *name, uint64_t vaddr, uint64_t *start,
		       uint64_t *size, char **found);
/*
 * Whether vaddr begins an instruction of the function [start, start + size):
 * decoded from the start (x86-64, with capstone; aarch64: every fourth byte).
 * 1 yes, 0 no, -ENOTSUP when it cannot be told here, -errno.
 */
int tr_elf_insn_boundary(const char *path, uint64_t start, uint64_t size, uint64_t vaddr);
/*
 * The ELF address just after the first call instruction of the function at
 * start, within its first 64 bytes: where a -pg function's mcount call
 * returns, its calls' key for the runtime (x86-64, with capstone). 0 when
 * there is none or it cannot be told here.
 */
uint64_t tr_elf_first_call_end(const char *path, uint64_t start);

/* A name at an address (sorted by addr). */
struct tr_named {
	char *name;
	uint64_t addr;
};
/*
 * The PLT stubs of an ELF file: the function each calls (its .rela.plt
 * symbol's name) at the stub's ELF address, sorted; *n 0 when it has none.
 * Free with tr_named_free. 0 or -errno.
 */
int tr_elf_plt_stubs(const char *path, struct tr_named **out, size_t *n);
void tr_named_free(struct tr_named *v, size_t n);

#endif

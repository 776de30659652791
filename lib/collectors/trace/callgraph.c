/*
 * callgraph.c - the static call graph of an ELF file (callgraph.h): every
 * function of its symbol table decoded with capstone, each direct call's
 * target named by the function that holds it, or by the PLT stub it is
 * (NAME@plt, as objdump names them).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include <sonde/callgraph.h>
#include "config.h"
#include "../../dynlib.h"
#include "../../engines/calltree/binary.h"

struct fn {
	char *name;
	uint64_t addr, size;
};

struct fns {
	struct fn *v;
	size_t n, cap;
};

static int add_fn(struct fns *f, const char *name, uint64_t addr, uint64_t size)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 256;
		struct fn *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n].name = strdup(name);
	f->v[f->n].addr = addr;
	f->v[f->n].size = size;
	return f->v[f->n++].name ? 0 : -ENOMEM;
}

static int collect_fn(void *ctx, const char *name, uint64_t addr, uint64_t size)
{
	return size ? add_fn(ctx, name, addr, size) : 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The PLT stubs: one per .rela.plt entry, in .plt.sec (IBT) or after .plt's header. */
static int plt_stubs(const char *path, struct fns *f)
{
	uint64_t plt = 0, plt_sec = 0;
	Elf_Scn *scn = NULL, *rela = NULL;
	GElf_Shdr sh, rsh;
	size_t shstr, i;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	Elf *e;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getshdrstrndx(e, &shstr)) {
		if (e)
			elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstr, sh.sh_name)))
			continue;
		if (!strcmp(name, ".plt"))
			plt = sh.sh_addr;
		else if (!strcmp(name, ".plt.sec"))
			plt_sec = sh.sh_addr;
		else if (!strcmp(name, ".rela.plt"))
			rela = scn;
	}
	if (rela && gelf_getshdr(rela, &rsh) && (plt || plt_sec)) {
		Elf_Scn *symscn = elf_getscn(e, rsh.sh_link);
		GElf_Shdr symsh;
		Elf_Data *rd = elf_getdata(rela, NULL),
			 *sd = symscn ? elf_getdata(symscn, NULL) : NULL;

		if (rd && sd && gelf_getshdr(symscn, &symsh)) {
			size_t n = rsh.sh_entsize ? rsh.sh_size / rsh.sh_entsize : 0;

			for (i = 0; i < n && !rc; i++) {
				GElf_Rela r;
				GElf_Sym s;
				const char *sname;
				char stub[512];

				if (!gelf_getrela(rd, (int)i, &r) ||
				    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &s) ||
				    !(sname = elf_strptr(e, symsh.sh_link, s.st_name)) || !*sname)
					continue;
				snprintf(stub, sizeof(stub), "%s@plt", sname);
				rc = add_fn(f, stub,
					    plt_sec ? plt_sec + 16 * i : plt + 16 * (i + 1), 16);
			}
		}
	}
	elf_end(e);
	close(fd);
	return rc;
}

int tr_elf_plt_stubs(const char *path, struct tr_named **out, size_t *n)
{
	struct fns f = { 0 };
	size_t i;
	int rc = plt_stubs(path, &f);

	*out = NULL;
	*n = 0;
	if (rc) {
		for (i = 0; i < f.n; i++)
			free(f.v[i].name);
		free(f.v);
		return rc;
	}
	if (f.n)
		qsort(f.v, f.n, sizeof(*f.v), by_addr);
	*out = f.n ? calloc(f.n, sizeof(**out)) : NULL;
	for (i = 0; i < f.n; i++) {
		char *at = strstr(f.v[i].name, "@plt");

		if (*out) {
			if (at)
				*at = '\0';
			(*out)[i].name = f.v[i].name;
			(*out)[i].addr = f.v[i].addr;
		} else {
			free(f.v[i].name);
		}
	}
	*n = *out ? f.n : 0;
	free(f.v);
	return f.n && !*out ? -ENOMEM : 0;
}

void tr_named_free(struct tr_named *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static const struct fn *holding(const struct fns *f, uint64_t addr)
{
	size_t lo = 0, hi = f->n;

	while (lo < hi) { /* the last function starting at or before addr */
		size_t mid = (lo + hi) / 2;

		if (f->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr - f->v[lo - 1].addr < f->v[lo - 1].size)
		return &f->v[lo - 1];
	return NULL;
}

static int by_edge(const void *a, const void *b)
{
	const struct sonde_call_edge *x = a, *y = b;
	int c = strcmp(x->caller, y->caller);

	return c ? c : strcmp(x->callee, y->callee);
}

void sonde_callgraph__free(struct sonde_call_edge *e, size_t n)
{
	size_t i;

	for (i = 0; e && i < n; i++) {
		free(e[i].caller);
		free(e[i].callee);
	}
	free(e);
}

int sonde_callgraph__static(const char *path, struct sonde_call_edge **out, size_t *n,
			    size_t *indirect)
{
#if SONDE_HAVE_CAPSTONE
	struct fns f = { 0 };
	struct tr_segs segs;
	struct sonde_call_edge *edges = NULL;
	size_t ne = 0, cap = 0, i, nfn;
	unsigned char *code = NULL;
	const struct sonde_cs *C = sonde_cs();
	csh h = 0;
	cs_insn *insn = NULL;
	json_t *seen = json_object(); /* "caller\x1fcallee" -> its edge */
	int fd = -1, rc;

	*out = NULL;
	*n = 0;
	*indirect = 0;
	rc = tr_elf_functions(path, collect_fn, &f);
	nfn = f.n; /* the file's own functions are the callers */
	if (!rc)
		rc = plt_stubs(path, &f);
	if (!rc)
		rc = tr_elf_segs(path, &segs);
	if (!rc && !seen)
		rc = -ENOMEM;
	if (!rc && (!C || C->open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK))
		rc = -ENOTSUP;
	if (!rc && C->option(h, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK)
		rc = -ENOTSUP;
	if (!rc && !(insn = C->malloc(h)))
		rc = -ENOMEM;
	if (!rc && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		rc = -errno;
	{
		struct fn *callers = rc ? NULL : malloc(nfn * sizeof(*callers) + 1);

		if (!rc && !callers)
			rc = -ENOMEM;
		if (!rc)
			memcpy(callers, f.v, nfn * sizeof(*callers));
		qsort(f.v, f.n, sizeof(*f.v), by_addr);
		for (i = 0; !rc && i < nfn; i++) {
			const struct fn *c = &callers[i];
			const uint8_t *p;
			size_t left = c->size;
			uint64_t at = c->addr, off;
			unsigned char *more;

			if (!tr_segs__offset(&segs, c->addr, &off))
				continue;
			more = realloc(code, c->size);
			if (!more) {
				rc = -ENOMEM;
				break;
			}
			code = more;
			if (pread(fd, code, c->size, (off_t)off) != (ssize_t)c->size)
				continue;
			p = code;
			while (!rc && C->disasm_iter(h, &p, &left, &at, insn)) {
				const cs_x86 *x = &insn->detail->x86;
				const struct fn *t;
				json_t *hit;
				char key[1024];

				if (insn->id != X86_INS_CALL)
					continue;
				if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM) {
					(*indirect)++;
					continue;
				}
				t = holding(&f, (uint64_t)x->operands[0].imm);
				if (!t)
					continue; /* into no known function */
				snprintf(key, sizeof(key), "%s\x1f%s", c->name, t->name);
				hit = json_object_get(seen, key);
				if (hit) {
					edges[json_integer_value(hit)].sites++;
					continue;
				}
				if (json_object_set_new(seen, key, json_integer((json_int_t)ne))) {
					rc = -ENOMEM;
					break;
				}
				if (ne == cap) {
					struct sonde_call_edge *v = realloc(
						edges, (cap = cap ? 2 * cap : 64) * sizeof(*v));

					if (!v) {
						rc = -ENOMEM;
						break;
					}
					edges = v;
				}
				edges[ne].caller = strdup(c->name);
				edges[ne].callee = strdup(t->name);
				edges[ne].sites = 1;
				if (!edges[ne++].caller || !edges[ne - 1].callee)
					rc = -ENOMEM;
			}
		}
		free(callers);
	}
	if (insn)
		C->free(insn, 1);
	if (h)
		C->close(&h);
	if (fd >= 0)
		close(fd);
	free(code);
	json_decref(seen);
	for (i = 0; i < f.n; i++)
		free(f.v[i].name);
	free(f.v);
	if (rc) {
		sonde_callgraph__free(edges, ne);
		return rc;
	}
	qsort(edges, ne, sizeof(*edges), by_edge);
	*out = edges;
	*n = ne;
	return 0;
#else
	(void)path;
	*out = NULL;
	*n = 0;
	*indirect = 0;
	return -ENOTSUP;
#endif
}

/*
 * binary.c - the traced ELF files, read with libelf: functions, needed
 * libraries, USDT probes, segments.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "config.h"
#include "../../dynlib.h"
#include "binary.h"

static Elf *elf_open(const char *path, int *fd)
{
	Elf *e;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	e = elf_begin(*fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*fd);
		errno = ENOEXEC;
		return NULL;
	}
	return e;
}

static void elf_close(Elf *e, int fd)
{
	elf_end(e);
	close(fd);
}

/* One symbol of a table; non-zero stops the walk and is returned. */
typedef int (*elf_sym_fn)(void *ctx, const char *name, const GElf_Sym *s);

/*
 * Every named symbol of an ELF file's tables of type `type` (SHT_SYMTAB or
 * SHT_DYNSYM). -ENOENT: the file has no such table; -errno, -ENOEXEC on failure.
 */
static int elf_symbols(const char *path, Elf64_Word type, elf_sym_fn fn, void *ctx)
{
	Elf_Scn *scn = NULL;
	int fd, rc = -ENOENT;
	Elf *e = elf_open(path, &fd);

	if (!e)
		return -errno;
	while ((rc == 0 || rc == -ENOENT) && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		rc = 0;
		d = elf_getdata(scn, NULL);
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; d && i < n && !rc; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (name && *name)
				rc = fn(ctx, name, &s);
		}
	}
	elf_close(e, fd);
	return rc;
}

struct func_walk {
	tr_func_fn fn;
	void *ctx;
};

/*
 * A part of a function that the compiler moved away (gcc's and clang's
 * "foo.cold", "foo.cold.1"): entered by a jump from its function, never called,
 * so it has no entry and no return of its own. (foo.part.N, .isra.N and
 * .constprop.N are real functions, called as such.)
 */
static bool fragment(const char *name)
{
	const char *p = strstr(name, ".cold");

	return p && (p[5] == '\0' || p[5] == '.');
}

static int defined_function(void *ctx, const char *name, const GElf_Sym *s)
{
	struct func_walk *w = ctx;

	if (GELF_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF || !s->st_value ||
	    fragment(name))
		return 0;
	return w->fn(w->ctx, name, s->st_value, s->st_size);
}

/* The build id of an open ELF file (NT_GNU_BUILD_ID) into id; its length, 0 for none. */
static size_t build_id(Elf *e, unsigned char *id, size_t cap)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		size_t off = 0, name_at, desc_at;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_at, &desc_at)) > 0)
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_at, "GNU", 4) &&
			    nh.n_descsz <= cap && nh.n_descsz) {
				memcpy(id, (const char *)d->d_buf + desc_at, nh.n_descsz);
				return nh.n_descsz;
			}
	}
	return 0;
}

/* The name in an open ELF file's .gnu_debuglink and its CRC; false: none. */
static bool debuglink(Elf *e, char *name, size_t cap, uint32_t *crc)
{
	Elf_Scn *scn = NULL;
	size_t shstr;

	if (elf_getshdrstrndx(e, &shstr))
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *sn;
		Elf_Data *d;
		size_t len;

		if (!gelf_getshdr(scn, &sh) || !(sn = elf_strptr(e, shstr, sh.sh_name)) ||
		    strcmp(sn, ".gnu_debuglink") || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		len = strnlen(d->d_buf, d->d_size);
		if (!len || len >= cap || (len + 4) / 4 * 4 + 4 > d->d_size)
			return false;
		memcpy(name, d->d_buf, len + 1);
		memcpy(crc, (const char *)d->d_buf + (len + 4) / 4 * 4, 4);
		return true;
	}
	return false;
}

/* Whether the file at path is the debug file of a binary with this build id or CRC. */
static bool debug_matches(const char *path, const unsigned char *id, size_t nid, bool by_crc,
			  uint32_t crc)
{
	unsigned char theirs[64], buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	ssize_t n;
	bool ok = false;
	int fd;
	Elf *e;

	if (!by_crc) {
		if ((e = elf_open(path, &fd))) {
			ok = build_id(e, theirs, sizeof(theirs)) == nid && !memcmp(theirs, id, nid);
			elf_close(e, fd);
		}
		return ok;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)n);
	close(fd);
	return n == 0 && (uint32_t)c == crc;
}

/*
 * The separate debug file of the ELF file at path, where a stripped program or
 * library keeps its full symbol table, as gdb finds it: by build id under
 * /usr/lib/debug/.build-id (Debian's -dbgsym and -dbg packages), else by
 * .gnu_debuglink beside it, in its .debug directory, or under /usr/lib/debug.
 * Only a file with the same build id (or, without one, the link's CRC) is
 * taken: another build's addresses would put probes inside instructions.
 */
static bool debug_file(const char *path, char *out, size_t cap)
{
	unsigned char id[64];
	char link[256], dir[PATH_MAX], *slash;
	size_t nid = 0, i;
	uint32_t crc = 0;
	bool has_link = false;
	int fd;
	Elf *e = elf_open(path, &fd);

	if (!e)
		return false;
	nid = build_id(e, id, sizeof(id));
	has_link = debuglink(e, link, sizeof(link), &crc);
	elf_close(e, fd);
	if (nid >= 2) {
		int k = snprintf(out, cap, "/usr/lib/debug/.build-id/%02x/", id[0]);

		for (i = 1; i < nid && k > 0 && (size_t)k + 3 < cap; i++)
			k += snprintf(out + k, cap - (size_t)k, "%02x", id[i]);
		if (k > 0 && (size_t)k + 7 < cap) {
			memcpy(out + k, ".debug", 7);
			if (debug_matches(out, id, nid, false, 0))
				return true;
		}
	}
	if (!has_link || !realpath(path, dir) || !(slash = strrchr(dir, '/')))
		return false;
	*slash = '\0';
	for (i = 0; i < 3; i++) {
		static const char *const fmt[] = { "%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s" };

		if (snprintf(out, cap, fmt[i], dir, link) < (int)cap &&
		    debug_matches(out, id, nid, nid < 2, crc))
			return true;
	}
	return false;
}

int tr_elf_functions(const char *path, tr_func_fn fn, void *ctx)
{
	struct func_walk w = { fn, ctx };
	char debug[PATH_MAX];
	int rc = elf_symbols(path, SHT_SYMTAB, defined_function, &w);

	/* stripped: the full table of its debug file, where there is one (the
	   addresses are the program's), else the functions it exports */
	if (rc == -ENOENT && debug_file(path, debug, sizeof(debug)))
		rc = elf_symbols(debug, SHT_SYMTAB, defined_function, &w);
	if (rc == -ENOENT)
		rc = elf_symbols(path, SHT_DYNSYM, defined_function, &w);
	return rc == -ENOENT ? 0 : rc;
}

static int is_named(void *ctx, const char *name, const GElf_Sym *s)
{
	(void)s;
	return strcmp(name, ctx) == 0;
}

bool tr_elf_references(const char *path, const char *sym)
{
	return elf_symbols(path, SHT_DYNSYM, is_named, (void *)sym) == 1;
}

/*
 * `name` in a colon-separated list of directories, the first readable one
 * (real path, malloc'ed), or NULL. With `origin`, $ORIGIN stands for it.
 */
static char *search_dirs(const char *list, const char *name, const char *origin)
{
	char path[PATH_MAX];

	while (list && *list) {
		size_t len = strcspn(list, ":");
		int n = origin && len >= 7 && strncmp(list, "$ORIGIN", 7) == 0
				? snprintf(path, sizeof(path), "%s%.*s/%s", origin, (int)len - 7,
					   list + 7, name)
				: snprintf(path, sizeof(path), "%.*s/%s", (int)len, list, name);

		if (len && n < (int)sizeof(path) && access(path, R_OK) == 0)
			return realpath(path, NULL);
		list += len + (list[len] == ':');
	}
	return NULL;
}

char *tr_find_lib(const char *lib)
{
	char *found;

	if (strchr(lib, '/'))
		return access(lib, R_OK) == 0 ? realpath(lib, NULL) : NULL;
	/* the directories the program will search first, then the system's */
	found = search_dirs(getenv("LD_LIBRARY_PATH"), lib, NULL);
	return found ? found
		     : search_dirs("/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib:/usr/lib:"
				   "/usr/local/lib",
				   lib, NULL);
}

char *tr_find_lib_of(const char *binary, const char *lib)
{
	const char *me = strrchr(binary, '/') ? strrchr(binary, '/') + 1 : binary;
	char **needed, *found = NULL;
	size_t i, l = strlen(lib);

	/* the program itself, by its name (Perun's users write -d prog#f#1) */
	if (!strcmp(lib, me))
		return strdup(binary);
	needed = strchr(lib, '/') ? NULL : tr_elf_needed(binary);

	for (i = 0; needed && needed[i] && !found; i++) {
		const char *base =
			strrchr(needed[i], '/') ? strrchr(needed[i], '/') + 1 : needed[i];

		if (!strncmp(base, lib, l) && (base[l] == '\0' || base[l] == '.'))
			found = strdup(needed[i]);
	}
	tr_strv_free(needed);
	return found ? found : tr_find_lib(lib);
}

void tr_strv_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* DT_RUNPATH/DT_RPATH directories, with $ORIGIN, then the usual search. */
static char *find_needed(const char *soname, const char *runpath, const char *origin)
{
	char *found = search_dirs(runpath, soname, origin);

	return found ? found : tr_find_lib(soname);
}

char **tr_elf_needed(const char *path)
{
	Elf_Scn *scn = NULL;
	char **v = calloc(1, sizeof(*v)), origin[PATH_MAX];
	const char *names[64], *runpath = NULL;
	size_t n = 0, k = 0, i;
	int fd;
	Elf *e = elf_open(path, &fd);

	if (!e || !v) {
		if (e)
			elf_close(e, fd);
		free(v);
		return NULL;
	}
	snprintf(origin, sizeof(origin), "%s", path);
	*(strrchr(origin, '/') ? strrchr(origin, '/') : origin) = '\0';
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Dyn dyn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			if (!gelf_getdyn(d, (int)i, &dyn))
				continue;
			if (dyn.d_tag == DT_NEEDED && n < 64)
				names[n++] = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			else if (dyn.d_tag == DT_RUNPATH || dyn.d_tag == DT_RPATH)
				runpath = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
		}
	}
	for (i = 0; i < n; i++) {
		char *found = names[i] ? find_needed(names[i], runpath, origin) : NULL;
		char **nv;

		if (!found)
			continue;
		nv = realloc(v, (k + 2) * sizeof(*v));
		if (!nv) {
			free(found);
			break;
		}
		v = nv;
		v[k++] = found;
		v[k] = NULL;
	}
	elf_close(e, fd);
	return v;
}

/* The address of a section, by name; 0 when there is none. */
static uint64_t section_addr(Elf *e, const char *want)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && strcmp(name, want) == 0)
			return sh.sh_addr;
	}
	return 0;
}

/*
 * A stapsdt note (type 3, owner "stapsdt"): the probe's address, the link-time
 * address of .stapsdt.base, the semaphore's address, then provider, name and
 * argument strings. Addresses move with .stapsdt.base when the file was prelinked.
 */
int tr_elf_usdt(const char *path, struct tr_usdt **out, size_t *count)
{
	Elf_Scn *scn = NULL;
	struct tr_usdt *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t base;
	int fd, rc = 0;
	Elf *e = elf_open(path, &fd);

	*out = NULL;
	*count = 0;
	if (!e)
		return -errno;
	base = section_addr(e, ".stapsdt.base");
	while (!rc && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *d;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			const char *owner = (const char *)d->d_buf + name_off;
			const char *desc = (const char *)d->d_buf + desc_off, *prov, *nm;
			uint64_t a[3];
			struct tr_usdt *u;

			if (nh.n_type != 3 || nh.n_namesz != 8 ||
			    memcmp(owner, "stapsdt", 8) != 0 || nh.n_descsz < sizeof(a) + 2)
				continue;
			memcpy(a, desc, sizeof(a));
			prov = desc + sizeof(a);
			nm = prov + strnlen(prov, nh.n_descsz - sizeof(a)) + 1;
			if (nm >= desc + nh.n_descsz)
				continue;
			if (n == cap) {
				void *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

				if (!nv) {
					rc = -ENOMEM;
					break;
				}
				v = nv;
			}
			u = &v[n++];
			snprintf(u->provider, sizeof(u->provider), "%s", prov);
			snprintf(u->name, sizeof(u->name), "%.*s", (int)(desc + nh.n_descsz - nm),
				 nm);
			u->pc = a[0] + (base && a[1] ? base - a[1] : 0);
			u->semaphore = a[2] ? a[2] + (base && a[1] ? base - a[1] : 0) : 0;
		}
	}
	elf_close(e, fd);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*count = n;
	return 0;
}

int tr_elf_segs(const char *path, struct tr_segs *segs)
{
	size_t i, nph;
	int fd;
	Elf *e = elf_open(path, &fd);

	segs->n = 0;
	if (!e)
		return -errno;
	if (elf_getphdrnum(e, &nph)) {
		elf_close(e, fd);
		return -ENOEXEC;
	}
	for (i = 0; i < nph && segs->n < sizeof(segs->s) / sizeof(segs->s[0]); i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		segs->s[segs->n].vaddr = ph.p_vaddr;
		segs->s[segs->n].size = ph.p_filesz;
		segs->s[segs->n].offset = ph.p_offset;
		segs->n++;
	}
	elf_close(e, fd);
	return 0;
}

bool tr_segs__offset(const struct tr_segs *segs, uint64_t vaddr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < segs->n; i++)
		if (vaddr >= segs->s[i].vaddr && vaddr - segs->s[i].vaddr < segs->s[i].size) {
			*off = vaddr - segs->s[i].vaddr + segs->s[i].offset;
			return true;
		}
	return false;
}

/* ---- dynamic probes: the function around an address, and its instructions ------------------ */

struct around {
	const char *name; /* wanted by name; NULL: by address */
	uint64_t vaddr, start, size;
	char *found;
};

static int around_fn(void *ctx, const char *name, uint64_t addr, uint64_t size)
{
	struct around *a = ctx;

	if (a->name ? !strcmp(name, a->name) : a->vaddr >= addr && a->vaddr - addr < size) {
		a->start = addr;
		a->size = size;
		a->found = strdup(name);
		return 1;
	}
	return 0;
}

int tr_elf_function_of(const char *path, const char *name, uint64_t vaddr, uint64_t *start,
		       uint64_t *size, char **found)
{
	struct around a = { name, vaddr, 0, 0, NULL };
	int rc = tr_elf_functions(path, around_fn, &a);

	if (rc < 0)
		return rc;
	if (!a.found)
		return -ENOENT;
	*start = a.start;
	*size = a.size;
	if (found)
		*found = a.found;
	else
		free(a.found);
	return 0;
}

int tr_elf_insn_boundary(const char *path, uint64_t start, uint64_t size, uint64_t vaddr)
{
	struct tr_segs segs;
	uint64_t off;
	unsigned char *code;
	int fd, rc;
	Elf *e;
	GElf_Ehdr eh;
	unsigned machine;

	if (vaddr == start)
		return 1; /* a function's first byte is an instruction's */
	if (vaddr < start || vaddr - start >= size)
		return 0;
	e = elf_open(path, &fd);
	if (!e)
		return -errno;
	machine = gelf_getehdr(e, &eh) ? eh.e_machine : 0;
	elf_close(e, fd);
	if (machine == EM_AARCH64)
		return (vaddr - start) % 4 == 0; /* fixed-width instructions */
	if (machine != EM_X86_64)
		return -ENOTSUP;
#if SONDE_HAVE_CAPSTONE
	rc = tr_elf_segs(path, &segs);
	if (rc)
		return rc;
	if (!tr_segs__offset(&segs, start, &off))
		return -ERANGE;
	code = malloc(size);
	if (!code)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	rc = fd < 0 ? -errno : pread(fd, code, size, (off_t)off) == (ssize_t)size ? 0 : -EIO;
	if (fd >= 0)
		close(fd);
	if (!rc) {
		const struct sonde_cs *C = sonde_cs();
		csh h;
		cs_insn *insn;
		const uint8_t *p = code;
		size_t left = size;
		uint64_t at = start;

		if (!C || C->open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
			free(code);
			return -ENOTSUP;
		}
		insn = C->malloc(h);
		rc = 0;
		/* walk the instructions from the function's start: the address must begin one */
		while (insn && at < vaddr && C->disasm_iter(h, &p, &left, &at, insn))
			;
		rc = at == vaddr;
		if (insn)
			C->free(insn, 1);
		C->close(&h);
	}
	free(code);
	return rc;
#else
	(void)segs;
	(void)off;
	(void)code;
	(void)rc;
	return -ENOTSUP; /* no decoder built in: only a function's entry is sure */
#endif
}

uint64_t tr_elf_first_call_end(const char *path, uint64_t start)
{
#if SONDE_HAVE_CAPSTONE
	struct tr_segs segs;
	unsigned char code[64];
	uint64_t off, found = 0;
	ssize_t got;
	int fd;

	if (tr_elf_segs(path, &segs) || !tr_segs__offset(&segs, start, &off))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	got = fd < 0 ? -1 : pread(fd, code, sizeof(code), (off_t)off);
	if (fd >= 0)
		close(fd);
	if (got > 0) {
		const struct sonde_cs *C = sonde_cs();
		const uint8_t *p = code;
		size_t left = (size_t)got;
		uint64_t at = start;
		cs_insn *insn;
		csh h;

		if (!C || C->open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
			return 0;
		insn = C->malloc(h);
		while (insn && !found && C->disasm_iter(h, &p, &left, &at, insn))
			if (insn->id == X86_INS_CALL)
				found = at;
		if (insn)
			C->free(insn, 1);
		C->close(&h);
	}
	return found;
#else
	(void)path;
	(void)start;
	return 0;
#endif
}

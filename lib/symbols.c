/*
 * symbols.c - addresses to functions, files and lines with elfutils' libdw.
 *
 * One Dwfl per object file, reported at bias 0 so that file addresses can be
 * looked up directly; separate debug files are found the standard way
 * (.gnu_debuglink, build-id under /usr/lib/debug). Results are cached per
 * (object, address) and strings are interned, so resolving the same stack
 * many times costs one hash lookup per frame.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sonde/file.h>
#include <sonde/strbuf.h>
#include <sonde/symbols.h>
#include "u64map.h"

struct object {
	const char *path; /* interned */
	Dwfl *dwfl;	  /* NULL: the file could not be opened */
	Dwfl_Module *mod;
	/* the symbol cache (below): its file for this object ("" where the object
	   has no build id), and the (addr << 1 | return_address) of every address
	   resolved, loaded or new */
	char cache[128];
	uint64_t *keys;
	size_t nkeys, capkeys;
	bool dirty; /* addresses resolved that the file does not hold */
	/* .eh_frame_hdr's table of the functions' starts (datarel sdata4 pairs) */
	const uint8_t *starts;
	size_t nstarts;
	uint64_t starts_base; /* the table's addresses are relative to this */
	bool starts_read;
};

struct sonde_symbols {
	json_t *strings; /* interned strings: the keys of this object */
	struct object *obj;
	size_t nobj, capobj;
	struct u64map objects; /* hash of path -> index + 1 (collisions checked) */
	struct u64map cache;   /* (object, addr, ra) -> position in frames << 8 | count */
	struct sonde_frame *frames;
	size_t nframes, capframes;
	char *(*demangle)(const char *, char *, size_t *, int *);
	void *libstdcxx;
	bool demangle_tried;
};

static const Dwfl_Callbacks offline_callbacks = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct sonde_symbols *sonde_symbols__new(void)
{
	struct sonde_symbols *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->strings = json_object();
	if (!s->strings) {
		free(s);
		return NULL;
	}
	return s;
}

static void cache_save(struct sonde_symbols *s, struct object *o);

void sonde_symbols__free(struct sonde_symbols *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nobj; i++) {
		cache_save(s, &s->obj[i]);
		if (s->obj[i].dwfl)
			dwfl_end(s->obj[i].dwfl);
		free(s->obj[i].keys);
	}
	free(s->obj);
	free(s->frames);
	u64map__release(&s->objects);
	u64map__release(&s->cache);
	json_decref(s->strings);
	if (s->libstdcxx)
		dlclose(s->libstdcxx);
	free(s);
}

static const char *intern(struct sonde_symbols *s, const char *str)
{
	void *it;

	if (!str)
		return NULL;
	it = json_object_iter_at(s->strings, str);
	if (!it) {
		if (json_object_set_new(s->strings, str, json_null()))
			return NULL;
		it = json_object_iter_at(s->strings, str);
	}
	return it ? json_object_iter_key(it) : NULL;
}

const char *sonde_symbols__demangle(struct sonde_symbols *s, const char *name)
{
	char *out;
	int status = 0;
	const char *r;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return name;
	if (!s->demangle_tried) {
		s->demangle_tried = true;
		s->libstdcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (s->libstdcxx)
			*(void **)&s->demangle = dlsym(s->libstdcxx, "__cxa_demangle");
	}
	if (!s->demangle)
		return name;
	out = s->demangle(name, NULL, NULL, &status);
	if (status || !out) {
		free(out);
		return name;
	}
	r = intern(s, out);
	free(out);
	return r ? r : name;
}

static uint64_t hash_str(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	return h == U64MAP_EMPTY ? 0 : h;
}

static void cache_load(struct sonde_symbols *s, struct object *o);

static struct object *object_for(struct sonde_symbols *s, const char *path)
{
	struct stat st;
	int fd;
	uint64_t h = hash_str(path), idx;
	struct object *o;

	while (u64map__get(&s->objects, h, &idx)) {
		if (!strcmp(s->obj[idx].path, path))
			return &s->obj[idx];
		h = h + 1 == U64MAP_EMPTY ? 0 : h + 1; /* a collision: probe the next key */
	}
	if (s->nobj == s->capobj) {
		size_t cap = s->capobj ? s->capobj * 2 : 16;
		struct object *n = realloc(s->obj, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->obj = n;
		s->capobj = cap;
	}
	o = &s->obj[s->nobj];
	memset(o, 0, sizeof(*o));
	o->path = intern(s, path);
	if (!o->path || u64map__put(&s->objects, h, s->nobj))
		return NULL;
	s->nobj++;
	/* the path came from the target: only a regular file is read (a FIFO
	   would block, a device never end) */
	fd = path[0] == '/' || path[0] == '.' ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		o->dwfl = dwfl_begin(&offline_callbacks);
		if (o->dwfl) {
			dwfl_report_begin(o->dwfl);
			/* on success the module owns fd (closed by dwfl_end) */
			o->mod = dwfl_report_elf(o->dwfl, path, path, fd, 0, false);
			dwfl_report_end(o->dwfl, NULL, NULL);
			if (!o->mod) {
				dwfl_end(o->dwfl);
				o->dwfl = NULL;
				close(fd);
			}
		} else {
			close(fd);
		}
	}
	if (o->mod)
		cache_load(s, o);
	return o;
}

static int push_frame(struct sonde_symbols *s, const struct sonde_frame *f)
{
	if (s->nframes == s->capframes) {
		size_t cap = s->capframes ? s->capframes * 2 : 1024;
		struct sonde_frame *n = realloc(s->frames, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->frames = n;
		s->capframes = cap;
	}
	s->frames[s->nframes++] = *f;
	return 0;
}

/* The name of the function covering a (no nearest-symbol guesses). */
static const char *symbol_name(struct object *o, Dwarf_Addr a)
{
	GElf_Sym sym;
	GElf_Off off = 0;
	const char *name = dwfl_module_addrinfo(o->mod, a, &off, &sym, NULL, NULL, NULL);

	if (!name || !sym.st_size || off >= sym.st_size)
		return NULL;
	return name;
}

/* A symbol name without its version ("memcpy@@GLIBC_2.14" -> "memcpy"). */
static const char *unversioned(struct sonde_symbols *s, const char *name)
{
	const char *at = name ? strchr(name, '@') : NULL;
	char buf[1024];

	if (!at || at == name || (size_t)(at - name) >= sizeof(buf))
		return name;
	memcpy(buf, name, (size_t)(at - name));
	buf[at - name] = '\0';
	return intern(s, buf);
}

/*
 * The object's .eh_frame_hdr search table: one (start, FDE) pair per function
 * with call frame information, sorted by start. Read where it has the layout
 * every x86-64 and AArch64 toolchain writes (version 1, table of datarel sdata4
 * pairs); otherwise none.
 */
static void read_starts(struct object *o)
{
	GElf_Addr bias = 0;
	Elf *elf = dwfl_module_getelf(o->mod, &bias);
	size_t nph = 0, i;

	o->starts_read = true;
	if (!elf || elf_getphdrnum(elf, &nph))
		return;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		const uint8_t *h;
		int32_t count;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		h = d ? d->d_buf : NULL;
		/* version, eh_frame_ptr_enc, fde_count_enc (udata4), table_enc (datarel sdata4) */
		if (!h || d->d_size < 12 || h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
			return;
		/* the eh_frame pointer is 4 bytes in every encoding these writers use */
		if ((h[1] & 0x0f) != 0x0b && (h[1] & 0x0f) != 0x03)
			return;
		memcpy(&count, h + 8, 4);
		if (count <= 0 || 12 + (size_t)count * 8 > d->d_size)
			return;
		o->starts = h + 12;
		o->nstarts = (size_t)count;
		o->starts_base = ph.p_vaddr;
		return;
	}
}

static uint64_t start_at(const struct object *o, size_t k)
{
	int32_t v;

	memcpy(&v, o->starts + 8 * k, 4);
	return o->starts_base + (uint64_t)(int64_t)v;
}

/*
 * A function without a symbol (a stripped object's own functions): named
 * after its start, "[OBJECT+0xSTART]", so that its addresses add up as one
 * function and not one each (perf and heaptrack show each address). Where
 * call frame information covers a (libdw says), its function is the one
 * whose information begins last at or before a: those ranges do not overlap.
 * NULL: none covers a, or the object has no search table.
 */
static const char *unnamed(struct sonde_symbols *s, struct object *o, Dwarf_Addr a)
{
	const char *base = strrchr(o->path, '/');
	Dwarf_Addr bias = 0;
	Dwarf_CFI *cfi;
	Dwarf_Frame *fr = NULL;
	size_t lo = 0, hi;
	char buf[512];

	if (!o->starts_read)
		read_starts(o);
	if (!o->nstarts || a < start_at(o, 0))
		return NULL;
	cfi = dwfl_module_eh_cfi(o->mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, a - bias, &fr) || !fr)
		return NULL;
	free(fr);
	hi = o->nstarts; /* the answer is in [lo, hi) */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (start_at(o, mid) <= a)
			lo = mid;
		else
			hi = mid;
	}
	snprintf(buf, sizeof(buf), "[%s+0x%llx]", base ? base + 1 : o->path,
		 (unsigned long long)start_at(o, lo));
	return intern(s, buf);
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *inl)
{
	Dwarf_Attribute at;
	Dwarf_Word idx;
	Dwarf_Files *files;
	size_t n;

	if (!dwarf_attr(inl, DW_AT_call_file, &at) || dwarf_formudata(&at, &idx) ||
	    dwarf_getsrcfiles(cu, &files, &n) || idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static unsigned call_line(Dwarf_Die *inl)
{
	Dwarf_Attribute at;
	Dwarf_Word v;

	if (!dwarf_attr(inl, DW_AT_call_line, &at) || dwarf_formudata(&at, &v))
		return 0;
	return (unsigned)v;
}

/* Resolve a into s->frames (appended). */
static int lookup(struct sonde_symbols *s, struct object *o, uint64_t shown, Dwarf_Addr a)
{
	struct sonde_frame f = { .module = o->path, .offset = shown };
	Dwarf_Die *cu, *scopes = NULL;
	Dwarf_Addr bias = 0;
	Dwfl_Line *line;
	const char *file = NULL, *sym;
	int line_no = 0, n, i, rc = 0;

	if (!o->dwfl)
		return push_frame(s, &f);
	line = dwfl_module_getsrc(o->mod, a);
	if (line)
		file = dwfl_lineinfo(line, NULL, &line_no, NULL, NULL, NULL);
	sym = unversioned(s, symbol_name(o, a));
	cu = dwfl_module_addrdie(o->mod, a, &bias);
	n = cu ? dwarf_getscopes(cu, a - bias, &scopes) : 0;
	/* inlined functions, innermost first; each one's call site locates the next */
	for (i = 0; i < n && !rc; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_inlined_subroutine) {
			f.function =
				intern(s, sonde_symbols__demangle(s, dwarf_diename(&scopes[i])));
			f.file = intern(s, file);
			f.line = (unsigned)line_no;
			f.inlined = true;
			rc = push_frame(s, &f);
			file = call_file(cu, &scopes[i]);
			line_no = (int)call_line(&scopes[i]);
		} else if (tag == DW_TAG_subprogram) {
			if (!sym)
				sym = dwarf_diename(&scopes[i]);
			break;
		}
	}
	free(scopes);
	if (rc)
		return rc;
	if (!sym && (sym = unnamed(s, o, a)))
		file = NULL;
	f.function = sym ? intern(s, sonde_symbols__demangle(s, sym)) : NULL;
	f.file = f.function ? intern(s, file) : NULL;
	f.line = f.function && file ? (unsigned)line_no : 0;
	f.inlined = false;
	return push_frame(s, &f);
}

/* ---- the symbol cache ------------------------------------------------------------------
 *
 * What an object's addresses resolved to, kept on disk between runs, so that a
 * later run over the same object need not read its debug information (for a
 * C library with separate, compressed DWARF that is most of a short run's
 * analysis). One file per object, named after its build id and after the
 * size and time of the debug file under /usr/lib/debug/.build-id where there
 * is one (installing or updating debug information starts a new file). An
 * object without a build id is not cached. A file is read as far as it is well
 * formed (one of another sonde build, not at all); one is written (atomically)
 * only when the run resolved addresses it did not hold.
 *
 * Format, native byte order: "SONDESY1", the resolver's build id (below; 81
 * bytes, NUL-padded), then entries to the end: u64 addr << 1
 * | return_address, u8 frames, and per frame u32 line, u8 inlined, and two
 * strings (function, file), each u32 length (UINT32_MAX: none) and its bytes.
 */
static char *cache_dir; /* NULL: no cache */

/*
 * The resolver's own build id (libsonde's, read from its loaded notes): a file
 * written by another build of sonde may hold what that build's code said, so
 * it is not read.
 */
static char resolver[2 * 40 + 1];
static pthread_once_t resolver_once = PTHREAD_ONCE_INIT;

static int own_note(struct dl_phdr_info *info, size_t size, void *ctx)
{
	uintptr_t me = (uintptr_t)ctx;
	int i, found = 0;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) { /* is this object the one holding me? */
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t at = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && me >= at && me - at < ph->p_memsz)
			found = 1;
	}
	for (i = 0; found && i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr),
			   *end = p + ph->p_memsz;

		while (ph->p_type == PT_NOTE && p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const void *)p;
			const unsigned char *desc =
				(const unsigned char *)(n + 1) + ((n->n_namesz + 3) & ~3u);
			size_t k;

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(n + 1, "GNU", 4) && n->n_descsz >= 4 && n->n_descsz <= 40) {
				for (k = 0; k < n->n_descsz; k++)
					snprintf(resolver + 2 * k, 3, "%02x", desc[k]);
				return 1;
			}
			p = (const char *)desc + ((n->n_descsz + 3) & ~3u);
		}
	}
	return found;
}

static void find_resolver(void)
{
	dl_iterate_phdr(own_note, (void *)(uintptr_t)find_resolver);
}

int sonde_symbols__set_cache_dir(const char *dir)
{
	char *d = dir ? strdup(dir) : NULL;

	if (dir && !d)
		return -ENOMEM;
	free(cache_dir);
	cache_dir = d;
	return 0;
}

static int add_key(struct object *o, uint64_t k)
{
	if (o->nkeys == o->capkeys) {
		size_t cap = o->capkeys ? o->capkeys * 2 : 64;
		uint64_t *n = realloc(o->keys, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		o->keys = n;
		o->capkeys = cap;
	}
	o->keys[o->nkeys++] = k;
	return 0;
}

static uint64_t cache_key(const struct sonde_symbols *s, const struct object *o, uint64_t k);

/* The cache file's name for o (o->cache), or "" when o has none. */
static void cache_name(struct object *o)
{
	const unsigned char *id;
	GElf_Addr at;
	char hex[2 * 40 + 1], debug[160];
	struct stat st;
	int n = dwfl_module_build_id(o->mod, &id, &at), i;

	o->cache[0] = '\0';
	if (n < 4 || n > 40) /* a build id is 20 bytes (SHA-1), or 16 (MD5) */
		return;
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	if (stat(debug, &st) == 0)
		snprintf(o->cache, sizeof(o->cache), "%.80s-%llx-%llx", hex,
			 (unsigned long long)st.st_size,
			 (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
				 (unsigned long long)st.st_mtim.tv_nsec);
	else
		snprintf(o->cache, sizeof(o->cache), "%.80s", hex);
}

static bool take(const char **p, const char *end, void *out, size_t n)
{
	if ((size_t)(end - *p) < n)
		return false;
	memcpy(out, *p, n);
	*p += n;
	return true;
}

/* A string of the file, interned (*str NULL for none). false: malformed. */
static bool take_string(struct sonde_symbols *s, const char **p, const char *end, const char **str)
{
	uint32_t len;
	char buf[4096];

	if (!take(p, end, &len, sizeof(len)))
		return false;
	if (len == UINT32_MAX) {
		*str = NULL;
		return true;
	}
	if (len >= sizeof(buf) || !take(p, end, buf, len) || memchr(buf, '\0', len))
		return false;
	buf[len] = '\0';
	*str = intern(s, buf);
	return *str != NULL;
}

static void cache_load(struct sonde_symbols *s, struct object *o)
{
	char path[PATH_MAX], *data = NULL;
	const char *p, *end;
	size_t len;

	if (!cache_dir)
		return;
	pthread_once(&resolver_once, find_resolver);
	if (!resolver[0])
		return;
	cache_name(o);
	if (!o->cache[0] ||
	    snprintf(path, sizeof(path), "%s/symbols/%s", cache_dir, o->cache) >=
		    (int)sizeof(path) ||
	    sonde_file__read(path, &data, &len))
		return;
	p = data;
	end = data + len;
	if (len < 8 + sizeof(resolver) || memcmp(p, "SONDESY1", 8) ||
	    memcmp(p + 8, resolver, sizeof(resolver))) {
		free(data);
		return;
	}
	p += 8 + sizeof(resolver);
	while (p < end) {
		size_t first = s->nframes, k;
		uint64_t key, hit;
		uint8_t nf;
		bool ok = take(&p, end, &key, sizeof(key)) && take(&p, end, &nf, 1) && nf > 0;

		for (k = 0; ok && k < nf; k++) {
			struct sonde_frame f = { .module = o->path, .offset = key >> 1 };
			uint32_t line;
			uint8_t inl;

			ok = take(&p, end, &line, sizeof(line)) && take(&p, end, &inl, 1) &&
			     take_string(s, &p, end, &f.function) &&
			     take_string(s, &p, end, &f.file);
			f.line = line;
			f.inlined = inl != 0;
			ok = ok && !push_frame(s, &f);
		}
		if (!ok || u64map__get(&s->cache, cache_key(s, o, key), NULL)) {
			s->nframes = first; /* malformed, or twice: the rest is not trusted */
			break;
		}
		hit = ((uint64_t)first << 8) | nf;
		if (u64map__put(&s->cache, cache_key(s, o, key), hit) || add_key(o, key)) {
			s->nframes = first;
			break;
		}
	}
	free(data);
}

static int put_string(struct sonde_strbuf *b, const char *str)
{
	uint32_t len = str ? (uint32_t)strlen(str) : UINT32_MAX;

	if (str && strlen(str) >= 4096)
		return -EINVAL;
	return sonde_strbuf__add(b, &len, sizeof(len)) | (str ? sonde_strbuf__add(b, str, len) : 0);
}

static void cache_save(struct sonde_symbols *s, struct object *o)
{
	struct sonde_strbuf b = SONDE_STRBUF_INIT;
	char dir[PATH_MAX], path[PATH_MAX];
	size_t i, k;
	int err;

	if (!cache_dir || !o->dirty || !o->cache[0] || !resolver[0] ||
	    snprintf(dir, sizeof(dir), "%s/symbols", cache_dir) >= (int)sizeof(dir) ||
	    snprintf(path, sizeof(path), "%s/%s", dir, o->cache) >= (int)sizeof(path))
		return;
	err = sonde_strbuf__add(&b, "SONDESY1", 8) |
	      sonde_strbuf__add(&b, resolver, sizeof(resolver));
	for (i = 0; i < o->nkeys && !err; i++) {
		uint64_t hit;
		const struct sonde_frame *f;
		uint8_t nf;

		if (!u64map__get(&s->cache, cache_key(s, o, o->keys[i]), &hit))
			continue;
		f = s->frames + (hit >> 8);
		nf = (uint8_t)(hit & 0xff);
		err |= sonde_strbuf__add(&b, &o->keys[i], sizeof(o->keys[i]));
		err |= sonde_strbuf__add(&b, &nf, 1);
		for (k = 0; k < nf && !err; k++) {
			uint32_t line = f[k].line;
			uint8_t inl = f[k].inlined;

			err |= sonde_strbuf__add(&b, &line, sizeof(line));
			err |= sonde_strbuf__add(&b, &inl, 1);
			err |= put_string(&b, f[k].function);
			err |= put_string(&b, f[k].file);
		}
	}
	/* a cache that cannot be written is no error: the next run reads the DWARF again */
	if (!err && !sonde_file__mkdir_p(dir, 0755))
		sonde_file__write_atomic(path, b.buf, b.len);
	sonde_strbuf__release(&b);
}

static uint64_t cache_key(const struct sonde_symbols *s, const struct object *o, uint64_t k)
{
	uint64_t key = ((uint64_t)(o - s->obj) << 48) ^ k;

	return key == U64MAP_EMPTY ? 0 : key;
}

int sonde_symbols__resolve(struct sonde_symbols *s, const char *path, uint64_t addr,
			   bool return_address, struct sonde_frame *out, int max)
{
	struct object *o = object_for(s, path);
	uint64_t key, hit;
	size_t first;
	int n, rc;

	if (!o)
		return -ENOMEM;
	key = cache_key(s, o, addr << 1 | (return_address ? 1 : 0));
	if (!u64map__get(&s->cache, key, &hit)) {
		first = s->nframes;
		rc = lookup(s, o, addr, return_address && addr ? addr - 1 : addr);
		if (rc)
			return rc;
		hit = ((uint64_t)first << 8) | (uint64_t)(s->nframes - first);
		if (u64map__put(&s->cache, key, hit) ||
		    add_key(o, addr << 1 | (return_address ? 1 : 0)))
			return -ENOMEM;
		o->dirty = true;
	}
	n = (int)(hit & 0xff);
	if (n > max)
		n = max;
	memcpy(out, s->frames + (hit >> 8), (size_t)n * sizeof(*out));
	return n;
}

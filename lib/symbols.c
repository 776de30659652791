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
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sonde/symbols.h>
#include "u64map.h"

struct object {
	const char *path; /* interned */
	Dwfl *dwfl;	  /* NULL: the file could not be opened */
	Dwfl_Module *mod;
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

void sonde_symbols__free(struct sonde_symbols *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nobj; i++)
		if (s->obj[i].dwfl)
			dwfl_end(s->obj[i].dwfl);
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
	f.function = sym ? intern(s, sonde_symbols__demangle(s, sym)) : NULL;
	f.file = f.function ? intern(s, file) : NULL;
	f.line = f.function && file ? (unsigned)line_no : 0;
	f.inlined = false;
	return push_frame(s, &f);
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
	key = ((uint64_t)(o - s->obj) << 48) ^ (addr << 1) ^ (return_address ? 1 : 0);
	if (key == U64MAP_EMPTY)
		key = 0;
	if (!u64map__get(&s->cache, key, &hit)) {
		first = s->nframes;
		rc = lookup(s, o, addr, return_address && addr ? addr - 1 : addr);
		if (rc)
			return rc;
		hit = ((uint64_t)first << 8) | (uint64_t)(s->nframes - first);
		if (u64map__put(&s->cache, key, hit))
			return -ENOMEM;
	}
	n = (int)(hit & 0xff);
	if (n > max)
		n = max;
	memcpy(out, s->frames + (hit >> 8), (size_t)n * sizeof(*out));
	return n;
}

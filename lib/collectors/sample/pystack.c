/*
 * pystack.c - CPython frames read in the target's memory while it runs.
 *
 * At a sample of a thread of a CPython process, the reader thread walks
 * _PyRuntime -> interpreters -> thread states (the one whose
 * native_thread_id is the sampled thread) -> current frame -> previous ...
 * with process_vm_readv, and keeps the code objects' addresses (with
 * is_entry, which marks the frames where the C eval loop was entered) as an
 * SMP_REC_PYSTACK record; a code object seen for the first time is named
 * at once (SMP_REC_PYCODE: qualified name, file, first line), as it may be
 * gone when the records are replayed. The layout is the one of the CPython
 * sonde was built against (pyoffsets.c); a process of another major.minor
 * version is left with native frames, and the profile says why.
 *
 * The frames are read a little after the sample (the reader is woken at
 * each one), so a fast-changing stack may have moved on meanwhile: the
 * resolver checks that the Python frames agree with the native eval-loop
 * frames and counts the ones that do not.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include "../../grow.h"
#include "../../u64map.h"
#include "sample.h"

#define MAX_PYFRAMES 512

enum { PY_UNKNOWN, PY_YES, PY_NO };

struct pyproc {
	uint32_t pid;
	int state;
	uint64_t runtime;     /* &_PyRuntime in the target */
	struct u64map tstate; /* tid -> its PyThreadState */
};

struct smp_py {
	struct pyproc *p;
	size_t np, capp;
	struct u64map pidx;  /* pid -> index */
	struct u64map codes; /* code object -> what it was when named (see name_code) */
	uint64_t stacks, failed, frames;
	char why[160]; /* why a Python process could not be read */
	char version[16];
	uint64_t buf[MAX_PYFRAMES + 4];
};

struct smp_py *smp_py__new(void)
{
	return calloc(1, sizeof(struct smp_py));
}

void smp_py__free(struct smp_py *py)
{
	size_t i;

	if (!py)
		return;
	for (i = 0; i < py->np; i++)
		u64map__release(&py->p[i].tstate);
	free(py->p);
	u64map__release(&py->pidx);
	u64map__release(&py->codes);
	free(py);
}

static struct pyproc *proc(struct smp_py *py, uint32_t pid)
{
	size_t i;

	if (u64map__element(&py->pidx, pid, (void **)&py->p, &py->np, &py->capp, sizeof(*py->p),
			    &i))
		return NULL;
	py->p[i].pid = pid;
	return &py->p[i];
}

void smp_py__forget(struct smp_py *py, uint32_t pid)
{
	struct pyproc *p = proc(py, pid);

	if (p) {
		p->state = PY_UNKNOWN;
		u64map__release(&p->tstate);
	}
}

static int peek(uint32_t pid, uint64_t addr, void *out, size_t len)
{
	struct iovec l = { out, len }, r = { (void *)(uintptr_t)addr, len };

	return process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static uint64_t peek64(uint32_t pid, uint64_t addr)
{
	uint64_t v = 0;

	return addr && !peek(pid, addr, &v, 8) ? v : 0;
}

/* Symbol name's file address in the ELF file path (dynamic or full symbol table). */
static bool elf_symbol(Elf *e, const char *name, uint64_t *value)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		d = elf_getdata(scn, NULL);
		n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (i = 0; d && i < n; i++) {
			GElf_Sym s;
			const char *nm;

			if (gelf_getsym(d, (int)i, &s) && s.st_value &&
			    (nm = elf_strptr(e, sh.sh_link, s.st_name)) && !strcmp(nm, name)) {
				*value = s.st_value;
				return true;
			}
		}
	}
	return false;
}

/* The load bias of path mapped at start from offset pgoff. */
static uint64_t elf_bias(Elf *e, uint64_t start, uint64_t pgoff)
{
	size_t n, i;

	if (elf_getphdrnum(e, &n))
		return start - pgoff;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_offset & ~0xfffull) == pgoff)
			return start - pgoff - (ph.p_vaddr - ph.p_offset);
	}
	return start - pgoff;
}

static bool python_object(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "python3", 7) || !strncmp(b, "libpython3", 10);
}

/* Find _PyRuntime in process pid (its interpreter or libpython), check the version. */
static void probe(struct smp_py *py, struct pyproc *p)
{
	char path[64], line[4096];
	FILE *f;

	p->state = PY_NO;
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		int pos = 0, fd;
		char *obj;
		Elf *e;
		uint64_t rt, ver;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi, &off, &pos) < 3 || !pos)
			continue;
		obj = line + pos;
		obj[strcspn(obj, "\n")] = 0;
		if (obj[0] != '/' || !python_object(obj))
			continue;
		fd = open(obj, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		elf_version(EV_CURRENT);
		e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (e && elf_symbol(e, "_PyRuntime", &rt)) {
			uint64_t bias = elf_bias(e, lo, off), v = 0;

			if (elf_symbol(e, "Py_Version", &ver))
				v = peek64(p->pid, ver + bias);
			snprintf(py->version, sizeof(py->version), "%lu.%lu",
				 (unsigned long)(v >> 24) & 0xff, (unsigned long)(v >> 16) & 0xff);
			if (!smp_pyoffsets.ok)
				snprintf(py->why, sizeof(py->why),
					 "sonde was built without CPython 3.11's headers");
			else if (!v || (v >> 16) != (smp_pyoffsets.version_hex >> 16))
				snprintf(py->why, sizeof(py->why),
					 "%s is CPython %s; sonde reads the frames of %lu.%lu", obj,
					 v ? py->version : "older than 3.11",
					 (smp_pyoffsets.version_hex >> 24) & 0xff,
					 (smp_pyoffsets.version_hex >> 16) & 0xff);
			else {
				p->runtime = rt + bias;
				p->state = PY_YES;
			}
		}
		if (e)
			elf_end(e);
		close(fd);
		if (p->state == PY_YES || py->why[0])
			break;
	}
	fclose(f);
}

/* Thread tid's PyThreadState, or 0. */
static uint64_t tstate(struct pyproc *p, uint32_t tid)
{
	const struct smp_pyoffsets *o = &smp_pyoffsets;
	uint64_t ts, interp;
	int ni = 0, nt;

	if (u64map__get(&p->tstate, tid, &ts) && peek64(p->pid, ts + o->ts_native_tid) == tid)
		return ts;
	for (interp = peek64(p->pid, p->runtime + o->runtime_interp_head); interp && ni < 64;
	     interp = peek64(p->pid, interp + o->interp_next), ni++) {
		nt = 0;
		for (ts = peek64(p->pid, interp + o->interp_threads_head); ts && nt < 4096;
		     ts = peek64(p->pid, ts + o->ts_next), nt++)
			if (peek64(p->pid, ts + o->ts_native_tid) == tid) {
				u64map__put(&p->tstate, tid, ts);
				return ts;
			}
	}
	return 0;
}

/* A str object's text as UTF-8 (Latin-1 and ASCII; other kinds as '?'). */
static size_t str_read(uint32_t pid, uint64_t obj, char *out, size_t cap)
{
	const struct smp_pyoffsets *o = &smp_pyoffsets;
	uint8_t head[128], raw[256];
	int64_t len;
	uint32_t state;
	unsigned kind;
	size_t n = 0, i;

	if (!obj || o->ascii_size > sizeof(head) || peek(pid, obj, head, o->ascii_size))
		return 0;
	memcpy(&len, head + o->str_length, 8);
	memcpy(&state, head + o->str_state, 4);
	kind = (state >> 2) & 7;
	if (len <= 0 || !((state >> 5) & 1)) /* not compact: not a code object's name */
		return 0;
	if (len > (int64_t)sizeof(raw))
		len = sizeof(raw);
	if ((state >> 6) & 1) { /* ascii */
		if (peek(pid, obj + o->ascii_size, raw, (size_t)len))
			return 0;
		kind = 0;
	} else if (kind == 1 && peek(pid, obj + o->compact_size, raw, (size_t)len)) {
		return 0;
	}
	for (i = 0; i < (size_t)len && n + 3 < cap; i++) {
		unsigned c = kind > 1 ? '?' : raw[i];

		if (c < 0x80) {
			out[n++] = (char)c;
		} else {
			out[n++] = (char)(0xc0 | c >> 6);
			out[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	out[n] = 0;
	return n;
}

/* Name a code object once: an SMP_REC_PYCODE record. */
static int name_code(struct smp_py *py, struct smp_rec *r, uint32_t pid, uint64_t code, uint64_t ns)
{
	const struct smp_pyoffsets *o = &smp_pyoffsets;
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		uint64_t ns, code;
		uint32_t line;
		uint16_t name_len, file_len;
		char text[600];
	} rec;
	uint64_t seen, sig, qn = 0, fn = 0;
	int32_t line = 0;
	size_t nl, fl, size, lo, hi;
	uint8_t head[256];

	/*
	 * What identifies the code object at this address now: its name and file
	 * objects and first line, with the pid (one read). A code object freed
	 * and another allocated at its address is named again.
	 */
	lo = o->code_firstlineno;
	lo = o->code_qualname < lo ? o->code_qualname : lo;
	lo = o->code_filename < lo ? o->code_filename : lo;
	hi = o->code_firstlineno + 4;
	hi = o->code_qualname + 8 > hi ? o->code_qualname + 8 : hi;
	hi = o->code_filename + 8 > hi ? o->code_filename + 8 : hi;
	if (hi - lo > sizeof(head) || peek(pid, code + lo, head, hi - lo))
		return -EFAULT;
	memcpy(&qn, head + (o->code_qualname - lo), 8);
	memcpy(&fn, head + (o->code_filename - lo), 8);
	memcpy(&line, head + (o->code_firstlineno - lo), 4);
	sig = (qn * 0x9e3779b97f4a7c15ull) ^ (fn * 0xc2b2ae3d27d4eb4full) ^
	      ((uint64_t)(uint32_t)line << 32) ^ pid;
	if (u64map__get(&py->codes, code, &seen) && seen == sig)
		return 0;
	memset(&rec, 0, sizeof(rec));
	nl = str_read(pid, qn, rec.text, 300);
	fl = str_read(pid, fn, rec.text + nl + 1, 290);
	if (!nl)
		return -EFAULT;
	rec.pid = pid;
	rec.ns = ns;
	rec.code = code;
	rec.line = line > 0 ? (uint32_t)line : 0;
	rec.name_len = (uint16_t)nl;
	rec.file_len = (uint16_t)fl;
	size = (offsetof(__typeof__(rec), text) + nl + 1 + fl + 1 + 7) & ~(size_t)7;
	rec.h = (struct perf_event_header){ SMP_REC_PYCODE, 0, (uint16_t)size };
	if (u64map__put(&py->codes, code, sig))
		return -ENOMEM;
	return smp_rec__append(r, &rec, size);
}

int smp_py__read(struct smp_py *py, struct smp_rec *r, uint32_t pid, uint32_t tid, uint64_t ns)
{
	const struct smp_pyoffsets *o = &smp_pyoffsets;
	struct pyproc *p = proc(py, pid);
	uint64_t ts, frame, *f = py->buf;
	uint8_t fr[256];
	uint32_t n = 0;
	int rc;

	if (!p)
		return -ENOMEM;
	if (p->state == PY_UNKNOWN)
		probe(py, p);
	if (p->state != PY_YES)
		return 0;
	ts = tstate(p, tid);
	frame = ts ? peek64(pid, peek64(pid, ts + o->ts_cframe) + o->cframe_current) : 0;
	if (!ts) {
		py->failed++;
		return 0;
	}
	while (frame && n < MAX_PYFRAMES && o->frame_size <= sizeof(fr)) {
		uint64_t code, prev;

		if (peek(pid, frame, fr, o->frame_size)) {
			py->failed++;
			return 0;
		}
		memcpy(&code, fr + o->frame_code, 8);
		memcpy(&prev, fr + o->frame_previous, 8);
		if (!code)
			break;
		rc = name_code(py, r, pid, code, ns);
		if (rc == -ENOMEM)
			return rc;
		if (!rc)
			f[4 + n++] = code | (fr[o->frame_entry] ? 1 : 0);
		frame = prev;
	}
	/* header, pid/tid, ns, count: then the frames, innermost first */
	{
		struct perf_event_header h = { SMP_REC_PYSTACK, 0,
					       (uint16_t)(sizeof(h) + 24 + 8 * (size_t)n) };

		memcpy(&f[0], &h, 8);
		memcpy(&f[1], &pid, 4);
		memcpy((uint8_t *)&f[1] + 4, &tid, 4);
		f[2] = ns;
		f[3] = n;
	}
	py->stacks++;
	py->frames += n;
	return smp_rec__append(r, f, 32 + 8 * (size_t)n);
}

json_t *smp_py__stats(const struct smp_py *py)
{
	if (py->why[0] && !py->stacks)
		return json_pack("{s:s}", "not_supported", py->why);
	return json_pack("{s:I, s:I, s:I, s:s, s:s}", "stacks", (json_int_t)py->stacks, "frames",
			 (json_int_t)py->frames, "unreadable", (json_int_t)py->failed, "version",
			 py->version, "reader", "process_vm_readv of the interpreter's frames");
}

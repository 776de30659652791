/*
 * ring.c - per-thread event rings in shared memory (see ring.h for the model).
 *
 * Layout of the area (one memfd):
 *   page 0        struct area: magic, geometry, policy, serial counter, reader
 *                 heartbeat, pid and "closed" flag, drops of writers that found
 *                 no ring, the count of rings ever claimed (the reader looks no
 *                 further);
 *   descriptors   one struct sonde_ring_desc per ring, three cache lines each so
 *                 that the writer's head and the reader's tail never share one;
 *   data          nbig buffers of ring_bytes, then the spill rings' buffers of
 *                 spill_bytes, page aligned.
 *
 * The memfd is sparse: a ring costs memory only once a thread writes into it,
 * so an area can hold thousands of rings and threads are not the limit. Claims
 * take the lowest free ring, so the first threads get the big rings.
 *
 * The writer side is also compiled into the preloaded runtimes: it must not
 * allocate, lock, or touch stdio.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <linux/futex.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/ring.h>
#include "grow.h"

#define AREA_MAGIC   0x31676e6972646e73ULL /* "sndring1" */
#define AREA_HDR     4096u
#define WAIT_GIVE_UP 2000000000ull /* ns without a reader heartbeat: the writers stop */
#define PROBE_AFTER  250000000ull  /* ns without one: a writer past half full looks for it */

enum { R_FREE = 0, R_CLAIMING, R_OWNED, R_RETIRED };

struct sonde_ring_desc {
	_Atomic uint32_t state;
	uint32_t pid, tid, serial;
	char pad0[48];
	_Atomic uint64_t head;
	_Atomic uint32_t open_used; /* bytes filled in the open record at head; 0: none */
	uint32_t pad_open;
	char pad1[48];
	_Atomic uint64_t tail;
	_Atomic uint64_t dropped;
	/* a lossless writer waiting for room sleeps on tail_seq while writer_waits;
	   the reader wakes it when it moves the tail (see wake_writer) */
	_Atomic uint32_t writer_waits;
	_Atomic uint32_t tail_seq;
	char pad2[40];
};

/* Page 0 of the area, shared with the writers: nothing the owner relies on. */
struct area_hdr {
	uint64_t magic;
	uint32_t nrings, policy;
	uint64_t ring_bytes, map_len, data_off;
	uint32_t nbig, pad;
	uint64_t spill_bytes;
	_Atomic uint32_t used; /* rings [0, used) have been claimed at least once */
	_Atomic uint32_t serial_next;
	_Atomic uint64_t heartbeat_ns;
	_Atomic uint64_t unclaimed_drops;
	/* the reader sleeps on wake_seq while reader_asleep; writers wake it (see wake_reader) */
	_Atomic uint32_t reader_asleep;
	_Atomic uint32_t wake_seq;
	/* the reader's process, and whether it has stopped reading (see __close) */
	_Atomic uint32_t reader_pid;
	_Atomic uint32_t closed;
	_Atomic uint32_t abandoned; /* a writer stopped: no heartbeat for WAIT_GIVE_UP */
};

/*
 * A handle on an area, private to its process. The owner (sonde) keeps the
 * geometry it created and never reads it back from the shared header, which
 * the target can write: a target that scribbles over page 0 or its descriptors
 * can lose its own events, never move sonde's copies. Writers copy the
 * geometry once, at attach.
 */
struct sonde_ring_area {
	struct area_hdr *h; /* page 0 of the mapping */
	uint8_t *base;	    /* the mapping */
	uint32_t nrings, nbig, policy;
	uint64_t ring_bytes, spill_bytes, data_off, map_len;
	/* the owner's */
	int owner_fd;
	char path[64];
	uint8_t *scratch;
	/* a writer's: the reader is gone for good (closed, or its process ended) */
	_Atomic bool gone;
};

_Static_assert(sizeof(struct area_hdr) <= AREA_HDR, "area header fits its page");
_Static_assert(sizeof(struct sonde_ring_desc) == 192, "three cache lines per ring");

static struct sonde_ring_desc *desc(struct sonde_ring_area *a, unsigned i)
{
	return (struct sonde_ring_desc *)(a->base + AREA_HDR) + i;
}

static uint64_t ring_size(const struct sonde_ring_area *a, unsigned i)
{
	return i < a->nbig ? a->ring_bytes : a->spill_bytes;
}

/* Where ring i's buffer starts, from the start of the data. */
static size_t ring_off(const struct sonde_ring_area *a, unsigned i)
{
	return i < a->nbig
		       ? (size_t)i * a->ring_bytes
		       : (size_t)a->nbig * a->ring_bytes + (size_t)(i - a->nbig) * a->spill_bytes;
}

/* The owner's mapping of ring i's buffer (writers map theirs: map_ring). */
static uint8_t *ring_data(struct sonde_ring_area *a, unsigned i)
{
	return a->base + a->data_off + ring_off(a, i);
}

/* Rings the reader must look at: those claimed at least once. */
static unsigned rings_used(struct sonde_ring_area *a)
{
	uint32_t n = atomic_load_explicit(&a->h->used, memory_order_acquire);

	return n < a->nrings ? n : a->nrings;
}

/* ---- owner side ------------------------------------------------------------------------ */

static bool ring_bytes_ok(size_t n)
{
	return n >= 4096 && !(n & (n - 1)) && n <= (1ull << 32);
}

int sonde_ring_area__create(unsigned nrings, size_t ring_bytes, enum sonde_ring_policy policy,
			    struct sonde_ring_area **out)
{
	return sonde_ring_area__create_spill(nrings, ring_bytes, 0, ring_bytes, policy, out);
}

int sonde_ring_area__create_spill(unsigned nrings, size_t ring_bytes, unsigned nspill,
				  size_t spill_bytes, enum sonde_ring_policy policy,
				  struct sonde_ring_area **out)
{
	size_t descs, data_off, len;
	struct sonde_ring_area *a;
	void *map;
	int fd, err;

	if (!nrings || (uint64_t)nrings + nspill > 65536 || !ring_bytes_ok(ring_bytes) ||
	    !ring_bytes_ok(spill_bytes) || spill_bytes > ring_bytes)
		return -EINVAL;
	descs = ((size_t)nrings + nspill) * sizeof(struct sonde_ring_desc);
	data_off = (AREA_HDR + descs + 4095) & ~(size_t)4095;
	len = data_off + (size_t)nrings * ring_bytes + (size_t)nspill * spill_bytes;
	fd = memfd_create("sonde-rings", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	a = calloc(1, sizeof(*a));
	map = a ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (map == MAP_FAILED) {
		err = a ? -errno : -ENOMEM;
		free(a);
		close(fd);
		return err;
	}
	a->scratch = sonde_alloc_huge(ring_bytes);
	if (!a->scratch) {
		munmap(map, len);
		free(a);
		close(fd);
		return -ENOMEM;
	}
	a->base = map;
	a->h = map;
	a->nrings = a->h->nrings = nrings + nspill;
	a->nbig = a->h->nbig = nrings;
	a->spill_bytes = a->h->spill_bytes = spill_bytes;
	a->policy = a->h->policy = policy;
	a->ring_bytes = a->h->ring_bytes = ring_bytes;
	a->map_len = a->h->map_len = len;
	a->data_off = a->h->data_off = data_off;
	atomic_store(&a->h->serial_next, 1);
	atomic_store(&a->h->heartbeat_ns, sonde_clock_ns());
	atomic_store(&a->h->reader_pid, (uint32_t)getpid());
	a->owner_fd = fd;
	snprintf(a->path, sizeof(a->path), "/proc/%d/fd/%d", (int)getpid(), fd);
	atomic_thread_fence(memory_order_release);
	a->h->magic = AREA_MAGIC;
	*out = a;
	return 0;
}

int sonde_ring_area__renew(struct sonde_ring_area **ap)
{
	struct sonde_ring_area *old = *ap, *a;
	int rc = sonde_ring_area__create_spill(old->nbig, old->ring_bytes, old->nrings - old->nbig,
					       old->spill_bytes, old->policy, &a);

	if (rc)
		return rc;
	/* the new memfd takes the old one's number: the path writers open is the same */
	if (dup3(a->owner_fd, old->owner_fd, O_CLOEXEC) < 0) {
		rc = -errno;
		sonde_ring_area__destroy(a);
		return rc;
	}
	close(a->owner_fd);
	a->owner_fd = old->owner_fd;
	memcpy(a->path, old->path, sizeof(a->path));
	old->owner_fd = -1;
	sonde_ring_area__destroy(old);
	*ap = a;
	return 0;
}

void sonde_ring_area__destroy(struct sonde_ring_area *a)
{
	int fd;

	if (!a)
		return;
	fd = a->owner_fd;
	free(a->scratch);
	munmap(a->base, a->map_len);
	if (fd >= 0)
		close(fd);
	free(a);
}

const char *sonde_ring_area__path(const struct sonde_ring_area *a)
{
	return a->path;
}

void sonde_ring_area__heartbeat(struct sonde_ring_area *a)
{
	atomic_store_explicit(&a->h->heartbeat_ns, sonde_clock_ns(), memory_order_relaxed);
}

void sonde_ring_area__close(struct sonde_ring_area *a)
{
	atomic_store_explicit(&a->h->closed, 1, memory_order_release);
}

/*
 * A writer's check, on its slow paths only (a ring past half full, or full):
 * has the reader closed the area, has its process ended (looked for once it
 * has not beaten for PROBE_AFTER), or has it not beaten for WAIT_GIVE_UP (said
 * to it in the header)? Each is for good, so the answer is kept. (A target
 * that writes over these words can only stop its own recording.)
 */
/*
 * Whether the reader is gone: it closed the area, or (probe) its process
 * ended, or (probe and silence) it has shown no sign of life for
 * WAIT_GIVE_UP. A writer that drops its oldest records never waits for the
 * reader, so a silent one (a stalled machine) does not stop it: it keeps the
 * newest for when the reader comes back.
 */
static bool reader_lost_if(struct sonde_ring_area *a, bool probe, bool silence)
{
	uint64_t now, hb;
	uint32_t pid;

	if (atomic_load_explicit(&a->gone, memory_order_relaxed))
		return true;
	if (atomic_load_explicit(&a->h->closed, memory_order_acquire))
		goto gone;
	if (!probe)
		return false;
	now = sonde_clock_ns();
	hb = atomic_load_explicit(&a->h->heartbeat_ns, memory_order_relaxed);
	if (hb >= now || now - hb <= PROBE_AFTER)
		return false; /* (a beat just after `now` is not stale) */
	pid = atomic_load_explicit(&a->h->reader_pid, memory_order_relaxed);
	if (pid && pid <= INT32_MAX && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		goto gone;
	if (silence && now - hb > WAIT_GIVE_UP) {
		atomic_store_explicit(&a->h->abandoned, 1, memory_order_relaxed);
		goto gone;
	}
	return false;
gone:
	atomic_store_explicit(&a->gone, true, memory_order_relaxed);
	return true;
}

static bool reader_lost(struct sonde_ring_area *a, bool probe)
{
	return reader_lost_if(a, probe, a->policy == SONDE_RING_LOSSLESS);
}

bool sonde_ring_area__abandoned(const struct sonde_ring_area *a)
{
	return atomic_load_explicit(&a->h->abandoned, memory_order_relaxed) != 0;
}

bool sonde_ring_area__reader_gone(struct sonde_ring_area *a)
{
	return reader_lost(a, false);
}

/* Wake the reader if it sleeps in __wait (shared futex: the area is in two processes). */
static void wake_reader(struct sonde_ring_area *a)
{
	if (atomic_load_explicit(&a->h->reader_asleep, memory_order_relaxed) &&
	    atomic_exchange_explicit(&a->h->reader_asleep, 0, memory_order_acq_rel)) {
		atomic_fetch_add_explicit(&a->h->wake_seq, 1, memory_order_release);
		syscall(SYS_futex, &a->h->wake_seq, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
}

/* The reader moved ring d's tail: a writer waiting for room goes on. */
static void wake_writer(struct sonde_ring_desc *d)
{
	atomic_thread_fence(memory_order_seq_cst); /* the tail before the flag (see make_room) */
	if (atomic_load_explicit(&d->writer_waits, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&d->tail_seq, 1, memory_order_release);
		syscall(SYS_futex, &d->tail_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

void sonde_ring_area__wake(struct sonde_ring_area *a)
{
	atomic_store_explicit(&a->h->reader_asleep, 1, memory_order_relaxed);
	wake_reader(a);
}

/* Whether ring i wants the reader now: retired (to be freed) or half full. */
static bool ring_wants_reader(struct sonde_ring_area *a, unsigned i)
{
	struct sonde_ring_desc *d = desc(a, i);
	uint32_t st = atomic_load_explicit(&d->state, memory_order_acquire);

	if (st == R_RETIRED)
		return true;
	return st == R_OWNED &&
	       atomic_load_explicit(&d->head, memory_order_acquire) -
			       atomic_load_explicit(&d->tail, memory_order_relaxed) >=
		       ring_size(a, i) / 2;
}

bool sonde_ring_area__wait(struct sonde_ring_area *a, uint64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ull),
			       (long)(timeout_ns % 1000000000ull) };
	uint32_t seq = atomic_load_explicit(&a->h->wake_seq, memory_order_acquire);
	unsigned i, n = rings_used(a);
	bool woken;

	atomic_store_explicit(&a->h->reader_asleep, 1, memory_order_seq_cst);
	/* what came before the flag was set would wake no one: look once more */
	for (i = 0; i < n; i++)
		if (ring_wants_reader(a, i))
			break;
	if (i == n)
		syscall(SYS_futex, &a->h->wake_seq, FUTEX_WAIT, seq, &ts, NULL, 0);
	woken = atomic_load_explicit(&a->h->wake_seq, memory_order_acquire) != seq;
	atomic_store_explicit(&a->h->reader_asleep, 0, memory_order_relaxed);
	return woken;
}

/* Copy [t, h) of ring i into the scratch buffer (it may wrap). */
static void copy_out(struct sonde_ring_area *a, unsigned i, uint64_t t, uint64_t h)
{
	uint64_t size = ring_size(a, i), pos = t & (size - 1), n = h - t;
	uint64_t first = n < size - pos ? n : size - pos;
	const uint8_t *d = ring_data(a, i);

	memcpy(a->scratch, d + pos, first);
	if (n > first)
		memcpy(a->scratch + first, d, n - first);
}

long long sonde_ring_area__drain(struct sonde_ring_area *a, sonde_ring_sink sink, void *ctx)
{
	long long total = 0;
	unsigned i, n = rings_used(a);

	sonde_ring_area__heartbeat(a);
	for (i = 0; i < n; i++) {
		struct sonde_ring_desc *d = desc(a, i);
		uint32_t st = atomic_load_explicit(&d->state, memory_order_acquire);
		struct sonde_ring_chunk c;
		uint64_t t, h;
		int rc;

		if (st != R_OWNED && st != R_RETIRED)
			continue;
		for (;;) {
			t = atomic_load_explicit(&d->tail, memory_order_acquire);
			h = atomic_load_explicit(&d->head, memory_order_acquire);
			if (h == t || h - t > ring_size(a, i))
				break;
			copy_out(a, i, t, h);
			if (a->policy == SONDE_RING_DROP_OLDEST) {
				/* the writer may have dropped what we copied: then retry */
				if (!atomic_compare_exchange_strong(&d->tail, &t, h))
					continue;
			} else {
				atomic_store_explicit(&d->tail, h, memory_order_release);
			}
			wake_writer(d);
			c.ring = i;
			c.pid = d->pid;
			c.tid = d->tid;
			c.serial = d->serial;
			c.bytes = h - t;
			rc = sink(ctx, &c, a->scratch);
			if (rc < 0)
				return rc;
			total += (long long)c.bytes;
			if (c.bytes >= (1u << 20)) /* a long write: still here */
				sonde_ring_area__heartbeat(a);
			break;
		}
		if (st == R_RETIRED && atomic_load(&d->head) == atomic_load(&d->tail)) {
			uint32_t r = R_RETIRED;

			atomic_compare_exchange_strong(&d->state, &r, R_FREE);
		}
	}
	return total;
}

long long sonde_ring_area__drain_quiet(struct sonde_ring_area *a, sonde_ring_sink sink, void *ctx)
{
	long long total = 0;
	unsigned i, n = rings_used(a);

	for (i = 0; i < n; i++) {
		struct sonde_ring_desc *d = desc(a, i);
		uint32_t st = atomic_load_explicit(&d->state, memory_order_acquire);
		uint64_t t = atomic_load_explicit(&d->tail, memory_order_acquire),
			 h = atomic_load_explicit(&d->head, memory_order_acquire), size, pos, first;
		struct sonde_ring_chunk c;
		int rc;

		if ((st != R_OWNED && st != R_RETIRED) || h == t || h - t > ring_size(a, i))
			continue;
		/* in place: the part up to the buffer's end, then the part from its start
		   (a record never straddles the end: padding fills it) */
		size = ring_size(a, i);
		pos = t & (size - 1);
		first = h - t < size - pos ? h - t : size - pos;
		c.ring = i;
		c.pid = d->pid;
		c.tid = d->tid;
		c.serial = d->serial;
		c.bytes = first;
		rc = sink(ctx, &c, ring_data(a, i) + pos);
		if (rc >= 0 && h - t > first) {
			c.bytes = h - t - first;
			rc = sink(ctx, &c, ring_data(a, i));
		}
		if (rc < 0)
			return rc;
		atomic_store_explicit(&d->tail, h, memory_order_release);
		wake_writer(d);
		total += (long long)(h - t);
	}
	return total;
}

/* The writer is gone with a record open: publish what it had filled in. */
static uint64_t salvage(struct sonde_ring_area *a, unsigned i)
{
	struct sonde_ring_desc *d = desc(a, i);
	uint32_t used = atomic_load(&d->open_used);
	uint64_t h = atomic_load(&d->head), size = ring_size(a, i);
	uint32_t *hdr;

	if (!used)
		return 0;
	if (h & 7) { /* records are 8-byte aligned: a head the target wrote over */
		atomic_store(&d->open_used, 0);
		return 0;
	}
	hdr = (uint32_t *)(void *)(ring_data(a, i) + (h & (size - 1)));
	used = (used + 7) & ~7u;
	if (used < 8 || used > SONDE_RING_REC_LEN(*hdr) || (h & (size - 1)) + used > size) {
		atomic_store(&d->open_used, 0);
		return 0;
	}
	*hdr = SONDE_RING_REC(SONDE_RING_REC_TYPE(*hdr), used);
	atomic_store(&d->open_used, 0);
	atomic_store_explicit(&d->head, h + used, memory_order_release);
	return used;
}

/*
 * Whether the process that wrote pid into a ring is gone: no such process, or
 * a zombie. A live one may still be writing (a daemon that outlived its run),
 * so its ring and its open record are never touched.
 */
static bool writer_gone(uint32_t pid)
{
	char path[48], buf[256], *p;
	ssize_t n;
	int fd;

	if (!pid || pid > INT32_MAX)
		return true;
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* "pid (comm) S ...": comm may hold anything */
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

uint64_t sonde_ring_area__reclaim(struct sonde_ring_area *a, bool all_dead)
{
	uint64_t salvaged = 0;
	unsigned i, n = rings_used(a);

	for (i = 0; i < n; i++) {
		struct sonde_ring_desc *d = desc(a, i);
		uint32_t st = atomic_load(&d->state);

		if (st != R_OWNED && st != R_RETIRED)
			continue;
		/* (all_dead: the run's processes were reaped; one that lives on left
		   its group, a daemon: its ring stays its own) */
		(void)all_dead;
		if (!writer_gone(d->pid))
			continue;
		salvaged += salvage(a, i);
		if (atomic_load(&d->head) != atomic_load(&d->tail))
			continue; /* the next drain takes it */
		atomic_compare_exchange_strong(&d->state, &st, R_FREE);
	}
	return salvaged;
}

bool sonde_ring_area__tampered(const struct sonde_ring_area *a)
{
	const struct area_hdr *h = a->h;

	return h->magic != AREA_MAGIC || h->nrings != a->nrings || h->nbig != a->nbig ||
	       h->policy != a->policy || h->ring_bytes != a->ring_bytes ||
	       h->spill_bytes != a->spill_bytes || h->data_off != a->data_off ||
	       h->map_len != a->map_len;
}

uint64_t sonde_ring_area__dropped(const struct sonde_ring_area *a)
{
	struct sonde_ring_area *m = (struct sonde_ring_area *)a;
	uint64_t n = atomic_load(&m->h->unclaimed_drops);
	unsigned i, used = rings_used(m);

	for (i = 0; i < used; i++)
		n += atomic_load(&desc(m, i)->dropped);
	return n;
}

/* ---- writer side ----------------------------------------------------------------------- */

struct sonde_ring_area *sonde_ring_area__attach(const char *path)
{
	struct sonde_ring_area *a;
	struct area_hdr *h;
	struct stat st;
	void *map;
	int fd;

	if (strlen(path) >= sizeof(a->path)) { /* kept for the claims' map_ring */
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < AREA_HDR) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	/* the header first, for the geometry; then the header and the descriptors
	   only: a ring's buffer is mapped when a thread claims it, so the target's
	   address space grows by the rings its threads use, not by the whole area
	   (a target under ulimit -v runs as it would alone) */
	map = mmap(NULL, AREA_HDR, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	h = map;
	if (h->magic != AREA_MAGIC || h->map_len != (uint64_t)st.st_size ||
	    !ring_bytes_ok(h->ring_bytes) || !ring_bytes_ok(h->spill_bytes) ||
	    h->nbig > h->nrings || h->nrings > 65536 || h->data_off % 4096 ||
	    h->data_off < AREA_HDR + (uint64_t)h->nrings * sizeof(struct sonde_ring_desc) ||
	    h->data_off + (uint64_t)h->nbig * h->ring_bytes +
			    (uint64_t)(h->nrings - h->nbig) * h->spill_bytes >
		    h->map_len) {
		munmap(map, AREA_HDR);
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	if (atomic_load_explicit(&h->closed, memory_order_acquire)) {
		munmap(map, AREA_HDR);
		close(fd);
		errno = EPIPE; /* the recording is over */
		return NULL;
	}
	/* the handle: no malloc on the writer side (it runs inside the target) */
	a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED) {
		munmap(map, AREA_HDR);
		close(fd);
		return NULL;
	}
	a->nrings = h->nrings;
	a->nbig = h->nbig;
	a->policy = h->policy;
	a->ring_bytes = h->ring_bytes;
	a->spill_bytes = h->spill_bytes;
	a->data_off = h->data_off;
	munmap(map, AREA_HDR);
	a->map_len = a->data_off; /* what this handle maps: header and descriptors */
	map = mmap(NULL, a->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		munmap(a, sizeof(*a));
		return NULL;
	}
	a->h = map;
	a->base = map;
	a->owner_fd = -1;
	memcpy(a->path, path, strlen(path) + 1);
	return a;
}

void sonde_ring_area__detach(struct sonde_ring_area *a)
{
	if (a) {
		munmap(a->base, a->map_len);
		munmap(a, sizeof(*a));
	}
}

/* A writer maps ring i's buffer (the area's path is opened again: no fd is kept
   in the target, whose descriptors are its own). */
static uint8_t *map_ring(struct sonde_ring_area *a, unsigned i)
{
	int fd = open(a->path, O_RDWR | O_CLOEXEC);
	void *p;

	if (fd < 0)
		return NULL;
	p = mmap(NULL, ring_size(a, i), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)(a->data_off + ring_off(a, i)));
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

uint32_t sonde_ring_area__next_serial(struct sonde_ring_area *a)
{
	return atomic_fetch_add(&a->h->serial_next, 1);
}

void sonde_ring_area__lost(struct sonde_ring_area *a, uint64_t n)
{
	atomic_fetch_add_explicit(&a->h->unclaimed_drops, n, memory_order_relaxed);
}

int sonde_ring__claim(struct sonde_ring_area *a, uint32_t pid, uint32_t tid, uint32_t serial,
		      struct sonde_ring_writer *w)
{
	unsigned i;

	if (!a || a->h->magic != AREA_MAGIC)
		return -EINVAL;
	if (reader_lost(a, false))
		return -EPIPE;
	for (i = 0; i < a->nrings; i++) {
		struct sonde_ring_desc *d = desc(a, i);
		uint32_t st = R_FREE, used;
		uint8_t *data;

		if (atomic_load_explicit(&d->state, memory_order_relaxed) != R_FREE ||
		    !atomic_compare_exchange_strong(&d->state, &st, R_CLAIMING))
			continue;
		data = map_ring(a, i);
		if (!data) {
			int err = errno;

			atomic_store_explicit(&d->state, R_FREE, memory_order_release);
			return err ? -err : -ENOMEM;
		}
		used = atomic_load(&a->h->used);
		while (used <= i && !atomic_compare_exchange_weak(&a->h->used, &used, i + 1))
			;
		d->pid = pid;
		d->tid = tid;
		d->serial = serial;
		w->area = a;
		w->d = d;
		w->data = data;
		w->mask = ring_size(a, i) - 1;
		w->head = atomic_load_explicit(&d->head, memory_order_relaxed);
		w->tail_seen = atomic_load_explicit(&d->tail, memory_order_acquire);
		w->reserved = 0;
		w->mapped_to = w->head;
		w->map_end = w->head + ring_size(a, i);
		w->open_used = &d->open_used;
		w->on_drop = NULL;
		atomic_store_explicit(&d->open_used, 0, memory_order_relaxed);
		atomic_store_explicit(&d->state, R_OWNED, memory_order_release);
		return 0;
	}
	return -EBUSY;
}

static inline bool unlikely_gone(struct sonde_ring_area *a)
{
	return __builtin_expect(atomic_load_explicit(&a->gone, memory_order_relaxed), 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define MAP_AHEAD (256u << 10)

/*
 * The ring's pages are mapped in ahead of the writer, MAP_AHEAD at a time, on
 * its first lap: one call maps 64 pages where each first write would fault
 * (on a VM with shadow page tables a fault costs ~10 us, this about half).
 * Where the kernel cannot (before 5.14), the writes fault as before.
 */
static void map_ahead(struct sonde_ring_writer *w, uint64_t need)
{
	uint64_t to = w->head + need + MAP_AHEAD, from = w->mapped_to & ~(uint64_t)4095;
	int err = errno; /* the target's: a failed call (an old kernel) leaves it as it was */

	if (to > w->map_end)
		to = w->map_end;
	while (from < to) {
		uint64_t pos = from & w->mask, n = to - from;

		if (n > w->mask + 1 - pos)
			n = w->mask + 1 - pos; /* to the ring's end, then from its start */
		madvise(w->data + pos, (n + 4095) & ~(uint64_t)4095, MADV_POPULATE_WRITE);
		from += n;
	}
	w->mapped_to = to >= w->map_end ? UINT64_MAX : to;
	errno = err;
}

/* Make need bytes free after head. false: the record must be dropped. */
static bool make_room(struct sonde_ring_writer *w, uint64_t need)
{
	struct sonde_ring_desc *d = w->d;
	uint64_t size = w->mask + 1, t;
	unsigned spins = 0;
	uint64_t since = 0, now = 0, hb, tail0 = 0;

	if (need > size)
		return false;
	if (w->area->policy == SONDE_RING_DROP_OLDEST) {
		t = atomic_load_explicit(&d->tail, memory_order_acquire);
		while (w->head + need - t > size) {
			uint32_t hd = *(volatile uint32_t *)(w->data + (t & w->mask));
			uint64_t l = SONDE_RING_REC_LEN(hd);

			if (l < 8 || l > size)
				return false; /* cannot happen with a sane ring */
			if (atomic_compare_exchange_strong(&d->tail, &t, t + l)) {
				if (SONDE_RING_REC_TYPE(hd) != SONDE_RING_PAD) {
					atomic_fetch_add_explicit(&d->dropped, 1,
								  memory_order_relaxed);
					if (w->on_drop) /* its bytes stay until this writer writes
							 */
						w->on_drop(w, w->data + (t & w->mask), (uint32_t)l);
				}
				t += l;
			}
		}
		w->tail_seen = t;
		return true;
	}
	for (;;) {
		w->tail_seen = atomic_load_explicit(&d->tail, memory_order_acquire);
		if (w->head + need - w->tail_seen <= size)
			return true;
		if (spins == 0 || spins >= 256) {
			if (reader_lost(w->area, true))
				return false; /* closed, gone or silent: no more waiting, ever */
			now = sonde_clock_ns();
			hb = atomic_load_explicit(&w->area->h->heartbeat_ns, memory_order_relaxed);
			/* a heartbeat from the future is nonsense (written over): drop */
			if (hb > now + WAIT_GIVE_UP)
				return false;
		}
		if (++spins < 256) {
			cpu_relax();
			continue;
		}
		/* a live reader that frees nothing for that long: the ring is broken */
		if (!since || w->tail_seen != tail0) {
			since = now;
			tail0 = w->tail_seen;
		} else if (now - since > WAIT_GIVE_UP) {
			return false;
		}
		{
			/* sleep until the reader frees room (a nap of 20 us here had a
			   hundred waiting threads spinning on the CPUs the reader needs:
			   seconds of stall); 10 ms at most, to look at the reader again */
			uint32_t seq = atomic_load_explicit(&d->tail_seq, memory_order_acquire);
			struct timespec ts = { 0, 10000000 };

			atomic_store_explicit(&d->writer_waits, 1, memory_order_seq_cst);
			wake_reader(w->area);
			if (w->head + need - atomic_load_explicit(&d->tail, memory_order_seq_cst) >
			    size) {
				int err = errno; /* the target's: a timeout is not its error */

				syscall(SYS_futex, &d->tail_seq, FUTEX_WAIT, seq, &ts, NULL, 0);
				errno = err;
			}
			atomic_store_explicit(&d->writer_waits, 0, memory_order_relaxed);
		}
	}
}

void *sonde_ring__reserve(struct sonde_ring_writer *w, uint32_t type, uint32_t len)
{
	uint64_t size = w->mask + 1, pos = w->head & w->mask, contig = size - pos, need = len;
	uint32_t *r;

	if (unlikely_gone(w->area))
		return NULL;
	if (contig < len)
		need += contig;
	/* past half full: wake a sleeping reader (the cached tail may be old: read it),
	   unless the reader has stopped reading: then nothing is written any more */
	if (w->head + need - w->tail_seen > size / 2) {
		w->tail_seen = atomic_load_explicit(&w->d->tail, memory_order_acquire);
		if (w->head + need - w->tail_seen > size / 2) {
			if (reader_lost(w->area, true))
				return NULL;
			wake_reader(w->area);
		}
	}
	if (w->head + need - w->tail_seen > size && !make_room(w, need)) {
		atomic_fetch_add_explicit(&w->d->dropped, 1, memory_order_relaxed);
		return NULL;
	}
	if (__builtin_expect(w->head + need > w->mapped_to, 0))
		map_ahead(w, need);
	if (contig < len) {
		*(uint32_t *)(w->data + pos) = SONDE_RING_REC(SONDE_RING_PAD, contig);
		w->head += contig;
		pos = 0;
	}
	r = (uint32_t *)(w->data + pos);
	*r = SONDE_RING_REC(type, len);
	w->reserved = len;
	return r;
}

void sonde_ring__commit(struct sonde_ring_writer *w)
{
	w->head += w->reserved;
	w->reserved = 0;
	atomic_store_explicit(&w->d->head, w->head, memory_order_release);
}

void *sonde_ring__open(struct sonde_ring_writer *w, uint32_t type, uint32_t len)
{
	void *r = sonde_ring__reserve(w, type, len);

	if (!r)
		return NULL;
	/* a wrap padding written by reserve is complete: publish it, so the open
	   record starts exactly at the published head */
	atomic_store_explicit(&w->d->head, w->head, memory_order_release);
	atomic_store_explicit(w->open_used, 8, memory_order_relaxed);
	return r;
}

void sonde_ring__close(struct sonde_ring_writer *w, uint32_t used)
{
	uint32_t *hdr = (uint32_t *)(void *)(w->data + (w->head & w->mask));

	used = (used + 7) & ~7u;
	if (used < 8 || used > w->reserved)
		used = (uint32_t)w->reserved;
	*hdr = SONDE_RING_REC(SONDE_RING_REC_TYPE(*hdr), used);
	w->reserved = used;
	atomic_store_explicit(w->open_used, 0, memory_order_relaxed);
	sonde_ring__commit(w);
}

void sonde_ring__retire(struct sonde_ring_writer *w)
{
	if (w->d) {
		atomic_store_explicit(&w->d->state, R_RETIRED, memory_order_release);
		wake_reader(w->area); /* its ring is free once drained */
		munmap(w->data, w->mask + 1);
	}
	w->d = NULL;
	w->data = NULL;
}

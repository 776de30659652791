/*
 * ring.h - per-thread event rings in shared memory.
 *
 * One *area* (a memfd that sonde creates and the target maps) holds N rings.
 * Each thread of the target claims a ring of its own and is its only writer;
 * the sonde process is the only reader and drains every ring to disk while the
 * target runs, so a crash of the target loses nothing that was committed.
 *
 * A ring is a byte buffer with two 64-bit positions that only grow: head (next
 * byte the writer will publish) and tail (next byte the reader will consume).
 * Records are 8-byte aligned and start with a 32-bit word: the record type in
 * the top 8 bits and its length in bytes (header included) in the low 24. Type
 * 0 is padding, written when a record would straddle the end of the buffer. A
 * record becomes visible when the writer publishes head (release), so a writer
 * that dies half-way through a record leaves nothing torn behind.
 *
 * Policies, per area:
 *   LOSSLESS     a writer that finds its ring full waits for the reader. Writers
 *                stop writing for good, without waiting, once the reader closed
 *                the area or its process ended, or when it has shown no sign of
 *                life for 2 s (the area then says it was abandoned).
 *   DROP_OLDEST  a full ring discards its oldest records (the writer advances
 *                tail with compare-and-swap); each record dropped is counted,
 *                and handed to the writer's on_drop first. A silent reader
 *                does not stop the writers: only one that closed or died.
 *
 * The writer side never allocates, locks or calls stdio: it is used inside
 * malloc hooks and instrumentation hooks.
 */
#ifndef SONDE_RING_H
#define SONDE_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SONDE_RING_PAD		  0u
#define SONDE_RING_MAX_RECORD	  (1u << 20) /* bytes, header included */
#define SONDE_RING_REC(type, len) (((uint32_t)(type) << 24) | (uint32_t)(len))
#define SONDE_RING_REC_TYPE(h)	  ((h) >> 24)
#define SONDE_RING_REC_LEN(h)	  ((h)&0xffffffu)

enum sonde_ring_policy {
	SONDE_RING_LOSSLESS = 0,
	SONDE_RING_DROP_OLDEST = 1,
};

struct sonde_ring_area;
struct sonde_ring_desc;

/* The writer's handle to its ring; lives in the writer's thread-local storage. */
struct sonde_ring_writer {
	struct sonde_ring_area *area;
	struct sonde_ring_desc *d;
	uint8_t *data;
	uint64_t mask;
	uint64_t head;		     /* private copy; published by commit */
	uint64_t tail_seen;	     /* last tail read: most reserves need not read it again */
	uint64_t reserved;	     /* length of the record being written */
	_Atomic uint32_t *open_used; /* shared: bytes filled in the open record */
	uint64_t mapped_to, map_end; /* first lap: pages mapped in up to this head */
	/*
	 * DROP_OLDEST: called in the writer's thread for each record its full ring
	 * drops, before the bytes are reused (NULL: none), so that a runtime can
	 * count what the record held (a block of many calls) and send again what
	 * the reader needs (the process's description). Set after __claim; it must
	 * not write to the ring.
	 */
	void (*on_drop)(struct sonde_ring_writer *w, const void *rec, uint32_t len);
};

/* What the reader knows about the bytes it hands to the sink. */
struct sonde_ring_chunk {
	uint32_t ring;
	uint32_t pid, tid;
	uint32_t serial; /* the writer's process serial (see __next_serial) */
	uint64_t bytes;
};

/* ---- owner side (sonde) --------------------------------------------------------------- */

/*
 * Create an area of nrings rings of ring_bytes each (a power of two, >= 4096)
 * in a memfd. Returns 0 or -errno. The memfd stays open in the owner; writers
 * open it through __path().
 */
int sonde_ring_area__create(unsigned nrings, size_t ring_bytes, enum sonde_ring_policy policy,
			    struct sonde_ring_area **out);
/*
 * The same, with nspill more rings of spill_bytes (a power of two, >= 4096, at
 * most ring_bytes) for the threads that come when the nrings big ones are
 * taken. The memfd is sparse: a ring that no thread writes costs no memory, so
 * thousands of spill rings are cheap. At most 65536 rings in all.
 */
int sonde_ring_area__create_spill(unsigned nrings, size_t ring_bytes, unsigned nspill,
				  size_t spill_bytes, enum sonde_ring_policy policy,
				  struct sonde_ring_area **out);
void sonde_ring_area__destroy(struct sonde_ring_area *a);
/*
 * Replace a closed area (see __close) by a fresh one of the same geometry at
 * the same path, for the next run: processes of the last run that still hold
 * the old one (daemons) can never write into the new one. Returns 0 or -errno
 * (*a is then unchanged).
 */
int sonde_ring_area__renew(struct sonde_ring_area **a);
/* The path a writer opens ("/proc/PID/fd/N"); valid while the area exists. */
const char *sonde_ring_area__path(const struct sonde_ring_area *a);

typedef int (*sonde_ring_sink)(void *ctx, const struct sonde_ring_chunk *c, const void *data);

/*
 * Copy what every ring holds to sink, one chunk per ring with whole records.
 * A ring whose thread has retired and that is empty becomes free again. Returns
 * the bytes drained or a negative errno from the sink. Not thread-safe: one
 * reader at a time.
 */
long long sonde_ring_area__drain(struct sonde_ring_area *a, sonde_ring_sink sink, void *ctx);
/*
 * The same, without copying: sink reads the rings' memory in place (a ring's
 * bytes may come as two chunks, each of whole records). Only when no writer
 * writes any more, and the caller knows it (its own writers, stopped): a
 * writer that went on could overwrite what sink reads.
 */
long long sonde_ring_area__drain_quiet(struct sonde_ring_area *a, sonde_ring_sink sink, void *ctx);
/*
 * Free rings whose writer process no longer exists or is a zombie (call after
 * a drain). A live one is never taken for dead, even once the run is over
 * (all_dead, kept for the ABI): it may be a daemon that left the run's
 * process group and still writes.
 * A gone writer's open record (see __open) is published first, cut to what the
 * writer had filled in; such a ring is freed by a later reclaim, after a drain.
 * Returns the bytes so salvaged (drain again when non-zero).
 */
uint64_t sonde_ring_area__reclaim(struct sonde_ring_area *a, bool all_dead);
/*
 * Whether the shared header no longer says what the owner created (a target
 * wrote over it). The owner never reads its geometry back from there, so this
 * only tells that the writers' events may be lost.
 */
bool sonde_ring_area__tampered(const struct sonde_ring_area *a);
/*
 * Whether a writer stopped recording because the reader had not beaten for
 * 2 s (a stalled sonde): its events after that are not in the rings.
 */
bool sonde_ring_area__abandoned(const struct sonde_ring_area *a);
/* Records dropped so far (all rings, plus writers that found no free ring), as
 * the writers count them (the target can write these counts too). */
uint64_t sonde_ring_area__dropped(const struct sonde_ring_area *a);
/* Mark the reader alive (lossless writers stop waiting when it goes quiet). */
void sonde_ring_area__heartbeat(struct sonde_ring_area *a);
/*
 * The recording is over: writers stop writing (their next slow path, a ring
 * past half full, sees it), processes that attach later record nothing. Drain
 * once more afterwards for what was committed before. Writers also stop, for
 * good, when the reader's process has ended (sonde was killed: looked for
 * once it has not beaten for 250 ms), instead of waiting on a full ring.
 */
void sonde_ring_area__close(struct sonde_ring_area *a);
/*
 * Sleep until a writer wants the reader (a ring past half full, a thread's
 * ring retired), __wake is called, or timeout_ns passed; returns at once when
 * a ring already wants it. Writers wake the reader only while it sleeps here,
 * so a reader that waits costs no wake-ups while the target is quiet. Returns
 * whether it was woken.
 */
bool sonde_ring_area__wait(struct sonde_ring_area *a, uint64_t timeout_ns);
/* Wake a reader sleeping in __wait (from another thread of the reader's process). */
void sonde_ring_area__wake(struct sonde_ring_area *a);

/* ---- writer side (the target) --------------------------------------------------------- */

/*
 * Map an existing area by path (no allocation): its header and descriptors
 * only; a ring's buffer is mapped by the claim that takes it and unmapped when
 * it retires, so a target's address space grows by its threads' rings. The
 * path is opened again at each claim (no descriptor stays in the target).
 * Returns NULL with errno on failure (EPIPE: the area is closed).
 */
struct sonde_ring_area *sonde_ring_area__attach(const char *path);
void sonde_ring_area__detach(struct sonde_ring_area *a);
/*
 * Whether the reader has closed the area or is gone (as last seen by this
 * process's writers, which look on their slow paths: a ring past half full or
 * full). A runtime that sees it stops recording and gets out of the way.
 */
bool sonde_ring_area__reader_gone(struct sonde_ring_area *a);
/* A number unique among the processes writing into this area. */
uint32_t sonde_ring_area__next_serial(struct sonde_ring_area *a);
/* Count n records lost by a writer that could not claim a ring. */
void sonde_ring_area__lost(struct sonde_ring_area *a, uint64_t n);
/* Claim a free ring for the calling thread. Returns 0, -EBUSY (none free), -EINVAL,
 * -EPIPE (the reader is gone: see __reader_gone), or the -errno of mapping it. */
int sonde_ring__claim(struct sonde_ring_area *a, uint32_t pid, uint32_t tid, uint32_t serial,
		      struct sonde_ring_writer *w);
/*
 * Space for one record of len bytes (a multiple of 8, header included), with its
 * header already written. NULL when the record is dropped (counted).
 */
void *sonde_ring__reserve(struct sonde_ring_writer *w, uint32_t type, uint32_t len);
/* Publish the record reserved last. */
void sonde_ring__commit(struct sonde_ring_writer *w);
/*
 * An open record: reserved like __reserve, but filled in place over time. The
 * writer says how far it got with __open_fill (a plain store into shared
 * memory), and publishes it with __close, which cuts the record to the bytes
 * used. If the writer dies first, the reader salvages what __open_fill said
 * (see __reclaim): a crash loses nothing the writer had written.
 */
void *sonde_ring__open(struct sonde_ring_writer *w, uint32_t type, uint32_t len);
static inline void sonde_ring__open_fill(struct sonde_ring_writer *w, uint32_t used)
{
	atomic_store_explicit(w->open_used, used, memory_order_relaxed);
}
void sonde_ring__close(struct sonde_ring_writer *w, uint32_t used);
/* Give the ring back once the reader has drained it (thread exit); unmaps it. */
void sonde_ring__retire(struct sonde_ring_writer *w);

/* ---- the drained log (sonde) ---------------------------------------------------------- */

/*
 * A drainer is a thread that drains an area into a file: each chunk is written
 * as struct sonde_ring_chunk followed by its bytes. It drains again at once while
 * much flows, else sleeps in __wait, at most interval_us: writers wake it when a
 * ring is half full or a thread's ring is retired, so a quiet target costs no
 * wake-ups. The file is what survives: a target that crashes loses nothing
 * committed before.
 */
struct sonde_ring_drainer;

int sonde_ring_drainer__start(struct sonde_ring_area *a, int fd, unsigned interval_us,
			      struct sonde_ring_drainer **out);
/*
 * Drain now, from the calling thread (serialised with the drainer thread).
 * After a write error it drains no more and returns that error, and closes the
 * area (sonde_ring_area__close): the writers stop recording, the target goes on.
 */
long long sonde_ring_drainer__sync(struct sonde_ring_drainer *d);
/*
 * Bytes taken from the rings whose write failed (lost, not counted as events);
 * error_ns (may be NULL) gets when the first write failed (monotonic ns; 0: none).
 */
uint64_t sonde_ring_drainer__lost_bytes(struct sonde_ring_drainer *d, uint64_t *error_ns);
/* Stop the thread after a last drain. Returns 0 or the first write error (-errno). */
int sonde_ring_drainer__stop(struct sonde_ring_drainer *d);
/*
 * Bytes of whole chunks written to the file so far: a follower (an analysis
 * that reads the file while the target runs) may read up to there.
 * __wait_written sleeps until more than `seen` were written, timeout_ns
 * passed, or __kick was called since __kicks returned `kicks` (so that a kick
 * between the caller's look at its own state and its wait is not lost); it
 * returns __written.
 */
uint64_t sonde_ring_drainer__written(struct sonde_ring_drainer *d);
uint64_t sonde_ring_drainer__kicks(struct sonde_ring_drainer *d);
uint64_t sonde_ring_drainer__wait_written(struct sonde_ring_drainer *d, uint64_t seen,
					  uint64_t kicks, uint64_t timeout_ns);
void sonde_ring_drainer__kick(struct sonde_ring_drainer *d);
/* CPU time the drainer thread has used so far. */
uint64_t sonde_ring_drainer__cpu_ns(struct sonde_ring_drainer *d);

/*
 * Walk a drained log held in memory (8-byte aligned): cb is called per record
 * with the chunk it came from, which lies in buf just before its records
 * (padding is skipped). A truncated tail is ignored. A record whose length
 * does not frame it (the target wrote over its ring) ends its chunk: cb is
 * called once with rec NULL for the rest of that chunk, and the walk goes on
 * with the next. Returns 0, the first non-zero value cb returned, or -EINVAL
 * for a misaligned buffer.
 */
typedef int (*sonde_ring_record_fn)(void *ctx, const struct sonde_ring_chunk *c,
				    const uint32_t *rec);
int sonde_ring_log__walk(const void *buf, size_t len, sonde_ring_record_fn cb, void *ctx);
/* The records of one chunk's bytes (8-byte aligned), as __walk does; -EBADMSG where
   a record's length does not frame it (the records before it were walked). */
int sonde_ring_log__walk_records(const void *data, size_t bytes, const struct sonde_ring_chunk *c,
				 sonde_ring_record_fn cb, void *ctx);

#endif

/*
 * rt-host.c - sonde's side of a preloaded runtime (see rt-host.h).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/file.h>
#include <sonde/runner.h>
#include <sonde/sysinfo.h>
#include "../../grow.h"
#include "../../runtime-file.h"
#include "rt-host.h"

/* An invariant TSC (constant rate, ticking in every state) can time events. */
static bool invariant_tsc(void)
{
#if defined(__x86_64__)
	return sonde_sysinfo__cpu_flag("constant_tsc") && sonde_sysinfo__cpu_flag("nonstop_tsc");
#else
	return false;
#endif
}

/* 1: dynamically linked (or a script), 0: static, -errno: unreadable. */
static int dynamic_target(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), i, rc = 0;

	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return 1; /* a script: its interpreter is what runs */
	}
	for (i = 0; i < eh.e_phnum && !rc; i++)
		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize)) ==
			    (ssize_t)sizeof(ph) &&
		    (ph.p_type == PT_INTERP || ph.p_type == PT_DYNAMIC))
			rc = 1;
	close(fd);
	return rc;
}

/* Check the target can take a preloaded runtime, and preload it. */
static int preload_runtime(struct sonde_collection *c, const struct rt_host_spec *s,
			   const char *argv0)
{
	char *exe, *runtime;
	int rc;

	exe = sonde_runner__resolve(argv0);
	if (exe && dynamic_target(exe) == 0) {
		sonde_collection__fail(c,
				       "'%s' is statically linked: the %s collector preloads its "
				       "runtime into a dynamically linked program (rebuild it "
				       "without -static)",
				       exe, s->collector);
		free(exe);
		return -ENOTSUP;
	}
	free(exe);
	runtime = sonde_runtime_file(s->runtime);
	if (!runtime && errno != ENOENT)
		return -errno;
	if (!runtime) {
		sonde_collection__fail(c,
				       "cannot find the %s runtime %s (set SONDE_RUNTIME_DIR to "
				       "the directory that holds it)",
				       s->collector, s->runtime);
		return -ENOENT;
	}
	rc = sonde_collection__preload(c, runtime);
	free(runtime);
	return rc;
}

int rt_host__ring_bytes(struct sonde_collection *c, size_t def, size_t *out)
{
	long long mib = sonde_collection__param_int(c, "ring-mib", 0);

	if (!mib) {
		*out = def;
		return 0;
	}
	if (mib < 1 || mib > 1024 || (mib & (mib - 1))) {
		sonde_collection__fail(c, "--ring-mib %lld: a power of two from 1 to 1024", mib);
		return -EINVAL;
	}
	*out = (size_t)mib << 20;
	return 0;
}

int rt_host__start(struct rt_host *h, struct sonde_collection *c, const struct rt_host_spec *s)
{
	char *const *argv = sonde_collection__argv(c);
	const char *tmp = getenv("TMPDIR");
	char tmpl[PATH_MAX];
	int rc;

	h->log_fd = -1;
	h->counts_drops = s->counts_drops;
	if (invariant_tsc()) {
		h->tsc = true;
		sonde_clock_tsc_pair(&h->clock.tick0, &h->clock.ns0);
	}
	if (s->runtime) {
		rc = preload_runtime(c, s, argv[0]);
		if (rc)
			return rc;
	}
	rc = sonde_ring_area__create_spill(
		s->rings, s->ring_bytes, s->spill_rings,
		s->spill_bytes ? s->spill_bytes : s->ring_bytes,
		s->drop_oldest ? SONDE_RING_DROP_OLDEST : SONDE_RING_LOSSLESS, &h->area);
	if (rc) {
		sonde_collection__fail(c, "cannot create the event rings: %s", strerror(-rc));
		return rc;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/sonde-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
		 s->collector);
	h->log_fd = mkostemp(tmpl, O_CLOEXEC);
	if (h->log_fd < 0) {
		rc = -errno;
		sonde_collection__fail(c, "cannot create the event log in '%s': %s",
				       tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return rc;
	}
	unlink(tmpl);
	rc = sonde_ring_drainer__start(h->area, h->log_fd, 1000000, &h->drainer);
	if (rc)
		return rc;
	return sonde_collection__setenv(c, s->ring_env, sonde_ring_area__path(h->area));
}

/*
 * The next run gets fresh rings at the same path. Processes of this run that
 * outlive it (daemons, out of its process group) keep the old, closed rings:
 * they stop recording and never write into the next run's. What the drainer
 * still finds in the old ones is not this run's to analyse, nor the next's.
 */
static int renew(struct rt_host *h)
{
	int rc;

	h->drain_cpu_ns += sonde_ring_drainer__cpu_ns(h->drainer);
	sonde_ring_drainer__stop(h->drainer); /* (an error now is about no run's bytes) */
	h->drainer = NULL;
	rc = sonde_ring_area__renew(&h->area);
	if (!rc)
		rc = sonde_ring_drainer__start(h->area, h->log_fd, 1000000, &h->drainer);
	h->dropped_seen = 0;
	h->run_start = lseek(h->log_fd, 0, SEEK_END);
	return rc;
}

/* The clocks' rate from the start to now. */
static void update_clock(struct rt_host *h)
{
	uint64_t tick, ns;

	if (!h->tsc)
		return;
	sonde_clock_tsc_pair(&tick, &ns);
	if (tick > h->clock.tick0 && ns > h->clock.ns0)
		h->clock.ns_per_tick =
			(double)(ns - h->clock.ns0) / (double)(tick - h->clock.tick0);
}

int rt_host__clock_now(const struct rt_host *h, struct rt_clock *out)
{
	uint64_t tick, ns;

	*out = (struct rt_clock){ 0 };
	if (!h->tsc)
		return 0;
	sonde_clock_tsc_pair(&tick, &ns);
	if (tick <= h->clock.tick0 || ns <= h->clock.ns0)
		return -EAGAIN;
	out->tick0 = h->clock.tick0;
	out->ns0 = h->clock.ns0;
	out->ns_per_tick = (double)(ns - h->clock.ns0) / (double)(tick - h->clock.tick0);
	return 0;
}

void rt_host__clock_once(const struct rt_host *h, struct rt_clock *k, bool *set, bool now)
{
	if (*set)
		return;
	if (!now || rt_host__clock_now(h, k))
		*k = h->clock;
	*set = true;
}

/* ---- following the log while the target runs ---------------------------------------------- */

#define FOLLOW_CLOCK_NS 20000000u  /* feed from 20 ms after the clocks' first reading */
#define FOLLOW_IDLE_NS	5000000u   /* no new bytes for this long: drain */
#define FOLLOW_QUIET_NS 100000000u /* at most this long, when nothing comes */
#define FOLLOW_BATCH	(8u << 20) /* bytes read and fed at a time (a bigger chunk: all of it) */

static int read_at(int fd, char *buf, size_t len, off_t at, size_t *got)
{
	*got = 0;
	while (*got < len) {
		ssize_t n = pread(fd, buf + *got, len - *got, at + (off_t)*got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		*got += (size_t)n;
	}
	return 0;
}

static int fit_buffer(struct rt_host_follower *fo, size_t len)
{
	char *b;

	if (len <= fo->capbuf)
		return 0;
	/* read into whole and fresh (nothing in it is kept), on huge pages */
	len = len < FOLLOW_BATCH ? FOLLOW_BATCH
				 : (len + FOLLOW_BATCH - 1) & ~(size_t)(FOLLOW_BATCH - 1);
	b = sonde_alloc_huge(len);
	if (!b)
		return -ENOMEM;
	free(fo->buf);
	fo->buf = b;
	fo->capbuf = len;
	return 0;
}

/*
 * consume: the pages of what was fed go back (a hole punched in the log), a
 * few MiB at a time (a punch is a journalled change of the file: one per feed
 * of 8-16 KiB cost more CPU than it saved), so the log holds little more than
 * what is not fed yet, in memory and on the disk of $TMPDIR.
 */
#define GIVE_BACK_BYTES (4u << 20)

static void give_back(struct rt_host_follower *fo)
{
	off_t from = (fo->base + (off_t)fo->given_back + 4095) & ~(off_t)4095,
	      to = (fo->base + (off_t)fo->fed) & ~(off_t)4095;

	if (!fo->f.consume || to - from < (off_t)GIVE_BACK_BYTES)
		return;
	fallocate(fo->log_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, from, to - from);
	fo->given_back = (uint64_t)(to - fo->base);
}

/*
 * Feed whole chunks from fo->fed up to avail (bytes after base). A chunk that
 * does not end before avail (a write cut short by an error) is left unfed.
 */
static int follow_upto(struct rt_host_follower *fo, uint64_t avail)
{
	while (fo->fed < avail) {
		size_t want = avail - fo->fed > FOLLOW_BATCH ? FOLLOW_BATCH : avail - fo->fed;
		size_t got, len = 0;
		uint64_t t;
		int rc = fit_buffer(fo, want);

		if (!rc)
			rc = read_at(fo->log_fd, fo->buf, want, fo->base + (off_t)fo->fed, &got);
		if (rc)
			return rc;
		while (got - len >= sizeof(struct sonde_ring_chunk)) {
			const struct sonde_ring_chunk *c = (const void *)(fo->buf + len);

			if (c->bytes > got - len - sizeof(*c))
				break;
			len += sizeof(*c) + c->bytes;
		}
		if (!len) { /* one chunk bigger than the batch, or cut short */
			struct sonde_ring_chunk c;
			size_t need;

			if (got < sizeof(c))
				return 0;
			memcpy(&c, fo->buf, sizeof(c));
			need = sizeof(c) + c.bytes;
			if (c.bytes > avail - fo->fed - sizeof(c))
				return 0;
			rc = fit_buffer(fo, need);
			if (!rc)
				rc = read_at(fo->log_fd, fo->buf, need, fo->base + (off_t)fo->fed,
					     &got);
			if (rc)
				return rc;
			if (got < need)
				return 0;
			len = need;
		}
		t = sonde_clock_ns();
		rc = fo->f.feed(fo->f.ctx, fo->buf, len);
		fo->busy_ns += sonde_clock_ns() - t;
		if (rc)
			return rc;
		atomic_store(&fo->fed, fo->fed + len);
		give_back(fo);
	}
	return 0;
}

static void *follow_loop(void *arg)
{
	struct rt_host_follower *fo = arg;
	uint64_t idle = FOLLOW_IDLE_NS;

	for (;;) {
		/* the kicks before final: a kick that comes after this look wakes the wait */
		uint64_t kicks = sonde_ring_drainer__kicks(fo->drainer);
		int64_t fin = atomic_load(&fo->final);
		uint64_t now = sonde_clock_ns(), avail;

		if (fin < 0 && now < fo->not_before_ns) {
			/* a rate of the clocks measured over 20 ms is good to ~1e-6 */
			struct timespec ts = { 0, (long)(fo->not_before_ns - now) };

			if (ts.tv_nsec > 1000000)
				ts.tv_nsec = 1000000; /* look at final every ms */
			nanosleep(&ts, NULL);
			continue;
		}
		avail = fin >= 0 ? (uint64_t)(fin - fo->base)
				 : sonde_ring_drainer__written(fo->drainer);

		if (!fo->rc) {
			uint64_t fed = fo->fed;

			fo->rc = follow_upto(fo, avail);
			/* fed something: what the target wrote meanwhile is taken now,
			   not once the rings are half full or after an idle wait, so
			   the feed keeps up and little is left when the target ends */
			if (fin < 0 && !fo->rc && fo->fed > fed &&
			    sonde_ring_drainer__sync(fo->drainer) > 0) {
				idle = FOLLOW_IDLE_NS;
				continue;
			}
		}
		if (fin >= 0)
			break;
		/* nothing new for a while: take what the rings hold (the drainer
		   itself waits for a ring half full, or a second), and look less
		   often while they hold nothing (a quiet target) */
		if (sonde_ring_drainer__wait_written(fo->drainer, avail, kicks, idle) <= avail)
			idle = sonde_ring_drainer__sync(fo->drainer) > 0 ? FOLLOW_IDLE_NS
			       : idle < FOLLOW_QUIET_NS			 ? 2 * idle
									 : idle;
		else
			idle = FOLLOW_IDLE_NS;
	}
	return NULL;
}

int rt_host__follow(struct rt_host *h, const struct rt_host_feed *f)
{
	struct rt_host_follower *fo = &h->follow;
	int err;

	if (fo->running || !h->drainer || h->log_fd < 0)
		return -EINVAL;
	fo->f = *f;
	fo->log_fd = h->log_fd;
	fo->drainer = h->drainer;
	fo->base = h->run_start;
	fo->fed = 0;
	fo->given_back = 0;
	fo->rc = 0;
	fo->busy_ns = 0;
	fo->not_before_ns = h->tsc ? h->clock.ns0 + FOLLOW_CLOCK_NS : 0;
	atomic_store(&fo->final, -1);
	err = pthread_create(&fo->thread, NULL, follow_loop, fo);
	if (err)
		return -err;
	fo->running = true;
	return 0;
}

/* The run's log ends at `end`: feed the rest, stop the follower; its error or 0. */
static int follow_finish(struct rt_host *h, off_t end)
{
	struct rt_host_follower *fo = &h->follow;

	if (end < fo->base)
		end = fo->base + (off_t)sonde_ring_drainer__written(fo->drainer);
	atomic_store(&fo->final, (int64_t)end);
	sonde_ring_drainer__kick(fo->drainer);
	pthread_join(fo->thread, NULL);
	fo->running = false;
	h->follow_ns += fo->busy_ns;
	return fo->rc;
}

static int stop_run(struct rt_host *h, struct sonde_collection *c, const struct sonde_run_info *ri,
		    rt_host_analyse_fn fn, void *ctx)
{
	long long n;
	off_t end, map_from, run_start;
	uint64_t dropped;
	void *map;
	int rc;

	if (h->follow.running) /* what was fed before the run ended */
		h->follow_live_bytes += atomic_load(&h->follow.fed);
	/* the run is over: writers still alive (daemons) stop recording */
	sonde_ring_area__close(h->area);
	n = sonde_ring_drainer__sync(h->drainer);
	/* every process of the run is gone: publish what they left open, free their rings */
	while (n >= 0 && sonde_ring_area__reclaim(h->area, true))
		n = sonde_ring_drainer__sync(h->drainer);
	if (n < 0 && !h->log_failed) {
		/* keep what was written; the recording stopped there, the target went on */
		uint64_t at = 0, run_end = ri->run->end_ns;
		uint64_t lost = sonde_ring_drainer__lost_bytes(h->drainer, &at);
		char when[128] = "recording stopped and the target went on unrecorded";

		h->log_failed = true;
		if (at && run_end > at && at > ri->run->start_ns)
			snprintf(when, sizeof(when),
				 "recording stopped %.3f s into run %u and the target ran its "
				 "last %.3f s unrecorded",
				 (double)(at - ri->run->start_ns) / 1e9, ri->index + 1,
				 (double)(run_end - at) / 1e9);
		sonde_collection__note(
			c,
			"the event log could not be written (%s): %s; the profile holds the "
			"events written before, %llu KiB taken from the rings then were lost",
			strerror((int)-n), when, (unsigned long long)(lost + 1023) / 1024);
	}
	if (sonde_ring_area__abandoned(h->area))
		sonde_collection__note(
			c,
			"run %u: the target stopped recording after sonde had not read its "
			"rings for 2 s (a stalled or overloaded machine): its events "
			"after that are missing",
			ri->index + 1);
	if (sonde_ring_area__tampered(h->area) && !h->tamper_said) {
		h->tamper_said = true;
		sonde_collection__note(
			c, "the target wrote over the header of the rings it shares with "
			   "sonde: its events from then on may be lost or malformed, and "
			   "the rings' counts of dropped events are not taken");
	}
	/* counts the target wrote over are not numbers sonde measured */
	dropped = h->tamper_said ? h->dropped_seen : sonde_ring_area__dropped(h->area);
	if (!h->counts_drops)
		sonde_collection__dropped(c, dropped - h->dropped_seen);
	h->dropped_seen = dropped;
	end = lseek(h->log_fd, 0, SEEK_END);
	run_start = h->run_start;
	if (h->follow.running) {
		uint64_t t = sonde_clock_ns();

		update_clock(h);
		rc = follow_finish(h, end);
		h->after_ns += sonde_clock_ns() - t;
		h->run_start = end < 0 ? h->run_start : end;
		rc = h->follow.f.end(h->follow.f.ctx, rc, ri);
		if (rc == -EINVAL)
			sonde_collection__fail(c, "run %u: the event log is corrupt",
					       ri->index + 1);
		if (rc || !fn || end < 0)
			return rc ? rc : end < 0 ? -errno : 0;
		h->run_start = run_start; /* fn gets the whole run's log */
	}
	if (end < 0)
		return -errno;
	if (ri->warmup || end == h->run_start || !fn) {
		h->run_start = end;
		return 0;
	}
	update_clock(h);
	map_from = h->run_start & ~(off_t)4095;
	map = mmap(NULL, (size_t)(end - map_from), PROT_READ, MAP_PRIVATE, h->log_fd, map_from);
	if (map == MAP_FAILED)
		return -errno;
	rc = fn(ctx, (const char *)map + (h->run_start - map_from), (size_t)(end - h->run_start),
		ri);
	munmap(map, (size_t)(end - map_from));
	h->run_start = end;
	if (rc == -EINVAL)
		sonde_collection__fail(c, "run %u: the event log is corrupt", ri->index + 1);
	return rc;
}

int rt_host__stop(struct rt_host *h, struct sonde_collection *c, const struct sonde_run_info *ri,
		  rt_host_analyse_fn fn, void *ctx)
{
	int rc = stop_run(h, c, ri, fn, ctx), rc2 = renew(h);

	if (rc2 && !rc)
		sonde_collection__fail(c, "cannot renew the event rings: %s", strerror(-rc2));
	return rc ? rc : rc2;
}

int rt_host__keep_log(struct rt_host *h, const char *path)
{
	off_t end = h->log_fd >= 0 ? lseek(h->log_fd, 0, SEEK_END) : -1;
	void *map;
	int rc;

	if (end < 0)
		return h->log_fd >= 0 ? -errno : -EBADF;
	if (!end)
		return sonde_file__write_data(path, "", 0, SONDE_FILE_NEW, NULL);
	map = mmap(NULL, (size_t)end, PROT_READ, MAP_PRIVATE, h->log_fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	rc = sonde_file__write_data(path, map, (size_t)end, SONDE_FILE_NEW, NULL);
	munmap(map, (size_t)end);
	return rc;
}

uint64_t rt_host__drain_cpu_ns(struct rt_host *h)
{
	return h->drain_cpu_ns + (h->drainer ? sonde_ring_drainer__cpu_ns(h->drainer) : 0);
}

static void release_now(struct rt_host *h)
{
	if (h->follow.running)
		follow_finish(h, -1);
	free(h->follow.buf);
	h->follow.buf = NULL;
	h->follow.capbuf = 0;
	sonde_ring_drainer__stop(h->drainer);
	h->drainer = NULL;
	sonde_ring_area__destroy(h->area);
	h->area = NULL;
	if (h->log_fd >= 0)
		close(h->log_fd);
	h->log_fd = -1;
}

static void *release_main(void *arg)
{
	release_now(arg);
	return NULL;
}

void rt_host__release_async(struct rt_host *h)
{
	if (!h->releasing)
		h->releasing = pthread_create(&h->releaser, NULL, release_main, h) == 0;
	if (!h->releasing)
		release_now(h);
}

void rt_host__release(struct rt_host *h)
{
	if (h->releasing) {
		pthread_join(h->releaser, NULL);
		h->releasing = false;
		return;
	}
	release_now(h);
}

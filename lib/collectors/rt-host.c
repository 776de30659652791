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
#include <sys/mman.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/file.h>
#include <sonde/runner.h>
#include <sonde/sysinfo.h>
#include "../runtime-file.h"
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

/* One reading of both clocks, as close together as they can be taken. */
static void clock_pair(uint64_t *tick, uint64_t *ns)
{
#if defined(__x86_64__)
	uint64_t a = __builtin_ia32_rdtsc(), b;

	*ns = sonde_clock_ns();
	b = __builtin_ia32_rdtsc();
	*tick = a + (b - a) / 2;
#else
	*tick = *ns = sonde_clock_ns();
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
	if (invariant_tsc()) {
		h->tsc = true;
		clock_pair(&h->clock.tick0, &h->clock.ns0);
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

static int stop_run(struct rt_host *h, struct sonde_collection *c, const struct sonde_run_info *ri,
		    rt_host_analyse_fn fn, void *ctx)
{
	long long n;
	off_t end, map_from;
	uint64_t dropped;
	void *map;
	int rc;

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
	sonde_collection__dropped(c, dropped - h->dropped_seen);
	h->dropped_seen = dropped;
	end = lseek(h->log_fd, 0, SEEK_END);
	if (end < 0)
		return -errno;
	if (ri->warmup || end == h->run_start) {
		h->run_start = end;
		return 0;
	}
	if (h->tsc) {
		uint64_t tick, ns;

		clock_pair(&tick, &ns);
		if (tick > h->clock.tick0 && ns > h->clock.ns0)
			h->clock.ns_per_tick =
				(double)(ns - h->clock.ns0) / (double)(tick - h->clock.tick0);
	}
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

void rt_host__release(struct rt_host *h)
{
	sonde_ring_drainer__stop(h->drainer);
	h->drainer = NULL;
	sonde_ring_area__destroy(h->area);
	h->area = NULL;
	if (h->log_fd >= 0)
		close(h->log_fd);
	h->log_fd = -1;
}

/*
 * Unit tests of the event rings: wrap-around, concurrent writers with a
 * concurrent reader, a reader that falls behind (drop-oldest), a writer that
 * dies in the middle of a record, and the drained log read back from a file.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <sonde/clock.h>
#include <sonde/ring.h>

#define T_REC 9

/* A test record: header, writer id, sequence number, then filler bytes. */
struct rec {
	uint32_t hdr;
	uint32_t writer;
	uint64_t seq;
	uint8_t fill[];
};

static uint32_t rec_len(uint64_t seq)
{
	return (uint32_t)(16 + 8 * (seq % 23)); /* 16 to 192 bytes */
}

static int write_rec(struct sonde_ring_writer *w, uint32_t writer, uint64_t seq)
{
	uint32_t len = rec_len(seq);
	struct rec *r = sonde_ring__reserve(w, T_REC, len);

	if (!r)
		return -1;
	r->writer = writer;
	r->seq = seq;
	memset(r->fill, (int)(seq & 0xff), len - 16);
	sonde_ring__commit(w);
	return 0;
}

struct check {
	uint64_t next[8]; /* next sequence expected per writer */
	uint64_t records, gaps;
	int bad;
};

static int check_rec(void *ctx, const struct sonde_ring_chunk *c, const uint32_t *h)
{
	struct check *k = ctx;
	const struct rec *r = (const void *)h;
	uint32_t i, len;

	(void)c;
	if (!h) { /* a chunk whose records do not frame: none is written here */
		k->bad++;
		return 0;
	}
	len = SONDE_RING_REC_LEN(h[0]);
	if (SONDE_RING_REC_TYPE(h[0]) != T_REC || r->writer >= 8 || len != rec_len(r->seq)) {
		k->bad++;
		return 0;
	}
	for (i = 0; i < len - 16; i++)
		if (r->fill[i] != (uint8_t)(r->seq & 0xff))
			k->bad++;
	if (r->seq != k->next[r->writer])
		k->gaps++;
	k->next[r->writer] = r->seq + 1;
	k->records++;
	return 0;
}

/* A sink that walks each chunk's records (the log format without a file). */
static int sink(void *ctx, const struct sonde_ring_chunk *c, const void *data)
{
	size_t len = sizeof(*c) + c->bytes;
	uint64_t *buf = malloc(len + 8);
	int rc;

	memcpy(buf, c, sizeof(*c));
	memcpy((char *)buf + sizeof(*c), data, c->bytes);
	rc = sonde_ring_log__walk(buf, len, check_rec, ctx);
	free(buf);
	return rc;
}

static int count_rec(void *ctx, const struct sonde_ring_chunk *c, const uint32_t *rec)
{
	unsigned *n = ctx; /* n[0]: records, n[1]: chunks cut short */

	(void)c;
	n[rec ? 0 : 1]++;
	return 0;
}

/*
 * A chunk whose records a target wrote over (a length that frames nothing)
 * ends there, said once with NULL; the next chunk is walked, and the walk
 * succeeds.
 */
static void test_walk_skips_a_scribbled_chunk(void **state)
{
	uint64_t buf[16] = { 0 };
	struct sonde_ring_chunk *c1 = (void *)buf, *c2;
	uint32_t *r = (uint32_t *)(c1 + 1);
	unsigned n[2] = { 0, 0 };

	(void)state;
	c1->bytes = 24;
	r[0] = SONDE_RING_REC(T_REC, 8); /* a good record */
	r[2] = SONDE_RING_REC(T_REC, 3); /* a length that is no multiple of 8 */
	r[4] = SONDE_RING_REC(T_REC, 8); /* unreachable: the lengths frame the records */
	c2 = (void *)((char *)(c1 + 1) + 24);
	c2->bytes = 8;
	((uint32_t *)(c2 + 1))[0] = SONDE_RING_REC(T_REC, 8);
	assert_int_equal(
		sonde_ring_log__walk(buf, sizeof(*c1) + 24 + sizeof(*c2) + 8, count_rec, n), 0);
	assert_int_equal(n[0], 2);
	assert_int_equal(n[1], 1);
	assert_int_equal(sonde_ring_log__walk_records(r, 24, c1, count_rec, n), -EBADMSG);
}

static void test_wrap_around(void **state)
{
	struct sonde_ring_area *a;
	struct sonde_ring_writer w;
	struct check k = { 0 };
	uint64_t seq;

	(void)state;
	assert_int_equal(sonde_ring_area__create(1, 4096, SONDE_RING_LOSSLESS, &a), 0);
	assert_int_equal(sonde_ring__claim(a, 1, 1, 1, &w), 0);
	/* ~100 bytes a record, drained every 20: the 4 KiB buffer wraps > 100 times */
	for (seq = 0; seq < 20000; seq++) {
		assert_int_equal(write_rec(&w, 0, seq), 0);
		if (seq % 20 == 19)
			assert_true(sonde_ring_area__drain(a, sink, &k) > 0);
	}
	assert_true(sonde_ring_area__drain(a, sink, &k) >= 0);
	assert_int_equal(k.bad, 0);
	assert_int_equal(k.gaps, 0);
	assert_int_equal(k.records, 20000);
	assert_int_equal(sonde_ring_area__dropped(a), 0);
	/* a second claim finds no free ring */
	{
		struct sonde_ring_writer w2;

		assert_int_equal(sonde_ring__claim(a, 1, 2, 1, &w2), -EBUSY);
	}
	sonde_ring__retire(&w);
	sonde_ring_area__drain(a, sink, &k); /* an empty retired ring is freed */
	{
		struct sonde_ring_writer w3;

		assert_int_equal(sonde_ring__claim(a, 1, 3, 1, &w3), 0);
	}
	sonde_ring_area__destroy(a);
}

/*
 * A closed area: the writer stops once its ring is past half full (its slow
 * path), claims fail with -EPIPE, a new process cannot attach; the renewed
 * area at the same path takes writers again and holds nothing of the old one.
 */
static void test_close_and_renew(void **state)
{
	struct sonde_ring_area *a, *wa;
	struct sonde_ring_writer w, w2;
	struct check k = { 0 };
	char path[64];
	uint64_t seq;
	int got = 0;

	(void)state;
	assert_int_equal(sonde_ring_area__create(2, 4096, SONDE_RING_LOSSLESS, &a), 0);
	snprintf(path, sizeof(path), "%s", sonde_ring_area__path(a));
	wa = sonde_ring_area__attach(path);
	assert_non_null(wa);
	assert_int_equal(sonde_ring__claim(wa, 1, 1, 1, &w), 0);
	assert_false(sonde_ring_area__reader_gone(wa));
	sonde_ring_area__close(a);
	for (seq = 0; seq < 100; seq++)
		got += write_rec(&w, 0, seq) == 0;
	assert_true(got > 0 && got < 100); /* up to half the ring, then nothing */
	assert_true(sonde_ring_area__reader_gone(wa));
	assert_int_equal(sonde_ring__claim(wa, 1, 2, 1, &w2), -EPIPE);
	assert_null(sonde_ring_area__attach(path));
	assert_int_equal(errno, EPIPE);
	assert_int_equal(sonde_ring_area__drain(a, sink, &k) > 0, 1);
	assert_int_equal(k.records, got);
	assert_int_equal(sonde_ring_area__renew(&a), 0);
	assert_string_equal(sonde_ring_area__path(a), path);
	write_rec(&w, 0, 1000); /* the old writer goes on writing its old ring: unseen */
	sonde_ring_area__detach(wa);
	wa = sonde_ring_area__attach(path);
	assert_non_null(wa);
	assert_int_equal(sonde_ring__claim(wa, 1, 3, 1, &w2), 0);
	assert_int_equal(write_rec(&w2, 0, 0), 0);
	k = (struct check){ 0 };
	assert_true(sonde_ring_area__drain(a, sink, &k) > 0);
	assert_int_equal(k.records, 1);
	assert_int_equal(k.bad, 0);
	sonde_ring_area__detach(wa);
	sonde_ring_area__destroy(a);
}

struct writer_arg {
	struct sonde_ring_area *a;
	uint32_t id;
	uint64_t n;
};

static void *writer_thread(void *p)
{
	struct writer_arg *wa = p;
	struct sonde_ring_writer w;
	uint64_t seq;

	if (sonde_ring__claim(wa->a, (uint32_t)getpid(), wa->id, 1, &w))
		return (void *)1;
	for (seq = 0; seq < wa->n; seq++)
		if (write_rec(&w, wa->id, seq))
			return (void *)2;
	sonde_ring__retire(&w);
	return NULL;
}

static void test_concurrent_writers(void **state)
{
	struct sonde_ring_area *a;
	struct writer_arg wa[4];
	pthread_t t[4];
	struct check k = { 0 };
	uint64_t deadline = sonde_clock_ns() + 30000000000ull;
	int i;
	void *res;

	(void)state;
	assert_int_equal(sonde_ring_area__create(4, 8192, SONDE_RING_LOSSLESS, &a), 0);
	for (i = 0; i < 4; i++) {
		wa[i] = (struct writer_arg){ a, (uint32_t)i, 50000 };
		assert_int_equal(pthread_create(&t[i], NULL, writer_thread, &wa[i]), 0);
	}
	/* the reader runs while they write; small rings make the writers wait (a
	   deadline, not a count of empty drains: a loaded machine may starve them) */
	while (k.records < 4 * 50000ull && sonde_clock_ns() < deadline)
		sonde_ring_area__drain(a, sink, &k);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], &res), 0);
		assert_null(res);
	}
	sonde_ring_area__drain(a, sink, &k);
	assert_int_equal(k.bad, 0);
	assert_int_equal(k.gaps, 0);
	assert_int_equal(k.records, 4 * 50000);
	for (i = 0; i < 4; i++)
		assert_int_equal(k.next[i], 50000);
	assert_int_equal(sonde_ring_area__dropped(a), 0);
	sonde_ring_area__destroy(a);
}

/* Spill rings: 2 big and 6 small; 8 writers at once, each wraps its own ring. */
static void test_spill_rings(void **state)
{
	struct sonde_ring_area *a;
	struct sonde_ring_writer w[9];
	struct check k = { 0 };
	uint64_t seq;
	int i;

	(void)state;
	assert_int_equal(sonde_ring_area__create_spill(2, 16384, 6, 4096, SONDE_RING_LOSSLESS, &a),
			 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(sonde_ring__claim(a, 1, (uint32_t)i, 1, &w[i]), 0);
	assert_int_equal(sonde_ring__claim(a, 1, 9, 1, &w[8]), -EBUSY);
	assert_int_equal(w[0].mask + 1, 16384);
	assert_int_equal(w[7].mask + 1, 4096);
	for (seq = 0; seq < 400; seq++) {
		for (i = 0; i < 8; i++)
			assert_int_equal(write_rec(&w[i], (uint32_t)i, seq), 0);
		if (seq % 10 == 9)
			assert_true(sonde_ring_area__drain(a, sink, &k) > 0);
	}
	sonde_ring_area__drain(a, sink, &k);
	assert_int_equal(k.bad, 0);
	assert_int_equal(k.gaps, 0);
	assert_int_equal(k.records, 8 * 400);
	/* a retired spill ring, once drained, is free for the next thread */
	sonde_ring__retire(&w[5]);
	sonde_ring_area__drain(a, sink, &k);
	assert_int_equal(sonde_ring__claim(a, 1, 9, 1, &w[8]), 0);
	assert_int_equal(w[8].mask + 1, 4096);
	assert_int_equal(sonde_ring_area__dropped(a), 0);
	sonde_ring_area__destroy(a);
}

static void test_reader_behind_drop_oldest(void **state)
{
	struct sonde_ring_area *a;
	struct sonde_ring_writer w;
	struct check k = { 0 };
	uint64_t seq, first;

	(void)state;
	assert_int_equal(sonde_ring_area__create(1, 4096, SONDE_RING_DROP_OLDEST, &a), 0);
	assert_int_equal(sonde_ring__claim(a, 1, 1, 1, &w), 0);
	for (seq = 0; seq < 1000; seq++)
		assert_int_equal(write_rec(&w, 0, seq), 0); /* never blocks */
	k.next[0] = UINT64_MAX;
	assert_true(sonde_ring_area__drain(a, sink, &k) > 0);
	assert_int_equal(k.bad, 0);
	/* what is left is the newest records, in order, ending with the last */
	assert_int_equal(k.next[0], 1000);
	first = 1000 - k.records;
	assert_true(first > 0);
	assert_int_equal(k.gaps, 1); /* only the jump from "nothing" to the first kept */
	/* every record is either drained or counted as dropped */
	assert_int_equal(sonde_ring_area__dropped(a) + k.records, 1000);
	sonde_ring_area__destroy(a);
}

static void test_writer_dies_mid_record(void **state)
{
	struct sonde_ring_area *a;
	struct check k = { 0 };
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(sonde_ring_area__create(2, 4096, SONDE_RING_LOSSLESS, &a), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child maps the area by path, as a preloaded runtime does */
		struct sonde_ring_area *m = sonde_ring_area__attach(sonde_ring_area__path(a));
		struct sonde_ring_writer w;
		struct rec *r;
		uint64_t seq;

		if (!m || sonde_ring__claim(m, (uint32_t)getpid(), 7, 2, &w))
			_exit(2);
		for (seq = 0; seq < 10; seq++)
			write_rec(&w, 1, seq);
		r = sonde_ring__reserve(&w, T_REC, 64); /* started, never committed */
		if (r) {
			r->writer = 1;
			r->seq = 10;
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(sonde_ring_area__drain(a, sink, &k) > 0);
	assert_int_equal(k.bad, 0);
	assert_int_equal(k.records, 10);
	assert_int_equal(k.next[1], 10);
	/* the dead writer's ring comes back once drained */
	sonde_ring_area__reclaim(a, false);
	{
		struct sonde_ring_writer w1, w2;

		assert_int_equal(sonde_ring__claim(a, 1, 1, 1, &w1), 0);
		assert_int_equal(sonde_ring__claim(a, 1, 2, 1, &w2), 0);
	}
	sonde_ring_area__destroy(a);
}

/* Open records: filled in place, closed cut to size, salvaged when the writer dies. */
#define T_OPEN 10
struct open_seen {
	unsigned records;
	uint32_t words[2048];
	unsigned nwords;
};

static int open_rec(void *ctx, const struct sonde_ring_chunk *c, const uint32_t *rec)
{
	struct open_seen *o = ctx;
	uint32_t len = SONDE_RING_REC_LEN(rec[0]), i;

	(void)c;
	if (SONDE_RING_REC_TYPE(rec[0]) != T_OPEN)
		return -1;
	o->records++;
	for (i = 1; i < len / 4 && o->nwords < 2048; i++)
		o->words[o->nwords++] = rec[i];
	return 0;
}

static int open_sink(void *ctx, const struct sonde_ring_chunk *c, const void *data)
{
	uint64_t buf[1024];

	(void)c;
	assert_true(c->bytes <= sizeof(buf));
	memcpy(buf, data, c->bytes);
	return sonde_ring_log__walk_records(buf, c->bytes, c, open_rec, ctx);
}

static void test_open_records(void **state)
{
	struct sonde_ring_area *a;
	struct open_seen o = { 0 };
	struct sonde_ring_writer w;
	uint32_t *r, i;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(sonde_ring_area__create(2, 4096, SONDE_RING_LOSSLESS, &a), 0);
	/* closed early: the rest of the reservation is free again */
	assert_int_equal(sonde_ring__claim(a, (uint32_t)getpid(), 1, 1, &w), 0);
	r = sonde_ring__open(&w, T_OPEN, 1024);
	assert_non_null(r);
	for (i = 1; i <= 5; i++)
		r[i] = 100 + i;
	sonde_ring__close(&w, 6 * 4);
	assert_int_equal(sonde_ring_area__drain(a, open_sink, &o), 24);
	assert_int_equal(o.records, 1);
	assert_int_equal(o.nwords, 5);
	assert_int_equal(o.words[4], 105);
	/* a dead writer's open record: salvaged up to its last fill */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sonde_ring_area *m = sonde_ring_area__attach(sonde_ring_area__path(a));
		struct sonde_ring_writer cw;
		uint32_t *cr;

		if (!m || sonde_ring__claim(m, (uint32_t)getpid(), 2, 2, &cw))
			_exit(2);
		cr = sonde_ring__open(&cw, T_OPEN, 2048);
		if (!cr)
			_exit(3);
		for (i = 1; i <= 9; i++) {
			cr[i] = 200 + i;
			sonde_ring__open_fill(&cw, (i + 1) * 4);
		}
		cr[10] = 999; /* written, never declared */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	memset(&o, 0, sizeof(o));
	assert_int_equal(sonde_ring_area__drain(a, open_sink, &o), 0);
	assert_int_equal(sonde_ring_area__reclaim(a, false), 40);
	assert_int_equal(sonde_ring_area__drain(a, open_sink, &o), 40);
	assert_int_equal(o.records, 1);
	/* 10 words of 4 bytes padded to 40: 9 values and the padding word */
	assert_int_equal(o.words[0], 201);
	assert_int_equal(o.words[8], 209);
	sonde_ring_area__destroy(a);
}

static void test_drainer_to_file(void **state)
{
	char path[] = "/tmp/sonde-ring-XXXXXX";
	struct sonde_ring_area *a;
	struct sonde_ring_drainer *d;
	struct sonde_ring_writer w;
	struct check k = { 0 };
	struct stat st;
	uint64_t seq, t0;
	void *map;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);

	assert_int_equal(sonde_ring_area__create(2, 4096, SONDE_RING_LOSSLESS, &a), 0);
	/* it sleeps up to 10 s: the writer must wake it each time its ring is half
	   full (else 30000 records through 4 KiB would wait for minutes, or drop) */
	assert_int_equal(sonde_ring_drainer__start(a, fd, 10000000, &d), 0);
	assert_int_equal(sonde_ring__claim(a, 1, 1, 1, &w), 0);
	t0 = sonde_clock_ns();
	for (seq = 0; seq < 30000; seq++)
		assert_int_equal(write_rec(&w, 3, seq), 0);
	assert_int_equal(sonde_ring_drainer__stop(d), 0);
	/* and stop wakes it too */
	assert_true(sonde_clock_ns() - t0 < 5000000000ull);
	assert_int_equal(sonde_ring_area__dropped(a), 0);
	assert_int_equal(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(sonde_ring_log__walk(map, (size_t)st.st_size, check_rec, &k), 0);
	assert_int_equal(k.bad, 0);
	assert_int_equal(k.gaps, 0);
	assert_int_equal(k.records, 30000);
	/* a log cut short (a crash of the reader) is read up to the cut */
	memset(&k, 0, sizeof(k));
	assert_int_equal(sonde_ring_log__walk(map, (size_t)st.st_size - 7, check_rec, &k), 0);
	assert_true(k.records < 30000 && k.bad == 0 && k.gaps == 0);
	munmap(map, (size_t)st.st_size);
	close(fd);
	sonde_ring_area__destroy(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrap_around),
		cmocka_unit_test(test_concurrent_writers),
		cmocka_unit_test(test_spill_rings),
		cmocka_unit_test(test_reader_behind_drop_oldest),
		cmocka_unit_test(test_writer_dies_mid_record),
		cmocka_unit_test(test_drainer_to_file),
		cmocka_unit_test(test_open_records),
		cmocka_unit_test(test_close_and_renew),
		cmocka_unit_test(test_walk_skips_a_scribbled_chunk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

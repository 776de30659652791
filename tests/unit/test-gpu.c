/*
 * Unit tests: the GPU engine without a GPU. CUPTI's activity records are laid
 * out here byte by byte at the offsets CUPTI's API reference gives (not
 * through sonde's own declarations, which they check), then read; the clock
 * mapping is fitted to known pairs; the analysis gets work of known overlap;
 * and where no NVIDIA driver is installed, the libraries are refused with the
 * line the user reads.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include <sonde/profile.h>
#include <sonde/ring.h>
#include "engines/gpu/gpu.h"

static void put32(uint8_t *b, size_t off, uint32_t v)
{
	memcpy(b + off, &v, 4);
}

static void put64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

/* CUpti_ActivityKernel9's leading fields, at their offsets */
static void test_kernel_record(void **state)
{
	uint8_t _Alignas(8) b[256] = { 0 };
	static const char name[] = "_Z6vecAddPfS_S_i";
	const char *np = name;
	union gpu_out o;

	(void)state;
	put32(b, 0, SONDE_CUPTI_KIND_CONCURRENT_KERNEL);
	b[6] = 32;			  /* registersPerThread (uint16_t at 6) */
	put64(b, 16, 1000);		  /* start */
	put64(b, 24, 4000);		  /* end */
	put32(b, 40, 1);		  /* deviceId */
	put32(b, 44, 7);		  /* contextId */
	put32(b, 48, 13);		  /* streamId */
	put32(b, 52, 256);		  /* gridX */
	put32(b, 56, 2);		  /* gridY */
	put32(b, 60, 1);		  /* gridZ */
	put32(b, 64, 128);		  /* blockX */
	put32(b, 68, 1);		  /* blockY */
	put32(b, 72, 1);		  /* blockZ */
	put32(b, 76, 1024);		  /* staticSharedMemory */
	put32(b, 80, 512);		  /* dynamicSharedMemory */
	put32(b, 92, 99);		  /* correlationId */
	memcpy(b + 104, &np, sizeof(np)); /* name */
	assert_int_equal(gpu_from_cupti((const void *)b, &o), GPU_REC_ACT);
	assert_int_equal(o.act.kind, GPU_ACT_KERNEL);
	assert_int_equal(o.act.start, 1000);
	assert_int_equal(o.act.end, 4000);
	assert_int_equal(o.act.device, 1);
	assert_int_equal(o.act.context, 7);
	assert_int_equal(o.act.stream, 13);
	assert_int_equal(o.act.correlation, 99);
	assert_int_equal(o.act.grid[0], 256);
	assert_int_equal(o.act.grid[1], 2);
	assert_int_equal(o.act.block[0], 128);
	assert_int_equal(o.act.regs, 32);
	assert_int_equal(o.act.bytes, 1536);
	assert_ptr_equal(((const struct sonde_cupti_kernel *)(const void *)b)->name, name);
	/* the older kind reads the same */
	put32(b, 0, SONDE_CUPTI_KIND_KERNEL);
	assert_int_equal(gpu_from_cupti((const void *)b, &o), GPU_REC_ACT);
	assert_int_equal(o.act.stream, 13);
}

/* CUpti_ActivityMemcpy5, CUpti_ActivityMemset4, CUpti_ActivityAPI, CUpti_ActivitySynchronization */
static void test_other_records(void **state)
{
	uint8_t _Alignas(8) b[128] = { 0 };
	union gpu_out o;

	(void)state;
	put32(b, 0, SONDE_CUPTI_KIND_MEMCPY);
	b[4] = SONDE_CUPTI_COPY_HTOD;
	put64(b, 8, 1 << 20); /* bytes */
	put64(b, 16, 10);     /* start */
	put64(b, 24, 20);     /* end */
	put32(b, 32, 0);      /* deviceId */
	put32(b, 36, 1);      /* contextId */
	put32(b, 40, 7);      /* streamId */
	put32(b, 44, 5);      /* correlationId */
	assert_int_equal(gpu_from_cupti((const void *)b, &o), GPU_REC_ACT);
	assert_int_equal(o.act.kind, GPU_ACT_MEMCPY);
	assert_int_equal(o.act.sub, SONDE_CUPTI_COPY_HTOD);
	assert_int_equal(o.act.bytes, 1 << 20);
	assert_int_equal(o.act.start, 10);
	assert_int_equal(o.act.end, 20);
	assert_int_equal(o.act.stream, 7);
	assert_int_equal(o.act.correlation, 5);

	memset(b, 0, sizeof(b));
	put32(b, 0, SONDE_CUPTI_KIND_MEMSET);
	put32(b, 4, 0xff); /* value */
	put64(b, 8, 4096);
	put64(b, 16, 30);
	put64(b, 24, 35);
	put32(b, 40, 9);
	assert_int_equal(gpu_from_cupti((const void *)b, &o), GPU_REC_ACT);
	assert_int_equal(o.act.kind, GPU_ACT_MEMSET);
	assert_int_equal(o.act.bytes, 4096);
	assert_int_equal(o.act.stream, 9);
	assert_int_equal(o.act.end - o.act.start, 5);

	memset(b, 0, sizeof(b));
	put32(b, 0, SONDE_CUPTI_KIND_RUNTIME);
	put32(b, 4, 211); /* cbid */
	put64(b, 8, 100);
	put64(b, 16, 180);
	put32(b, 24, 4242); /* processId */
	put32(b, 28, 4243); /* threadId */
	put32(b, 32, 77);   /* correlationId */
	put32(b, 36, 0);    /* returnValue */
	assert_int_equal(gpu_from_cupti((const void *)b, &o), GPU_REC_API);
	assert_int_equal(o.api.driver, 0);
	assert_int_equal(o.api.cbid, 211);
	assert_int_equal(o.api.tid, 4243);
	assert_int_equal(o.api.correlation, 77);
	assert_int_equal(o.api.end - o.api.start, 80);
	put32(b, 0, SONDE_CUPTI_KIND_DRIVER);
	assert_int_equal(gpu_from_cupti((const void *)b, &o), GPU_REC_API);
	assert_int_equal(o.api.driver, 1);

	memset(b, 0, sizeof(b));
	put32(b, 0, SONDE_CUPTI_KIND_SYNCHRONIZATION);
	put32(b, 4, SONDE_CUPTI_SYNC_STREAM);
	put64(b, 8, 500);
	put64(b, 16, 900);
	put32(b, 24, 31); /* correlationId */
	put32(b, 28, 1);  /* contextId */
	put32(b, 32, 7);  /* streamId */
	assert_int_equal(gpu_from_cupti((const void *)b, &o), GPU_REC_ACT);
	assert_int_equal(o.act.kind, GPU_ACT_SYNC);
	assert_int_equal(o.act.sub, SONDE_CUPTI_SYNC_STREAM);
	assert_int_equal(o.act.stream, 7);
	assert_int_equal(o.act.correlation, 31);
	assert_int_equal(o.act.end - o.act.start, 400);

	/* CUpti_ActivityMarker2: the start of a thread's NVTX range */
	memset(b, 0, sizeof(b));
	put32(b, 0, SONDE_CUPTI_KIND_MARKER);
	put32(b, 4, SONDE_CUPTI_MARKER_START);
	put64(b, 8, 123456); /* timestamp */
	put32(b, 16, 9);     /* id */
	put32(b, 20, SONDE_CUPTI_OBJECT_THREAD);
	put32(b, 24, 4242); /* objectId.pt.processId */
	put32(b, 28, 4243); /* objectId.pt.threadId */
	assert_int_equal(gpu_from_cupti((const void *)b, &o), GPU_REC_MARKER);
	assert_int_equal(o.marker.flags, SONDE_CUPTI_MARKER_START);
	assert_int_equal(o.marker.ts, 123456);
	assert_int_equal(o.marker.id, 9);
	assert_int_equal(o.marker.pid, 4242);
	assert_int_equal(o.marker.tid, 4243);

	/* CUpti_ActivityMemory4: 1 MiB of device memory released */
	memset(b, 0, sizeof(b));
	put32(b, 0, SONDE_CUPTI_KIND_MEMORY2);
	put32(b, 4, SONDE_CUPTI_MEMORY_RELEASE);
	put32(b, 8, 3);		      /* memoryKind: device */
	put32(b, 12, 44);	      /* correlationId */
	put64(b, 16, 0x7f0000000000); /* address */
	put64(b, 24, 1 << 20);	      /* bytes */
	put64(b, 32, 777);	      /* timestamp */
	put32(b, 48, 4242);	      /* processId */
	put32(b, 52, 1);	      /* deviceId */
	put32(b, 60, 7);	      /* streamId */
	assert_int_equal(gpu_from_cupti((const void *)b, &o), GPU_REC_MEMORY);
	assert_int_equal(o.memory.release, 1);
	assert_int_equal(o.memory.memory_kind, 3);
	assert_int_equal(o.memory.address, 0x7f0000000000);
	assert_int_equal(o.memory.bytes, 1 << 20);
	assert_int_equal(o.memory.ts, 777);
	assert_int_equal(o.memory.device, 1);
	assert_int_equal(o.memory.stream, 7);
	put32(b, 4, 0); /* an operation CUPTI calls invalid */
	assert_int_equal(gpu_from_cupti((const void *)b, &o), 0);

	/* a kind sonde does not read is left to the caller to count */
	put32(b, 0, SONDE_CUPTI_KIND_OVERHEAD);
	assert_int_equal(gpu_from_cupti((const void *)b, &o), 0);
}

/* Pairs on a clock 2 s ahead running 20 ppm fast, read with ±50 ns of noise */
static void test_clock_fit(void **state)
{
	struct gpu_clock p[5] = { 0 };
	struct sonde_gpu_clock k;
	size_t i;
	static const int noise[] = { 50, -50, 0, 30, -20 };

	(void)state;
	assert_int_equal(sonde_gpu_clock__fit(p, 0, &k), -EINVAL);
	for (i = 0; i < 5; i++) {
		uint64_t host = 1000000000ull + i * 250000000ull;

		p[i].host_ns = host + noise[i];
		p[i].gpu_ns = (uint64_t)(2000000000.0 + (double)host * (1 + 20e-6));
		p[i].spread_ns = 100;
	}
	assert_int_equal(sonde_gpu_clock__fit(p, 5, &k), 0);
	assert_int_equal(k.pairs, 5);
	assert_true(fabs(k.rate * (1 + 20e-6) - 1) < 2e-7); /* 50 ns over 1 s */
	/* a GPU time between the pairs maps to its host time within the noise */
	{
		uint64_t host = 1600000000ull;
		uint64_t gpu = (uint64_t)(2000000000.0 + (double)host * (1 + 20e-6));
		int64_t err = (int64_t)(sonde_gpu_clock__map(&k, gpu) - host);

		assert_true(err < 150 && err > -150);
	}
	/* the uncertainty holds the worst residual and the readings' spread */
	assert_true(k.uncertainty_ns >= 100 && k.uncertainty_ns < 200);

	/* one pair: an offset alone */
	assert_int_equal(sonde_gpu_clock__fit(p, 1, &k), 0);
	assert_true(k.rate == 1);
	assert_int_equal(sonde_gpu_clock__map(&k, p[0].gpu_ns + 1000), p[0].host_ns + 1000);
}

static struct gpu_act act(uint8_t kind, uint32_t dev, uint32_t stream, uint64_t s, uint64_t e,
			  uint32_t name, uint64_t bytes, uint8_t sub)
{
	struct gpu_act a = { .kind = kind,
			     .device = dev,
			     .context = 1,
			     .stream = stream,
			     .start = s,
			     .end = e,
			     .name = name,
			     .bytes = bytes,
			     .sub = sub };

	return a;
}

/*
 * Device 0: stream 7 runs kernels [0,100] and [150,250], stream 8 copies
 * [50,200], [200,220] (touching: one busy stretch) and [400,440]: both busy
 * over [50,100] and [150,220]. Device 1 runs alone at the
 * same times (another device's work does not overlap this one's).
 */
static void test_analysis(void **state)
{
	struct gpu_act w[] = {
		act(GPU_ACT_KERNEL, 0, 7, 0, 100, 1, 0, 0),
		act(GPU_ACT_MEMCPY, 0, 8, 50, 200, 0, 1000, SONDE_CUPTI_COPY_HTOD),
		act(GPU_ACT_KERNEL, 0, 7, 150, 250, 2, 0, 0),
		act(GPU_ACT_KERNEL, 1, 7, 0, 300, 1, 0, 0),
		act(GPU_ACT_MEMSET, 1, 7, 300, 310, 0, 64, 0),
		act(GPU_ACT_SYNC, 0, 7, 90, 260, 0, 0, SONDE_CUPTI_SYNC_CONTEXT),
		act(GPU_ACT_MEMCPY, 0, 8, 200, 220, 0, 3000, SONDE_CUPTI_COPY_HTOD),
		act(GPU_ACT_MEMCPY, 0, 8, 400, 440, 0, 500, SONDE_CUPTI_COPY_DTOH),
	};
	struct sonde_gpu_analysis a;
	size_t i;

	(void)state;
	assert_int_equal(sonde_gpu__analyse(w, sizeof(w) / sizeof(w[0]), &a), 0);
	assert_int_equal(a.nstreams, 3);
	/* device 0 stream 7, device 0 stream 8, device 1 stream 7 */
	assert_int_equal(a.streams[0].device, 0);
	assert_int_equal(a.streams[0].stream, 7);
	assert_true(a.streams[0].busy_ns == 200);
	/* with stream 8 over [50,100] and [150,220] (its copies [50,200], [200,220]) */
	assert_true(a.streams[0].overlapped_ns == 120);
	assert_int_equal(a.streams[0].kernels, 2);
	assert_int_equal(a.streams[1].stream, 8);
	assert_true(a.streams[1].busy_ns == 150 + 20 + 40);
	assert_true(a.streams[1].overlapped_ns == 120);
	assert_int_equal(a.streams[1].copies, 3);
	assert_int_equal(a.streams[2].device, 1);
	assert_true(a.streams[2].busy_ns == 310);
	assert_true(a.streams[2].overlapped_ns == 0);
	assert_int_equal(a.streams[2].memsets, 1);
	/* device 0 busy over [0,250] and [400,440]; device 1 over [0,310] */
	assert_true(a.busy_ns == 250 + 40 + 310);
	assert_true(a.concurrent_ns == 120);
	/* kernels by total: name 1 (100 + 300), then name 2 (100) */
	assert_int_equal(a.nkernels, 2);
	assert_int_equal(a.kernels[0].name, 1);
	assert_int_equal(a.kernels[0].count, 2);
	assert_true(a.kernels[0].total_ns == 400);
	assert_true(a.kernels[0].min_ns == 100 && a.kernels[0].max_ns == 300);
	assert_int_equal(a.kernels[1].name, 2);
	/* copies by direction */
	assert_int_equal(a.ncopies, 2);
	assert_int_equal(a.copies[0].kind, SONDE_CUPTI_COPY_HTOD);
	assert_int_equal(a.copies[0].count, 2);
	assert_int_equal(a.copies[0].bytes, 4000);
	assert_true(a.copies[0].total_ns == 170);
	assert_string_equal(sonde_gpu__copy_name(a.copies[1].kind), "DtoH");
	assert_int_equal(a.syncs, 1);
	assert_true(a.sync_ns == 170);
	for (i = 0; i < a.nstreams; i++)
		assert_true(a.streams[i].overlapped_ns <= a.streams[i].busy_ns);
	sonde_gpu_analysis__free(&a);

	/* nothing: empty, not an error */
	assert_int_equal(sonde_gpu__analyse(NULL, 0, &a), 0);
	assert_int_equal(a.nstreams + a.nkernels + a.ncopies, 0);
	sonde_gpu_analysis__free(&a);
}

/* Where the driver is missing, each library is refused with what is missing. */
static void test_no_driver(void **state)
{
	struct sonde_strbuf why, out;
	void *h = dlopen("libnvidia-ml.so.1", RTLD_LAZY);

	(void)state;
	if (h) {
		dlclose(h);
		skip(); /* a driver is installed: tests/gpu/ checks the libraries there */
		return;
	}
	sonde_strbuf__init(&why);
	sonde_strbuf__init(&out);
	assert_null(sonde_nvml__open(&why));
	assert_non_null(strstr(why.buf, "libnvidia-ml.so.1 not found"));
	sonde_strbuf__reset(&why);
	assert_int_equal(sonde_gpu__driver(&why), -ENOENT);
	assert_string_equal(why.buf, "no NVIDIA driver here (libcuda.so.1: not found)");
	sonde_strbuf__reset(&why);
	assert_int_equal(sonde_gpu__find_cupti("/nonexistent/libcupti.so", &out, &why), -ENOENT);
	assert_string_equal(why.buf, "--cupti /nonexistent/libcupti.so does not load (No such "
				     "file or directory)");
	sonde_strbuf__reset(&why);
	setenv("CUDA_HOME", "/nonexistent-cuda", 1);
	if (!access("/usr/local/cuda/lib/libcupti.so", R_OK) ||
	    !access("/usr/local/cuda/lib64/libcupti.so", R_OK) ||
	    !access("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", R_OK)) {
		/* a CUDA toolkit without a driver (headers and libraries, no GPU) */
		assert_int_equal(sonde_gpu__find_cupti(NULL, &out, &why), 0);
		assert_non_null(strstr(out.buf, "/usr/local/cuda/"));
	} else if (!access("/usr/lib/x86_64-linux-gnu/libcupti.so", R_OK)) {
		assert_int_equal(sonde_gpu__find_cupti(NULL, &out, &why), 0);
	} else {
		assert_int_equal(sonde_gpu__find_cupti(NULL, &out, &why), -ENOENT);
		assert_non_null(
			strstr(why.buf, "/nonexistent-cuda/{extras/CUPTI/lib64,lib64,lib}"));
		assert_non_null(strstr(why.buf, "--cupti PATH"));
	}
	/* a file that is not a library */
	sonde_strbuf__reset(&why);
	assert_int_equal(sonde_gpu__find_cupti("/etc/passwd", &out, &why), -ENOENT);
	assert_string_equal(
		why.buf,
		"--cupti /etc/passwd does not load (not a shared library for this machine)");
	sonde_strbuf__release(&why);
	sonde_strbuf__release(&out);
}

/*
 * The runtime as the NVIDIA driver starts it (CUDA_INJECTION64_PATH: dlopen,
 * then InitializeInjection), with the CUPTI of this machine. Without a driver
 * CUPTI refuses to enable its activity (or, without a toolkit, does not load):
 * either way the runtime writes its process record and the reason into the
 * ring, and sonde reads them back.
 */
static void test_runtime_refused(void **state)
{
	struct sonde_ring_area *area;
	struct sonde_ring_drainer *d;
	struct sonde_gpu_run run = { 0 };
	struct sonde_strbuf cupti, why;
	char path[4096], log[] = "/tmp/sonde-test-gpu-XXXXXX";
	const char *build = getenv("BUILD");
	int (*init)(void);
	void *rt, *drv = dlopen("libcuda.so.1", RTLD_LAZY);
	int fd, status;
	off_t len;
	char *buf;
	pid_t pid;
	bool found;

	(void)state;
	if (drv) {
		dlclose(drv);
		skip(); /* with a driver, CUPTI would record: tests/gpu/ */
		return;
	}
	assert_non_null(build);
	sonde_strbuf__init(&cupti);
	sonde_strbuf__init(&why);
	unsetenv("CUDA_HOME");
	found = !sonde_gpu__find_cupti(NULL, &cupti, &why);
	if (!found)
		sonde_strbuf__adds(&cupti, "libcupti.so"); /* will not load: said so */
	assert_int_equal(sonde_ring_area__create(1, 1u << 16, SONDE_RING_LOSSLESS, &area), 0);
	fd = mkstemp(log);
	assert_true(fd >= 0);
	unlink(log);
	assert_int_equal(sonde_ring_drainer__start(area, fd, 1000, &d), 0);
	setenv(GPU_ENV_RING, sonde_ring_area__path(area), 1);
	setenv(GPU_ENV_CUPTI, cupti.buf, 1);
	setenv(GPU_ENV_LEVEL, "3", 1);
	snprintf(path, sizeof(path), "%s/runtime/gpu/libsonde-gpu.so", build);
	/* in a child, as in a program: CUPTI's own allocations are not this test's
	   to account for (a sanitized build checks leaks at exit: _exit skips it) */
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		rt = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		*(void **)&init = rt ? dlsym(rt, "InitializeInjection") : NULL;
		_exit(!init ? 2 : init() == 1 ? 0 : 1); /* 1: the program goes on */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(sonde_ring_drainer__stop(d), 0);
	len = lseek(fd, 0, SEEK_END);
	assert_true(len > 0);
	buf = malloc((size_t)len);
	assert_int_equal(pread(fd, buf, (size_t)len, 0), len);
	assert_int_equal(sonde_gpu_run__read(&run, buf, (size_t)len), 0);
	assert_int_equal(run.processes, 1);
	assert_non_null(run.status);
	if (found)
		/* this machine's CUPTI: no device to enable its activity on */
		assert_non_null(strstr(run.status, "cuptiActivityEnable(CONCURRENT_KERNEL): "));
	else
		assert_string_equal(run.status, "CUPTI did not load in the program: "
						"No such file or directory");
	print_message("# %s\n", run.status);
	assert_int_equal(run.nacts + run.napis, 0);
	sonde_gpu_run__free(&run);
	free(buf);
	close(fd);
	sonde_ring_area__destroy(area);
	sonde_strbuf__release(&cupti);
	sonde_strbuf__release(&why);
}

/* A log laid out as the drainer writes it: chunks of two processes, interleaved */
static void put_rec(struct sonde_strbuf *b, uint32_t type, const void *rec, size_t len)
{
	uint32_t h = (type << 24) | (uint32_t)len;
	size_t at = b->len;

	sonde_strbuf__add(b, rec, len);
	memcpy(b->buf + at, &h, 4);
}

static void put_chunk(struct sonde_strbuf *b, uint32_t serial, size_t *at)
{
	struct sonde_ring_chunk ch = { .serial = serial };

	if (*at != (size_t)-1) {
		uint64_t bytes = b->len - *at - sizeof(ch);

		memcpy(b->buf + *at + offsetof(struct sonde_ring_chunk, bytes), &bytes, 8);
	}
	if (serial == UINT32_MAX)
		return;
	*at = b->len;
	sonde_strbuf__add(b, &ch, sizeof(ch));
}

static void put_name(struct sonde_strbuf *b, uint32_t id, const char *s)
{
	char rec[64] = { 0 };
	struct gpu_name n = { .id = id };

	memcpy(rec, &n, sizeof(n));
	strcpy(rec + sizeof(n), s);
	put_rec(b, GPU_REC_NAME, rec, (sizeof(n) + strlen(s) + 1 + 7) & ~7u);
}

static void test_log(void **state)
{
	struct sonde_strbuf b;
	struct sonde_gpu_run run = { 0 };
	struct rt_proc proc = { 0 };
	struct gpu_act k = { .kind = GPU_ACT_KERNEL, .name = 1, .start = 10, .end = 20 };
	struct gpu_api api = { .cbid = 211, .start = 1, .end = 5 };
	struct gpu_clock clk = { .gpu_ns = 100, .host_ns = 50 };
	struct gpu_dropped dr = { .records = 3 };
	size_t at = (size_t)-1;

	(void)state;
	sonde_strbuf__init(&b);
	put_chunk(&b, 1, &at);
	put_rec(&b, GPU_REC_PROC, &proc, sizeof(proc));
	put_name(&b, 1, "kernA");
	put_chunk(&b, 2, &at);
	put_rec(&b, GPU_REC_PROC, &proc, sizeof(proc));
	put_name(&b, 1, "kernB"); /* the second process's own id 1 */
	put_name(&b, SONDE_GPU_API_NAME(0, 211), "cudaLaunchKernel");
	put_chunk(&b, 1, &at);
	put_rec(&b, GPU_REC_ACT, &k, sizeof(k)); /* kernA */
	put_rec(&b, GPU_REC_CLOCK, &clk, sizeof(clk));
	put_chunk(&b, 2, &at);
	put_rec(&b, GPU_REC_ACT, &k, sizeof(k)); /* kernB */
	put_rec(&b, GPU_REC_API, &api, sizeof(api));
	put_rec(&b, GPU_REC_DROPPED, &dr, sizeof(dr));
	put_chunk(&b, UINT32_MAX, &at);
	assert_int_equal(sonde_gpu_run__read(&run, b.buf, b.len), 0);
	assert_int_equal(run.processes, 2);
	assert_int_equal(run.nacts, 2);
	assert_string_equal(sonde_gpu_run__name(&run, run.acts[0].name), "kernA");
	assert_string_equal(sonde_gpu_run__name(&run, run.acts[1].name), "kernB");
	assert_int_equal(run.napis, 1);
	assert_string_equal(sonde_gpu_run__name(&run, SONDE_GPU_API_NAME(0, run.apis[0].cbid)),
			    "cudaLaunchKernel");
	assert_int_equal(run.nclocks, 1);
	assert_int_equal(run.dropped, 3);
	assert_null(run.status);
	sonde_gpu_run__free(&run);
	/* a record longer than its chunk: refused */
	b.buf[sizeof(struct sonde_ring_chunk)] = 0x7f;
	assert_int_equal(sonde_gpu_run__read(&run, b.buf, b.len), -EINVAL);
	sonde_gpu_run__free(&run);
	sonde_strbuf__release(&b);
}

/* The column `col` of the resource whose uid is uid (its first row). */
static double value(const struct sonde_profile *p, const char *uid, const char *col)
{
	size_t i, n = sonde_profile__resource_count(p);

	for (i = 0; i < n; i++) {
		json_t *fixed, *cols;

		assert_int_equal(sonde_profile__resource_at(p, i, NULL, &fixed, &cols), 0);
		if (!strcmp(json_string_value(json_object_get(fixed, "uid")), uid))
			return json_number_value(json_array_get(json_object_get(cols, col), 0));
	}
	fail_msg("no resource %s", uid);
	return NAN;
}

/*
 * A run's log of known content through the profile builder: two streams of
 * one GPU (kernel k on stream 7 over [1000, 3000] and [4000, 5000] on CUPTI's
 * clock, a 1 MiB copy on stream 8 over [2000, 4500]), one runtime call; CUPTI's
 * clock 1 s ahead of sonde's. Rows, stats and the timeline as the format says.
 */
static void test_profile(void **state)
{
	struct sonde_strbuf b;
	struct sonde_gpu_run run = { 0 };
	struct rt_proc proc = { 0 };
	struct gpu_act k1 = { .kind = GPU_ACT_KERNEL,
			      .name = 1,
			      .device = 0,
			      .stream = 7,
			      .start = 1000001000,
			      .end = 1000003000,
			      .correlation = 5 };
	struct gpu_act k2 = k1;
	struct gpu_act cp = { .kind = GPU_ACT_MEMCPY,
			      .sub = SONDE_CUPTI_COPY_HTOD,
			      .stream = 8,
			      .start = 1000002000,
			      .end = 1000004500,
			      .bytes = 1 << 20 };
	struct gpu_api api = { .cbid = 211,
			       .pid = 77,
			       .tid = 78,
			       .start = 1000000500,
			       .end = 1000000900,
			       .correlation = 5 };
	struct gpu_clock c1 = { .gpu_ns = 1000000000, .host_ns = 0 },
			 c2 = { .gpu_ns = 1010000000, .host_ns = 10000000 };
	struct sonde_gpu_builder *bld;
	struct sonde_profile *p, *back;
	struct sonde_strbuf err;
	json_t *g, *spans, *calls;
	char path[] = "/tmp/sonde-test-gpu-profile-XXXXXX";
	size_t at = (size_t)-1;
	int fd;

	(void)state;
	struct gpu_marker m_start = { .flags = SONDE_CUPTI_MARKER_START,
				      .id = 1,
				      .pid = 77,
				      .tid = 78,
				      .name = 2,
				      .ts = 1000001500 };
	struct gpu_marker m_end = {
		.flags = SONDE_CUPTI_MARKER_END, .id = 1, .pid = 77, .tid = 78, .ts = 1000002500
	};
	struct gpu_marker m_mark = { .flags = SONDE_CUPTI_MARKER_INSTANTANEOUS,
				     .id = 3,
				     .pid = 77,
				     .tid = 78,
				     .name = 2,
				     .ts = 1000003000 };
	struct gpu_marker m_open = { .flags = SONDE_CUPTI_MARKER_START,
				     .id = 2,
				     .pid = 77,
				     .tid = 78,
				     .name = 2,
				     .ts = 1000003500 };
	struct gpu_memory mem_a = { .address = 0x1000, .bytes = 1 << 20, .ts = 1000000100 };
	struct gpu_memory mem_b = { .address = 0x200000, .bytes = 2 << 20, .ts = 1000000200 };
	struct gpu_memory mem_free = {
		.release = 1, .address = 0x1000, .bytes = 1 << 20, .ts = 1000004000
	};
	json_t *ranges, *memory;

	k2.start = 1000004000, k2.end = 1000005000, k2.correlation = 6;
	sonde_strbuf__init(&b);
	put_chunk(&b, 1, &at);
	put_rec(&b, GPU_REC_PROC, &proc, sizeof(proc));
	put_name(&b, 1, "_Z6vecAddPfS_S_i");
	put_name(&b, SONDE_GPU_API_NAME(0, 211), "cudaLaunchKernel");
	put_rec(&b, GPU_REC_CLOCK, &c1, sizeof(c1));
	put_rec(&b, GPU_REC_API, &api, sizeof(api));
	put_rec(&b, GPU_REC_ACT, &k1, sizeof(k1));
	put_rec(&b, GPU_REC_ACT, &cp, sizeof(cp));
	put_rec(&b, GPU_REC_ACT, &k2, sizeof(k2));
	put_name(&b, 2, "epoch");
	put_rec(&b, GPU_REC_MARKER, &m_start, sizeof(m_start));
	put_rec(&b, GPU_REC_MARKER, &m_end, sizeof(m_end));
	put_rec(&b, GPU_REC_MARKER, &m_mark, sizeof(m_mark));
	put_rec(&b, GPU_REC_MARKER, &m_open, sizeof(m_open));
	/* out of time order, as CUPTI's buffers can hand them over */
	put_rec(&b, GPU_REC_MEMORY, &mem_free, sizeof(mem_free));
	put_rec(&b, GPU_REC_MEMORY, &mem_a, sizeof(mem_a));
	put_rec(&b, GPU_REC_MEMORY, &mem_b, sizeof(mem_b));
	put_rec(&b, GPU_REC_CLOCK, &c2, sizeof(c2));
	put_chunk(&b, UINT32_MAX, &at);
	assert_int_equal(sonde_gpu_run__read(&run, b.buf, b.len), 0);

	bld = sonde_gpu_builder__new(100, 1000);
	assert_non_null(bld);
	assert_int_equal(sonde_gpu_builder__add_run(bld, &run, 0, false, 0), 0);
	p = sonde_profile__new("gpu");
	assert_non_null(p);
	assert_int_equal(sonde_gpu_builder__write(bld, p), 0);

	/* rows: the kernel demangled, its two launches */
	assert_true(value(p, "vecAdd(float*, float*, float*, int)", "amount") == 3000);
	assert_true(value(p, "vecAdd(float*, float*, float*, int)", "calls") == 2);
	assert_true(value(p, "vecAdd(float*, float*, float*, int)", "min") == 1000);
	assert_true(value(p, "vecAdd(float*, float*, float*, int)", "max") == 2000);
	/* stream 7 busy 3000, overlapped by the copy over [2000,3000] and [4000,4500] */
	assert_true(value(p, "gpu0:stream7", "amount") == 3000);
	assert_true(value(p, "gpu0:stream7", "overlapped") == 1500);
	assert_true(value(p, "gpu0:stream8", "amount") == 2500);
	assert_true(value(p, "memcpy HtoD", "bytes") == 1 << 20);
	assert_true(fabs(value(p, "memcpy HtoD", "bandwidth") - (1 << 20) / 2500e-9) < 1);
	assert_true(value(p, "gpu", "amount") == 4000); /* [1000, 5000] */
	assert_true(value(p, "gpu", "concurrent") == 1500);
	assert_true(value(p, "cudaLaunchKernel", "calls") == 1);
	assert_true(value(p, "cudaLaunchKernel", "amount") == 400);
	/* NVTX: the range (1000 ns) and the mark (0 ns); the range never ended is said */
	assert_true(value(p, "epoch", "calls") == 2);
	assert_true(value(p, "epoch", "amount") == 1000);
	assert_true(value(p, "epoch", "max") == 1000 && value(p, "epoch", "min") == 0);
	/* device memory: 1 MiB and 2 MiB allocated, the 1 MiB released */
	assert_true(value(p, "gpu0 memory", "amount") == 3 << 20);
	assert_true(value(p, "gpu0 memory", "allocations") == 2);
	assert_true(value(p, "gpu0 memory", "releases") == 1);
	assert_true(value(p, "gpu0 memory", "allocated") == 3 << 20);
	assert_true(value(p, "gpu0 memory", "live_at_end") == 2 << 20);

	/* stats and the timeline: times on sonde's clock, from t0 = 100 */
	g = json_object_get(sonde_profile__stats(p), "gpu");
	assert_int_equal(json_integer_value(json_object_get(g, "activity_records")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(g, "clock"), "pairs")),
			 2);
	spans = json_object_get(sonde_profile__part(p, "gpu"), "spans");
	calls = json_object_get(sonde_profile__part(p, "gpu"), "calls");
	assert_int_equal(json_array_size(spans), 3);
	/* [stream, kind, name, start, duration, correlation] */
	assert_int_equal(json_integer_value(json_array_get(json_array_get(spans, 0), 3)),
			 1000 - 100);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(spans, 0), 4)), 2000);
	assert_string_equal(json_string_value(json_array_get(json_array_get(spans, 1), 1)),
			    "memcpy");
	assert_int_equal(json_integer_value(json_object_get(g, "ranges_not_ended")), 1);
	ranges = json_object_get(sonde_profile__part(p, "gpu"), "ranges");
	memory = json_object_get(sonde_profile__part(p, "gpu"), "memory");
	/* [pid, tid, name, start, duration] */
	assert_int_equal(json_array_size(ranges), 2);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(ranges, 0), 1)), 78);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(ranges, 0), 3)),
			 1500 - 100);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(ranges, 0), 4)), 1000);
	/* [device, t, live bytes], in time order */
	assert_int_equal(json_array_size(memory), 3);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(memory, 0), 2)), 1 << 20);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(memory, 1), 2)), 3 << 20);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(memory, 2), 1)),
			 4000 - 100);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(memory, 2), 2)), 2 << 20);
	assert_int_equal(json_array_size(calls), 1);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(calls, 0), 0)), 77);
	assert_int_equal(json_integer_value(json_array_get(json_array_get(calls, 0), 3)),
			 500 - 100);

	/* written and read back whole */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sonde_profile__save(p, path), 0);
	sonde_strbuf__init(&err);
	back = sonde_profile__load(path, &err);
	assert_non_null(back);
	assert_string_equal(sonde_profile__type(back), "gpu");
	assert_true(value(back, "gpu0:stream7", "overlapped") == 1500);
	assert_int_equal(
		json_array_size(json_object_get(sonde_profile__part(back, "gpu"), "spans")), 3);
	unlink(path);
	sonde_profile__free(back);
	sonde_profile__free(p);
	sonde_strbuf__release(&err);
	sonde_gpu_builder__free(bld);
	sonde_gpu_run__free(&run);
	sonde_strbuf__release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_record),	cmocka_unit_test(test_other_records),
		cmocka_unit_test(test_clock_fit),	cmocka_unit_test(test_analysis),
		cmocka_unit_test(test_no_driver),	cmocka_unit_test(test_log),
		cmocka_unit_test(test_runtime_refused), cmocka_unit_test(test_profile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

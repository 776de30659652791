/*
 * collector.c - `sonde collect power`: energy (J) and power (W) per domain
 * while the target runs, from every source this machine has:
 *   RAPL through powercap: /sys/class/powercap/<zone>/energy_uj, a counter
 *     that wraps at max_energy_range_uj (one wrap between two readings is
 *     undone; the interval keeps it to one);
 *   the perf power PMU (energy-pkg, energy-cores, ...), where powercap is absent;
 *   hwmon: energy*_input (a µJ counter) or power*_input (µW, a gauge);
 *   a battery's power_now (µW, a gauge; while it discharges);
 *   GPUs: NVIDIA's NVML and AMD's ROCm SMI, loaded at run time when present.
 * A counter's energy is the difference of its readings; a gauge's is the sum
 * of reading × interval. Averages are energy over the time from the first
 * reading (as the target starts) to the last (as it is reaped); peaks are the
 * highest interval's watts.
 *
 * Nothing readable at all is an error (exit 3) that names every source looked
 * for and why each is missing. SONDE_POWER_ROOT (tests only) puts /sys under
 * another directory, so that the arithmetic can be checked on trees laid out as
 * the kernel documents them; the PMU and the GPU libraries are then not used.
 *
 * Resources: type "power", uid the domain ("rapl:package-0", "hwmon:nct6775/
 * power1", "battery:BAT0", "gpu0:<name>"), fixed unit and source; subtype
 * energy (J), average (W) and peak (W), one row per run (column order), and
 * for the workload of that run structure-unit-size where it is a number;
 * subtype watts: the series, columns amount, timestamp (the interval's start,
 * ns since the collection began), duration and order.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <sonde/clock.h>
#include <sonde/collector.h>
#include "../../grow.h"
#include "../../ticker.h"
#include "../../engines/gpu/gpu.h"

#define MAX_DOMAINS 64

enum kind { K_COUNTER, K_GAUGE };
enum src { S_RAPL, S_PMU, S_HWMON, S_BATTERY, S_NVML, S_ROCM, S__N };
static const char *const src_name[S__N] = { "rapl",    "perf-power-pmu", "hwmon",
					    "battery", "nvml",		 "rocm-smi" };

struct domain {
	char name[352];
	enum src src;
	enum kind kind;
	char path[1280]; /* file sources */
	double range_j;	 /* counters: where it wraps (0: never) */
	int fd;		 /* pmu */
	double scale;	 /* pmu: joules per count */
	unsigned dev;	 /* gpu index */
	double last;	 /* counters: J at the last reading; gauges: W */
	uint64_t last_t;
	double run_j, run_peak_w; /* this run */
	uint64_t run_t0;	  /* this run's first reading */
	bool ok;		  /* read at this run's start */
	bool coarse;		  /* counts in steps far apart (NVML): from its first step on */
	bool stepped;		  /* coarse: its first step in this run was seen */
};

struct sample {
	uint64_t ts, dur;
	unsigned run, dom;
	double w;
};

struct runrow {
	unsigned run, dom;
	double j, avg_w, peak_w;
	double size;
	bool has_size;
};

/* NVML and ROCm SMI, as far as sonde calls them */
struct gpu_libs {
	struct sonde_nvml *nvml;
	void *rocm;
	int (*rocm_power)(uint32_t dv, uint32_t sensor, uint64_t *uw);
};

struct power_state {
	char root[256];
	bool overridden;
	double interval_ms;
	struct domain d[MAX_DOMAINS];
	size_t nd;
	struct gpu_libs g;
	struct ticker ticker;
	struct ticker_late late; /* the ticker's lateness, all runs */
	pthread_mutex_t lock;
	uint64_t t0, run_start;
	unsigned run;
	struct sample *s;
	size_t ns, cap_s;
	struct runrow *rows;
	size_t nrows, cap_rows;
	unsigned long long oom;
	unsigned still;	    /* runs of a counter that did not move in them (their energy: null) */
	char missing[1024]; /* what was looked for and not found */
};

/* ---- reading ----------------------------------------------------------------------------- */

static bool read_num(const char *path, double *v)
{
	char buf[64];
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (ok) {
		char *end;

		*v = strtod(buf, &end);
		ok = end != buf;
	}
	return ok;
}

static bool read_str(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

/* A domain's reading now: joules for counters, watts for gauges. */
static bool read_domain(struct power_state *st, struct domain *d, double *v)
{
	double x;

	switch (d->src) {
	case S_RAPL:
	case S_HWMON:
	case S_BATTERY:
		if (!read_num(d->path, &x))
			return false;
		*v = d->kind == K_COUNTER ? x / 1e6 : x / 1e6; /* µJ, µW */
		return true;
	case S_PMU: {
		uint64_t c;

		if (read(d->fd, &c, sizeof(c)) != sizeof(c))
			return false;
		*v = (double)c * d->scale;
		return true;
	}
	case S_NVML:
		return sonde_nvml__energy(st->g.nvml, d->dev, v);
	case S_ROCM: {
		uint64_t uw;

		if (st->g.rocm_power(d->dev, 0, &uw))
			return false;
		*v = (double)uw / 1e6;
		return true;
	}
	default:
		return false;
	}
}

/* ---- finding the sources ----------------------------------------------------------------- */

static void add_missing(struct power_state *st, const char *what)
{
	size_t n = strlen(st->missing);

	snprintf(st->missing + n, sizeof(st->missing) - n, "%s%s", n ? "; " : "", what);
}

static struct domain *new_domain(struct power_state *st, enum src s, enum kind k, const char *name)
{
	struct domain *d;

	if (st->nd == MAX_DOMAINS) {
		if (!strstr(st->missing, "past the 64th"))
			add_missing(st, "domains past the 64th: not read");
		return NULL;
	}
	d = &st->d[st->nd++];
	memset(d, 0, sizeof(*d));
	d->src = s;
	d->kind = k;
	d->fd = -1;
	snprintf(d->name, sizeof(d->name), "%s", name);
	return d;
}

static void find_rapl(struct power_state *st)
{
	char dir[600], path[1200], name[64], dname[352];
	struct dirent *e;
	DIR *dd;
	size_t before = st->nd;
	bool denied = false;

	snprintf(dir, sizeof(dir), "%s/sys/class/powercap", st->root);
	dd = opendir(dir);
	while (dd && (e = readdir(dd))) {
		struct domain *d;
		double v;

		/* intel-rapl:0, intel-rapl:0:1 (amd too: amd-rapl); not the control types */
		if (e->d_name[0] == '.' || !strchr(e->d_name, ':'))
			continue;
		snprintf(path, sizeof(path), "%s/%s/energy_uj", dir, e->d_name);
		if (!read_num(path, &v)) {
			if (errno == EACCES)
				denied = true;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s/name", dir, e->d_name);
		if (!read_str(path, name, sizeof(name)))
			snprintf(name, sizeof(name), "%.63s", e->d_name);
		snprintf(dname, sizeof(dname), "rapl:%s (%.63s)", name, e->d_name);
		d = new_domain(st, S_RAPL, K_COUNTER, dname);
		if (!d)
			break;
		snprintf(d->path, sizeof(d->path), "%s/%s/energy_uj", dir, e->d_name);
		snprintf(path, sizeof(path), "%s/%s/max_energy_range_uj", dir, e->d_name);
		if (read_num(path, &v))
			d->range_j = v / 1e6;
	}
	if (dd)
		closedir(dd);
	if (st->nd == before)
		add_missing(st, denied ? "RAPL: energy_uj is readable by root only"
				       : "RAPL: no /sys/class/powercap/*/energy_uj");
}

static long perf_open(struct perf_event_attr *a, int cpu)
{
	return syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * Whether any of the PMU domains from `from` on counts: read, 20 ms apart (the
 * counters behind them move every millisecond while the machine is on).
 */
static bool pmu_counts(struct power_state *st, size_t from)
{
	double a[MAX_DOMAINS], b;
	struct timespec ts = { 0, 20000000 };
	size_t i;

	for (i = from; i < st->nd; i++)
		if (!read_domain(st, &st->d[i], &a[i]))
			a[i] = NAN;
	nanosleep(&ts, NULL);
	for (i = from; i < st->nd; i++)
		if (read_domain(st, &st->d[i], &b) && !isnan(a[i]) && b != a[i])
			return true;
	return false;
}

static void find_pmu(struct power_state *st)
{
	static const char *const ev[] = { "energy-pkg", "energy-cores", "energy-ram", "energy-gpu",
					  "energy-psys" };
	const char *base = "/sys/bus/event_source/devices/power";
	char path[256], buf[64];
	double type, scale;
	size_t i, before = st->nd;
	int err = 0;

	if (st->overridden)
		return;
	snprintf(path, sizeof(path), "%s/type", base);
	if (!read_num(path, &type)) {
		add_missing(st, "the perf power PMU: none");
		return;
	}
	for (i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		struct perf_event_attr a = { .size = sizeof(a), .type = (uint32_t)type };
		struct domain *d;
		char *p;
		long fd;

		snprintf(path, sizeof(path), "%s/events/%s", base, ev[i]);
		if (!read_str(path, buf, sizeof(buf)) || !(p = strstr(buf, "event=")))
			continue;
		a.config = strtoull(p + 6, NULL, 0);
		snprintf(path, sizeof(path), "%s/events/%s.scale", base, ev[i]);
		if (!read_num(path, &scale))
			continue;
		fd = perf_open(&a, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		snprintf(buf, sizeof(buf), "pmu:%s", ev[i]);
		d = new_domain(st, S_PMU, K_COUNTER, buf);
		if (!d) {
			close((int)fd);
			break;
		}
		d->fd = (int)fd;
		d->scale = scale;
	}
	if (st->nd > before && !pmu_counts(st, before)) {
		/* a machine can list the events and count nothing (a VM without the MSRs
		   behind them): their zeros would be numbers that were not measured */
		for (i = before; i < st->nd; i++)
			close(st->d[i].fd);
		st->nd = before;
		add_missing(st, "the perf power PMU: its energy events did not move in 20 ms "
				"(listed, not counted, as in a VM)");
		return;
	}
	if (st->nd == before) {
		snprintf(path, sizeof(path), "the perf power PMU: %s",
			 err ? strerror(err) : "no energy events");
		add_missing(st, path);
	}
}

static void find_hwmon(struct power_state *st)
{
	char dir[600], path[1200], chip[64], label[64], dname[352];
	struct dirent *e, *f;
	DIR *dd, *hd;
	size_t before = st->nd;

	snprintf(dir, sizeof(dir), "%s/sys/class/hwmon", st->root);
	dd = opendir(dir);
	while (dd && (e = readdir(dd))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/name", dir, e->d_name);
		if (!read_str(path, chip, sizeof(chip)))
			snprintf(chip, sizeof(chip), "%.63s", e->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		hd = opendir(path);
		while (hd && (f = readdir(hd))) {
			bool energy = !strncmp(f->d_name, "energy", 6);
			bool power = !strncmp(f->d_name, "power", 5);
			const char *us = strstr(f->d_name, "_input");
			struct domain *d;
			double v;

			if ((!energy && !power) || !us || us[6])
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", dir, e->d_name, f->d_name);
			if (!read_num(path, &v))
				continue;
			snprintf(path, sizeof(path), "%s/%s/%.*s_label", dir, e->d_name,
				 (int)(us - f->d_name), f->d_name);
			if (!read_str(path, label, sizeof(label)))
				snprintf(label, sizeof(label), "%.*s", (int)(us - f->d_name),
					 f->d_name);
			snprintf(dname, sizeof(dname), "hwmon:%s/%s", chip, label);
			d = new_domain(st, S_HWMON, energy ? K_COUNTER : K_GAUGE, dname);
			if (!d)
				break;
			snprintf(d->path, sizeof(d->path), "%s/%s/%s", dir, e->d_name, f->d_name);
		}
		if (hd)
			closedir(hd);
	}
	if (dd)
		closedir(dd);
	if (st->nd == before)
		add_missing(st, "hwmon: no power*_input or energy*_input");
}

static void find_battery(struct power_state *st)
{
	char dir[600], path[1200], buf[64], dname[352];
	struct dirent *e;
	DIR *dd;
	size_t before = st->nd;

	snprintf(dir, sizeof(dir), "%s/sys/class/power_supply", st->root);
	dd = opendir(dir);
	while (dd && (e = readdir(dd))) {
		struct domain *d;
		double v;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/type", dir, e->d_name);
		if (!read_str(path, buf, sizeof(buf)) || strcmp(buf, "Battery"))
			continue;
		snprintf(path, sizeof(path), "%s/%s/power_now", dir, e->d_name);
		if (!read_num(path, &v))
			continue;
		snprintf(dname, sizeof(dname), "battery:%s", e->d_name);
		d = new_domain(st, S_BATTERY, K_GAUGE, dname);
		if (!d)
			break;
		snprintf(d->path, sizeof(d->path), "%s", path);
	}
	if (dd)
		closedir(dd);
	if (st->nd == before)
		add_missing(st, "battery: no power_now");
}

/* Whether the kernel shows an AMD GPU (vendor 0x1002 under /sys/class/drm/card*). */
static bool amd_gpu(const struct power_state *st)
{
	char dir[512], path[1024], v[16];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/sys/class/drm", st->root);
	d = opendir(dir);
	while (d && !found && (e = readdir(d))) {
		FILE *f;

		if (strncmp(e->d_name, "card", 4) || strchr(e->d_name, '-'))
			continue;
		snprintf(path, sizeof(path), "%s/%s/device/vendor", dir, e->d_name);
		f = fopen(path, "re");
		if (f) {
			found = fgets(v, sizeof(v), f) && !strncmp(v, "0x1002", 6);
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	return found;
}

static void find_gpus(struct power_state *st)
{
	unsigned n = 0, i;
	size_t before_gpus = st->nd;
	char dname[352];

	if (st->overridden)
		return;
	{
		struct sonde_strbuf why;

		sonde_strbuf__init(&why);
		st->g.nvml = sonde_nvml__open(&why);
		if (!st->g.nvml)
			add_missing(st, why.buf);
		sonde_strbuf__release(&why);
	}
	n = (unsigned)sonde_nvml__count(st->g.nvml);
	for (i = 0; i < n; i++) {
		const struct sonde_nvml_device *g = sonde_nvml__device(st->g.nvml, i);
		struct domain *d;
		double j;

		if (!sonde_nvml__energy(st->g.nvml, i, &j))
			continue;
		snprintf(dname, sizeof(dname), "gpu%u:%s", g->index, g->name);
		d = new_domain(st, S_NVML, K_COUNTER, dname);
		if (d) {
			d->dev = i;
			d->coarse = true; /* an H100's moves every 100 to 200 ms */
		}
	}
	if (st->g.nvml && st->nd == before_gpus)
		add_missing(st, "NVML: no GPU that reports its energy");
	/* ROCm SMI only where the kernel shows an AMD GPU: its init prints to the
	 * terminal where there is none (Debian's Slurm brings the library along) */
	if (!amd_gpu(st)) {
		add_missing(st, "ROCm SMI: no AMD GPU (no /sys/class/drm/card*/device/vendor "
				"0x1002)");
		return;
	}
	st->g.rocm = dlopen("librocm_smi64.so", RTLD_NOW | RTLD_LOCAL);
	if (!st->g.rocm) {
		add_missing(st, "ROCm SMI: librocm_smi64.so not found");
		return;
	}
	{
		int (*rinit)(uint64_t) = (int (*)(uint64_t))dlsym(st->g.rocm, "rsmi_init");
		int (*rcount)(uint32_t *) =
			(int (*)(uint32_t *))dlsym(st->g.rocm, "rsmi_num_monitor_devices");
		uint32_t m = 0;

		st->g.rocm_power = (int (*)(uint32_t, uint32_t, uint64_t *))dlsym(
			st->g.rocm, "rsmi_dev_power_ave_get");
		if (!rinit || !rcount || !st->g.rocm_power || rinit(0) || rcount(&m))
			m = 0;
		for (i = 0; i < m; i++) {
			struct domain *d;

			snprintf(dname, sizeof(dname), "gpu%u:AMD", n + i);
			d = new_domain(st, S_ROCM, K_GAUGE, dname);
			if (d)
				d->dev = i;
		}
		if (!m)
			add_missing(st, "ROCm SMI: no GPU");
	}
}

/* ---- sampling ------------------------------------------------------------------------------ */

/*
 * One reading of every domain: at a run's start (record false: the baseline),
 * at a tick, or at its end. A counter that has not moved since its last
 * reading makes no sample: its next change is spread over all the time since.
 * NVML's energy counter of an H100 moves less often than every 100 ms at
 * times; read as it was, a tick saw 0 W and the next one twice the power.
 */
static void reading(struct power_state *st, bool record)
{
	uint64_t now = sonde_clock_ns();
	size_t i;

	pthread_mutex_lock(&st->lock);
	for (i = 0; i < st->nd; i++) {
		struct domain *d = &st->d[i];
		double v, j, w, secs;

		if (!read_domain(st, d, &v))
			continue;
		if (!d->ok || !record) {
			d->last = v;
			d->last_t = d->run_t0 = now;
			d->ok = true;
			d->stepped = false;
			continue;
		}
		if (d->coarse && !d->stepped && v != d->last) {
			/* its first step holds energy from before the run: the run's
			   count starts there */
			d->last = v;
			d->last_t = d->run_t0 = now;
			d->stepped = true;
			continue;
		}
		secs = (double)(now - d->last_t) / 1e9;
		if (secs <= 0)
			continue;
		if (d->kind == K_COUNTER) {
			if (v == d->last)
				continue;
			j = v - d->last;
			if (j < 0) /* wrapped once */
				j += d->range_j;
			if (j < 0)
				j = 0;
			w = j / secs;
		} else { /* a gauge holds its last reading over the interval */
			w = d->last;
			j = w * secs;
		}
		d->run_j += j;
		if (w > d->run_peak_w)
			d->run_peak_w = w;
		if (!sonde_grow((void **)&st->s, &st->cap_s, st->ns + 1, sizeof(*st->s)))
			st->s[st->ns++] =
				(struct sample){ d->last_t > st->t0 ? d->last_t - st->t0 : 0,
						 now - d->last_t, st->run, (unsigned)i, w };
		else
			st->oom++;
		d->last = v;
		d->last_t = now;
	}
	pthread_mutex_unlock(&st->lock);
}

static void tick(void *arg)
{
	reading(arg, true);
}

/* ---- the collector ------------------------------------------------------------------------- */

static int power_before(struct sonde_collection *c)
{
	struct power_state *st = calloc(1, sizeof(*st));
	const char *root = getenv("SONDE_POWER_ROOT");

	if (!st)
		return -ENOMEM;
	sonde_collection__set_priv(c, st);
	pthread_mutex_init(&st->lock, NULL);
	st->overridden = root && *root;
	snprintf(st->root, sizeof(st->root), "%s", st->overridden ? root : "");
	st->interval_ms = sonde_collection__param_double(c, "interval", 100);
	find_rapl(st);
	if (!st->nd) /* the PMU reads the same counters as powercap */
		find_pmu(st);
	find_hwmon(st);
	find_battery(st);
	find_gpus(st);
	if (!st->nd) {
		sonde_collection__fail(c,
				       "power: <not supported>: no energy or power source can be "
				       "read here (%s)",
				       st->missing);
		return -ENOTSUP;
	}
	if (st->missing[0])
		sonde_collection__note(c, "power: not found: %s", st->missing);
	return 0;
}

static int power_start(struct sonde_collection *c, pid_t pid)
{
	struct power_state *st = sonde_collection__priv(c);
	size_t i;

	(void)pid;
	st->t0 = sonde_collection__t0_ns(c);
	st->run_start = sonde_clock_ns();
	for (i = 0; i < st->nd; i++) {
		st->d[i].ok = false;
		st->d[i].run_j = st->d[i].run_peak_w = 0;
	}
	reading(st, false);
	st->ticker = (struct ticker){ .fn = tick,
				      .ctx = st,
				      .period_ns = (uint64_t)(st->interval_ms * 1e6) };
	return ticker__start(&st->ticker);
}

static int power_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	struct power_state *st = sonde_collection__priv(c);
	size_t i;

	ticker__stop(&st->ticker);
	if (!ri->warmup) /* as its readings: only a recorded run's */
		ticker__add_late(&st->late, &st->ticker);
	reading(st, true);
	if (ri->warmup) {
		while (st->ns && st->s[st->ns - 1].run == st->run)
			st->ns--;
		return 0;
	}
	for (i = 0; i < st->nd; i++) {
		/* the average over the time the readings span */
		double secs = (double)(st->d[i].last_t - st->d[i].run_t0) / 1e9;

		if (!st->d[i].ok)
			continue;
		if (st->d[i].kind == K_COUNTER && !secs) { /* it never moved: not measured */
			st->d[i].run_j = st->d[i].run_peak_w = NAN;
			st->still++;
		}
		if (sonde_grow((void **)&st->rows, &st->cap_rows, st->nrows + 1,
			       sizeof(*st->rows))) {
			st->oom++;
			continue;
		}
		st->rows[st->nrows++] = (struct runrow){
			st->run,
			(unsigned)i,
			st->d[i].run_j,
			secs > 0 ? st->d[i].run_j / secs : NAN,
			st->d[i].run_peak_w,
			ri->size,
			ri->has_size,
		};
	}
	st->run++;
	return 0;
}

static int power_after(struct sonde_collection *c, struct sonde_profile *p)
{
	struct power_state *st = sonde_collection__priv(c);
	json_t *pw = json_object(), *doms = json_array();
	size_t i;
	int err = 0;

	for (i = 0; i < st->nrows; i++) {
		const struct runrow *r = &st->rows[i];
		const struct domain *d = &st->d[r->dom];
		static const char *const sub[3] = { "energy", "average", "peak" };
		static const char *const unit[3] = { "J", "W", "W" };
		const double v[3] = { r->j, r->avg_w, r->peak_w };
		int k;

		for (k = 0; k < 3; k++) {
			json_t *x = json_pack("{s:s, s:s}", "unit", unit[k], "source",
					      src_name[d->src]);
			long res = sonde_profile__resource(p, d->name, "power", sub[k], x);

			json_decref(x);
			if (res < 0)
				return (int)res;
			err |= sonde_profile__append(p, res, "amount",
						     isnan(v[k]) ? json_null() : json_real(v[k]));
			err |= sonde_profile__append(p, res, "order", json_integer(r->run + 1));
			if (r->has_size)
				err |= sonde_profile__append(p, res, "structure-unit-size",
							     json_real(r->size));
		}
	}
	for (i = 0; i < st->ns; i++) {
		const struct domain *d = &st->d[st->s[i].dom];
		json_t *x = json_pack("{s:s, s:s}", "unit", "W", "source", src_name[d->src]);
		long res = sonde_profile__resource(p, d->name, "power", "watts", x);

		json_decref(x);
		if (res < 0)
			return (int)res;
		err |= sonde_profile__append(p, res, "amount", json_real(st->s[i].w));
		err |= sonde_profile__append(p, res, "timestamp",
					     json_integer((json_int_t)st->s[i].ts));
		err |= sonde_profile__append(p, res, "duration",
					     json_integer((json_int_t)st->s[i].dur));
		err |= sonde_profile__append(p, res, "order", json_integer(st->s[i].run + 1));
	}
	for (i = 0; i < st->nd; i++)
		json_array_append_new(doms,
				      json_pack("{s:s, s:s, s:s, s:f}", "name", st->d[i].name,
						"source", src_name[st->d[i].src], "kind",
						st->d[i].kind == K_COUNTER ? "counter" : "gauge",
						"wraps_at_j", st->d[i].range_j));
	json_object_set_new(pw, "domains", doms);
	json_object_set_new(pw, "interval_ms", json_real(st->interval_ms));
	ticker__report_late(&st->late, (uint64_t)(st->interval_ms * 1e6), "power", pw, c);
	json_object_set_new(pw, "not_found",
			    st->missing[0] ? json_string(st->missing) : json_null());
	if (st->still)
		sonde_collection__note(
			c,
			"power: %u time(s) a domain's energy counter did not move "
			"(a GPU's: twice) during a run: its energy, average and peak "
			"there are null (less than the counter resolves, not 0 J)",
			st->still);
	if (st->oom)
		sonde_collection__dropped(c, st->oom);
	sonde_profile__set(sonde_profile__stats(p), "power", pw);
	return err ? -ENOMEM : 0;
}

static void power_cleanup(struct sonde_collection *c)
{
	struct power_state *st = sonde_collection__priv(c);
	size_t i;

	if (!st)
		return;
	ticker__stop(&st->ticker);
	for (i = 0; i < st->nd; i++)
		if (st->d[i].fd >= 0)
			close(st->d[i].fd);
	sonde_nvml__close(st->g.nvml);
	if (st->g.rocm)
		dlclose(st->g.rocm);
	pthread_mutex_destroy(&st->lock);
	free(st->s);
	free(st->rows);
	free(st);
}

static const char *const power_units[] = { "amount",   "J or W", "timestamp", "ns",
					   "duration", "ns",	 NULL };

static const struct sonde_option power_options[] = {
	{ SONDE_OPT_DURATION, 'I', "interval", NULL, NULL,
	  "read the sources every DURATION (default 100ms; plain: milliseconds); RAPL counters "
	  "wrap, so keep it under a minute",
	  1, 6e4, .unit_s = 1e-3 },
	{ .type = SONDE_OPT_END },
};

const struct sonde_collector sonde_collector_power = {
	.abi = SONDE_COLLECTOR_ABI,
	.name = "power",
	.summary = "energy and power per domain: RAPL, the power PMU, hwmon, battery, GPUs",
	.profile_type = "power",
	.units = power_units,
	.options = power_options,
	.flags = SONDE_COLLECTOR_EXCLUSIVE | SONDE_COLLECTOR_ONE_RUN | SONDE_COLLECTOR_ORDER_IS_RUN,
	.before = power_before,
	.start = power_start,
	.stop = power_stop,
	.after = power_after,
	.cleanup = power_cleanup,
};

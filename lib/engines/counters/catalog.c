/*
 * catalog.c - agents, dimensions, instance ids, and the counter catalog:
 * perf's software and generic hardware events, libpfm4's events for the core
 * PMU it detects, tracepoints (looked up in tracefs on demand), and the
 * definitions of counter_defs.yaml (built in, $SONDE_COUNTER_DEFS, and files
 * loaded through sonde_counters__load_defs).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sonde/file.h>
#include "../../dynlib.h"
#include "../../tracefs.h"
#include "../../grow.h"
#include "../../strmap.h"
#include "../../u64map.h"
#include "counters.h"

/* ---- agents and dimensions ------------------------------------------------------------ */

static struct sonde_agent *agents;
static size_t nagents;
static size_t dim_size[SONDE_DIM__COUNT];
static pthread_once_t agents_once = PTHREAD_ONCE_INIT;

static int read_int_file(const char *path, int def)
{
	char buf[32];
	FILE *f = fopen(path, "re");
	int v = def;

	if (!f)
		return def;
	if (fgets(buf, sizeof(buf), f))
		v = atoi(buf);
	fclose(f);
	return v;
}

/* The online CPUs as a sorted list ("0-3,6"). */
static int online_cpus(int **out)
{
	char buf[4096], *p, *save;
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int *cpus = NULL, n = 0;
	size_t cap = 0;

	if (!f || !fgets(buf, sizeof(buf), f)) {
		long k = sysconf(_SC_NPROCESSORS_ONLN);

		if (f)
			fclose(f);
		snprintf(buf, sizeof(buf), "0-%ld", k > 0 ? k - 1 : 0);
	} else {
		fclose(f);
	}
	for (p = strtok_r(buf, ",\n", &save); p; p = strtok_r(NULL, ",\n", &save)) {
		int a = atoi(p), b = strchr(p, '-') ? atoi(strchr(p, '-') + 1) : a, c;

		for (c = a; c <= b && c < 16382; c++) {
			if (sonde_grow((void **)&cpus, &cap, (size_t)n + 1, sizeof(int))) {
				free(cpus);
				return -ENOMEM;
			}
			cpus[n++] = c;
		}
	}
	*out = cpus;
	return n;
}

static int cpu_node(int cpu)
{
	char path[96];
	struct dirent *de;
	DIR *d;
	int node = -1;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "node", 4) && de->d_name[4] >= '0' && de->d_name[4] <= '9')
			node = atoi(de->d_name + 4);
	closedir(d);
	return node;
}

static void build_agents(void)
{
	int *cpus = NULL, n = online_cpus(&cpus), i;
	const char *arch = cnt_arch();

	if (n <= 0)
		return;
	agents = calloc((size_t)n, sizeof(*agents));
	if (!agents) {
		free(cpus);
		return;
	}
	for (i = 0; i < n; i++) {
		struct sonde_agent *a = &agents[i];
		char path[128], *name;

		a->id = (uint32_t)i;
		a->type = SONDE_AGENT_CPU;
		a->cpu = cpus[i];
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_id",
			 cpus[i]);
		a->core = read_int_file(path, -1);
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpus[i]);
		a->package = read_int_file(path, -1);
		a->numa = cpu_node(cpus[i]);
		a->arch = arch;
		if (asprintf(&name, "cpu%d", cpus[i]) < 0)
			name = NULL;
		a->name = name ? name : "cpu";
		if ((size_t)a->cpu + 1 > dim_size[SONDE_DIM_CPU])
			dim_size[SONDE_DIM_CPU] = (size_t)a->cpu + 1;
		if (a->core >= 0 && (size_t)a->core + 1 > dim_size[SONDE_DIM_CORE])
			dim_size[SONDE_DIM_CORE] = (size_t)a->core + 1;
		if (a->package >= 0 && (size_t)a->package + 1 > dim_size[SONDE_DIM_PACKAGE])
			dim_size[SONDE_DIM_PACKAGE] = (size_t)a->package + 1;
		if (a->numa >= 0 && (size_t)a->numa + 1 > dim_size[SONDE_DIM_NUMA])
			dim_size[SONDE_DIM_NUMA] = (size_t)a->numa + 1;
	}
	dim_size[SONDE_DIM_INSTANCE] = 1;
	nagents = (size_t)n;
	free(cpus);
}

const struct sonde_agent *sonde_counters__agents(size_t *n)
{
	pthread_once(&agents_once, build_agents);
	*n = nagents;
	if (!nagents)
		errno = ENODEV;
	return nagents ? agents : NULL;
}

const char *sonde_dimension__name(enum sonde_dimension d)
{
	static const char *const names[] = { "cpu", "core", "package", "numa", "instance" };

	return (unsigned)d < SONDE_DIM__COUNT ? names[d] : "?";
}

size_t sonde_dimension__size(enum sonde_dimension d)
{
	pthread_once(&agents_once, build_agents);
	return (unsigned)d < SONDE_DIM__COUNT ? dim_size[d] : 0;
}

/*
 * An instance id: the counter id in the top 16 bits, then one field per
 * dimension holding position + 1 (0: the value spans the dimension).
 */
static const struct {
	unsigned shift, bits;
} dim_field[SONDE_DIM__COUNT] = {
	[SONDE_DIM_CPU] = { 34, 14 },	  [SONDE_DIM_CORE] = { 22, 12 },
	[SONDE_DIM_PACKAGE] = { 16, 6 },  [SONDE_DIM_NUMA] = { 10, 6 },
	[SONDE_DIM_INSTANCE] = { 0, 10 },
};

int sonde_instance__encode(uint32_t counter, const struct sonde_dim_pos *dp, uint64_t *id)
{
	uint64_t v;
	int d;

	if (counter > 0xffff)
		return -ERANGE;
	v = (uint64_t)counter << 48;
	for (d = 0; d < SONDE_DIM__COUNT; d++) {
		int p = dp ? dp->pos[d] : SONDE_DIM_ALL;

		if (p == SONDE_DIM_ALL)
			continue;
		if (p < 0 || (uint64_t)p + 1 >= (1ull << dim_field[d].bits))
			return -ERANGE;
		v |= ((uint64_t)p + 1) << dim_field[d].shift;
	}
	*id = v;
	return 0;
}

uint32_t sonde_instance__counter(uint64_t instance_id)
{
	return (uint32_t)(instance_id >> 48);
}

int sonde_instance__dimension(uint64_t instance_id, enum sonde_dimension d, size_t *pos)
{
	uint64_t f;

	if ((unsigned)d >= SONDE_DIM__COUNT)
		return -EINVAL;
	f = (instance_id >> dim_field[d].shift) & ((1ull << dim_field[d].bits) - 1);
	if (!f)
		return -ENODATA;
	*pos = (size_t)(f - 1);
	return 0;
}

/* ---- the catalog ---------------------------------------------------------------------- */

static pthread_mutex_t cat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cnt_entry **cat;
static size_t ncat, cat_cap;
static bool cat_built, defs_loaded_by_user;
static struct sonde_counter_group **groups; /* each allocated once, never moved */
static size_t ngroups;
static char *cat_error; /* a bad $SONDE_COUNTER_DEFS, reported on use */
static char cat_note[256];
static bool pfm_ok;

int cnt_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group, unsigned long fl)
{
	long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group, fl);

	return fd < 0 ? -errno : (int)fd;
}

static char arch_buf[64] = "generic";

/*
 * libpfm4's pfm_initialize builds a table of every tracepoint when debugfs is
 * mounted, for its "perf" PMU: ~8 ms of each run of `sonde collect counters`
 * on a machine that mounts it (systemd does), for events sonde takes from
 * perf's generic list and from tracefs itself. That PMU and "perf_raw" are
 * left out through the variable pfm_initialize reads, unless the user set it;
 * the environment is put back at once (the string setenv made stays where
 * libpfm4 may still point). This happens once, where the catalog is first
 * used: a thread reading the environment at that moment could see the change.
 */
static int pfm_start(const struct sonde_pfm *P)
{
	static const char var[] = "LIBPFM_DISABLED_PMUS";
	bool set = !getenv(var) && setenv(var, "perf,perf_raw", 0) == 0;
	int rc = P->initialize();

	if (set)
		unsetenv(var);
	return rc;
}

static void detect_arch(void)
{
	const struct sonde_pfm *P = sonde_pfm(); /* NULL: not installed, as if it knew no PMU */
	int p;

	if (!P || pfm_start(P) != PFM_SUCCESS)
		return;
	pfm_ok = true;
	pfm_for_all_pmus(p)
	{
		pfm_pmu_info_t i = { .size = sizeof(i) };

		if (P->get_pmu_info(p, &i) == PFM_SUCCESS && i.is_present &&
		    i.type == PFM_PMU_TYPE_CORE) {
			snprintf(arch_buf, sizeof(arch_buf), "%s", i.name);
			break;
		}
	}
}

const char *cnt_arch(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, detect_arch);
	return arch_buf;
}

/* The architecture whose definitions are read: the machine's, or the one asked for. */
static char defs_arch[64];

static const char *cnt_defs_arch(void)
{
	return defs_arch[0] ? defs_arch : cnt_arch();
}

int sonde_counters__use_arch(const char *arch)
{
	int rc = 0;

	if (!arch || !*arch || strlen(arch) >= sizeof(defs_arch) || strchr(arch, '/'))
		return -EINVAL;
	pthread_mutex_lock(&cat_lock);
	if (cat_built)
		rc = -EBUSY;
	else
		snprintf(defs_arch, sizeof(defs_arch), "%s", arch);
	pthread_mutex_unlock(&cat_lock);
	return rc;
}

/*
 * The properties of an agent that counter_defs.yaml's expressions name, as
 * rocprofiler-sdk's agents carry them (simd_count, wave_front_size, ...): an
 * agent resolves those it has. sonde's agents are CPUs, which have none of
 * them, so a metric that needs one is not supported on them, and says which;
 * a definitions file that names them is never refused for it.
 */
static const char *const agent_properties[] = {
	"array_count",
	"caches_count",
	"cpu_core_id_base",
	"cpu_cores_count",
	"cu_count",
	"cu_per_engine",
	"cu_per_simd_array",
	"device_id",
	"domain",
	"drm_render_minor",
	"family_id",
	"gds_size_in_kb",
	"gfx_target_version",
	"grid_max_size",
	"hive_id",
	"io_links_count",
	"lds_size_in_kb",
	"local_mem_size",
	"location_id",
	"max_engine_clk_ccompute",
	"max_engine_clk_fcompute",
	"max_slots_scratch_cu",
	"max_waves_per_cu",
	"max_waves_per_simd",
	"mem_banks_count",
	"num_cp_queues",
	"num_gws",
	"num_sdma_engines",
	"num_sdma_queues_per_engine",
	"num_sdma_xgmi_engines",
	"num_shader_banks",
	"num_xcc",
	"simd_arrays_per_engine",
	"simd_count",
	"simd_id_base",
	"simd_per_cu",
	"vendor_id",
	"wave_front_size",
	"workgroup_max_size",
	NULL,
};

bool cnt_agent_property(const char *name)
{
	size_t i;

	for (i = 0; agent_properties[i]; i++)
		if (!strcmp(agent_properties[i], name))
			return true;
	return false;
}

static struct cnt_entry *add_entry(enum sonde_counter_kind kind, const char *name, const char *desc,
				   const char *unit)
{
	struct cnt_entry *e;

	if (ncat >= 0xfffe)
		return NULL;
	if (sonde_grow((void **)&cat, &cat_cap, ncat + 1, sizeof(*cat)))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->name = strdup(name);
	e->desc = strdup(desc ? desc : "");
	if (!e->name || !e->desc) {
		free(e->name);
		free(e->desc);
		free(e);
		return NULL;
	}
	e->kind = kind;
	e->unit = unit ? unit : "";
	e->id = (uint32_t)ncat + 1;
	cat[ncat++] = e;
	return e;
}

/* Names match with '-' and '_' taken as the same character, case-sensitively. */
static bool name_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
			return false;
	return !*a && !*b;
}

static struct cnt_entry *find_locked(const char *name)
{
	size_t i;

	for (i = 0; i < ncat; i++)
		if (name_eq(cat[i]->name, name))
			return cat[i];
	return NULL;
}

static const struct {
	const char *name, *desc, *unit;
	uint32_t type;
	uint64_t config;
} builtin_events[] = {
	{ "task-clock", "CPU time the task ran", "ns", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_TASK_CLOCK },
	{ "cpu-clock", "CPU time, from the per-CPU high-resolution timer", "ns", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CPU_CLOCK },
	{ "context-switches", "Context switches", "", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", "Moves of the task to another CPU", "", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "page-faults", "Page faults (minor and major)", "", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", "Page faults served without I/O", "", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", "Page faults that needed I/O", "", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "alignment-faults", "Unaligned accesses fixed up by the kernel", "", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", "Instructions emulated by the kernel", "", PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_EMULATION_FAULTS },
	{ "cycles", "CPU cycles", "", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", "Instructions retired", "", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", "Cache accesses (usually the last level)", "", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", "Cache misses (usually the last level)", "", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", "Branch instructions retired", "", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", "Mispredicted branches", "", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", "Bus cycles", "", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", "Cycles the front end delivered nothing", "",
	  PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", "Cycles the back end retired nothing", "", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", "Reference cycles (constant rate)", "", PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_REF_CPU_CYCLES },
#define CACHE(c, op, res) ((uint64_t)(c) | ((uint64_t)(op) << 8) | ((uint64_t)(res) << 16))
	{ "L1-dcache-loads", "L1 data cache loads", "", PERF_TYPE_HW_CACHE,
	  CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
		PERF_COUNT_HW_CACHE_RESULT_ACCESS) },
	{ "L1-dcache-load-misses", "L1 data cache load misses", "", PERF_TYPE_HW_CACHE,
	  CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
		PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "LLC-loads", "Last-level cache loads", "", PERF_TYPE_HW_CACHE,
	  CACHE(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ,
		PERF_COUNT_HW_CACHE_RESULT_ACCESS) },
	{ "LLC-load-misses", "Last-level cache load misses", "", PERF_TYPE_HW_CACHE,
	  CACHE(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ,
		PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "dTLB-load-misses", "Data TLB load misses", "", PERF_TYPE_HW_CACHE,
	  CACHE(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_OP_READ,
		PERF_COUNT_HW_CACHE_RESULT_MISS) },
	{ "iTLB-load-misses", "Instruction TLB load misses", "", PERF_TYPE_HW_CACHE,
	  CACHE(PERF_COUNT_HW_CACHE_ITLB, PERF_COUNT_HW_CACHE_OP_READ,
		PERF_COUNT_HW_CACHE_RESULT_MISS) },
#undef CACHE
};

static void add_builtin_events(void)
{
	size_t i;

	for (i = 0; i < sizeof(builtin_events) / sizeof(builtin_events[0]); i++) {
		struct cnt_entry *e = add_entry(
			builtin_events[i].type == PERF_TYPE_SOFTWARE ? SONDE_COUNTER_SOFTWARE
								     : SONDE_COUNTER_HARDWARE,
			builtin_events[i].name, builtin_events[i].desc, builtin_events[i].unit);

		if (!e)
			return;
		e->type = builtin_events[i].type;
		e->config = builtin_events[i].config;
		e->encoded = true;
		if (e->kind == SONDE_COUNTER_HARDWARE) {
			e->block = strdup("perf");
			e->event = strdup(e->name);
		}
	}
}

/* libpfm4's events for the core PMU it found (pmu::EVENT), encoded on first use. */
static void add_pfm_events(void)
{
	const char *arch = cnt_arch();
	const struct sonde_pfm *P = sonde_pfm();
	int p;

	if (!pfm_ok || !strcmp(arch, "generic"))
		return;
	pfm_for_all_pmus(p)
	{
		pfm_pmu_info_t pi = { .size = sizeof(pi) };
		int idx;

		if (P->get_pmu_info(p, &pi) != PFM_SUCCESS || !pi.is_present ||
		    strcmp(pi.name, arch))
			continue;
		for (idx = pi.first_event; idx != -1; idx = P->get_event_next(idx)) {
			pfm_event_info_t ei = { .size = sizeof(ei) };
			struct cnt_entry *e;
			char name[256];

			if (P->get_event_info(idx, PFM_OS_PERF_EVENT, &ei) != PFM_SUCCESS)
				continue;
			snprintf(name, sizeof(name), "%s::%s", pi.name, ei.name);
			e = add_entry(SONDE_COUNTER_HARDWARE, name, ei.desc, "");
			if (!e)
				return;
			e->pfm = true;
			e->block = strdup(pi.name);
			e->event = strdup(ei.name);
		}
	}
}

static char tracefs_error[160]; /* why there are no tracepoints; empty: there are */

/* The tracepoints' directory, or NULL (tracefs_error says why). */
static const char *tracefs_events(void)
{
	const char *dir = sonde_tracefs_events();

	if (dir)
		return dir;
	snprintf(tracefs_error, sizeof(tracefs_error),
		 "tracefs is not mounted and could not be (%s): as root, 'mount -t tracefs "
		 "nodev /sys/kernel/tracing'",
		 strerror(errno));
	return NULL;
}

const char *sonde_counters__tracepoint_error(void)
{
	return tracefs_error[0] ? tracefs_error : NULL;
}

/* A tracepoint "sys:name" from tracefs, added to the catalog (locked). */
static struct cnt_entry *add_tracepoint_locked(const char *name)
{
	const char *colon = strchr(name, ':'), *dir;
	struct cnt_entry *e;
	char path[512];
	int id = -1;

	if (!colon || colon == name || !colon[1] || strchr(colon + 1, ':') || strchr(name, '/') ||
	    strstr(name, ".."))
		return NULL;
	dir = tracefs_events();
	if (dir) {
		snprintf(path, sizeof(path), "%s/%.*s/%s/id", dir, (int)(colon - name), name,
			 colon + 1);
		id = read_int_file(path, -1);
	}
	if (id < 0)
		return NULL;
	e = add_entry(SONDE_COUNTER_TRACEPOINT, name, "Hits of the tracepoint", "");
	if (!e)
		return NULL;
	e->type = PERF_TYPE_TRACEPOINT;
	e->config = (uint64_t)id;
	e->encoded = true;
	return e;
}

/* ---- definitions ---------------------------------------------------------------------- */

/* A group of the definitions: new, or replacing one of that name. */
static int add_group(void *ctx, const struct cnt_group *g, struct sonde_strbuf *err)
{
	struct sonde_counter_group *x = NULL, **more;
	char **names;
	size_t i;

	(void)ctx;
	(void)err;
	for (i = 0; i < ngroups && !x; i++)
		if (!strcasecmp(groups[i]->name, g->name))
			x = groups[i];
	names = calloc(g->n + 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (i = 0; i < g->n; i++)
		if (!(names[i] = strdup(g->counters[i])))
			return -ENOMEM;
	if (!x) {
		more = realloc(groups, (ngroups + 1) * sizeof(*groups));
		if (!more || !(x = calloc(1, sizeof(*x))))
			return -ENOMEM;
		groups = more;
		groups[ngroups++] = x;
		x->name = strdup(g->name);
	} else { /* the later file's group replaces it (definitions load before any use) */
		for (i = 0; i < x->n; i++)
			free((char *)x->counters[i]);
		free((void *)x->counters);
		free((char *)x->description);
	}
	x->description = strdup(g->description ? g->description : "");
	x->counters = (const char *const *)names;
	x->n = g->n;
	return x->name && x->description ? 0 : -ENOMEM;
}

/* Every group's counters are counters of the catalog. */
static int check_groups(const char *file, struct sonde_strbuf *err)
{
	size_t i, k;

	for (i = 0; i < ngroups; i++)
		for (k = 0; k < groups[i]->n; k++)
			if (!find_locked(groups[i]->counters[k])) {
				sonde_strbuf__addf(err, "%s: group %s: unknown counter '%s'", file,
						   groups[i]->name, groups[i]->counters[k]);
				return -EINVAL;
			}
	return 0;
}

static int by_group_name(const void *a, const void *b)
{
	return strcasecmp((*(struct sonde_counter_group *const *)a)->name,
			  (*(struct sonde_counter_group *const *)b)->name);
}

static int add_def(void *ctx, const struct cnt_def *d, struct sonde_strbuf *err)
{
	const char *file = ctx;
	struct cnt_entry *e = find_locked(d->name), *base = NULL;
	struct expr_error xe;
	struct expr_node *ast = NULL;

	if (d->expression) {
		ast = expr_parse(d->expression, &xe);
		if (!ast) {
			sonde_strbuf__addf(err, "%s:%d:%d: %s: %s", file, d->expr_line,
					   d->expr_col + (xe.col > 0 ? xe.col - 1 : 0), d->name,
					   xe.msg);
			return -EINVAL;
		}
	} else if (!strcmp(d->block, "perf")) {
		base = find_locked(d->event);
		if (!base || base->kind == SONDE_COUNTER_DERIVED) {
			sonde_strbuf__addf(err, "%s:%d:%d: %s: '%s' is not a perf event", file,
					   d->line, d->col, d->name, d->event);
			return -EINVAL;
		}
	}
	if (e && e->kind != SONDE_COUNTER_DERIVED && !e->expression && d->expression) {
		expr_free(ast);
		sonde_strbuf__addf(err,
				   "%s:%d:%d: %s is an event; a derived metric needs its own "
				   "name",
				   file, d->line, d->col, d->name);
		return -EINVAL;
	}
	if (!e) {
		e = add_entry(d->expression ? SONDE_COUNTER_DERIVED : SONDE_COUNTER_HARDWARE,
			      d->name, d->description, NULL);
		if (!e) {
			expr_free(ast);
			return -ENOMEM;
		}
	}
	free(e->desc);
	e->desc = strdup(d->description ? d->description : "");
	if (d->unit)
		e->unit = strdup(d->unit);
	free(e->arch);
	e->arch = strdup(d->arch);
	if (d->expression) {
		e->kind = SONDE_COUNTER_DERIVED;
		free(e->expression);
		expr_free(e->ast);
		e->expression = strdup(d->expression);
		e->ast = ast;
	} else {
		free(e->block);
		free(e->event);
		e->block = strdup(d->block);
		e->event = strdup(d->event);
		e->kind = SONDE_COUNTER_HARDWARE;
		if (base) { /* an alias of a perf event */
			e->type = base->type;
			e->config = base->config;
			e->encoded = true;
			if (base->kind == SONDE_COUNTER_SOFTWARE)
				e->kind = SONDE_COUNTER_SOFTWARE;
		} else {
			e->pfm = true;
			e->encoded = false;
		}
	}
	return 0;
}

struct dfs {
	struct cnt_entry *path[64];
	int depth;
	struct sonde_strbuf *err;
	const char *file;
	struct cnt_entry *from;
	struct u64map done; /* metrics whose every name was checked: not again */
};

static int check_name(void *ctx, const char *name, int col);

/* Every name of a derived metric exists; no metric depends on itself. */
static int check_derived(struct dfs *s, struct cnt_entry *e)
{
	int i;

	for (i = 0; i < s->depth; i++)
		if (s->path[i] == e) {
			sonde_strbuf__addf(s->err, "%s: derived metrics form a cycle: ", s->file);
			for (; i < s->depth; i++)
				sonde_strbuf__addf(s->err, "%s -> ", s->path[i]->name);
			sonde_strbuf__adds(s->err, e->name);
			return -ELOOP;
		}
	if (s->depth == 64) {
		sonde_strbuf__addf(s->err, "%s: %s: derived metrics nested deeper than 64", s->file,
				   e->name);
		return -ELOOP;
	}
	if (u64map__get(&s->done, e->id, NULL))
		return 0;
	s->path[s->depth++] = e;
	s->from = e;
	i = expr_names(e->ast, check_name, s);
	s->depth--;
	s->from = s->depth ? s->path[s->depth - 1] : NULL;
	return i ? i : u64map__put(&s->done, e->id, 1);
}

static int check_name(void *ctx, const char *name, int col)
{
	struct dfs *s = ctx;
	struct cnt_entry *e = find_locked(name);
	double v;

	if (!e && (cnt_constant(name, &v) == 0 || !strcmp(name, "DURATION_NS") ||
		   cnt_agent_property(name)))
		return 0;
	if (!e)
		e = add_tracepoint_locked(name);
	if (!e) {
		sonde_strbuf__addf(s->err, "%s: %s: unknown counter or constant '%s' (column %d)",
				   s->file, s->from ? s->from->name : "?", name, col);
		return -ENOENT;
	}
	if (e->kind == SONDE_COUNTER_DERIVED)
		return check_derived(s, e);
	return 0;
}

static int check_all_derived(const char *file, struct sonde_strbuf *err)
{
	struct dfs s = { .err = err, .file = file };
	size_t i, n = ncat;
	int rc;

	for (i = 0, rc = 0; i < n && !rc; i++)
		if (cat[i]->kind == SONDE_COUNTER_DERIVED)
			rc = check_derived(&s, cat[i]);
	u64map__release(&s.done);
	return rc;
}

/* ---- every architecture's definitions, checked whatever the machine ------------------------ */

struct vdef { /* one entry of one counter, as written */
	char *name, *arch, *expression;
	int expr_line, expr_col;
	struct expr_node *ast;
	size_t next; /* the next entry of the same name, + 1; 0: none */
};

struct vcheck {
	struct vdef *d;
	size_t n, cap;
	struct sonde_strmap byname; /* name ('-' as '_') -> its first entry, + 1 */
	const char *file, *arch;    /* arch: the one being checked */
	bool use_catalog;	    /* names the file does not define: the catalog's */
	const struct vdef *path[64];
	int depth;
	struct u64map done; /* entries checked under this architecture: not again */
	struct sonde_strbuf *err;
};

static int collect_def(void *ctx, const struct cnt_def *d, struct sonde_strbuf *err)
{
	struct vcheck *v = ctx;
	struct expr_error xe = { 0 };
	struct vdef *x;

	if (sonde_grow((void **)&v->d, &v->cap, v->n + 1, sizeof(*v->d)))
		return -ENOMEM;
	x = &v->d[v->n++];
	memset(x, 0, sizeof(*x));
	x->name = strdup(d->name);
	x->arch = strdup(d->arch);
	x->expr_line = d->expr_line;
	x->expr_col = d->expr_col;
	if (!x->name || !x->arch)
		return -ENOMEM;
	if (!d->expression)
		return 0;
	x->expression = strdup(d->expression);
	if (!x->expression)
		return -ENOMEM;
	x->ast = expr_parse(d->expression, &xe);
	if (!x->ast) {
		sonde_strbuf__addf(err, "%s:%d:%d: %s (architecture %s): %s", v->file, d->expr_line,
				   d->expr_col + (xe.col > 0 ? xe.col - 1 : 0), d->name, d->arch,
				   xe.msg);
		return -EINVAL;
	}
	return 0;
}

/* name with '-' as '_' (name_eq's equality) into buf[len]; false: too long. */
static bool name_key(const char *name, char *buf, size_t len)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < len; i++)
		buf[i] = name[i] == '-' ? '_' : name[i];
	buf[i] = 0;
	return !name[i];
}

/* The file's entry of name for v->arch (else its generic one); *defined: any entry. */
static const struct vdef *vresolve(const struct vcheck *v, const char *name, bool *defined)
{
	const struct vdef *generic = NULL;
	char key[256];
	uint64_t *first =
		name_key(name, key, sizeof(key)) ? sonde_strmap__gets(&v->byname, key) : NULL;
	size_t i;

	*defined = false;
	for (i = first ? *first : 0; i; i = v->d[i - 1].next) {
		const struct vdef *d = &v->d[i - 1];

		*defined = true;
		if (cnt_defs__arch_listed(d->arch, v->arch))
			return d;
		if (!generic && cnt_defs__arch_listed(d->arch, "generic"))
			generic = d;
	}
	return generic;
}

static int vcheck_derived(struct vcheck *v, const struct vdef *d);

static int vcheck_name(void *ctx, const char *name, int col)
{
	struct vcheck *v = ctx;
	const struct vdef *from = v->path[v->depth - 1], *d;
	bool defined;
	double c;

	d = vresolve(v, name, &defined);
	if (d)
		return d->ast ? vcheck_derived(v, d) : 0;
	if (cnt_constant(name, &c) == 0 || !strcmp(name, "DURATION_NS") || cnt_agent_property(name))
		return 0;
	if (!defined && (!v->use_catalog || find_locked(name) || add_tracepoint_locked(name)))
		return 0;
	sonde_strbuf__addf(v->err,
			   "%s:%d:%d: %s (architecture %s): unknown counter or constant '%s'%s",
			   v->file, from->expr_line, from->expr_col + (col > 0 ? col - 1 : 0),
			   from->name, v->arch, name,
			   defined ? " (the file defines it for other architectures only)" : "");
	return -ENOENT;
}

static int vcheck_derived(struct vcheck *v, const struct vdef *d)
{
	int i, rc;

	for (i = 0; i < v->depth; i++)
		if (v->path[i] == d) {
			sonde_strbuf__addf(
				v->err,
				"%s:%d:%d: derived metrics form a cycle under architecture "
				"%s: ",
				v->file, d->expr_line, d->expr_col, v->arch);
			for (; i < v->depth; i++)
				sonde_strbuf__addf(v->err, "%s -> ", v->path[i]->name);
			sonde_strbuf__adds(v->err, d->name);
			return -ELOOP;
		}
	if (v->depth == 64) {
		sonde_strbuf__addf(v->err, "%s: %s: derived metrics nested deeper than 64", v->file,
				   d->name);
		return -ELOOP;
	}
	if (u64map__get(&v->done, (uint64_t)(d - v->d), NULL))
		return 0;
	v->path[v->depth++] = d;
	rc = expr_names(d->ast, vcheck_name, v);
	v->depth--;
	return rc ? rc : u64map__put(&v->done, (uint64_t)(d - v->d), 1);
}

/*
 * Check every architecture a definitions file names (and "generic"): each
 * expression parses, each name in it is known under that architecture, and no
 * derived metric depends on itself. The machine's own architecture is only one
 * of them: a file must not be right here and broken on the next machine.
 */
static int validate_defs(const char *buf, size_t len, const char *file, bool use_catalog,
			 struct sonde_strbuf *err)
{
	struct vcheck v = { .file = file, .use_catalog = use_catalog, .err = err };
	struct sonde_strmap archs = SONDE_STRMAP_INIT; /* each architecture once */
	size_t i, *last = NULL;
	int rc = cnt_defs__parse(buf, len, file, NULL, collect_def, NULL, &v, err);

	/* the entries of each name, chained (a file names a counter in a few) */
	if (!rc && !(last = calloc(v.n + 1, sizeof(*last))))
		rc = -ENOMEM;
	for (i = 0; !rc && i < v.n; i++) {
		char key[256];
		bool seen;
		uint64_t *first;

		if (!name_key(v.d[i].name, key, sizeof(key)))
			continue; /* no expression can name it either */
		first = sonde_strmap__upserts(&v.byname, key, &seen);
		if (!first) {
			rc = -ENOMEM;
			break;
		}
		if (!seen)
			*first = i + 1;
		else
			v.d[last[*first - 1]].next = i + 1;
		last[seen ? *first - 1 : i] = i;
	}
	free(last);
	/* the architectures: "generic", then each name of each key, once each */
	for (i = 0; !rc && i <= v.n; i++) {
		const char *keys = i < v.n ? v.d[i].arch : "generic";
		char *copy = strdup(keys), *save = NULL, *a;

		if (!copy) {
			rc = -ENOMEM;
			break;
		}
		for (a = strtok_r(copy, "/", &save); a && !rc; a = strtok_r(NULL, "/", &save)) {
			bool seen;
			size_t j;

			if (!sonde_strmap__upserts(&archs, a, &seen)) {
				rc = -ENOMEM;
				break;
			}
			if (seen)
				continue;
			v.arch = a;
			u64map__release(&v.done);
			for (j = 0; j < v.n && !rc; j++) {
				bool defined;

				if (v.d[j].ast && vresolve(&v, v.d[j].name, &defined) == &v.d[j])
					rc = vcheck_derived(&v, &v.d[j]);
			}
		}
		free(copy);
	}
	sonde_strmap__release(&archs);
	sonde_strmap__release(&v.byname);
	u64map__release(&v.done);
	for (i = 0; i < v.n; i++) {
		free(v.d[i].name);
		free(v.d[i].arch);
		free(v.d[i].expression);
		expr_free(v.d[i].ast);
	}
	free(v.d);
	return rc;
}

static int load_defs_locked(const char *buf, size_t len, const char *file, struct sonde_strbuf *err)
{
	int rc = validate_defs(buf, len, file, true, err);

	if (!rc)
		rc = cnt_defs__parse(buf, len, file, cnt_defs_arch(), add_def, add_group,
				     (void *)file, err);
	if (!rc)
		rc = check_all_derived(file, err);
	if (!rc)
		rc = check_groups(file, err);
	if (!rc)
		qsort(groups, ngroups, sizeof(*groups), by_group_name);
	return rc;
}

static int load_file_locked(const char *path, struct sonde_strbuf *err)
{
	char *buf;
	size_t len;
	int rc = sonde_file__read(path, &buf, &len);

	if (rc) {
		sonde_strbuf__addf(err, "cannot read '%s': %s", path, strerror(-rc));
		return rc;
	}
	rc = load_defs_locked(buf, len, path, err);
	free(buf);
	return rc;
}

static void build_locked(void)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	const char *env = getenv("SONDE_COUNTER_DEFS");

	if (cat_built)
		return;
	cat_built = true;
	cnt_arch();
	add_builtin_events();
	add_pfm_events();
	if (load_defs_locked(cnt_builtin_defs, cnt_builtin_defs_len, "counter_defs.yaml", &err))
		cat_error = sonde_strbuf__detach(&err, NULL);
	if (env && *env && !cat_error && load_file_locked(env, &err))
		cat_error = sonde_strbuf__detach(&err, NULL);
	sonde_strbuf__release(&err);
	if (access("/sys/bus/event_source/devices/cpu", F_OK) &&
	    access("/sys/bus/event_source/devices/cpu_core", F_OK))
		snprintf(cat_note, sizeof(cat_note),
			 "no hardware PMU: the kernel exposes no CPU performance counters here "
			 "(a VM without a virtual PMU?), so hardware events are not supported");
}

int sonde_counters__load_defs(const char *path, struct sonde_strbuf *err)
{
	int rc;

	pthread_mutex_lock(&cat_lock);
	build_locked();
	rc = cat_error ? -EINVAL : load_file_locked(path, err);
	if (cat_error)
		sonde_strbuf__adds(err, cat_error);
	if (!rc)
		defs_loaded_by_user = true;
	pthread_mutex_unlock(&cat_lock);
	return rc;
}

/* Parse only (no catalog change): for the fuzzer and `counters info --defs`. */
static int check_def(void *ctx, const struct cnt_def *d, struct sonde_strbuf *err)
{
	struct expr_error xe;
	struct expr_node *n;

	(void)ctx;
	if (!d->expression)
		return 0;
	n = expr_parse(d->expression, &xe);
	if (!n) {
		sonde_strbuf__addf(err, "%d:%d: %s: %s", d->expr_line,
				   d->expr_col + (xe.col > 0 ? xe.col - 1 : 0), d->name, xe.msg);
		return -EINVAL;
	}
	expr_free(n);
	return 0;
}

int sonde_counters__check_defs(const char *yaml, size_t len, const char *name,
			       struct sonde_strbuf *err)
{
	int rc = cnt_defs__parse(yaml, len, name, "generic", check_def, NULL, NULL, err);

	return rc ? rc : validate_defs(yaml, len, name, false, err);
}

static int catalog_ready(void);

int sonde_counters__groups(const struct sonde_counter_group *const **out, size_t *n)
{
	int rc = catalog_ready();

	pthread_mutex_lock(&cat_lock);
	*out = (const struct sonde_counter_group *const *)groups;
	*n = ngroups;
	pthread_mutex_unlock(&cat_lock);
	return rc;
}

int sonde_counters__group(const char *name, const struct sonde_counter_group **out)
{
	int rc = catalog_ready();
	size_t i;

	*out = NULL;
	if (rc)
		return rc;
	pthread_mutex_lock(&cat_lock);
	for (i = 0; i < ngroups && !*out; i++)
		if (!strcasecmp(groups[i]->name, name))
			*out = groups[i];
	pthread_mutex_unlock(&cat_lock);
	return *out ? 0 : -ENOENT;
}

static int catalog_ready(void)
{
	int rc;

	pthread_mutex_lock(&cat_lock);
	build_locked();
	rc = cat_error ? -EINVAL : 0;
	pthread_mutex_unlock(&cat_lock);
	return rc;
}

const char *cnt_catalog__error(void)
{
	catalog_ready();
	return cat_error;
}

const char *sonde_counters__note(void)
{
	catalog_ready();
	return cat_error ? cat_error : cat_note[0] ? cat_note : NULL;
}

struct cnt_entry *cnt_catalog__get(uint32_t id)
{
	struct cnt_entry *e = NULL;

	pthread_mutex_lock(&cat_lock);
	build_locked();
	if (id >= 1 && id <= ncat)
		e = cat[id - 1];
	pthread_mutex_unlock(&cat_lock);
	return e;
}

struct cnt_entry *cnt_catalog__find(const char *name)
{
	struct cnt_entry *e;

	pthread_mutex_lock(&cat_lock);
	build_locked();
	e = find_locked(name);
	if (!e && strchr(name, ':') && !strstr(name, "::"))
		e = add_tracepoint_locked(name);
	pthread_mutex_unlock(&cat_lock);
	return e;
}

int sonde_counters__find(const char *name, uint32_t *id)
{
	struct cnt_entry *e;

	if (catalog_ready())
		return -EINVAL;
	e = cnt_catalog__find(name);
	if (!e)
		return -ENOENT;
	*id = e->id;
	return 0;
}

static int scan_tracepoints(void)
{
	struct dirent *sys, *ev;
	char path[512];
	const char *dir = tracefs_events();
	DIR *d = dir ? opendir(dir) : NULL, *s;

	if (!d)
		return -ENOENT;
	while ((sys = readdir(d))) {
		if (sys->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, sys->d_name);
		s = opendir(path);
		if (!s)
			continue;
		while ((ev = readdir(s))) {
			char name[600];

			if (ev->d_name[0] == '.' || ev->d_type != DT_DIR)
				continue;
			snprintf(name, sizeof(name), "%s:%s", sys->d_name, ev->d_name);
			if (!find_locked(name))
				add_tracepoint_locked(name);
		}
		closedir(s);
	}
	closedir(d);
	return 0;
}

int sonde_counters__iterate(uint32_t agent, bool with_tracepoints, sonde_counters_iterate_fn fn,
			    void *user)
{
	size_t na, i, n = 0;
	uint32_t *ids;
	int rc;

	if (!sonde_counters__agents(&na) || agent >= na)
		return -ENODEV;
	if (catalog_ready())
		return -EINVAL;
	pthread_mutex_lock(&cat_lock);
	if (with_tracepoints)
		scan_tracepoints();
	ids = malloc((ncat + 1) * sizeof(*ids));
	if (!ids) {
		pthread_mutex_unlock(&cat_lock);
		return -ENOMEM;
	}
	for (i = 0; i < ncat; i++)
		if (with_tracepoints || cat[i]->kind != SONDE_COUNTER_TRACEPOINT)
			ids[n++] = cat[i]->id;
	pthread_mutex_unlock(&cat_lock);
	rc = fn(agent, ids, n, user);
	free(ids);
	return rc;
}

int cnt_entry__attr(struct cnt_entry *e, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	if (e->kind == SONDE_COUNTER_DERIVED)
		return -EINVAL;
	if (!e->encoded && e->pfm) {
		pfm_perf_encode_arg_t arg = { .attr = attr, .size = sizeof(arg) };
		char name[512];
		int rc;

		snprintf(name, sizeof(name), "%s::%s", e->block, e->event);
		/* e->pfm: libpfm4 was loaded (pfm_ok) */
		rc = sonde_pfm()->get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
		if (rc != PFM_SUCCESS)
			return -ENOENT;
		pthread_mutex_lock(&cat_lock);
		e->type = attr->type;
		e->config = attr->config;
		e->config1 = attr->config1;
		e->config2 = attr->config2;
		e->encoded = true;
		pthread_mutex_unlock(&cat_lock);
		memset(attr, 0, sizeof(*attr));
		attr->size = sizeof(*attr);
	}
	attr->type = e->type;
	attr->config = e->config;
	attr->config1 = e->config1;
	attr->config2 = e->config2;
	return 0;
}

static bool inputs_supported(struct cnt_entry *e, char *why, size_t len);

/*
 * Tracepoints are probed once for all: closing a tracepoint's perf event waits
 * for the kernel to unregister it (tens of ms), and one that has an id is as
 * countable as any other.
 */
static int tp_probed; /* 0: not yet; 1: countable; -errno: not */
static char tp_why[256];

bool cnt_entry__supported(struct cnt_entry *e)
{
	struct perf_event_attr attr;
	char why[256] = "";
	int fd;

	if (e->probed)
		return e->probed > 0;
	if (e->kind == SONDE_COUNTER_TRACEPOINT && tp_probed) {
		pthread_mutex_lock(&cat_lock);
		e->probed = tp_probed > 0 ? 1 : -1;
		if (tp_probed < 0 && !e->why)
			e->why = strdup(tp_why);
		pthread_mutex_unlock(&cat_lock);
		return tp_probed > 0;
	}
	if (e->kind == SONDE_COUNTER_DERIVED) {
		bool ok = inputs_supported(e, why, sizeof(why));

		pthread_mutex_lock(&cat_lock);
		if (!ok && !e->why)
			e->why = strdup(why);
		e->probed = ok ? 1 : -1;
		pthread_mutex_unlock(&cat_lock);
		return ok;
	}
	if (cnt_entry__attr(e, &attr)) {
		snprintf(why, sizeof(why), "libpfm4 cannot encode %s::%s", e->block, e->event);
		fd = -ENOENT;
	} else {
		attr.disabled = 1;
		fd = cnt_perf_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd == -EACCES || fd == -EPERM) {
			attr.exclude_kernel = attr.exclude_hv = 1;
			fd = cnt_perf_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		}
		if (fd >= 0)
			close(fd);
		else if (e->kind == SONDE_COUNTER_HARDWARE && cat_note[0])
			snprintf(why, sizeof(why), "no hardware PMU on this machine");
		else if (fd == -EACCES || fd == -EPERM)
			snprintf(why, sizeof(why),
				 "not permitted (needs root or CAP_PERFMON, or a lower "
				 "kernel.perf_event_paranoid)");
		else
			snprintf(why, sizeof(why), "perf_event_open: %s", strerror(-fd));
	}
	pthread_mutex_lock(&cat_lock);
	e->probed = fd >= 0 ? 1 : -1;
	if (fd < 0 && !e->why)
		e->why = strdup(why);
	if (e->kind == SONDE_COUNTER_TRACEPOINT) {
		tp_probed = fd >= 0 ? 1 : fd;
		snprintf(tp_why, sizeof(tp_why), "%s", why);
	}
	pthread_mutex_unlock(&cat_lock);
	return fd >= 0;
}

struct inputs {
	uint32_t *ids;
	size_t n, cap;
	int depth;
	struct u64map seen; /* derived metrics already expanded (a DAG, walked once each) */
	bool ok;
	char *why;
	size_t why_len;
	bool check;
};

static int collect_input(void *ctx, const char *name, int col)
{
	struct inputs *in = ctx;
	struct cnt_entry *e = cnt_catalog__find(name);
	double v;
	size_t i;

	(void)col;
	if (!e && cnt_agent_property(name)) {
		/* no CPU agent has it: nothing to open, and not supported */
		if (in->check && in->ok) {
			in->ok = false;
			snprintf(in->why, in->why_len,
				 "needs the agent property %s, which a CPU agent does not have",
				 name);
		}
		return 0;
	}
	if (!e)
		return cnt_constant(name, &v) == 0 || !strcmp(name, "DURATION_NS") ? 0 : -ENOENT;
	if (e->kind == SONDE_COUNTER_DERIVED) {
		int rc;

		if (u64map__get(&in->seen, e->id, NULL))
			return 0;
		if (++in->depth > 64)
			return -ELOOP;
		rc = expr_names(e->ast, collect_input, in);
		in->depth--;
		return rc ? rc : u64map__put(&in->seen, e->id, 1);
	}
	if (in->check) {
		if (in->ok && !cnt_entry__supported(e)) {
			in->ok = false;
			snprintf(in->why, in->why_len, "needs %s (%s)", e->name,
				 e->why ? e->why : "not supported");
		}
		return 0;
	}
	for (i = 0; i < in->n; i++)
		if (in->ids[i] == e->id)
			return 0;
	if (in->n == in->cap)
		return -E2BIG;
	in->ids[in->n++] = e->id;
	return 0;
}

static bool inputs_supported(struct cnt_entry *e, char *why, size_t len)
{
	struct inputs in = { .ok = true, .why = why, .why_len = len, .check = true };
	int rc = expr_names(e->ast, collect_input, &in);

	u64map__release(&in.seen);
	if (rc && in.ok) /* the walk itself failed: say how, never an empty reason */
		snprintf(why, len, "%s",
			 rc == -ENOENT	? "its expression names something no agent or table defines"
			 : rc == -ELOOP ? "its definitions nest more than 64 deep"
					: strerror(-rc));
	return !rc && in.ok;
}

int cnt_inputs(struct cnt_entry *e, uint32_t *ids, size_t *n, size_t cap)
{
	struct inputs in = { .ids = ids, .n = *n, .cap = cap };
	int rc;

	if (e->kind != SONDE_COUNTER_DERIVED)
		rc = collect_input(&in, e->name, 0);
	else
		rc = expr_names(e->ast, collect_input, &in);
	u64map__release(&in.seen);
	*n = in.n;
	return rc;
}

int sonde_counters__info(uint32_t agent, uint32_t id, struct sonde_counter_info *out)
{
	struct cnt_entry *e;
	size_t na;

	if (!sonde_counters__agents(&na) || agent >= na)
		return -ENODEV;
	e = cnt_catalog__get(id);
	if (!e)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->supported = cnt_entry__supported(e);
	out->id = e->id;
	out->name = e->name;
	out->description = e->desc;
	out->unit = e->unit;
	out->kind = e->kind;
	out->block = e->block;
	out->event = e->event;
	out->expression = e->expression;
	out->arch = e->arch;
	out->why = out->supported ? NULL : e->why;
	return 0;
}

int cnt_constant(const char *name, double *v)
{
	static const char *const names[] = { "CPU_NUM",	 "CORE_NUM",  "PACKAGE_NUM",
					     "NUMA_NUM", "PAGE_SIZE", NULL };
	const struct sonde_agent *a;
	size_t n, i, k;

	for (k = 0; names[k] && strcmp(names[k], name); k++)
		;
	if (!names[k])
		return -ENOENT;
	if (k == 4) {
		*v = (double)sysconf(_SC_PAGESIZE);
		return 0;
	}
	a = sonde_counters__agents(&n);
	if (!a)
		return -ENODEV;
	if (k == 0) {
		*v = (double)n;
		return 0;
	}
	{
		/* distinct (package, core) pairs, packages, nodes */
		size_t count = 0, j;

		for (i = 0; i < n; i++) {
			bool seen = false;

			for (j = 0; j < i && !seen; j++)
				seen = k == 1	? (a[j].core == a[i].core &&
						   a[j].package == a[i].package)
				       : k == 2 ? a[j].package == a[i].package
						: a[j].numa == a[i].numa;
			count += !seen;
		}
		*v = (double)count;
	}
	return 0;
}

/* ---- derived values ------------------------------------------------------------------- */

struct derive_ctx {
	const struct cnt_reading *r;
	sonde_counters_values_fn set;
	void *user;
	struct expr_env *env;
	double *scratch[64]; /* values of nested metrics, freed at the end */
	int nscratch, depth;
	/* each nested metric is evaluated once per reading: scratch[i] holds
	   memo_e[i]'s values (a metric used twice at each of 60 levels would be
	   evaluated 2^60 times) */
	const struct cnt_entry *memo_e[64];
	size_t memo_n[64];
	double constant;
	bool nodata;
};

static int derive_lookup(void *ctx, const char *name, struct expr_vec *out, struct expr_error *err)
{
	struct derive_ctx *dc = ctx;
	struct cnt_entry *e;
	size_t i;

	if (dc->set) {
		const double *v;
		size_t n;
		int rc = dc->set(dc->user, name, &v, &n);

		if (rc == 0) {
			out->v = v;
			out->n = n;
			return 0;
		}
		if (rc != -ENOENT)
			return rc;
	}
	e = cnt_catalog__find(name);
	if (e && e->kind == SONDE_COUNTER_DERIVED) {
		const void *scope = dc->env->scope;
		double *buf;
		size_t n;
		int rc, slot;

		for (i = 0; i < (size_t)dc->nscratch; i++)
			if (dc->memo_e[i] == e) {
				out->v = dc->scratch[i];
				out->n = dc->memo_n[i];
				return 0;
			}

		if (dc->depth >= 64 || dc->nscratch >= 64) {
			snprintf(err->msg, sizeof(err->msg),
				 "derived metrics nested too deeply at '%s'", name);
			return -ELOOP;
		}
		buf = malloc(EXPR_MAX_VEC * sizeof(double));
		if (!buf)
			return -ENOMEM;
		slot = dc->nscratch++; /* nested metrics take the slots after it */
		dc->scratch[slot] = buf;
		dc->memo_e[slot] = NULL;
		dc->depth++;
		dc->env->scope = e;
		rc = expr_eval(e->ast, dc->env, buf, EXPR_MAX_VEC, &n, err);
		dc->env->scope = scope;
		dc->depth--;
		if (rc)
			return rc;
		dc->memo_e[slot] = e;
		dc->memo_n[slot] = n;
		out->v = buf;
		out->n = n;
		return 0;
	}
	if (e && dc->r) {
		for (i = 0; i < dc->r->nids; i++)
			if (dc->r->ids[i] == e->id) {
				if (dc->r->valid && !dc->r->valid[i]) {
					dc->nodata = true;
					snprintf(err->msg, sizeof(err->msg), "%s was not counted",
						 e->name);
					return -ENODATA;
				}
				out->v = dc->r->vals + i * dc->r->ninst;
				out->n = dc->r->ninst;
				return 0;
			}
	}
	if (!strcmp(name, "DURATION_NS") && dc->r) {
		dc->constant = dc->r->duration_ns;
		out->v = &dc->constant;
		out->n = 1;
		return 0;
	}
	if (cnt_constant(name, &dc->constant) == 0) {
		out->v = &dc->constant;
		out->n = 1;
		return 0;
	}
	if (e) {
		snprintf(err->msg, sizeof(err->msg), "no value for %s '%s'%s",
			 e->kind == SONDE_COUNTER_TRACEPOINT ? "tracepoint" : "counter", name,
			 dc->set ? " (give it with --set)" : "");
		return -ENODATA;
	}
	if (!strcmp(name, "DURATION_NS")) {
		snprintf(err->msg, sizeof(err->msg),
			 "no value for DURATION_NS (give it with --set)");
		return -ENODATA;
	}
	if (cnt_agent_property(name)) {
		snprintf(err->msg, sizeof(err->msg),
			 "no value for the agent property %s: a CPU agent does not have it%s", name,
			 dc->set ? " (give it with --set)" : "");
		return -ENODATA;
	}
	return -ENOENT;
}

static void derive_release(struct derive_ctx *dc)
{
	while (dc->nscratch)
		free(dc->scratch[--dc->nscratch]);
}

int cnt_derive(struct cnt_entry *e, const struct cnt_reading *r, struct expr_env *env, double *out,
	       size_t cap, size_t *n, struct expr_error *err)
{
	struct derive_ctx dc = { .r = r, .env = env };
	const void *scope = env->scope;
	int rc;

	env->lookup = derive_lookup;
	env->ctx = &dc;
	env->scope = e;
	rc = expr_eval(e->ast, env, out, cap, n, err);
	env->scope = scope;
	derive_release(&dc);
	if (rc && dc.nodata)
		rc = -ENODATA;
	return rc;
}

struct eval_names {
	sonde_counters_values_fn set;
	void *user;
};

/* A name with a '-' in an expression to evaluate: the catalog's, or one given a value. */
static bool known_name(void *ctx, const char *name)
{
	const struct eval_names *en = ctx;
	const double *v;
	size_t n;

	return cnt_catalog__find(name) || (en->set && en->set(en->user, name, &v, &n) == 0);
}

int sonde_counters__eval(const char *expression, sonde_counters_values_fn set, void *user,
			 double *out, size_t cap, size_t *n, int *div0_col,
			 struct sonde_strbuf *err)
{
	struct eval_names en = { set, user };
	struct expr_env env = { 0 };
	struct derive_ctx dc = { .set = set, .user = user, .env = &env };
	struct expr_error xe = { 0 };
	struct expr_node *ast;
	int rc;

	*div0_col = 0;
	if (catalog_ready()) {
		sonde_strbuf__adds(err, cnt_catalog__error());
		return -EINVAL;
	}
	ast = expr_parse_names(expression, known_name, &en, &xe);
	if (!ast) {
		if (xe.col)
			sonde_strbuf__addf(err, "column %d: %s", xe.col, xe.msg);
		else
			sonde_strbuf__adds(err, xe.msg);
		return -EINVAL;
	}
	env.lookup = derive_lookup;
	env.ctx = &dc;
	rc = expr_eval(ast, &env, out, cap, n, &xe);
	derive_release(&dc);
	expr_free(ast);
	free(env.accum);
	if (rc) {
		if (xe.col)
			sonde_strbuf__addf(err, "column %d: %s", xe.col, xe.msg);
		else
			sonde_strbuf__adds(err, xe.msg);
		return rc == -ENODATA || rc == -ENOENT || rc == -E2BIG || rc == -ELOOP ? -EINVAL
										       : rc;
	}
	*div0_col = env.div0_col;
	return 0;
}

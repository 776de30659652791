/*
 * job.c - the rank of a distributed job this process is, from its launcher's
 * environment, and the clocks that lay several hosts' profiles on one
 * timeline.
 *
 * Every launcher gives each rank its rank and the job's size; what makes the
 * run id shared is a hash of what it gives every rank alike and no other job:
 *   torchrun   TORCHELASTIC_RUN_ID, RANK, WORLD_SIZE, LOCAL_RANK; the job:
 *              the run id, MASTER_ADDR:MASTER_PORT and the restart count
 *   Open MPI   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK; the job: its job id,
 *              mpirun's URI (address and port) and per-job transport key
 *   MPICH      PMI_RANK, PMI_SIZE, MPI_LOCALRANKID; the job: PMI_KVSNAME or
 *              PMI_PORT where hydra sets them (with PMI_FD alone, nothing is
 *              job-wide: each rank gets a run id of its own)
 *   Slurm      SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID within a step
 *              (SLURM_STEP_ID: srun); the job: cluster, job id and step
 * The first found in that order wins: torchrun or mpirun inside a Slurm
 * allocation is the launcher that made the ranks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/timex.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/job.h>
#include <sonde/profile.h>

static const char *env(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	if (!envp)
		return getenv(name);
	for (; *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* A decimal number, or -1 where absent; -2 where present and not a number. */
static long number(char *const *envp, const char *name)
{
	const char *s = env(envp, name);
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end || v < 0 ? -2 : v;
}

/* 128 bits of the key: two FNV-1a hashes of different seeds, each finished by splitmix64. */
static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void hash_id(const char *key, size_t len, char out[33])
{
	uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		a = (a ^ (unsigned char)key[i]) * 0x100000001b3ULL;
		b = (b ^ (unsigned char)key[i]) * 0x100000001b3ULL;
	}
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)mix(a),
		 (unsigned long long)mix(b ^ len));
}

static void random_id(char out[33])
{
	unsigned char b[16];
	size_t i;

	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
		uint64_t t = sonde_clock_ns(), p = (uint64_t)getpid();

		memcpy(b, &t, 8);
		memcpy(b + 8, &p, 8);
	}
	for (i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* The key of the job: the launcher's name and the values of vars, each ended by a NUL. */
static size_t job_key(char *const *envp, const char *launcher, const char *const *vars, char *key,
		      size_t cap, bool *any)
{
	size_t n = (size_t)snprintf(key, cap, "%s", launcher) + 1, i;

	*any = false;
	for (i = 0; vars[i] && n < cap; i++) {
		const char *v = env(envp, vars[i]);

		if (v && *v)
			*any = true;
		n += (size_t)snprintf(key + n, cap - n, "%s", v ? v : "") + 1;
	}
	return n < cap ? n : cap;
}

static bool is_id(const char *s)
{
	return strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

int sonde_job__detect(char *const *envp, struct sonde_job *j)
{
	static const struct launcher {
		const char *name, *when, *rank, *size, *local, *id;
		const char *key[5];
	} L[] = {
		{ "torchrun",
		  "TORCHELASTIC_RUN_ID",
		  "RANK",
		  "WORLD_SIZE",
		  "LOCAL_RANK",
		  "TORCHELASTIC_RUN_ID",
		  { "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT",
		    "TORCHELASTIC_RESTART_COUNT", NULL } },
		{ "openmpi",
		  "OMPI_COMM_WORLD_RANK",
		  "OMPI_COMM_WORLD_RANK",
		  "OMPI_COMM_WORLD_SIZE",
		  "OMPI_COMM_WORLD_LOCAL_RANK",
		  "OMPI_MCA_ess_base_jobid",
		  { "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_hnp_uri",
		    "OMPI_MCA_orte_precondition_transports", "PMIX_NAMESPACE", NULL } },
		{ "mpich",
		  "PMI_RANK",
		  "PMI_RANK",
		  "PMI_SIZE",
		  "MPI_LOCALRANKID",
		  "PMI_KVSNAME",
		  { "PMI_KVSNAME", "PMI_PORT", NULL } },
		{ "slurm",
		  "SLURM_STEP_ID",
		  "SLURM_PROCID",
		  "SLURM_NTASKS",
		  "SLURM_LOCALID",
		  "SLURM_JOB_ID",
		  { "SLURM_CLUSTER_NAME", "SLURM_JOB_ID", "SLURM_STEP_ID", NULL } },
	};
	const char *own = env(envp, "SONDE_RUN_ID");
	char key[2048];
	size_t i, n;
	bool any;

	memset(j, 0, sizeof(*j));
	if (own && *own) {
		if (is_id(own))
			snprintf(j->run_id, sizeof(j->run_id), "%s", own);
		else
			hash_id(own, strlen(own), j->run_id);
		j->run_id_shared = true;
	}
	for (i = 0; i < sizeof(L) / sizeof(L[0]); i++) {
		const struct launcher *l = &L[i];
		const char *id = env(envp, l->id), *host = env(envp, "SLURMD_NODENAME");

		if (!env(envp, l->when) || !env(envp, l->rank))
			continue;
		j->rank = number(envp, l->rank);
		j->size = number(envp, l->size);
		j->local_rank = number(envp, l->local);
		if (j->rank < 0 || j->size == -2 || j->local_rank == -2) {
			memset(j, 0, sizeof(*j));
			return -EINVAL;
		}
		if (!strcmp(l->name, "slurm") && j->size == -1)
			j->size = number(envp, "SLURM_STEP_NUM_TASKS");
		snprintf(j->launcher, sizeof(j->launcher), "%s", l->name);
		if (!strcmp(l->name, "slurm"))
			snprintf(j->id, sizeof(j->id), "%s.%s", id ? id : "",
				 env(envp, "SLURM_STEP_ID"));
		else
			snprintf(j->id, sizeof(j->id), "%s", id ? id : "");
		if (host && *host)
			snprintf(j->host, sizeof(j->host), "%s", host);
		else if (gethostname(j->host, sizeof(j->host) - 1))
			snprintf(j->host, sizeof(j->host), "unknown");
		if (!j->run_id[0]) {
			n = job_key(envp, l->name, l->key, key, sizeof(key), &any);
			j->run_id_shared = any;
			if (any)
				hash_id(key, n, j->run_id);
			else
				random_id(j->run_id);
		}
		return 1;
	}
	if (!own || !*own)
		memset(j, 0, sizeof(*j));
	return 0;
}

char *sonde_job__path(const char *path)
{
	struct sonde_job j;
	size_t stem;
	char *out = NULL;

	if (sonde_job__detect(NULL, &j) <= 0 || j.size == 1)
		return strdup(path);
	stem = strlen(path) - sonde_profile__extension(path);
	if (asprintf(&out, "%.*s-rank%ld%s", (int)stem, path, j.rank, path + stem) < 0)
		return NULL;
	return out;
}

json_t *sonde_job__json(const struct sonde_job *j)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:s}", "launcher", j->launcher, "id", j->id, "rank",
			      (json_int_t)j->rank, "host", j->host);

	if (o && j->size >= 0)
		json_object_set_new(o, "size", json_integer((json_int_t)j->size));
	if (o && j->local_rank >= 0)
		json_object_set_new(o, "local_rank", json_integer((json_int_t)j->local_rank));
	if (o && !j->run_id_shared)
		json_object_set_new(
			o, "run_id_shared",
			json_string("no: the launcher gave the ranks nothing job-wide; set "
				    "SONDE_RUN_ID to one value for every rank to join them"));
	return o;
}

json_t *sonde_job__clock(void)
{
	uint64_t best = UINT64_MAX, mono = 0, real = 0;
	struct timex tx;
	char boot[64] = "";
	FILE *f;
	int i, state;

	/* the pair read closest together of three */
	for (i = 0; i < 3; i++) {
		uint64_t m1 = sonde_clock_ns(), r = sonde_clock_realtime_ns(),
			 m2 = sonde_clock_ns();

		if (m2 - m1 < best) {
			best = m2 - m1;
			mono = m1 + (m2 - m1) / 2;
			real = r;
		}
	}
	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = '\0';
		boot[strcspn(boot, "\n")] = '\0';
		fclose(f);
	}
	memset(&tx, 0, sizeof(tx));
	state = adjtimex(&tx);
	return json_pack(
		"{s:I, s:I, s:I, s:s, s:I}", "monotonic_ns", (json_int_t)mono, "realtime_ns",
		(json_int_t)real, "read_ns", (json_int_t)best, "boot_id", boot, "maxerror_ns",
		(json_int_t)(state == TIME_ERROR || state < 0 ? -1
							      : (long long)tx.maxerror * 1000));
}

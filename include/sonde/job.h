/*
 * job.h - which rank of which distributed job this process is: read from the
 * environment its launcher gives each rank (torchrun, Open MPI's mpirun,
 * MPICH's hydra, Slurm's srun), so that every rank's profile names its job,
 * rank and host and all of them share one run id, without any communication
 * between the ranks.
 */
#ifndef SONDE_JOB_H
#define SONDE_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

struct sonde_job {
	char launcher[16]; /* "torchrun", "openmpi", "mpich", "slurm" */
	char id[128];	   /* the launcher's job id (Slurm: JOB.STEP) */
	long rank, size;   /* size -1: not told */
	long local_rank;   /* -1: not told */
	char host[256];	   /* Slurm's node name, else the host name */
	/*
	 * 32 hex digits, the same in every rank: a hash of what the launcher
	 * gives every rank of this job alike (its id, the address it listens
	 * on, its per-job key). SONDE_RUN_ID, when set, is used instead.
	 */
	char run_id[33];
	bool run_id_shared; /* false: the launcher gave nothing job-wide (a random id) */
};

/*
 * Fill *j from envp (NULL: the process's environment). Returns 1 when a
 * launcher's rank variables are there, 0 when not (*j is then cleared), or
 * -EINVAL when they are there but are not numbers.
 */
int sonde_job__detect(char *const *envp, struct sonde_job *j);

/*
 * Where a rank writes a file the user named for one process: path with
 * -rankR before its profile extension (.json, .json.gz, .json.zst; else at
 * its end) when this process is a rank of a job of more than one rank, path
 * itself otherwise. A new string; NULL when memory ran out.
 */
char *sonde_job__path(const char *path);

/* The job as a profile's metadata.job object (new reference; NULL: no memory). */
json_t *sonde_job__json(const struct sonde_job *j);

/*
 * This host's clocks, read together, for laying profiles of several hosts on
 * one timeline: CLOCK_MONOTONIC and CLOCK_REALTIME (ns), the boot's id (one
 * id: one monotonic clock), and the kernel's bound on CLOCK_REALTIME's error
 * (adjtimex's maxerror, ns; -1 when the clock is not synchronised). A new
 * object for metadata.clock, NULL when memory ran out.
 */
json_t *sonde_job__clock(void);

#endif

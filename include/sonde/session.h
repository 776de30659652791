/*
 * session.h - one collection: collectors, the runner and the series of runs.
 *
 * State machine (calls out of order return -EINVAL and change nothing):
 *
 *   UNINITIALIZED --before()--> IDLE --run()--> COLLECTING --> IDLE --after()--> FINALIZED
 *         ^ add() only here                     (inside run)
 *
 * Warm-up and repeat apply to every collector. Without an explicit repeat count the
 * series runs at least min_runs times and at least min_time_s seconds (the count is
 * fixed after the first measured run). With parameter values the whole series is
 * repeated per value, {NAME} being substituted in the target's arguments.
 */
#ifndef SONDE_SESSION_H
#define SONDE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <sonde/collector.h>
#include <sonde/runner.h>

enum sonde_session_state {
	SONDE_SESSION_UNINITIALIZED,
	SONDE_SESSION_IDLE,
	SONDE_SESSION_COLLECTING,
	SONDE_SESSION_FINALIZED,
};

struct sonde_progress {
	unsigned done, total; /* measured runs; total 0 while unknown */
	unsigned warmup;      /* 1 while a warm-up run is next */
	const char *workload;
	uint64_t elapsed_ns;
	uint64_t eta_ns; /* 0 while unknown */
};

struct sonde_session_opts {
	size_t sz; /* sizeof(struct sonde_session_opts) */
	char *const *argv;
	unsigned warmup;
	unsigned repeat;     /* 0: automatic (min_runs, min_time_s) */
	unsigned min_runs;   /* automatic: default 10 */
	double min_time_s;   /* automatic: default 3 */
	const char *prepare; /* shell command run before each run, or NULL */
	const char *param_name;
	const char *const *param_values; /* NULL-terminated, or NULL */
	double timeout_s;
	const char *input;
	enum sonde_output_mode output;
	int capture_fd;
	bool ignore_failure;
	void (*progress)(const struct sonde_progress *pr, void *ctx);
	void *progress_ctx;
	/*
	 * Attach to the running process attach_pid for duration_s seconds (0:
	 * until it exits or sonde is interrupted) instead of starting argv (which
	 * names its executable): one run, every collector SONDE_COLLECTOR_ATTACHES.
	 */
	pid_t attach_pid;
	double duration_s;
};

/* How the series ended. */
struct sonde_outcome {
	unsigned runs;		 /* measured runs recorded */
	unsigned warmups;	 /* warm-up runs done */
	unsigned failed;	 /* runs that exited non-zero or by a signal */
	bool stopped_on_failure; /* a failing run ended the series (no ignore_failure) */
	int failure_status;	 /* wait status of the first failing run */
	unsigned failure_run;	 /* its 1-based number */
	bool timed_out;
	int interrupted_by; /* signal that interrupted the series; 0: none */
	unsigned leftover;  /* processes the target left behind (killed) */
	uint64_t duration_ns;
	uint64_t own_ns; /* time sonde spent outside the runs */
};

struct sonde_session;

struct sonde_session *sonde_session__new(const struct sonde_session_opts *opts);
void sonde_session__free(struct sonde_session *s);
enum sonde_session_state sonde_session__state(const struct sonde_session *s);

/* Add a collector with its params (stolen; may be NULL). UNINITIALIZED only. */
int sonde_session__add(struct sonde_session *s, const struct sonde_collector *col, json_t *params);
/*
 * Prepare: resolve the target (-ENOENT / -EACCES when it cannot be executed),
 * call every before(). On failure a message is in err.
 */
int sonde_session__before(struct sonde_session *s, struct sonde_strbuf *err);
/* Run the series. 0 when it ran (see the outcome), -errno on an internal failure. */
int sonde_session__run(struct sonde_session *s, struct sonde_strbuf *err);
/* Fill one profile per collector. */
int sonde_session__after(struct sonde_session *s, struct sonde_strbuf *err);

const struct sonde_outcome *sonde_session__outcome(const struct sonde_session *s);
/*
 * The collection's run id: 32 hex digits, recorded as header.run_id in every
 * profile it writes. Profiles with the same run id measured the same runs, on
 * one clock (their timestamps count from the same collection start).
 */
const char *sonde_session__run_id(const struct sonde_session *s);
size_t sonde_session__profile_count(const struct sonde_session *s);
/* The i-th profile (borrowed; FINALIZED only, else NULL). */
struct sonde_profile *sonde_session__profile(const struct sonde_session *s, size_t i);
/* The same, now the caller's to free (the session no longer holds it). */
struct sonde_profile *sonde_session__take_profile(struct sonde_session *s, size_t i);

#endif

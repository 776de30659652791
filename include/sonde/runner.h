/*
 * runner.h - start a target, wait for it, and account for everything it did.
 *
 * A runner is prepared once for a series (resolved executable, environment,
 * redirections) and then runs the target any number of times. Each run:
 *   - starts the target in its own process group through sonde-spawn
 *     (runtime/spawn), a small static program that makes it as our child from
 *     its own few pages (its ru_maxrss is then its own); when collectors must
 *     attach first, the target waits on a pipe until attach() returned, then
 *     execs. The target gets SIGKILL if this process dies (PR_SET_PDEATHSIG;
 *     the thread that runs it must live until it is reaped), so a killed sonde
 *     leaves no orphan running unrecorded. Without sonde-spawn: posix_spawn
 *     (vfork-like), or fork + the barrier (which also sets the death signal);
 *   - waits with wait4, keeping rusage; enforces the timeout by killing the group;
 *   - kills and reaps whatever the target left behind in its group (sonde is a
 *     child subreaper), so no zombie or orphan outlives a run.
 * Signals: the program calls sonde_runner__interrupt() from its SIGINT/SIGTERM
 * handler; it forwards the signal to the running target's group.
 * The terminal: when sonde's group holds its controlling terminal, each run's
 * group is given it, as a shell gives its foreground job (the target can read
 * it and set its modes, and Ctrl-C, Ctrl-Z and window changes reach it), and
 * it is taken back after the run. The target stopped from the terminal stops
 * sonde's own group in turn, so the shell sees the job stopped; `fg` resumes
 * both. A target that dies of the terminal's SIGINT or SIGQUIT counts as sonde
 * interrupted by it.
 */
#ifndef SONDE_RUNNER_H
#define SONDE_RUNNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

enum sonde_output_mode {
	SONDE_OUTPUT_DEFAULT,  /* the target writes to sonde's stdout/stderr */
	SONDE_OUTPUT_CAPTURE,  /* as default, and a copy goes to capture_fd */
	SONDE_OUTPUT_SUPPRESS, /* the target's output goes to /dev/null */
};

struct sonde_runner_opts {
	size_t sz; /* sizeof(struct sonde_runner_opts) */
	char *const *argv;
	char *const *envp; /* NULL: the current environment */
	const char *input; /* the target's stdin: a path; NULL: see inherit_stdin */
	enum sonde_output_mode output;
	int capture_fd;	  /* CAPTURE: where the copy goes */
	int stdout_fd;	  /* >= 0: the target's stdout goes here (overrides output) */
	double timeout_s; /* 0: no limit */
	bool barrier;	  /* fork + start barrier so attach() runs before exec */
	int (*attach)(pid_t pid, void *ctx);
	void *attach_ctx;
	/*
	 * Kept for the ABI: every target starts through sonde-spawn when it is
	 * installed, so its ru_maxrss is its own (started from sonde, the kernel
	 * counts the high-water mark of sonde's address space in it); see
	 * rss_inherited.
	 */
	bool own_rss;
	/*
	 * Attach instead of start: the running process attach_pid (not our
	 * child) is watched for duration_s seconds (0: until it exits or sonde
	 * is interrupted); attach() is called with it, and nothing is sent to
	 * it, ever. The run's status is 0 and its rusage empty (unknowable).
	 */
	pid_t attach_pid;
	double duration_s;
	/*
	 * Called once the target has exited and before it is reaped: its /proc
	 * entries still hold its final counts (a zombie's). Not for attach_pid.
	 * Callers built before it pass a smaller sz: none is called.
	 */
	void (*exited)(pid_t pid, void *ctx);
	void *exited_ctx;
	/*
	 * The target reads sonde's own stdin when input is NULL (a run that is
	 * made once: a pipe cannot be read again); false: /dev/null. Callers
	 * built before it pass a smaller sz: /dev/null.
	 */
	bool inherit_stdin;
	/*
	 * After the target exits, the seconds what is left of its process group
	 * (children it forked and did not wait for) gets to finish before it is
	 * killed: those that finish in time are not leftovers. 0: killed at once.
	 * Callers built before it pass a smaller sz: 0.
	 */
	double linger_s;
};

struct sonde_run {
	pid_t pid;
	uint64_t start_ns; /* monotonic: just before the target was started */
	uint64_t end_ns;   /* monotonic: just after it was reaped */
	struct rusage rusage;
	int status;	    /* wait status */
	bool timed_out;	    /* killed by the timeout */
	int interrupted_by; /* signal forwarded during this run; 0: none */
	unsigned leftover;  /* processes left in its group and killed */
	bool rss_inherited; /* rusage.ru_maxrss may be sonde's own high-water mark */
};

/* A time of struct rusage (ru_utime, ru_stime) in ns. */
static inline uint64_t sonde_timeval_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000u + (uint64_t)tv->tv_usec * 1000u;
}

/* The CPU time of a rusage: user + sys, in ns. */
static inline uint64_t sonde_rusage_cpu_ns(const struct rusage *ru)
{
	return sonde_timeval_ns(&ru->ru_utime) + sonde_timeval_ns(&ru->ru_stime);
}

struct sonde_runner;

/*
 * Prepare a runner. NULL with errno ENOENT (no such command), EACCES (not
 * executable), EINVAL (bad options) or ENOMEM.
 */
struct sonde_runner *sonde_runner__new(const struct sonde_runner_opts *opts);
void sonde_runner__free(struct sonde_runner *r);
/* The resolved path of the executable (borrowed). */
const char *sonde_runner__path(const struct sonde_runner *r);

/*
 * Run the target once. Returns 0 when it ran (whatever its exit status),
 * -errno when it could not be started or attach() failed (the child is then
 * killed and reaped).
 */
int sonde_runner__run(struct sonde_runner *r, struct sonde_run *out);

/*
 * The next run is the last one: the helper that starts the targets
 * (sonde-spawn) leaves as soon as that run's target has ended, while the
 * caller reads its collectors, instead of in sonde_runner__free. A run after it
 * still works (it starts a helper again).
 */
void sonde_runner__last(struct sonde_runner *r);

/*
 * Async-signal-safe: remember sig and forward it to the running target's group;
 * a second call (the target did not stop) sends SIGKILL instead.
 */
void sonde_runner__interrupt(int sig);
/* Async-signal-safe: SIGKILL the running target's group (a grace period ran out). */
void sonde_runner__kill(void);
/* The first signal passed to __interrupt() since the last clear; 0 if none. */
int sonde_runner__interrupted(void);
void sonde_runner__clear_interrupt(void);

/* Resolve a command name through PATH like execvp. Returns a heap path or NULL+errno. */
char *sonde_runner__resolve(const char *cmd);

#endif

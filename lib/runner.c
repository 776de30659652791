/*
 * runner.c - start, time and reap one target (see runner.h).
 *
 * Three ways to start:
 *  - through sonde-spawn, the default when it is installed: posix_spawn starts
 *    that small static program once per runner; for each run it is sent the
 *    run's descriptors over a socket and makes the target as sonde's child
 *    (CLONE_PARENT) from its own few pages, sets its death signal (it dies with
 *    sonde) and reports the target's pid, its start time and exec errors
 *    through a pipe; with a barrier the target waits on a pipe before its exec.
 *    Its ru_maxrss is then its own, not the high-water mark of sonde's memory;
 *  - without it, posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK)): no copy of
 *    sonde's address space, exec errors come back as the return value, no
 *    death signal;
 *  - without it, fork + start barrier when a collector must attach before
 *    exec: the child sets its death signal, blocks reading a pipe, the parent
 *    runs attach() and then writes one byte; exec errors come back through a
 *    close-on-exec pipe.
 * All apply the same redirection plan (struct redirect[]).
 *
 * Waiting: a plain wait4 when there is neither a timeout nor output to copy;
 * otherwise poll() on a pidfd and the output pipes. After the target is reaped,
 * its process group is killed and every member reaped (sonde is a child
 * subreaper, so orphans of the target become its children).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <sonde/clock.h>
#include <sonde/log.h>
#include <sonde/runner.h>
#include <sonde/strbuf.h>
#include "runtime-file.h"

extern char **environ;

static volatile sig_atomic_t current_pgid;
static volatile sig_atomic_t pending_signal;

struct sonde_runner {
	struct sonde_runner_opts o;
	char *path;
	char *helper;	  /* sonde-spawn; NULL: not found */
	pid_t helper_pid; /* the one serving this runner; 0: not started */
	int helper_sock;  /* its socket; -1: not started */
	pid_t parent;	  /* this process, as a forked child sees it before exec */
	char *const *envp;
	posix_spawnattr_t attr;
	int null_fd;	 /* /dev/null, opened once: children dup it instead of opening */
	int input_fd;	 /* the --input file, rewound before each run; -1: none */
	int tty;	 /* the controlling terminal among fds 0-2; -1: none */
	pid_t tty_pgid;	 /* the run's group while it has the terminal; 0: it has not */
	bool tty_given;	 /* this run's group was given the terminal */
	bool last;	 /* sonde_runner__last: the helper leaves after the next run */
	pid_t known[64]; /* our children when the run started: not the target's orphans */
	size_t nknown;
};

/* One step of the redirection plan: fd becomes a file opened at path, or a dup of from. */
struct redirect {
	int fd;
	const char *path; /* NULL: dup from */
	int flags;
	int from;
};

/* ---- the terminal: lent to the run's group as a shell lends it to its foreground job ---- */

/* The controlling terminal among stdin, stdout and stderr; -1: none. */
static int controlling_tty(void)
{
	for (int fd = 0; fd <= 2; fd++)
		if (tcgetpgrp(fd) >= 0)
			return fd;
	return -1;
}

/* tcsetpgrp, allowed from the background while SIGTTOU is blocked. */
static int set_foreground(int fd, pid_t pgid)
{
	sigset_t ttou, old;
	int rc;

	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	rc = tcsetpgrp(fd, pgid);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* The run's group gets the terminal if sonde's group has it. */
static void give_tty(struct sonde_runner *r, pid_t pgid)
{
	siginfo_t si = { 0 };

	if (r->tty < 0 || tcgetpgrp(r->tty) != getpgrp() || set_foreground(r->tty, pgid) < 0)
		return;
	r->tty_pgid = pgid;
	r->tty_given = true;
	/* a target that touched the terminal before it had it was stopped: on */
	if (waitid(P_PID, (id_t)pgid, &si, WSTOPPED | WNOHANG) == 0 && si.si_pid == pgid)
		kill(-pgid, SIGCONT);
}

/* Back to sonde's group, unless somebody else took it meanwhile. */
static void take_tty(struct sonde_runner *r)
{
	pid_t fg;

	if (!r->tty_pgid)
		return;
	fg = tcgetpgrp(r->tty);
	if (fg == r->tty_pgid || fg == 0)
		set_foreground(r->tty, getpgrp());
	r->tty_pgid = 0;
}

/*
 * The target stopped. By the terminal (Ctrl-Z, or it read or set the terminal
 * without having it): sonde's own group stops with the same signal, as the
 * shell expects of its job. Once continued (`fg`, `bg`), the target is given
 * the terminal again where sonde's group has it, and continued. A SIGSTOP sent
 * to the target is its sender's business.
 */
static void stopped(struct sonde_runner *r, pid_t pid, int sig)
{
	uint64_t at = sonde_clock_ns();

	if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU)
		return;
	take_tty(r);
	kill(0, sig);
	/* not stopped (an orphaned group's stop signals are discarded): a target
	   that wants the terminal would stop again at once; it retries at 10 Hz */
	if (sig != SIGTSTP && sonde_clock_ns() - at < 1000000)
		nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
	give_tty(r, pid);
	kill(-pid, SIGCONT);
}

/* Wait until the target has exited (not reaped), following its stops. */
static void follow_stops(struct sonde_runner *r, pid_t pid)
{
	siginfo_t si;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WSTOPPED | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (si.si_code != CLD_STOPPED)
			return;
		/* the stop, taken off: the next wait is for the next event */
		waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG);
		stopped(r, pid, si.si_status);
	}
}

/* ---- signals, paths, the runner ---- */

void sonde_runner__interrupt(int sig)
{
	int saved = errno;

	if (current_pgid > 0)
		/* a second signal: the target did not stop on the first */
		kill(-current_pgid, pending_signal ? SIGKILL : sig);
	if (!pending_signal)
		pending_signal = sig;
	errno = saved;
}

void sonde_runner__kill(void)
{
	int saved = errno;

	if (current_pgid > 0)
		kill(-current_pgid, SIGKILL);
	errno = saved;
}

int sonde_runner__interrupted(void)
{
	return pending_signal;
}

void sonde_runner__clear_interrupt(void)
{
	pending_signal = 0;
}

char *sonde_runner__resolve(const char *cmd)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	const char *path, *p;
	int saw_eacces = 0;
	struct stat st;

	if (!cmd || !*cmd) {
		errno = ENOENT;
		return NULL;
	}
	if (strchr(cmd, '/')) {
		if (stat(cmd, &st) < 0)
			return NULL;
		if (!S_ISREG(st.st_mode) || access(cmd, X_OK) < 0) {
			errno = EACCES;
			return NULL;
		}
		return strdup(cmd);
	}
	path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		const char *end = strchrnul(p, ':');

		sonde_strbuf__reset(&sb);
		if (end == p)
			sonde_strbuf__adds(&sb, ".");
		else
			sonde_strbuf__add(&sb, p, (size_t)(end - p));
		sonde_strbuf__addf(&sb, "/%s", cmd);
		if (stat(sb.buf, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(sb.buf, X_OK) == 0)
				return sonde_strbuf__detach(&sb, NULL);
			saw_eacces = 1;
		}
		if (!*end)
			break;
		p = end;
	}
	sonde_strbuf__release(&sb);
	errno = saw_eacces ? EACCES : ENOENT;
	return NULL;
}

/* A helper told to leave (its socket closed) is reaped before another starts. */
static void helper_reap(struct sonde_runner *r)
{
	if (r->helper_pid > 0)
		while (waitpid(r->helper_pid, NULL, 0) < 0 && errno == EINTR)
			;
	r->helper_pid = 0;
}

struct sonde_runner *sonde_runner__new(const struct sonde_runner_opts *opts)
{
	struct sonde_runner *r;
	sigset_t none, def;

	if (!opts || opts->sz < offsetof(struct sonde_runner_opts, exited) || !opts->argv ||
	    !opts->argv[0]) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	/* a caller built before the last members passes fewer bytes: they stay 0 */
	memcpy(&r->o, opts, opts->sz < sizeof(*opts) ? opts->sz : sizeof(*opts));
	r->envp = opts->envp ? opts->envp : environ;
	r->path = sonde_runner__resolve(opts->argv[0]);
	/* every target starts through the helper when it is there (own_rss, and a
	   target that dies with sonde); without it, posix_spawn or fork */
	if (r->path && !(r->helper = sonde_runtime_file("sonde-spawn")) && errno != ENOENT) {
		free(r->path); /* not "no helper": whether it is there is not known */
		r->path = NULL;
	}
	if (!r->path) {
		int e = errno;

		free(r);
		errno = e;
		return NULL;
	}
	r->input_fd = -1;
	r->helper_sock = -1;
	r->tty = controlling_tty();
	r->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (r->null_fd < 0 ||
	    (opts->input && (r->input_fd = open(opts->input, O_RDONLY | O_CLOEXEC)) < 0)) {
		int e = errno;

		if (r->null_fd >= 0)
			close(r->null_fd);
		free(r->helper);
		free(r->path);
		free(r);
		errno = e;
		return NULL;
	}
	/* Orphans of the target become our children, so they can be reaped. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	posix_spawnattr_init(&r->attr);
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	posix_spawnattr_setsigmask(&r->attr, &none);
	posix_spawnattr_setsigdefault(&r->attr, &def);
	posix_spawnattr_setpgroup(&r->attr, 0);
	posix_spawnattr_setflags(&r->attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
						   POSIX_SPAWN_SETSIGDEF);
	return r;
}

void sonde_runner__free(struct sonde_runner *r)
{
	if (!r)
		return;
	if (r->helper_sock >= 0)
		close(r->helper_sock); /* the helper leaves */
	helper_reap(r);
	posix_spawnattr_destroy(&r->attr);
	close(r->null_fd);
	if (r->input_fd >= 0)
		close(r->input_fd);
	free(r->helper);
	free(r->path);
	free(r);
}

const char *sonde_runner__path(const struct sonde_runner *r)
{
	return r->path;
}

/* The plan for stdin, stdout and stderr of one run; pipes[] are the capture pipes. */
static size_t plan(const struct sonde_runner *r, const int pipes[4], struct redirect *rd)
{
	size_t n = 0;

	if (r->input_fd >= 0 || !r->o.inherit_stdin)
		rd[n++] = (struct redirect){ 0, NULL, 0,
					     r->input_fd >= 0 ? r->input_fd : r->null_fd };
	if (r->o.output == SONDE_OUTPUT_SUPPRESS) {
		rd[n++] = (struct redirect){ 1, NULL, 0, r->null_fd };
		rd[n++] = (struct redirect){ 2, NULL, 0, r->null_fd };
	} else if (r->o.output == SONDE_OUTPUT_CAPTURE) {
		rd[n++] = (struct redirect){ 1, NULL, 0, pipes[1] };
		rd[n++] = (struct redirect){ 2, NULL, 0, pipes[3] };
	}
	if (r->o.stdout_fd >= 0)
		rd[n++] = (struct redirect){ 1, NULL, 0, r->o.stdout_fd };
	return n;
}

/* The redirection plan as posix_spawn file actions (fa initialised here). */
static void plan_actions(posix_spawn_file_actions_t *fa, const struct redirect *rd, size_t n)
{
	size_t i;

	posix_spawn_file_actions_init(fa);
	for (i = 0; i < n; i++) {
		if (rd[i].path)
			posix_spawn_file_actions_addopen(fa, rd[i].fd, rd[i].path, rd[i].flags, 0);
		else
			posix_spawn_file_actions_adddup2(fa, rd[i].from, rd[i].fd);
	}
}

static int spawn_target(struct sonde_runner *r, const struct redirect *rd, size_t n, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int err;

	plan_actions(&fa, rd, n);
	err = posix_spawn(pid, r->path, &fa, &r->attr, r->o.argv, r->envp);
	posix_spawn_file_actions_destroy(&fa);
	return -err;
}

/* In the forked child: apply the plan, wait at the barrier, exec. Never returns. */
static void child_exec(struct sonde_runner *r, const struct redirect *rd, size_t n, int barrier,
		       int errfd)
{
	sigset_t none;
	ssize_t got;
	size_t i;
	char c;
	int e;

	setpgid(0, 0);
	/* the target dies with sonde; a sonde already gone before this line is
	   seen in getppid (the child was reparented) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != r->parent)
		_exit(127);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (i = 0; i < n; i++) {
		int fd = rd[i].path ? open(rd[i].path, rd[i].flags) : rd[i].from;

		if (fd < 0 || dup2(fd, rd[i].fd) < 0)
			goto fail;
		if (rd[i].path && fd != rd[i].fd)
			close(fd);
	}
	/* One byte releases the child; EOF means attach() failed: leave without exec. */
	while ((got = read(barrier, &c, 1)) < 0 && errno == EINTR)
		;
	if (got != 1)
		_exit(127);
	execve(r->path, r->o.argv, r->envp);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

static void reap(pid_t pid, struct sonde_run *out)
{
	while (wait4(pid, &out->status, 0, &out->rusage) < 0 && errno == EINTR)
		;
	out->end_ns = sonde_clock_ns();
}

/*
 * Reap the target once it has exited; the exited() hook first, while its /proc
 * entries hold its final counts. The run ends when it exited, not after the hook.
 */
static void reap_target(struct sonde_runner *r, pid_t pid, struct sonde_run *out)
{
	siginfo_t si;
	uint64_t end;

	if (r->tty >= 0)
		follow_stops(r, pid);
	if (!r->o.exited) {
		reap(pid, out);
		return;
	}
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	end = sonde_clock_ns();
	r->o.exited(pid, r->o.exited_ctx);
	reap(pid, out);
	out->end_ns = end;
}

/* Our children (at most max). */
static size_t children(pid_t *out, size_t max)
{
	char path[64];
	size_t n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	while (d && (e = readdir(d)) && n < max) {
		FILE *f;
		long pid;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/children", e->d_name);
		f = fopen(path, "re");
		while (f && n < max && fscanf(f, "%ld", &pid) == 1)
			out[n++] = (pid_t)pid;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * The target's orphans that left its session (daemon() calls setsid): our
 * children now (we are their subreaper) that were not when the run started,
 * but the helper, in a session of their own. A child of the caller's own
 * (sonde as a library) stays in the caller's session and is never one.
 */
static size_t orphans(const struct sonde_runner *r, pid_t *out, size_t max)
{
	pid_t all[64];
	size_t n = children(all, 64), i, j, k = 0;
	pid_t ours = getsid(0);

	for (i = 0; i < n && k < max; i++) {
		for (j = 0; j < r->nknown && r->known[j] != all[i]; j++)
			;
		if (j == r->nknown && all[i] != r->helper_pid && getsid(all[i]) != ours)
			out[k++] = all[i];
	}
	return k;
}

/*
 * A target's orphan that left its group and session (daemon() calls setsid)
 * gets until `until` to finish, as the group did, so that a short-lived one is
 * recorded whole; one that runs longer is a daemon and runs on (its runtime
 * stops recording when the run ends).
 */
static void wait_orphans(const struct sonde_runner *r, uint64_t until)
{
	pid_t pid[64];
	size_t n = orphans(r, pid, 64), i;

	while (n && sonde_clock_ns() < until) {
		struct timespec ts = { 0, 2000000 };
		size_t left = 0;

		for (i = 0; i < n; i++)
			if (waitpid(pid[i], NULL, WNOHANG) == 0)
				pid[left++] = pid[i];
		n = left;
		if (n)
			nanosleep(&ts, NULL);
	}
}

/*
 * What the target left in its group gets linger_s to finish (reaped as it
 * does: orphans are ours, as subreaper), then is killed and reaped.
 */
static void reap_group(const struct sonde_runner *r, pid_t pgid, struct sonde_run *out)
{
	double linger = r->o.sz >= offsetof(struct sonde_runner_opts, linger_s) + sizeof(double)
				? r->o.linger_s
				: 0;
	uint64_t until = sonde_clock_ns() + (uint64_t)(linger * 1e9);

	while (linger > 0 && kill(-pgid, 0) == 0 && sonde_clock_ns() < until) {
		struct timespec ts = { 0, 2000000 };

		while (waitpid(-pgid, NULL, WNOHANG) > 0)
			;
		nanosleep(&ts, NULL);
	}
	if (kill(-pgid, SIGKILL) == 0)
		while (waitpid(-pgid, NULL, 0) > 0 || errno == EINTR)
			out->leftover++;
	/* and what left the group (daemon(): setsid) but was orphaned to us */
	if (linger > 0)
		wait_orphans(r, until);
}

/*
 * attach() while the target waits at the barrier, then release it: one byte to
 * go on, or EOF (attach failed) to leave without exec. start_ns is set when it
 * was released (the time its run starts); on an attach error it stays 0.
 */
static int attach_and_release(struct sonde_runner *r, pid_t pid, int *bar_w, struct sonde_run *out)
{
	int err = r->o.attach ? r->o.attach(pid, r->o.attach_ctx) : 0;

	if (!err) {
		out->start_ns = sonde_clock_ns();
		if (write(*bar_w, "g", 1) < 0)
			err = -errno;
	}
	close(*bar_w);
	*bar_w = -1;
	return err;
}

static int fork_target(struct sonde_runner *r, const struct redirect *rd, size_t n,
		       struct sonde_run *out)
{
	int bar[2], errp[2], e = 0, err;
	ssize_t got;
	pid_t pid;

	if (pipe2(bar, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(errp, O_CLOEXEC) < 0) {
		err = -errno;
		close(bar[0]);
		close(bar[1]);
		return err;
	}
	r->parent = getpid();
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(bar[0]);
		close(bar[1]);
		close(errp[0]);
		close(errp[1]);
		return err;
	}
	if (pid == 0) {
		close(bar[1]);
		close(errp[0]);
		child_exec(r, rd, n, bar[0], errp[1]);
	}
	setpgid(pid, pid);
	current_pgid = pid;
	give_tty(r, pid);
	close(bar[0]);
	close(errp[1]);
	out->pid = pid;
	err = attach_and_release(r, pid, &bar[1], out);
	if (err && !out->start_ns) {
		kill(pid, SIGKILL);
		close(errp[0]);
		reap(pid, out);
		current_pgid = 0;
		return err;
	}
	while ((got = read(errp[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(errp[0]);
	if (got == (ssize_t)sizeof(e) || err) {
		reap(pid, out);
		current_pgid = 0;
		return err ? err : -e;
	}
	return 0;
}

/* A request to sonde-spawn (runtime/spawn/spawn.c), with its descriptors. */
struct spawn_request {
	int32_t barrier; /* 1: the second descriptor is the barrier's read end */
	int32_t nredirect;
	int32_t target_fd[4]; /* where each redirected descriptor goes in the target */
};

/* What sonde-spawn and the target it makes write on the report pipe. */
struct spawn_report {
	int32_t kind; /* 1: made (pid, start_ns); 2: its exec failed (err); 3: no clone (err) */
	int32_t err;
	int64_t pid;
	uint64_t start_ns;
};

/* p[], two new close-on-exec descriptors, moved above stderr (the plan dup2s onto 0-2). */
static int above_stderr(int p[2])
{
	for (int i = 0; i < 2; i++) {
		if (p[i] <= 2) {
			int fd = fcntl(p[i], F_DUPFD_CLOEXEC, 3);

			if (fd < 0) {
				int e = -errno;

				close(p[0]);
				close(p[1]);
				return e;
			}
			close(p[i]);
			p[i] = fd;
		}
	}
	return 0;
}

static int pipe_above_stderr(int p[2])
{
	return pipe2(p, O_CLOEXEC) < 0 ? -errno : above_stderr(p);
}

/* Start the sonde-spawn that serves this runner's runs. */
static int helper_start(struct sonde_runner *r)
{
	posix_spawn_file_actions_t fa;
	char sock_arg[16];
	size_t argc = 0, i;
	char **argv;
	int sv[2], err;

	for (; r->o.argv[argc]; argc++)
		;
	argv = calloc(argc + 4, sizeof(*argv)); /* helper, socket, path, argv, NULL */
	if (!argv)
		return -ENOMEM;
	err = socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ? -errno
									    : above_stderr(sv);
	if (err) {
		free(argv);
		return err;
	}
	snprintf(sock_arg, sizeof(sock_arg), "%d", sv[1]);
	argv[0] = r->helper;
	argv[1] = sock_arg;
	argv[2] = r->path;
	for (i = 0; i < argc; i++)
		argv[3 + i] = r->o.argv[i];
	posix_spawn_file_actions_init(&fa);
	/* dup2 onto itself: the helper inherits it (glibc clears close-on-exec) */
	posix_spawn_file_actions_adddup2(&fa, sv[1], sv[1]);
	err = -posix_spawn(&r->helper_pid, r->helper, &fa, &r->attr, argv, r->envp);
	posix_spawn_file_actions_destroy(&fa);
	free(argv);
	close(sv[1]);
	if (err) {
		close(sv[0]);
		r->helper_pid = 0;
		return err;
	}
	r->helper_sock = sv[0];
	return 0;
}

void sonde_runner__last(struct sonde_runner *r)
{
	r->last = true;
}

/* The helper is gone (its socket broke): reap it, so that the next run starts another. */
static void helper_lost(struct sonde_runner *r)
{
	close(r->helper_sock);
	r->helper_sock = -1;
	helper_reap(r);
}

/* Ask the helper for a target: the report pipe's write end, the barrier's read end, the plan. */
static int helper_ask(struct sonde_runner *r, const struct redirect *rd, size_t n, int rep_w,
		      int bar_r)
{
	struct spawn_request req = { .barrier = bar_r >= 0, .nredirect = (int32_t)n };
	int fds[6], nfds = 0, opened[4] = { -1, -1, -1, -1 }, err = 0, tries;
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { &req, sizeof(req) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf };
	struct cmsghdr *c;
	size_t i;

	fds[nfds++] = rep_w;
	if (bar_r >= 0)
		fds[nfds++] = bar_r;
	for (i = 0; i < n && i < 4; i++) {
		int fd = rd[i].from;

		if (rd[i].path &&
		    (fd = opened[i] = open(rd[i].path, rd[i].flags | O_CLOEXEC, 0666)) < 0) {
			err = -errno;
			goto out;
		}
		req.target_fd[i] = rd[i].fd;
		fds[nfds++] = fd;
	}
	memset(&ctl, 0, sizeof(ctl));
	msg.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	/* a helper that died since the last run is started again, once */
	for (tries = 0; tries < 2; tries++) {
		if (r->helper_sock < 0)
			helper_reap(r);
		if (r->helper_sock < 0 && (err = helper_start(r)) < 0)
			break;
		if (sendmsg(r->helper_sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(req)) {
			err = 0;
			break;
		}
		err = -errno;
		if (errno == EINTR)
			continue;
		helper_lost(r);
	}
out:
	for (i = 0; i < 4; i++)
		if (opened[i] >= 0)
			close(opened[i]);
	return err;
}

static ssize_t read_report(int fd, struct spawn_report *rep)
{
	ssize_t got;

	while ((got = read(fd, rep, sizeof(*rep))) < 0 && errno == EINTR)
		;
	return got;
}

/*
 * Whether the helper died (killed, say) while it served the request: then a
 * target it made before it died (our child: CLONE_PARENT) is killed and
 * reaped, so that the request can be made again of a new helper without a
 * second copy of the run.
 */
static bool helper_died(struct sonde_runner *r)
{
	pid_t all[64], got = 0;
	size_t k, i, j;
	int status, tries;

	/* its report pipe closed without a word: it is exiting (up to 1 s to be reaped) */
	for (tries = 0; r->helper_pid > 0 && tries < 1000; tries++) {
		struct timespec ts = { 0, 1000000 };

		got = waitpid(r->helper_pid, &status, WNOHANG);
		if (got != 0 && !(got < 0 && errno == EINTR))
			break;
		nanosleep(&ts, NULL);
	}
	if (r->helper_pid <= 0 || got != r->helper_pid)
		return false;
	r->helper_pid = 0;
	close(r->helper_sock);
	r->helper_sock = -1;
	k = children(all, 64);
	for (i = 0; i < k; i++) {
		for (j = 0; j < r->nknown && r->known[j] != all[i]; j++)
			;
		if (j == r->nknown) {
			kill(all[i], SIGKILL);
			while (waitpid(all[i], NULL, 0) < 0 && errno == EINTR)
				;
		}
	}
	return true;
}

static int helper_target_once(struct sonde_runner *r, const struct redirect *rd, size_t n,
			      struct sonde_run *out, bool *retry);

/*
 * Start the target through sonde-spawn (see the top of this file). A helper
 * that dies before it names the target is replaced, and asked again, once.
 */
static int helper_target(struct sonde_runner *r, const struct redirect *rd, size_t n,
			 struct sonde_run *out)
{
	bool retry = false;
	int err = helper_target_once(r, rd, n, out, &retry);

	if (retry)
		err = helper_target_once(r, rd, n, out, &retry);
	return err;
}

static int helper_target_once(struct sonde_runner *r, const struct redirect *rd, size_t n,
			      struct sonde_run *out, bool *retry)
{
	int rep[2], bar[2] = { -1, -1 }, err = 0;
	struct spawn_report rec = { 0 };

	if ((err = pipe_above_stderr(rep)) < 0)
		return err;
	if (r->o.barrier && (err = pipe_above_stderr(bar)) < 0) {
		close(rep[0]);
		close(rep[1]);
		return err;
	}
	err = helper_ask(r, rd, n, rep[1], bar[0]);
	close(rep[1]);
	if (bar[0] >= 0)
		close(bar[0]);
	if (err)
		goto out;
	/* Its first record names the target (EOF: the helper died first). */
	while (read_report(rep[0], &rec) == (ssize_t)sizeof(rec) && rec.kind != 1 && rec.kind != 3)
		;
	if (rec.kind != 1) {
		err = rec.kind == 3 && rec.err ? -rec.err : -ECHILD;
		if (rec.kind != 3 && !*retry && helper_died(r))
			*retry = true;
		else
			*retry = false;
		goto out;
	}
	*retry = false;
	out->pid = (pid_t)rec.pid;
	setpgid(out->pid, out->pid);
	current_pgid = out->pid;
	give_tty(r, out->pid);
	out->start_ns = rec.start_ns;
	if (r->o.barrier) {
		out->start_ns = 0;
		err = attach_and_release(r, out->pid, &bar[1], out);
		if (err && !out->start_ns) {
			kill(out->pid, SIGKILL);
			reap(out->pid, out);
			current_pgid = 0;
			goto out;
		}
	}
	/* EOF: the exec happened (the pipe is close-on-exec); a record: it failed. */
	while (read_report(rep[0], &rec) == (ssize_t)sizeof(rec))
		if (rec.kind == 2 && !err)
			err = -rec.err;
	if (err) {
		kill(out->pid, SIGKILL);
		reap(out->pid, out);
		current_pgid = 0;
		goto out;
	}
	if (!r->o.barrier && r->o.attach) {
		err = r->o.attach(out->pid, r->o.attach_ctx);
		if (err) {
			kill(-out->pid, SIGKILL);
			reap(out->pid, out);
			current_pgid = 0;
		}
	}
out:
	close(rep[0]);
	if (bar[1] >= 0)
		close(bar[1]);
	return err;
}

static void copy_output(int from, int to, int copy, bool *open_)
{
	char buf[16384];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			*open_ = false;
		return;
	}
	if (write(to, buf, (size_t)n) < 0) {
		/* the terminal went away: keep the copy */
	}
	if (copy >= 0 && write(copy, buf, (size_t)n) < 0) {
		/* reported by the caller when it closes the capture file */
	}
}

/* Wait for pid, copying output and enforcing the timeout. */
static void wait_target(struct sonde_runner *r, pid_t pid, int out_fd, int err_fd,
			struct sonde_run *out)
{
	bool out_open = out_fd >= 0, err_open = err_fd >= 0, exited = false;
	uint64_t deadline =
		r->o.timeout_s > 0 ? out->start_ns + (uint64_t)(r->o.timeout_s * 1e9) : 0;
	int pidfd;

	if (!deadline && !out_open && !err_open) {
		reap_target(r, pid, out);
		return;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	while (!exited) {
		struct pollfd fds[3];
		int nf = 0, ms = -1, rc;

		fds[nf++] = (struct pollfd){ pidfd, POLLIN, 0 };
		if (out_open)
			fds[nf++] = (struct pollfd){ out_fd, POLLIN, 0 };
		if (err_open)
			fds[nf++] = (struct pollfd){ err_fd, POLLIN, 0 };
		if (pidfd < 0)
			ms = 10; /* no pidfd: poll for the exit */
		else if (r->tty >= 0)
			ms = 100; /* a pidfd tells the exit, not a stop */
		if (deadline) {
			uint64_t now = sonde_clock_ns();
			int left = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);

			ms = ms < 0 || left < ms ? left : ms;
		}
		rc = poll(pidfd < 0 ? fds + 1 : fds, pidfd < 0 ? (nfds_t)nf - 1 : (nfds_t)nf, ms);
		if (rc < 0 && errno != EINTR)
			break;
		if (deadline && sonde_clock_ns() >= deadline) {
			kill(-pid, SIGKILL);
			out->timed_out = true;
			deadline = 0;
		}
		if (r->tty >= 0) {
			siginfo_t si = { 0 };

			if (waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG) == 0 &&
			    si.si_pid == pid)
				stopped(r, pid, si.si_status);
		}
		if (pidfd < 0) {
			siginfo_t si = { 0 };

			if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
			    si.si_pid == pid)
				exited = true;
		}
		if (rc <= 0)
			continue;
		for (int i = 0; i < nf; i++) {
			if (!fds[i].revents)
				continue;
			if (fds[i].fd == pidfd)
				exited = true;
			else if (fds[i].fd == out_fd)
				copy_output(out_fd, 1, r->o.capture_fd, &out_open);
			else
				copy_output(err_fd, 2, r->o.capture_fd, &err_open);
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	if (exited)
		reap_target(r, pid, out);
	else
		reap(pid, out);
	/* Copy what is left; the group is killed first so no writer remains. */
	reap_group(r, pid, out);
	while (out_open || err_open) {
		struct pollfd fds[2];
		int nf = 0;

		if (out_open)
			fds[nf++] = (struct pollfd){ out_fd, POLLIN, 0 };
		if (err_open)
			fds[nf++] = (struct pollfd){ err_fd, POLLIN, 0 };
		if (poll(fds, (nfds_t)nf, 1000) <= 0)
			break; /* a writer escaped the group: stop copying */
		for (int i = 0; i < nf; i++) {
			if (!fds[i].revents)
				continue;
			if (fds[i].fd == out_fd)
				copy_output(out_fd, 1, r->o.capture_fd, &out_open);
			else
				copy_output(err_fd, 2, r->o.capture_fd, &err_open);
		}
	}
}

/* Watch a running process that is not ours until it ends, the duration is over, or a signal. */
static int watch(struct sonde_runner *r, struct sonde_run *out)
{
	int fd = (int)syscall(SYS_pidfd_open, r->o.attach_pid, 0), err = 0;
	uint64_t until = r->o.duration_s > 0 ? sonde_clock_ns() + (uint64_t)(r->o.duration_s * 1e9)
					     : UINT64_MAX;

	if (fd < 0)
		return -errno;
	out->pid = r->o.attach_pid;
	out->start_ns = sonde_clock_ns();
	if (r->o.attach)
		err = r->o.attach(out->pid, r->o.attach_ctx);
	while (!err && !pending_signal) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t now = sonde_clock_ns();
		int wait_ms = now >= until		? 0
			      : until - now > 100000000 ? 100
							: (int)((until - now) / 1000000);

		if (now >= until || poll(&pf, 1, wait_ms) > 0)
			break;
	}
	out->end_ns = sonde_clock_ns();
	out->interrupted_by = pending_signal;
	close(fd);
	return err;
}

int sonde_runner__run(struct sonde_runner *r, struct sonde_run *out)
{
	int pipes[4] = { -1, -1, -1, -1 }, err = 0, i;
	struct redirect rd[4];
	size_t n;

	memset(out, 0, sizeof(*out));
	if (r->o.attach_pid > 0)
		return watch(r, out);
	r->nknown = children(r->known, sizeof(r->known) / sizeof(r->known[0]));
	if (r->o.output == SONDE_OUTPUT_CAPTURE &&
	    (pipe2(pipes, O_CLOEXEC) < 0 || pipe2(pipes + 2, O_CLOEXEC) < 0)) {
		err = -errno;
		goto out;
	}
	/* Every run reads its input from the start (the offset is shared with the child). */
	if (r->input_fd >= 0 && lseek(r->input_fd, 0, SEEK_SET) < 0) {
		err = -errno;
		goto out;
	}
	n = plan(r, pipes, rd);
	out->rss_inherited = !r->helper;
	if (r->helper) {
		err = helper_target(r, rd, n, out);
	} else if (r->o.barrier) {
		err = fork_target(r, rd, n, out);
	} else {
		out->start_ns = sonde_clock_ns();
		err = spawn_target(r, rd, n, &out->pid);
		if (!err) {
			current_pgid = out->pid;
			give_tty(r, out->pid);
			if (r->o.attach)
				err = r->o.attach(out->pid, r->o.attach_ctx);
			if (err) {
				kill(-out->pid, SIGKILL);
				reap(out->pid, out);
				current_pgid = 0;
			}
		}
	}
	if (pipes[1] >= 0) {
		close(pipes[1]);
		close(pipes[3]);
		pipes[1] = pipes[3] = -1;
	}
	if (err)
		goto out;
	/* A signal that came before current_pgid was set is forwarded now. */
	if (pending_signal)
		kill(-out->pid, pending_signal);
	if (pipes[0] < 0 && !(r->o.timeout_s > 0)) {
		reap_target(r, out->pid, out);
		reap_group(r, out->pid, out);
	} else {
		wait_target(r, out->pid, pipes[0], pipes[2], out);
	}
	current_pgid = 0;
	if (r->last && r->helper_sock >= 0) { /* it leaves while the caller goes on */
		close(r->helper_sock);
		r->helper_sock = -1;
	}
	r->last = false;
	/* Ctrl-C or Ctrl-\ on the terminal the run had reached its group only */
	if (r->tty_given && !pending_signal && WIFSIGNALED(out->status) &&
	    (WTERMSIG(out->status) == SIGINT || WTERMSIG(out->status) == SIGQUIT))
		pending_signal = WTERMSIG(out->status);
	out->interrupted_by = pending_signal;
	sonde_debug("runner", "pid %d status 0x%x %.3f ms", (int)out->pid, out->status,
		    (double)(out->end_ns - out->start_ns) / 1e6);
out:
	take_tty(r);
	r->tty_given = false;
	for (i = 0; i < 4; i++)
		if (pipes[i] >= 0)
			close(pipes[i]);
	return err;
}

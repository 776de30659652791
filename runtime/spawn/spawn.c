/*
 * spawn.c - sonde-spawn: start a target whose max RSS is its own.
 *
 * The kernel keeps, in the target's ru_maxrss, the high-water mark of the
 * address space the target had before its exec. Started from sonde (posix_spawn
 * shares sonde's address space until exec, fork copies it) that is sonde's own
 * memory: several MiB that a small program never used. sonde therefore starts
 * this small static program, which makes the target as a copy of its own tiny
 * address space with CLONE_PARENT: the target is sonde's child (sonde reaps it
 * and reads its rusage) and its pre-exec high-water mark is this program's.
 *
 *   sonde-spawn REPORT BARRIER PATH ARGV0 [ARG...]
 *
 * REPORT: a pipe (fd number) where records go, each one write: the target's
 * pid and the CLOCK_MONOTONIC time just before it was made (or the errno of the
 * clone that failed), and, from the target, the errno of an exec that failed. BARRIER: "-", or a
 * pipe (fd number) the target reads one byte from before its exec (EOF: leave without exec). PATH
 * is executed with ARGV0 and the ARGs, in this program's environment, with the descriptors it was
 * given. Exit status: 0 when the target was made, 127 otherwise. The target gets
 * SIGKILL when sonde dies (PR_SET_PDEATHSIG, set before its exec).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* As lib/runner.c reads them. */
struct report {
	int32_t kind; /* 1: made (pid, start_ns); 2: its exec failed (err); 3: no clone (err) */
	int32_t err;
	int64_t pid;
	uint64_t start_ns;
};

static int fd_arg(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= 0 && v < 65536 ? (int)v : -1;
}

/* A copy of this process that is sonde's child, not ours. */
static pid_t clone_parent(void)
{
	struct clone_args ca = { .flags = CLONE_PARENT };
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));

	if (pid < 0 && errno == ENOSYS) /* kernels before 5.3, or seccomp filters */
#if defined(__s390__) || defined(__CRIS__)
		pid = syscall(SYS_clone, 0L, (unsigned long)CLONE_PARENT, 0L, 0L, 0L);
#else
		pid = syscall(SYS_clone, (unsigned long)CLONE_PARENT, 0L, 0L, 0L, 0L);
#endif
	return (pid_t)pid;
}

int main(int argc, char **argv)
{
	int report, barrier = -1;
	struct report rec = { 0 };
	struct timespec ts;
	pid_t pid, sonde = getppid();
	char c;

	if (argc < 5 || (report = fd_arg(argv[1])) < 0 ||
	    (argv[2][0] != '-' && (barrier = fd_arg(argv[2])) < 0))
		return 127;
	fcntl(report, F_SETFD, FD_CLOEXEC);
	if (barrier >= 0)
		fcntl(barrier, F_SETFD, FD_CLOEXEC);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	pid = clone_parent();
	if (pid == 0) {
		ssize_t got = 1;

		setpgid(0, 0);
		/* the target dies with sonde (or now, if sonde is already gone) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != sonde)
			_exit(127);
		if (barrier >= 0)
			while ((got = read(barrier, &c, 1)) < 0 && errno == EINTR)
				;
		if (got != 1)
			_exit(127);
		execve(argv[3], argv + 4, environ);
		rec.kind = 2;
		rec.err = errno;
		if (write(report, &rec, sizeof(rec)) < 0)
			_exit(127);
		_exit(127);
	}
	rec.kind = pid < 0 ? 3 : 1;
	rec.err = pid < 0 ? errno : 0;
	rec.pid = pid;
	rec.start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (write(report, &rec, sizeof(rec)) != (ssize_t)sizeof(rec) || pid < 0)
		return 127;
	return 0;
}

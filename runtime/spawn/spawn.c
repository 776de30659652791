/*
 * spawn.c - sonde-spawn: start targets whose max RSS is their own.
 *
 * The kernel keeps, in the target's ru_maxrss, the high-water mark of the
 * address space the target had before its exec. Started from sonde (posix_spawn
 * shares sonde's address space until exec, fork copies it) that is sonde's own
 * memory: several MiB that a small program never used. sonde therefore starts
 * this small static program, which makes each target from its own tiny address
 * space with CLONE_PARENT: the target is sonde's child (sonde reaps it and reads
 * its rusage) and its pre-exec high-water mark is this program's.
 *
 *   sonde-spawn SOCKET PATH ARGV0 [ARG...]
 *
 * One sonde-spawn serves every run of a runner (lib/runner.c): a process
 * started afresh for each run cost one more exec a run, and a process that has
 * just started counts as busy to the scheduler, which then moved the target to
 * another CPU at its exec (and the run's end waited for sonde's CPU to wake).
 * SOCKET is a SOCK_SEQPACKET socket; each message asks for one target:
 *
 *   struct spawn_request, with SCM_RIGHTS: the report pipe's write end, the
 *   barrier's read end when there is one, then one descriptor for each of the
 *   target's redirected descriptors (target_fd[]).
 *
 * A record goes to the report pipe, one write each: the target's pid and the
 * CLOCK_MONOTONIC time just before it was made (or the errno of the clone that
 * failed), and, from the target, the errno of an exec that failed. The target
 * reads one byte from the barrier before its exec (EOF: it leaves without one);
 * without a barrier it shares this program's pages until its exec (CLONE_VM |
 * CLONE_VFORK, on a stack of its own, as posix_spawn does). PATH is executed with
 * ARGV0 and the ARGs, in this program's environment, with this program's
 * descriptors 0-2 where the request redirects none. The target gets SIGKILL
 * when sonde dies (PR_SET_PDEATHSIG, set before its exec); so does this
 * program, which otherwise leaves when the socket is closed (exit status 0).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* As lib/runner.c writes and reads them. */
struct spawn_request {
	int32_t barrier; /* 1: the second descriptor is the barrier's read end */
	int32_t nredirect;
	int32_t target_fd[4]; /* where each redirected descriptor goes in the target */
};
struct report {
	int32_t kind; /* 1: made (pid, start_ns); 2: its exec failed (err); 3: not made (err) */
	int32_t err;
	int64_t pid;
	uint64_t start_ns;
};

#define MAX_FDS 6

struct child {
	int report, barrier;
	int from[4], to[4];
	int nredirect;
	int held[3]; /* 1: this program's descriptor i was closed, /dev/null holds it */
	pid_t sonde;
	char **argv;
};

static int fd_arg(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= 0 && v <= INT_MAX ? (int)v : -1;
}

/* What the target does before its exec, and if its exec fails. */
static int target(void *arg)
{
	const struct child *k = arg;
	struct report rec = { .kind = 2 };
	ssize_t got = 1;
	char c;
	int i;

	setpgid(0, 0);
	/* the target dies with sonde (or now, if sonde is already gone) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != k->sonde)
		_exit(127);
	for (i = 0; i < 3; i++) /* closed in sonde, and not redirected: closed here too */
		if (k->held[i])
			close(i);
	for (i = 0; i < k->nredirect; i++)
		if (dup2(k->from[i], k->to[i]) < 0)
			goto fail;
	if (k->barrier >= 0)
		while ((got = read(k->barrier, &c, 1)) < 0 && errno == EINTR)
			;
	if (got != 1)
		_exit(127);
	execve(k->argv[2], k->argv + 3, environ);
fail:
	rec.err = errno;
	if (write(k->report, &rec, sizeof(rec)) < 0)
		_exit(127);
	_exit(127);
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

/*
 * Without a barrier the target shares this program's pages until its exec: no
 * page tables copied, nothing to undo at the exec; this program goes on once
 * the exec is done (or failed). With a barrier this program must go on at once
 * (sonde needs the pid to attach before it releases the target), so the target
 * is a copy.
 */
static pid_t make_target(struct child *k)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	pid_t pid;

	if (k->barrier < 0) {
		pid = clone(target, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | CLONE_PARENT,
			    k);
		if (pid >= 0 || errno != ENOSYS)
			return pid;
	}
	pid = clone_parent();
	if (pid == 0)
		target(k);
	return pid;
}

/* One request: the target made and reported; its descriptors closed here. */
static void serve(struct child *k, const struct spawn_request *req, const int *fds, int nfds)
{
	struct report rec = { 0 };
	struct timespec ts;
	int i, need = 1 + (req->barrier ? 1 : 0) + req->nredirect;

	k->report = nfds > 0 ? fds[0] : -1;
	k->barrier = req->barrier && nfds > 1 ? fds[1] : -1;
	k->nredirect = req->nredirect;
	if (k->report < 0)
		goto out;
	if (nfds != need || req->nredirect < 0 || req->nredirect > 4) {
		rec.kind = 3;
		rec.err = EPROTO;
		goto reply;
	}
	for (i = 0; i < req->nredirect; i++) {
		k->from[i] = fds[nfds - req->nredirect + i];
		k->to[i] = req->target_fd[i];
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	rec.pid = make_target(k);
	rec.kind = rec.pid < 0 ? 3 : 1;
	rec.err = rec.pid < 0 ? errno : 0;
	rec.start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
reply:
	if (write(k->report, &rec, sizeof(rec)) < 0) {
		/* sonde is gone: the next recvmsg sees it */
	}
out:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

int main(int argc, char **argv)
{
	struct child k = { .argv = argv };
	int sock, i;

	if (argc < 4 || (sock = fd_arg(argv[1])) < 0)
		return 127;
	fcntl(sock, F_SETFD, FD_CLOEXEC);
	k.sonde = getppid();
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != k.sonde)
		return 127;
	/* descriptors received land above 2: what sonde had closed is held by
	   /dev/null here and closed again in each target (unless redirected) */
	for (i = 0; i < 3; i++)
		if (fcntl(i, F_GETFD) < 0 && errno == EBADF) {
			int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

			k.held[i] = fd == i;
			if (fd >= 0 && fd != i)
				close(fd);
		}
	for (;;) {
		union {
			char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct spawn_request req;
		struct iovec iov = { &req, sizeof(req) };
		struct msghdr msg = { .msg_iov = &iov,
				      .msg_iovlen = 1,
				      .msg_control = ctl.buf,
				      .msg_controllen = sizeof(ctl.buf) };
		struct cmsghdr *c;
		int fds[MAX_FDS], nfds = 0;
		ssize_t got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return 0; /* sonde closed the socket, or is gone */
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t j = 0; j < n && nfds < MAX_FDS; j++)
				memcpy(&fds[nfds++], CMSG_DATA(c) + j * sizeof(int), sizeof(int));
		}
		if (got != (ssize_t)sizeof(req) || (msg.msg_flags & MSG_CTRUNC))
			req.nredirect = -1; /* answered EPROTO */
		serve(&k, &req, fds, nfds);
	}
}

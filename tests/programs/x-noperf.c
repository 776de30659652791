/* Run a command where perf_event_open is refused (EACCES), as for an
   unprivileged user under a strict kernel.perf_event_paranoid: a seccomp filter
   that the command and its children inherit. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);

	if (argc < 2 || !f ||
	    seccomp_rule_add(f, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(perf_event_open), 0) ||
	    seccomp_load(f)) {
		fprintf(stderr, "usage: x-noperf CMD [ARGS...] (seccomp failed)\n");
		return 2;
	}
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}

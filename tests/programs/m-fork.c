/* m-fork.c - the parent allocates and frees, the child leaks a block, then
 * execs m-leaf (argv[1]), which leaks two blocks of 333 B. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *keep;

int main(int argc, char **argv)
{
	int i, status;
	pid_t pid;

	for (i = 0; i < 3; i++)
		free(malloc(111)); /* PARENT */
	pid = fork();
	if (pid == 0) {
		keep = malloc(222); /* CHILD: released by the exec, not leaked */
		if (argc > 1)
			execv(argv[1], argv + 1);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* s-exec.c - fork, exec argv[1] (with the rest as its arguments) in the child, wait. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	pid_t pid;
	int st;

	if (argc < 2)
		return 2;
	pid = fork();
	if (pid == 0) {
		execv(argv[1], argv + 1);
		perror("execv");
		_exit(127);
	}
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

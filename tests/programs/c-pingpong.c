/* c-pingpong N: a parent and a child pass one byte back and forth N times
 * through two pipes, so each blocks N times: at least 2N context switches. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, a[2], b[2], i;
	char c = 'x';
	pid_t pid;

	if (pipe(a) || pipe(b))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	for (i = 0; i < n; i++) {
		if (pid == 0) {
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				_exit(1);
		} else {
			if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
				return 1;
		}
	}
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return 0;
}

/* k-getppid N: exactly N getppid system calls (through syscall(2), so that no
 * library caches the answer), then exit. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, i;

	for (i = 0; i < n; i++)
		syscall(SYS_getppid);
	return 0;
}

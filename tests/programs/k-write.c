/* k-write FILE MB: write MB mebibytes to FILE in 1 MiB writes, fsync it, and
 * remove it: the writes are the process's I/O, the fsync waits on the disk. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[1 << 20];
	int mb = argc > 2 ? atoi(argv[2]) : 100, i, fd;

	if (argc < 2)
		return 2;
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	memset(buf, 'x', sizeof(buf));
	for (i = 0; i < mb; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 1;
	if (fsync(fd) || close(fd))
		return 1;
	unlink(argv[1]);
	return 0;
}

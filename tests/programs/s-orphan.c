/* s-orphan: leave a child sleeping for a minute in our process group, then exit. */
#include <unistd.h>

int main(void)
{
	if (fork() == 0) {
		sleep(60);
		_exit(0);
	}
	return 0;
}

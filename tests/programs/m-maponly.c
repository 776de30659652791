/*
 * m-maponly: a program that only maps memory, never calls malloc: six
 * anonymous mappings of 64 KiB, four unmapped again (collect memory --mmap).
 */
#include <sys/mman.h>

int main(void)
{
	void *p[6];
	int i;

	for (i = 0; i < 6; i++) {
		int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;

		p[i] = mmap(0, 65536, prot, flags, -1, 0); /* MAP */
		if (p[i] == MAP_FAILED)
			return 1;
		((char *)p[i])[0] = 1;
	}
	for (i = 0; i < 4; i++)
		munmap(p[i], 65536); /* UNMAP */
	return 0;
}

/*
 * Memory collector target: a pre-init function (.preinit_array) allocates
 * before any library's constructor has run, the memory runtime's and libc's
 * included; then main makes 10 temporary allocations of 1000 B and leaks one
 * of 4096 B.
 */
#include <stdio.h>
#include <stdlib.h>

static char *early;

static void pre(void)
{
	early = malloc(100);
}

__attribute__((section(".preinit_array"), used)) static void (*const preinit[])(void) = { pre };

int main(void)
{
	char *leak;

	for (int i = 0; i < 10; i++)
		free(malloc(1000));
	leak = malloc(4096);
	leak[0] = 1;
	return early == NULL;
}

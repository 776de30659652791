/*
 * t-stall N: stops sonde (its parent, the reader of its rings) before its
 * first traced call, makes N calls of leaf() while sonde stands still, lets
 * it go on, and makes N more: with --drop-oldest and a small ring, most of
 * the first N calls and the process's own description are dropped, and sonde
 * must still count every call (recorded or dropped) and name the functions.
 * Exits 2 when its parent is not sonde.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) void leaf(long i)
{
	sink += i;
}

__attribute__((no_instrument_function)) static int parent_is_sonde(void)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)getppid());
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return !strncmp(comm, "sonde", 5);
}

/* before any traced call, so before the runtime writes its first record */
__attribute__((constructor, no_instrument_function)) static void stop_reader(void)
{
	if (!parent_is_sonde())
		_exit(2);
	kill(getppid(), SIGSTOP);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, i;

	for (i = 0; i < n; i++)
		leaf(i);
	kill(getppid(), SIGCONT);
	for (i = 0; i < n; i++)
		leaf(i);
	return 0;
}

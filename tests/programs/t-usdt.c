/* Trace collector target with USDT probes (sys/sdt.h): `work` and `work_end`
   pair by name 5 times, `load` and `loaded` pair only when asked (3 times),
   `tick` fires 4 times alone. Every probe has a semaphore; the program prints
   how many times it found tick's set, so a test can see the tracer enabled it. */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <sys/sdt.h>

#define SEMAPHORE(name)                                                                            \
	unsigned short sonde_##name##_semaphore __attribute__((section(".probes"), used))
SEMAPHORE(work);
SEMAPHORE(work_end);
SEMAPHORE(load);
SEMAPHORE(loaded);
SEMAPHORE(tick);

static volatile int sink;

static void step(int i)
{
	DTRACE_PROBE1(sonde, work, i);
	for (int k = 0; k < 1000 * (i + 1); k++)
		sink += k;
	DTRACE_PROBE1(sonde, work_end, i);
}

int main(void)
{
	int enabled = 0;

	for (int i = 0; i < 3; i++) {
		DTRACE_PROBE(sonde, load);
		sink += i;
		DTRACE_PROBE(sonde, loaded);
	}
	for (int i = 0; i < 5; i++)
		step(i);
	for (int i = 0; i < 4; i++) {
		if (sonde_tick_semaphore)
			enabled++;
		DTRACE_PROBE1(sonde, tick, i);
	}
	printf("tick enabled %d\n", enabled);
	return 0;
}

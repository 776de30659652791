/* c-phases GAUGE: two regions of known power for the power collector's energy
 * per region, on a test tree: region "low" holds the hwmon gauge GAUGE (µW)
 * at 5 W for 0.4 s, then region "high" at 20 W for 0.4 s. */
#include <stdio.h>
#include <time.h>
#include <sonde/counters.h>

static int set_watts(const char *path, long w)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "%ld\n", w * 1000000);
	return fclose(f);
}

static void hold(void)
{
	struct timespec t = { 0, 400000000 };

	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	if (argc < 2 || set_watts(argv[1], 5))
		return 1;
	sonde_region_begin("low");
	hold();
	sonde_region_end();
	if (set_watts(argv[1], 20))
		return 1;
	sonde_region_begin("high");
	hold();
	sonde_region_end();
	return 0;
}

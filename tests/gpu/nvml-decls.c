/*
 * nvml-decls.c - the NVML structures and values sonde declares
 * (lib/engines/gpu/nvml.c) against NVIDIA's nvml.h, where it is installed.
 * Prints TAP.
 */
#include <stddef.h>
#include <stdio.h>
#include <nvml.h>

static int n, failed;

static void check(const char *what, long ours, long theirs)
{
	n++;
	if (ours == theirs)
		printf("ok %d - %s = %ld\n", n, what, ours);
	else
		printf("not ok %d - %s: sonde has %ld, nvml.h %ld\n", n, what, ours, theirs), failed++;
}

int main(void)
{
	/* sonde's: struct { unsigned gpu, memory; } and { unsigned long long total, free, used; } */
	check("sizeof(nvmlUtilization_t)", 8, sizeof(nvmlUtilization_t));
	check("nvmlUtilization_t.gpu", 0, offsetof(nvmlUtilization_t, gpu));
	check("nvmlUtilization_t.memory", 4, offsetof(nvmlUtilization_t, memory));
	check("sizeof(nvmlMemory_t)", 24, sizeof(nvmlMemory_t));
	check("nvmlMemory_t.total", 0, offsetof(nvmlMemory_t, total));
	check("nvmlMemory_t.used", 16, offsetof(nvmlMemory_t, used));
	check("NVML_CLOCK_SM", 1, NVML_CLOCK_SM);
	check("NVML_CLOCK_MEM", 2, NVML_CLOCK_MEM);
	check("NVML_TEMPERATURE_GPU", 0, NVML_TEMPERATURE_GPU);
	check("NVML_SUCCESS", 0, NVML_SUCCESS);
	printf("1..%d\n", n);
	return failed != 0;
}

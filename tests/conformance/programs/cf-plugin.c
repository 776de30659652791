/* cf-plugin.c - a library cf-dlopen loads with dlopen. */
#include <stdlib.h>

volatile int plugin_sink;

__attribute__((noinline)) void plugin_inner(int i)
{
	plugin_sink += i;
}

void *plugin_work(int n)
{
	int i;

	for (i = 0; i < n; i++)
		plugin_inner(i);
	return malloc(48); /* freed by the caller */
}

/*
 * cf-dlopen.c - dlopen argv[1] (a cf-plugin build) with the flags argv[2]
 * names ("deepbind" adds RTLD_DEEPBIND), call into it, free what it allocated.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void call_plugin(void *(*work)(int))
{
	free(work(5));
}

int main(int argc, char **argv)
{
	int flags = RTLD_NOW;
	void *h;
	void *(*work)(int);

	if (argc < 2)
		return 2;
	if (argc > 2 && strcmp(argv[2], "deepbind") == 0)
		flags |= RTLD_DEEPBIND;
	h = dlopen(argv[1], flags);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	*(void **)&work = dlsym(h, "plugin_work");
	call_plugin(work);
	call_plugin(work);
	dlclose(h);
	return 0;
}

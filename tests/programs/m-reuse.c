/*
 * m-reuse DIR: loads DIR/libm-reuse-a.so, allocates 100 bytes in it, closes it,
 * then loads DIR/libm-reuse-b.so, which the loader maps where the first was,
 * and allocates 200 bytes in it: each allocation must be named after the
 * library that made it (the same addresses, two functions).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void once(const char *dir, const char *lib, const char *fn)
{
	char path[4096];
	void *h, *(*f)(void), *p;

	snprintf(path, sizeof(path), "%s/%s", dir, lib);
	h = dlopen(path, RTLD_NOW);
	if (!h || !(f = (void *(*)(void))dlsym(h, fn))) {
		fprintf(stderr, "m-reuse: %s\n", dlerror());
		exit(1);
	}
	p = f();
	free(p);
	dlclose(h);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";

	once(dir, "libm-reuse-a.so", "alloc_a");
	once(dir, "libm-reuse-b.so", "alloc_b");
	return 0;
}

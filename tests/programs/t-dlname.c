/*
 * t-dlname.c - dlopen a library by its bare name, found through this program's
 * RUNPATH only (as the dynamic linker searches for the caller), and call it.
 */
#include <dlfcn.h>
#include <stdio.h>

void liba_fn(void);

int main(void)
{
	void *h = dlopen("libt-libb.so", RTLD_NOW);
	void (*fn)(void);

	if (!h) {
		printf("%s\n", dlerror());
		return 1;
	}
	*(void **)&fn = dlsym(h, "libb_fn");
	fn();
	liba_fn(); /* linked: what gives this program its RUNPATH */
	printf("loaded by name\n");
	return dlclose(h);
}

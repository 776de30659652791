/*
 * runtime-file.c - find a runtime file (see runtime-file.h).
 */
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "runtime-file.h"

char *sonde_runtime_file(const char *name)
{
	const char *env = getenv("SONDE_RUNTIME_DIR");
	static const char *const rel[] = { "sonde/", "../runtime/memory/", "../runtime/trace/",
					   "../runtime/spawn/", NULL };
	char *path = NULL, *copy, *dir;
	Dl_info di;
	size_t i;

	if (env) {
		if (asprintf(&path, "%s/%s", env, name) < 0)
			return NULL;
		if (access(path, R_OK) == 0)
			return path;
		free(path);
		return NULL;
	}
	if (!dladdr((void *)sonde_runtime_file, &di) || !di.dli_fname)
		return NULL;
	copy = realpath(di.dli_fname, NULL);
	if (!copy)
		return NULL;
	dir = dirname(copy);
	for (i = 0; rel[i]; i++) {
		if (asprintf(&path, "%s/%s%s", dir, rel[i], name) < 0)
			break;
		if (access(path, R_OK) == 0) {
			char *real = realpath(path, NULL);

			free(path);
			free(copy);
			return real;
		}
		free(path);
		path = NULL;
	}
	free(copy);
	return NULL;
}

/*
 * runtime-file.c - find a runtime file (see runtime-file.h).
 */
#include <errno.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "config.h"
#include "runtime-file.h"

char *sonde_runtime_file(const char *name)
{
	const char *env = getenv("SONDE_RUNTIME_DIR");
	static const char *const rel[] = { "sonde/",
					   "../runtime/memory/",
					   "../runtime/trace/",
					   "../runtime/spawn/",
					   "../runtime/sample/",
					   "../runtime/gpu/",
					   NULL };
	char *path = NULL, *copy, *dir;
	Dl_info di;
	size_t i;

	if (env) {
		if (asprintf(&path, "%s/%s", env, name) < 0)
			return NULL; /* errno ENOMEM */
		if (access(path, R_OK) == 0)
			return path;
		free(path);
		errno = ENOENT;
		return NULL;
	}
	if (!dladdr((void *)sonde_runtime_file, &di) || !di.dli_fname) {
		errno = ENOENT;
		return NULL;
	}
	copy = realpath(di.dli_fname, NULL);
	if (!copy)
		return NULL;
	dir = dirname(copy);
	for (i = 0; rel[i]; i++) {
		if (asprintf(&path, "%s/%s%s", dir, rel[i], name) < 0) {
			free(copy);
			errno = ENOMEM;
			return NULL;
		}
		if (access(path, R_OK) == 0) {
			char *real = realpath(path, NULL);
			int e = errno;

			free(path);
			free(copy);
			errno = e;
			return real;
		}
		free(path);
		path = NULL;
	}
	free(copy);
	errno = ENOENT;
	return NULL;
}

/* dir holds sonde/run.py */
static bool has_package(const char *dir)
{
	char path[4096];

	return snprintf(path, sizeof(path), "%s/sonde/run.py", dir) < (int)sizeof(path) &&
	       access(path, R_OK) == 0;
}

char *sonde_python_dir(void)
{
	const char *env = getenv("SONDE_PYTHON_DIR");
	char *copy, *path = NULL;
	Dl_info di;

	if (env && *env)
		return has_package(env) ? strdup(env) : NULL;
	if (dladdr((void *)sonde_python_dir, &di) && di.dli_fname &&
	    (copy = realpath(di.dli_fname, NULL))) {
		if (asprintf(&path, "%s/../python", dirname(copy)) < 0)
			path = NULL;
		free(copy);
		if (path && has_package(path)) {
			char *real = realpath(path, NULL);

			free(path);
			return real;
		}
		free(path);
	}
	return SONDE_PYTHONDIR[0] && has_package(SONDE_PYTHONDIR) ? strdup(SONDE_PYTHONDIR) : NULL;
}

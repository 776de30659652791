/*
 * py-exe.c - is a command a CPython interpreter, or a script run by one?
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "py-exe.h"

/* basename of argv0 names a CPython interpreter: python, python3, python3.11, python3-dbg */
bool py_exe__is_python(const char *argv0)
{
	const char *b = strrchr(argv0, '/');

	b = b ? b + 1 : argv0;
	if (strncmp(b, "python", 6))
		return false;
	for (b += 6; *b; b++)
		if (!((*b >= '0' && *b <= '9') || *b == '.'))
			return !strcmp(b, "-dbg");
	return true;
}

/* The #! line of path when it names python: its words (a heap vector), else NULL. */
char **py_exe__shebang(const char *path)
{
	char line[256], *p, *tok, *save = NULL, **v;
	size_t n = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	if (!fgets(line, sizeof(line), f) || strncmp(line, "#!", 2) || !strstr(line, "python")) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	v = calloc(8, sizeof(*v));
	if (!v)
		return NULL;
	for (p = line + 2; n < 7 && (tok = strtok_r(p, " \t\r\n", &save)); p = NULL)
		v[n++] = tok;
	if (!n) {
		free(v);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) { /* own the words */
		v[i] = strdup(v[i]);
		if (!v[i]) {
			while (i)
				free(v[--i]);
			free(v);
			return NULL;
		}
	}
	return v;
}

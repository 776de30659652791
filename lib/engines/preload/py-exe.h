/*
 * py-exe.h - is a command a CPython interpreter, or a script run by one?
 * (the python and sample collectors ask).
 */
#ifndef SONDE_PY_EXE_H
#define SONDE_PY_EXE_H

#include <stdbool.h>

/* basename of argv0 names a CPython interpreter: python, python3, python3.11, python3-dbg */
bool py_exe__is_python(const char *argv0);
/* The #! line of path when it names python: its words (a heap vector), else NULL. */
char **py_exe__shebang(const char *path);

#endif

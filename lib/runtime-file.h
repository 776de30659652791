/*
 * runtime-file.h - find a file sonde runs inside or beside its targets (the
 * preloaded runtimes, sonde-spawn). Internal to libsonde.
 */
#ifndef SONDE_RUNTIME_FILE_H
#define SONDE_RUNTIME_FILE_H

/*
 * The path of name: in $SONDE_RUNTIME_DIR when it is set, else beside libsonde
 * (installed: <libdir>/sonde/; build tree: runtime/<part>/). A heap string, or
 * NULL with errno ENOENT when it is not there (ENOMEM: it could not be looked for).
 */
char *sonde_runtime_file(const char *name);

/*
 * The directory that holds the Python package sonde/ (collect python runs
 * its runner): $SONDE_PYTHON_DIR when set, else the build tree's python/
 * beside libsonde, else where it was installed. A heap string, or NULL.
 */
char *sonde_python_dir(void);

#endif

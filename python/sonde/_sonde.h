/* _sonde.h - what the extension's C files share. */
#ifndef SONDE_PY_H
#define SONDE_PY_H

#include <Python.h>

/* sonde.SondeError, sonde.StateError (also a RuntimeError), sonde.NotSupported */
extern PyObject *SondePy_Error, *SondePy_StateError, *SondePy_NotSupported;

/* Add the counter service's types and functions to the module; 0 or -1. */
int sondepy_counters_init(PyObject *m);
/* Add view() (libsonde's tables, charts, flame graphs, HTML report); 0 or -1. */
int sondepy_views_init(PyObject *m);
/* Add CpuCollector (every Python call and return, per-thread rings); 0 or -1. */
int sondepy_cpu_init(PyObject *m);

#endif

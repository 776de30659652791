/*
 * _gil.c - ask the GIL's holder to let it go (see _sample.h).
 *
 * CPython has no call for it: a thread that waits for the GIL sets the
 * interpreter's drop request after the switch interval, and the holder lets
 * go at its next check. This file makes the same two stores, on the
 * interpreter whose internal header it was built against (3.11's layout),
 * and is built on its own because that header needs Py_BUILD_CORE from the
 * first include on.
 */
#include <patchlevel.h> /* PY_VERSION_HEX, before Python.h decides what it shows */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define SONDE_GIL_ASK 1
#define Py_BUILD_CORE 1
#else
#define SONDE_GIL_ASK 0
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if SONDE_GIL_ASK
#include <internal/pycore_interp.h>
#endif
#include <stdbool.h>

bool py_gil_can_ask(void);
void py_gil_ask(PyInterpreterState *interp);

bool py_gil_can_ask(void)
{
	return SONDE_GIL_ASK;
}

void py_gil_ask(PyInterpreterState *interp)
{
#if SONDE_GIL_ASK
	/* SET_GIL_DROP_REQUEST: the request, then the eval loop's breaker */
	_Py_atomic_store_relaxed(&interp->ceval.gil_drop_request, 1);
	_Py_atomic_store_relaxed(&interp->ceval.eval_breaker, 1);
#else
	(void)interp;
#endif
}

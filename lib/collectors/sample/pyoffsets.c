/*
 * pyoffsets.c - where CPython keeps its threads and frames, for the version
 * sonde was built against (its own headers, Py_BUILD_CORE): what pystack.c
 * reads in a target running the same major.minor version.
 */
#include "config.h"
#include <stddef.h>
#if SONDE_HAVE_PYTHON_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_frame.h>
#endif
#include "sample.h"

#if SONDE_HAVE_PYTHON_HEADERS && PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
const struct smp_pyoffsets smp_pyoffsets = {
	.ok = true,
	.version_hex = PY_VERSION_HEX,
	.runtime_interp_head = offsetof(_PyRuntimeState, interpreters.head),
	.interp_next = offsetof(PyInterpreterState, next),
	.interp_threads_head = offsetof(PyInterpreterState, threads.head),
	.ts_next = offsetof(PyThreadState, next),
	.ts_native_tid = offsetof(PyThreadState, native_thread_id),
	.ts_cframe = offsetof(PyThreadState, cframe),
	.cframe_current = offsetof(_PyCFrame, current_frame),
	.frame_code = offsetof(_PyInterpreterFrame, f_code),
	.frame_previous = offsetof(_PyInterpreterFrame, previous),
	.frame_entry = offsetof(_PyInterpreterFrame, is_entry),
	.frame_size = sizeof(_PyInterpreterFrame),
	.code_qualname = offsetof(PyCodeObject, co_qualname),
	.code_filename = offsetof(PyCodeObject, co_filename),
	.code_firstlineno = offsetof(PyCodeObject, co_firstlineno),
	.str_length = offsetof(PyASCIIObject, length),
	.str_state = offsetof(PyASCIIObject, state),
	.ascii_size = sizeof(PyASCIIObject),
	.compact_size = sizeof(PyCompactUnicodeObject),
};
#else
/* only CPython 3.11's frame layout (is_entry marks where the eval loop was entered) is known */
const struct smp_pyoffsets smp_pyoffsets = { .ok = false };
#endif

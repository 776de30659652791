/*
 * dynlib.h - libraries only some commands need, loaded on their first use.
 * Internal to libsonde.
 *
 * libcapstone and libpfm4 hold ~120 000 relocations between them. Linked,
 * they cost every sonde process their relocation at start-up: each page of
 * their .data.rel.ro copied on write, ~10 ms a process on a 2-core VM where
 * a page fault costs ~10 us. Loaded here, only what decodes machine code or
 * names hardware events pays it. Their headers are compiled in and each is
 * opened by the soname the build linked against (config.h), so the ABI is the
 * one compiled for.
 */
#ifndef SONDE_DYNLIB_H
#define SONDE_DYNLIB_H

#include "config.h"
#include <perfmon/pfmlib_perf_event.h>
#if SONDE_HAVE_CAPSTONE
#include <capstone/capstone.h>
#endif

/* libpfm4's functions sonde calls. */
struct sonde_pfm {
	pfm_err_t (*initialize)(void);
	pfm_err_t (*get_pmu_info)(pfm_pmu_t pmu, pfm_pmu_info_t *info);
	int (*get_event_next)(int idx);
	pfm_err_t (*get_event_info)(int idx, pfm_os_t os, pfm_event_info_t *info);
	pfm_err_t (*get_os_event_encoding)(const char *str, int dfl_plm, pfm_os_t os, void *args);
};

/* libpfm4, loaded once (thread-safe); NULL where it cannot be. */
const struct sonde_pfm *sonde_pfm(void);

#if SONDE_HAVE_CAPSTONE
/* capstone's functions sonde calls. */
struct sonde_cs {
	cs_err (*open)(cs_arch arch, cs_mode mode, csh *handle);
	cs_err (*option)(csh handle, cs_opt_type type, size_t value);
	cs_insn *(*malloc)(csh handle);
	bool (*disasm_iter)(csh handle, const uint8_t **code, size_t *size, uint64_t *address,
			    cs_insn *insn);
	void (*free)(cs_insn *insn, size_t count);
	cs_err (*close)(csh *handle);
};

/* capstone, loaded once (thread-safe); NULL where it cannot be. */
const struct sonde_cs *sonde_cs(void);
#endif

#endif

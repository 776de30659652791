/*
 * bpf-log.c - keep libbpf's last warning (see bpf-log.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "bpf-log.h"

static char last_warning[256];

static int libbpf_message(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN) {
		size_t n;

		vsnprintf(last_warning, sizeof(last_warning), fmt, ap);
		n = strlen(last_warning);
		while (n && (last_warning[n - 1] == '\n' || last_warning[n - 1] == ' '))
			last_warning[--n] = '\0';
	}
	return 0;
}

void sonde_bpf_log__capture(void)
{
	libbpf_set_print(libbpf_message);
}

const char *sonde_bpf_log__last(void)
{
	return last_warning;
}

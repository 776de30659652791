/*
 * log.c - the logging callback. The library formats; the program decides where
 * messages go. Domains are matched as whole words of the enabled list.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sonde/log.h>

static sonde_log_fn log_fn;
static void *log_ctx;
static enum sonde_log_level log_level = SONDE_LOG_WARN;
static char log_domains[256];

void sonde_log__set_callback(sonde_log_fn fn, void *ctx)
{
	log_fn = fn;
	log_ctx = ctx;
}

void sonde_log__set_level(enum sonde_log_level level)
{
	log_level = level;
}

int sonde_log__enable_domains(const char *csv)
{
	if (!csv || !*csv)
		return -EINVAL;
	snprintf(log_domains, sizeof(log_domains), ",%s,", csv);
	return 0;
}

int sonde_log__enabled(enum sonde_log_level level, const char *domain)
{
	char want[64];

	if (!log_fn)
		return 0;
	if (level != SONDE_LOG_DEBUG)
		return level <= log_level;
	if (!log_domains[0])
		return 0;
	if (strstr(log_domains, ",all,"))
		return 1;
	snprintf(want, sizeof(want), ",%s,", domain ? domain : "");
	return strstr(log_domains, want) != NULL;
}

void sonde_log(enum sonde_log_level level, const char *domain, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!sonde_log__enabled(level, domain))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fn(level, domain, msg, log_ctx);
}

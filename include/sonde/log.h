/*
 * log.h - the library's only way to say something.
 *
 * libsonde never prints: messages go to the callback the program installs
 * (the CLI prints them to stderr). Debug messages belong to a domain ("runner",
 * "store", "plugin", ...) and are delivered only when that domain is enabled.
 */
#ifndef SONDE_LOG_H
#define SONDE_LOG_H

enum sonde_log_level {
	SONDE_LOG_ERROR,
	SONDE_LOG_WARN,
	SONDE_LOG_INFO,
	SONDE_LOG_DEBUG,
};

typedef void (*sonde_log_fn)(enum sonde_log_level level, const char *domain, const char *msg,
			     void *ctx);

/* Install the callback (NULL drops every message). */
void sonde_log__set_callback(sonde_log_fn fn, void *ctx);
/* Messages above this level are dropped (default SONDE_LOG_WARN). */
void sonde_log__set_level(enum sonde_log_level level);
/*
 * Enable debug domains from a comma-separated list ("runner,store" or "all").
 * Returns 0, or -EINVAL for an empty list.
 */
int sonde_log__enable_domains(const char *csv);
int sonde_log__enabled(enum sonde_log_level level, const char *domain);
void sonde_log(enum sonde_log_level level, const char *domain, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define sonde_debug(domain, ...) sonde_log(SONDE_LOG_DEBUG, domain, __VA_ARGS__)

#endif

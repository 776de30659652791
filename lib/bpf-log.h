/*
 * bpf-log.h - libbpf's messages, kept instead of printed (the library never
 * prints): the BPF loaders of the trace and sched collectors quote libbpf's
 * last warning in their error messages.
 */
#ifndef SONDE_BPF_LOG_H
#define SONDE_BPF_LOG_H

/* Route libbpf's messages here (idempotent). */
void sonde_bpf_log__capture(void);
/* libbpf's last warning, without its newline; "" when none. */
const char *sonde_bpf_log__last(void);

#endif

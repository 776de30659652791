/*
 * proto.h - the SIGPROF sampler (runtime/sample, libsonde-sample.so) and the
 * sample collector: what the runtime reads from its environment and the
 * records it writes after rt.h's process and module records.
 */
#ifndef SONDE_SAMPLE_PROTO_H
#define SONDE_SAMPLE_PROTO_H

#include <stdint.h>

#define SMP_ENV_RING "SONDE_SAMPLE_RING"
#define SMP_ENV_HZ   "SONDE_SAMPLE_HZ"

#define SMP_RT_SAMPLE	 3 /* struct smp_rt_sample + pc[n] */
#define SMP_RT_MAX_DEPTH 127

struct smp_rt_sample {
	uint32_t hdr;
	uint32_t tid;
	uint64_t ns;	 /* CLOCK_MONOTONIC */
	uint64_t weight; /* the thread's CPU time the sample stands for, ns */
	uint32_t n;	 /* pc[0] is where the thread was; then return addresses */
	uint32_t truncated;
	uint64_t pc[];
};

#endif

/*
 * What heaptrack's build generates as util/config.h for its test.cpp
 * (tests/data/heaptrack/manual), for Debian 12's glibc 2.36: no cfree, valloc.
 */
#ifndef SONDE_HEAPTRACK_TEST_CONFIG_H
#define SONDE_HEAPTRACK_TEST_CONFIG_H
#define HAVE_CFREE 0
#define HAVE_VALLOC 1
#endif

/*
 * version.c - the library's version.
 */
#include "config.h"
#include <sonde/sonde.h>

const char *sonde_version(void)
{
	return SONDE_VERSION;
}

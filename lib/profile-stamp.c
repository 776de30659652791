/*
 * profile-stamp.c - where and when a profile was measured: the machine, the
 * git commit of the current directory, the date and sonde's version. Apart from
 * profile.c so that reading and writing profiles needs neither git nor sysfs.
 */
#include <errno.h>
#include <time.h>
#include "config.h"
#include <sonde/git.h>
#include <sonde/profile.h>
#include <sonde/sysinfo.h>

int sonde_profile__stamp(struct sonde_profile *p)
{
	json_t *md = sonde_profile__metadata(p);
	char origin[41], date[64];
	time_t now = time(NULL);
	struct tm tm;
	int rc = 0;

	rc |= sonde_profile__set(sonde_profile__root(p), "machine", sonde_sysinfo__machine());
	if (sonde_git__resolve(".", "HEAD", origin) == 0) {
		rc |= sonde_profile__set_origin(p, origin);
		rc |= sonde_profile__set(md, "dirty", json_boolean(sonde_git__dirty(".") == 1));
	}
	localtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S%z", &tm);
	rc |= sonde_profile__set(md, "date", json_string(date));
	rc |= sonde_profile__set(md, "sonde_version", json_string(SONDE_VERSION));
	return rc ? -ENOMEM : 0;
}

/*
 * profile-stamp.c - where and when a profile was measured: the machine, the
 * git commit of the current directory, the date and sonde's version, and the
 * job this process is a rank of, with the host's clocks. Apart from
 * profile.c so that reading and writing profiles needs neither git nor sysfs.
 */
#include <errno.h>
#include <time.h>
#include "config.h"
#include <sonde/git.h>
#include <sonde/job.h>
#include <sonde/profile.h>
#include <sonde/sysinfo.h>

int sonde_profile__stamp(struct sonde_profile *p)
{
	struct sonde_git_origin o;

	int rc;

	sonde_git__origin_start(&o, ".");
	sonde_git__origin_finish(&o);
	rc = sonde_profile__stamp_origin(p, &o);
	return rc ? rc : sonde_profile__stamp_job(p);
}

int sonde_profile__stamp_job(struct sonde_profile *p)
{
	json_t *md = sonde_profile__metadata(p), *h = sonde_profile__header(p);
	struct sonde_job j;
	int rc = 0;

	rc |= sonde_profile__set(md, "clock", sonde_job__clock());
	switch (sonde_job__detect(NULL, &j)) {
	case 1:
		rc |= sonde_profile__set(md, "job", sonde_job__json(&j));
		/* fall through */
	case 0:
		if (j.run_id[0]) /* the job's, or SONDE_RUN_ID */
			rc |= sonde_profile__set(h, "run_id", json_string(j.run_id));
		break;
	default: /* a launcher's variables that are not numbers: no job */
		break;
	}
	return rc ? -ENOMEM : 0;
}

int sonde_profile__stamp_origin(struct sonde_profile *p, const struct sonde_git_origin *o)
{
	json_t *md = sonde_profile__metadata(p);
	char date[64];
	time_t now = time(NULL);
	struct tm tm;
	int rc = 0;

	if (o->error)
		return o->error; /* a profile without the origin it was measured on */
	rc |= sonde_profile__set_part(p, "machine", sonde_sysinfo__machine());
	if (o->commit[0]) {
		rc |= sonde_profile__set_origin(p, o->commit);
		rc |= sonde_profile__set(md, "dirty", json_boolean(o->dirty == 1));
	}
	localtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S%z", &tm);
	rc |= sonde_profile__set(md, "date", json_string(date));
	rc |= sonde_profile__set(md, "sonde_version", json_string(SONDE_VERSION));
	return rc ? -ENOMEM : 0;
}

/*
 * sysinfo.c - describe the machine: uname, the CPU model, CPU count, memory.
 */
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <sonde/sysinfo.h>

/*
 * The value of the first "key : value" line of a /proc file, JSON null when it
 * has none or cannot be read, NULL when memory ran out.
 */
static json_t *proc_field(const char *path, const char *key)
{
	char line[8192]; /* the flags line of /proc/cpuinfo is long */
	size_t klen = strlen(key);
	FILE *f = fopen(path, "re");
	json_t *v = NULL;

	if (!f)
		return errno == ENOMEM ? NULL : json_null();
	for (;;) {
		if (!fgets(line, sizeof(line), f)) {
			v = json_null();
			break;
		}
		char *colon = strchr(line, ':'), *val;

		if (!colon || strncmp(line, key, klen) ||
		    (line[klen] != ' ' && line[klen] != '\t' && line[klen] != ':'))
			continue;
		val = colon + 1;
		val += strspn(val, " \t");
		val[strcspn(val, "\n")] = '\0';
		v = json_string(val);
		break;
	}
	fclose(f);
	return v;
}

bool sonde_sysinfo__cpu_flag(const char *flag)
{
	json_t *v = proc_field("/proc/cpuinfo", "flags");
	const char *s = json_string_value(v), *hit = s;
	size_t len = strlen(flag);
	bool found = false;

	while (hit && (hit = strstr(hit, flag))) {
		if ((hit == s || hit[-1] == ' ') && (hit[len] == ' ' || hit[len] == '\0')) {
			found = true;
			break;
		}
		hit += len;
	}
	json_decref(v);
	return found;
}

json_t *sonde_sysinfo__machine(void)
{
	struct utsname u;
	json_t *m = json_object(), *mem;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	int rc = 0;

	if (!m)
		return NULL;
	if (uname(&u) == 0) {
		rc |= json_object_set_new(m, "architecture", json_string(u.machine));
		rc |= json_object_set_new(m, "system", json_string(u.sysname));
		rc |= json_object_set_new(m, "release", json_string(u.release));
		rc |= json_object_set_new(m, "host", json_string(u.nodename));
	} else {
		rc |= json_object_set_new(m, "architecture", json_null());
		rc |= json_object_set_new(m, "system", json_null());
		rc |= json_object_set_new(m, "release", json_null());
		rc |= json_object_set_new(m, "host", json_null());
	}
	rc |= json_object_set_new(m, "cpu", proc_field("/proc/cpuinfo", "model name"));
	rc |= json_object_set_new(m, "cpus", cpus > 0 ? json_integer(cpus) : json_null());
	mem = pages > 0 && psize > 0 ? json_integer((json_int_t)pages * psize) : json_null();
	rc |= json_object_set_new(m, "memory", mem);
	if (rc) { /* a machine with a field left out would read as one without it */
		json_decref(m);
		return NULL;
	}
	return m;
}

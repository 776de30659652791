/*
 * libFuzzer target: the store's SQL paths on an index it did not write. The
 * input is the bytes of .sonde/index.db (a damaged file, another program's
 * database, rows that break the schema's promises); opening it, listing it,
 * counting, adding a profile, removing a row and rebuilding it must end in an
 * answer or an error, never a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>
#include <sonde/file.h>
#include <sonde/store.h>

static char dir[64], db[128], profile[128];

static const char prof[] =
	"{\"format_version\": 1, \"origin\": \"0123456789abcdef0123456789abcdef01234567\","
	"\"header\": {\"type\": \"time\", \"cmd\": \"x\", \"args\": [], \"workload\": \"\","
	"\"units\": {\"time\": \"ns\"}}, \"collector_info\": {\"name\": \"time\", \"params\": {}},"
	"\"postprocessors\": [], \"resource_type_map\": {\"r#0\": {\"uid\": \"r\","
	"\"type\": \"time\", \"subtype\": \"real\"}}, \"resources\": {\"r#0\": "
	"{\"amount\": [1]}}, \"models\": []}";

static void setup(void)
{
	char sub[160];
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/sonde-fuzz-store-%d", (int)getpid());
	snprintf(sub, sizeof(sub), "%s/.sonde/objects", dir);
	sonde_file__mkdir_p(sub, 0755);
	snprintf(sub, sizeof(sub), "%s/.sonde/jobs", dir);
	sonde_file__mkdir_p(sub, 0755);
	snprintf(db, sizeof(db), "%s/.sonde/index.db", dir);
	snprintf(profile, sizeof(profile), "%s/p.json", dir);
	fd = open(profile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, prof, sizeof(prof) - 1) < 0)
			abort();
		close(fd);
	}
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	if (f->level >= 1) /* what the last input left: objects, kept indexes, the layout */
		remove(path);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct sonde_store_list l;
	struct sonde_store *s;
	char root[96];
	unsigned n;
	int fd;

	if (!dir[0])
		setup();
	snprintf(root, sizeof(root), "%s/.sonde", dir);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	snprintf(root, sizeof(root), "%s/.sonde/objects", dir);
	sonde_file__mkdir_p(root, 0755);
	snprintf(root, sizeof(root), "%s/.sonde/jobs", dir);
	sonde_file__mkdir_p(root, 0755);
	fd = open(db, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
	s = sonde_store__open(dir);
	if (s) {
		if (!sonde_store__registered(s, NULL, &l))
			sonde_store_list__release(&l);
		if (!sonde_store__registered(s, "0123456789abcdef0123456789abcdef01234567", &l))
			sonde_store_list__release(&l);
		sonde_store__count(s, "0123456789abcdef0123456789abcdef01234567");
		if (sonde_store__add(s, profile, &err) == 0 &&
		    !sonde_store__registered(s, NULL, &l)) {
			size_t i;

			for (i = 0; i < l.n; i++)
				sonde_store__remove(s, l.v[i].id);
			sonde_store_list__release(&l);
		}
		sonde_strbuf__reset(&err);
		sonde_store__remove(s, 1);
		sonde_store__free(s);
	}
	/* fsck over whatever the index was (objects/ is empty again) */
	sonde_store__rebuild(dir, &n, &err);
	sonde_strbuf__release(&err);
	return 0;
}

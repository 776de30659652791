/*
 * store.c - the .sonde/ store (see store.h).
 *
 * Invariants: a row of the index always names an object file that was fully
 * written before the row was committed; a failed add removes the object it wrote;
 * remove deletes the row first and the object after the commit, so the index
 * never names a missing file because of sonde.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sonde/file.h>
#include <sonde/log.h>
#include <sonde/store.h>

struct sonde_store {
	char *worktree;
	char *root;
	char *jobs;
	char *objects;
	sqlite3 *db;
};

static const char schema[] = "CREATE TABLE IF NOT EXISTS profiles ("
			     " id INTEGER PRIMARY KEY,"
			     " origin TEXT NOT NULL,"
			     " path TEXT NOT NULL UNIQUE," /* relative to .sonde/ */
			     " collector TEXT, type TEXT, cmd TEXT, workload TEXT,"
			     " added INTEGER NOT NULL, digest TEXT);"
			     "CREATE INDEX IF NOT EXISTS profiles_origin ON profiles(origin);";
/* Version 2: a profile's content is registered once (digest, unique). */
static const char schema_v2[] = "CREATE UNIQUE INDEX IF NOT EXISTS profiles_digest "
				"ON profiles(digest);"
				"PRAGMA user_version = 2;";

/* The version-1 index had no digest column: add it (its rows keep NULL). */
static int migrate(sqlite3 *db)
{
	sqlite3_stmt *st;
	bool has = false;

	if (sqlite3_prepare_v2(db,
			       "SELECT 1 FROM pragma_table_info('profiles') WHERE name = "
			       "'digest'",
			       -1, &st, NULL) != SQLITE_OK)
		return SQLITE_ERROR;
	has = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (!has && sqlite3_exec(db, "ALTER TABLE profiles ADD COLUMN digest TEXT", NULL, NULL,
				 NULL) != SQLITE_OK)
		return SQLITE_ERROR;
	return sqlite3_exec(db, schema_v2, NULL, NULL, NULL);
}

/* The content's digest: FNV-1a over the bytes forwards and backwards (128 bits). */
static void digest_of(const char *buf, size_t len, char out[40])
{
	uint64_t h = 0xcbf29ce484222325ull, g = 0x84222325cbf29ce4ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h = (h ^ (unsigned char)buf[i]) * 0x100000001b3ull;
		g = (g ^ (unsigned char)buf[len - 1 - i]) * 0x100000001b3ull;
	}
	snprintf(out, 40, "%016llx%016llx", (unsigned long long)h, (unsigned long long)g);
}

static int index_file(struct sonde_store *s, const char *stored, struct sonde_strbuf *err);

static int user_version(sqlite3 *db, int *v)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);

	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	*v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/*
 * Open the index: read-only when it cannot be written (read commands still
 * work), created or brought up to date otherwise, and checked: a damaged file
 * is -EUCLEAN (sonde fsck rebuilds it from the stored profiles), one that
 * cannot be read -EACCES.
 */
static int open_db(const char *root, sqlite3 **db)
{
	char path[PATH_MAX];
	bool ro;
	int rc, v = 0;

	snprintf(path, sizeof(path), "%s/index.db", root);
	ro = access(path, F_OK) == 0 && access(path, W_OK) < 0;
	rc = sqlite3_open_v2(path, db,
			     ro ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			     NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(*db, 60000); /* many writers on a loaded machine wait */
	if (rc == SQLITE_OK)
		rc = user_version(*db, &v);
	if (rc == SQLITE_OK && !ro && v < 2) {
		rc = sqlite3_exec(*db, schema, NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = migrate(*db);
	}
	if (rc == SQLITE_OK) /* the table is there and its pages read */
		rc = sqlite3_exec(*db, "SELECT count(*), max(length(path)) FROM profiles", NULL,
				  NULL, NULL);
	if (rc != SQLITE_OK) {
		int code = sqlite3_errcode(*db);

		sonde_log(SONDE_LOG_DEBUG, "store", "index '%s': %s", path, sqlite3_errmsg(*db));
		sqlite3_close(*db);
		*db = NULL;
		if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB || code == SQLITE_ERROR)
			return -EUCLEAN;
		return code == SQLITE_READONLY || code == SQLITE_CANTOPEN || code == SQLITE_PERM
			       ? -EACCES
		       : code == SQLITE_FULL ? -ENOSPC
					     : -EIO;
	}
	return 0;
}

int sonde_store__rebuild(const char *dir, unsigned *n, struct sonde_strbuf *err)
{
	char root[PATH_MAX], path[PATH_MAX * 2], aside[PATH_MAX * 2];
	struct sonde_store *s;
	struct dirent *c, *f;
	DIR *objs, *d;
	int rc = 0;

	*n = 0;
	snprintf(root, sizeof(root), "%s/.sonde", dir);
	snprintf(path, sizeof(path), "%s/index.db", root);
	snprintf(aside, sizeof(aside), "%s/index.db.damaged-%lld", root, (long long)time(NULL));
	if (rename(path, aside) < 0 && errno != ENOENT) {
		sonde_strbuf__addf(err, "cannot move the index aside: %s", strerror(errno));
		return -errno;
	}
	s = sonde_store__open(dir);
	if (!s) {
		rc = -errno;
		sonde_strbuf__addf(err, "cannot make a new index: %s", strerror(errno));
		return rc;
	}
	objs = opendir(s->objects);
	while (objs && (c = readdir(objs)) && !rc) {
		if (c->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", s->objects, c->d_name);
		d = opendir(path);
		while (d && (f = readdir(d)) && !rc) {
			if (f->d_name[0] == '.' || !sonde_profile__extension(f->d_name))
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", s->objects, c->d_name, f->d_name);
			rc = index_file(s, path, err);
			if (rc == -EEXIST ||
			    rc == -EINVAL) { /* a copy, or not a profile: skipped */
				sonde_strbuf__reset(err);
				rc = 0;
			} else if (!rc) {
				(*n)++;
			}
		}
		if (d)
			closedir(d);
	}
	if (objs)
		closedir(objs);
	sonde_store__free(s);
	return rc;
}

int sonde_store__init(const char *dir)
{
	char path[PATH_MAX];
	sqlite3 *db;
	int err;

	snprintf(path, sizeof(path), "%s/.sonde/jobs", dir);
	err = sonde_file__mkdir_p(path, 0755);
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/.sonde/objects", dir);
	err = sonde_file__mkdir_p(path, 0755);
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s/.sonde", dir);
	err = open_db(path, &db);
	if (!err)
		sqlite3_close(db);
	return err;
}

char *sonde_store__find(const char *dir)
{
	char cur[PATH_MAX], probe[PATH_MAX + 16];
	struct stat st;

	if (!realpath(dir, cur))
		return NULL;
	for (;;) {
		snprintf(probe, sizeof(probe), "%s/.sonde", strcmp(cur, "/") ? cur : "");
		if (stat(probe, &st) == 0 && S_ISDIR(st.st_mode))
			return strdup(cur);
		if (!strcmp(cur, "/")) {
			errno = ENOENT;
			return NULL;
		}
		*strrchr(cur, '/') = '\0';
		if (!cur[0])
			strcpy(cur, "/");
	}
}

struct sonde_store *sonde_store__open(const char *dir)
{
	struct sonde_store *s;
	char *top = sonde_store__find(dir);
	int err;

	if (!top)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(top);
		return NULL;
	}
	s->worktree = top;
	if (asprintf(&s->root, "%s/.sonde", strcmp(top, "/") ? top : "") < 0)
		s->root = NULL;
	if (!s->root || asprintf(&s->jobs, "%s/jobs", s->root) < 0 ||
	    asprintf(&s->objects, "%s/objects", s->root) < 0) {
		sonde_store__free(s);
		errno = ENOMEM;
		return NULL;
	}
	err = open_db(s->root, &s->db);
	if (err) {
		sonde_store__free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void sonde_store__free(struct sonde_store *s)
{
	if (!s)
		return;
	if (s->db)
		sqlite3_close(s->db);
	free(s->worktree);
	free(s->root);
	free(s->jobs);
	free(s->objects);
	free(s);
}

const char *sonde_store__root(const struct sonde_store *s)
{
	return s->root;
}

const char *sonde_store__jobs(const struct sonde_store *s)
{
	return s->jobs;
}

const char *sonde_store__worktree(const struct sonde_store *s)
{
	return s->worktree;
}

void sonde_store_list__release(struct sonde_store_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].path);
		free(l->v[i].origin);
		free(l->v[i].collector);
		free(l->v[i].type);
		free(l->v[i].cmd);
		free(l->v[i].workload);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static struct sonde_store_entry *push(struct sonde_store_list *l)
{
	struct sonde_store_entry *v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		return NULL;
	l->v = v;
	memset(&v[l->n], 0, sizeof(v[0]));
	return &v[l->n++];
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct sonde_store_entry *x = a, *y = b;

	if (x->added != y->added)
		return x->added < y->added ? -1 : 1;
	return strcmp(x->path, y->path);
}

int sonde_store__pending(struct sonde_store *s, struct sonde_store_list *out)
{
	DIR *d = opendir(s->jobs);
	struct dirent *de;

	memset(out, 0, sizeof(*out));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct sonde_store_entry *e;
		struct sonde_profile *p;
		struct stat st;
		char *path;

		if (de->d_name[0] == '.' || !sonde_profile__extension(de->d_name))
			continue;
		if (asprintf(&path, "%s/%s", s->jobs, de->d_name) < 0)
			break;
		if (stat(path, &st) < 0 || !(e = push(out))) {
			free(path);
			continue;
		}
		e->path = path;
		e->added = st.st_mtime;
		p = sonde_profile__load(path, NULL);
		if (p) {
			json_t *h = sonde_profile__header(p);

			e->origin = dup_or_null(sonde_profile__origin(p));
			e->collector = dup_or_null(json_string_value(
				json_object_get(sonde_profile__collector_info(p), "name")));
			e->type = dup_or_null(sonde_profile__type(p));
			e->cmd = dup_or_null(json_string_value(json_object_get(h, "cmd")));
			e->workload =
				dup_or_null(json_string_value(json_object_get(h, "workload")));
			sonde_profile__free(p);
		}
	}
	closedir(d);
	if (out->n)
		qsort(out->v, out->n, sizeof(out->v[0]), cmp_entry);
	return 0;
}

int sonde_store__registered(struct sonde_store *s, const char *commit, struct sonde_store_list *out)
{
	sqlite3_stmt *st;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = sqlite3_prepare_v2(s->db,
				commit ? "SELECT id, path, origin, collector, type, cmd, workload, "
					 "added FROM profiles WHERE origin = ?1 ORDER BY added, id"
				       : "SELECT id, path, origin, collector, type, cmd, workload, "
					 "added FROM profiles ORDER BY added, id",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return -EIO;
	if (commit)
		sqlite3_bind_text(st, 1, commit, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct sonde_store_entry *e = push(out);

		if (!e)
			break;
		e->id = sqlite3_column_int64(st, 0);
		if (asprintf(&e->path, "%s/%s", s->root, (const char *)sqlite3_column_text(st, 1)) <
		    0)
			e->path = NULL;
		e->origin = dup_or_null((const char *)sqlite3_column_text(st, 2));
		e->collector = dup_or_null((const char *)sqlite3_column_text(st, 3));
		e->type = dup_or_null((const char *)sqlite3_column_text(st, 4));
		e->cmd = dup_or_null((const char *)sqlite3_column_text(st, 5));
		e->workload = dup_or_null((const char *)sqlite3_column_text(st, 6));
		e->added = sqlite3_column_int64(st, 7);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

long sonde_store__count(struct sonde_store *s, const char *commit)
{
	sqlite3_stmt *st;
	long n = -EIO;

	if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM profiles WHERE origin = ?1", -1, &st,
			       NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, commit, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = (long)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static int insert(struct sonde_store *s, struct sonde_profile *p, const char *origin,
		  const char *stored, const char *digest, struct sonde_strbuf *err,
		  const char *path);

/* Index a profile that is already in objects/ (sonde fsck). */
static int index_file(struct sonde_store *s, const char *stored, struct sonde_strbuf *err)
{
	struct sonde_profile *p;
	char *buf = NULL, digest[40];
	const char *origin;
	size_t len;
	int rc = sonde_file__read_data(stored, &buf, &len);

	if (rc)
		return rc;
	digest_of(buf, len, digest);
	p = sonde_profile__parse(buf, len, stored, err);
	free(buf);
	if (!p)
		return -EINVAL;
	origin = sonde_profile__origin(p);
	rc = origin ? insert(s, p, origin, stored, digest, err, stored) : -EINVAL;
	sonde_profile__free(p);
	return rc;
}

int sonde_store__add(struct sonde_store *s, const char *path, struct sonde_strbuf *err)
{
	struct sonde_profile *p = sonde_profile__load(path, err);
	const char *origin, *base = strrchr(path, '/');
	char dir[PATH_MAX], dest[PATH_MAX * 2], *used = NULL, *buf = NULL, digest[40];
	sqlite3_stmt *st = NULL;
	size_t len;
	int rc;

	if (!p)
		return -errno;
	origin = sonde_profile__origin(p);
	if (!origin) {
		sonde_strbuf__addf(
			err, "'%s' has no origin commit: collect it inside a git work tree", path);
		sonde_profile__free(p);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%s/%s", s->objects, origin);
	rc = sonde_file__mkdir_p(dir, 0755);
	if (!rc)
		rc = sonde_file__read_data(path, &buf, &len); /* the digest is the JSON's */
	if (rc) {
		sonde_strbuf__addf(err, "cannot store '%s': %s", path, strerror(-rc));
		sonde_profile__free(p);
		return rc;
	}
	digest_of(buf, len, digest);
	/* one writer at a time: the same content is registered once, whoever races */
	if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		sonde_strbuf__addf(err, "cannot lock the index: %s", sqlite3_errmsg(s->db));
		free(buf);
		sonde_profile__free(p);
		return -EIO;
	}
	if (sqlite3_prepare_v2(s->db, "SELECT path FROM profiles WHERE digest = ?1", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW) {
			sonde_strbuf__addf(err, "'%s' is already registered (as %s)", path,
					   (const char *)sqlite3_column_text(st, 0));
			rc = -EEXIST;
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	snprintf(dest, sizeof(dest), "%s/%s", dir, base ? base + 1 : path);
	if (!rc) {
		rc = sonde_file__write_data(dest, buf, len, SONDE_FILE_NEW, &used);
		if (rc)
			sonde_strbuf__addf(err, "cannot store '%s': %s", path, strerror(-rc));
	}
	free(buf);
	if (rc) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		sonde_profile__free(p);
		return rc;
	}
	rc = insert(s, p, origin, used, digest, err, path);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
	if (rc) {
		if (!err->len)
			sonde_strbuf__addf(err, "cannot index '%s': %s", path,
					   sqlite3_errmsg(s->db));
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		unlink(used);
	}
	free(used);
	sonde_profile__free(p);
	return rc;
}

/* One row for a profile stored at `stored` (under objects/). */
static int insert(struct sonde_store *s, struct sonde_profile *p, const char *origin,
		  const char *stored, const char *digest, struct sonde_strbuf *err,
		  const char *path)
{
	json_t *h = sonde_profile__header(p);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(
		s->db,
		"INSERT INTO profiles (origin, path, collector, type, cmd, workload, "
		"added, digest) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		-1, &st, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, origin, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, stored + strlen(s->root) + 1, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3,
				  json_string_value(json_object_get(
					  sonde_profile__collector_info(p), "name")),
				  -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, sonde_profile__type(p), -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, json_string_value(json_object_get(h, "cmd")), -1,
				  SQLITE_STATIC);
		sqlite3_bind_text(st, 6, json_string_value(json_object_get(h, "workload")), -1,
				  SQLITE_STATIC);
		sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
		sqlite3_bind_text(st, 8, digest, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_CONSTRAINT) {
		sonde_strbuf__addf(err, "'%s' is already registered", path);
		return -EEXIST;
	}
	if (rc != SQLITE_OK) {
		sonde_strbuf__addf(err, "cannot index '%s': %s", path, sqlite3_errmsg(s->db));
		return -EIO;
	}
	return 0;
}

int sonde_store__remove(struct sonde_store *s, long long id)
{
	sqlite3_stmt *st;
	char *rel = NULL, *path = NULL;
	int rc = -ENOENT;

	if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_prepare_v2(s->db, "SELECT path FROM profiles WHERE id = ?1", -1, &st, NULL) ==
	    SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) == SQLITE_ROW)
			rel = dup_or_null((const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	if (rel && sqlite3_prepare_v2(s->db, "DELETE FROM profiles WHERE id = ?1", -1, &st, NULL) ==
			   SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
		sqlite3_finalize(st);
	}
	if (rc || sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		free(rel);
		return rc ? rc : -EIO;
	}
	if (asprintf(&path, "%s/%s", s->root, rel) >= 0) {
		unlink(path);
		free(path);
	}
	free(rel);
	return 0;
}

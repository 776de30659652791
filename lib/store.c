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
static int open_db(const char *root, const char *name, sqlite3 **db)
{
	char path[PATH_MAX];
	bool ro;
	int rc, v = 0;

	snprintf(path, sizeof(path), "%s/%s", root, name);
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

static int index_file(struct sonde_store *s, const char *stored, sqlite3_stmt *was, int pass,
		      struct sonde_strbuf *err);

/*
 * Every profile under objects/ into s->db (one transaction); *n counts them.
 * With the old index (was), the rows it knows go first, with their ids, and
 * the others after, so that no new id takes one an old row keeps.
 */
static int index_objects(struct sonde_store *s, sqlite3_stmt *was, unsigned *n,
			 struct sonde_strbuf *err)
{
	char path[PATH_MAX * 2];
	struct dirent *c, *f;
	DIR *objs, *d;
	int rc = 0, pass;

	if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return -EIO;
	for (pass = was ? 1 : 0; pass <= (was ? 2 : 0) && !rc; pass++) {
		objs = opendir(s->objects);
		while (objs && (c = readdir(objs)) && !rc) {
			if (c->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", s->objects, c->d_name);
			d = opendir(path);
			while (d && (f = readdir(d)) && !rc) {
				if (f->d_name[0] == '.' || !sonde_profile__extension(f->d_name))
					continue;
				snprintf(path, sizeof(path), "%s/%s/%s", s->objects, c->d_name,
					 f->d_name);
				rc = index_file(s, path, was, pass, err);
				if (rc == -EEXIST || rc == -EINVAL ||
				    rc == -EAGAIN) { /* a copy, not a profile, or the other pass's
						      */
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
	}
	if (!rc && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		sonde_strbuf__addf(err, "cannot write the new index: %s", sqlite3_errmsg(s->db));
		rc = -EIO;
	}
	if (rc)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * The new index is built aside (index.db.new-PID) while the old one's write
 * lock is held, where it can be taken, so that no add or rm changes it
 * meanwhile; it then replaces the old one in one rename, the old kept as a
 * hard link (index.db.damaged-TIME). A writer that opened the old one sees it
 * moved when it gets the lock and opens the new one (begin_write): no moment
 * without an index, no write into one that is gone. Rows keep their id and
 * the time they were added where the old index still says them.
 */
int sonde_store__rebuild(const char *dir, unsigned *n, struct sonde_strbuf *err)
{
	char root[PATH_MAX], path[PATH_MAX + 16], fresh[PATH_MAX + 64], aside[PATH_MAX + 64],
		name[48];
	struct sonde_store s = { 0 };
	sqlite3_stmt *was = NULL;
	sqlite3 *old = NULL;
	long long now = (long long)time(NULL);
	int rc;

	*n = 0;
	snprintf(root, sizeof(root), "%s/.sonde", strcmp(dir, "/") ? dir : "");
	snprintf(path, sizeof(path), "%s/index.db", root);
	snprintf(name, sizeof(name), "index.db.new-%ld", (long)getpid());
	snprintf(fresh, sizeof(fresh), "%s/%s", root, name);
	if (access(path, F_OK) == 0 &&
	    sqlite3_open_v2(path, &old, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(old, 60000);
		rc = sqlite3_exec(old, "BEGIN IMMEDIATE", NULL, NULL, NULL);
		if (rc == SQLITE_BUSY) {
			sonde_strbuf__addf(err, "another sonde command holds the index: %s",
					   sqlite3_errmsg(old));
			sqlite3_close(old);
			return -EBUSY;
		}
		if (rc != SQLITE_OK) { /* damaged: nobody can write it either */
			sqlite3_close(old);
			old = NULL;
		} else if (sqlite3_prepare_v2(old, "SELECT added, id FROM profiles WHERE path = ?1",
					      -1, &was, NULL) != SQLITE_OK) {
			was = NULL;
		}
	} else if (old) {
		sqlite3_close(old);
		old = NULL;
	}
	unlink(fresh);
	s.root = root;
	s.objects = NULL;
	rc = asprintf(&s.objects, "%s/objects", root) < 0 ? -ENOMEM : 0;
	if (!rc && (rc = open_db(root, name, &s.db)))
		sonde_strbuf__addf(err, "cannot make a new index: %s", strerror(-rc));
	if (!rc)
		rc = index_objects(&s, was, n, err);
	if (s.db)
		sqlite3_close(s.db);
	sqlite3_finalize(was);
	if (!rc) {
		int k = 0, e;

		snprintf(aside, sizeof(aside), "%s/index.db.damaged-%lld", root, now);
		while ((e = link(path, aside) < 0 ? errno : 0) == EEXIST && k < 1000)
			snprintf(aside, sizeof(aside), "%s/index.db.damaged-%lld.%d", root, now,
				 ++k);
		if (e && e != ENOENT) {
			rc = -e;
			sonde_strbuf__addf(err, "cannot keep the old index as '%s': %s", aside,
					   strerror(e));
		}
	}
	if (!rc && !old) { /* a damaged index's journal is not the new one's */
		char j[PATH_MAX + 64], ja[PATH_MAX + 96];

		snprintf(j, sizeof(j), "%s-journal", path);
		snprintf(ja, sizeof(ja), "%s-journal", aside);
		if (rename(j, ja) < 0 && errno != ENOENT) {
			rc = -errno;
			sonde_strbuf__addf(err, "cannot move '%s' aside: %s", j, strerror(errno));
		}
	}
	if (!rc && rename(fresh, path) < 0) {
		rc = -errno;
		sonde_strbuf__addf(err, "cannot put the new index in place: %s", strerror(errno));
	}
	if (rc)
		unlink(fresh);
	if (old) {
		sqlite3_exec(old, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(old);
	}
	free(s.objects);
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
	err = open_db(path, "index.db", &db);
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
	err = open_db(s->root, "index.db", &s->db);
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
	int rc = 0;

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
		if (asprintf(&path, "%s/%s", s->jobs, de->d_name) < 0) {
			rc = -ENOMEM; /* a list with one missing is no answer */
			break;
		}
		if (stat(path, &st) < 0) { /* gone meanwhile (added by another sonde) */
			free(path);
			continue;
		}
		if (!(e = push(out))) {
			free(path);
			rc = -ENOMEM;
			break;
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
	if (rc) {
		sonde_store_list__release(out);
		return rc;
	}
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
		  const char *stored, const char *digest, long long added, long long id,
		  struct sonde_strbuf *err, const char *path);

/* Index a profile that is already in objects/ (sonde fsck); `was` finds the
   id and time the old index gives it. Pass 1 takes only those it knows, pass 2
   only the others (-EAGAIN: the other pass's); pass 0 all. */
static int index_file(struct sonde_store *s, const char *stored, sqlite3_stmt *was, int pass,
		      struct sonde_strbuf *err)
{
	long long added = (long long)time(NULL), id = 0;
	struct sonde_profile *p;
	char *buf = NULL, digest[40];
	const char *origin;
	size_t len;
	int rc;

	if (was) {
		sqlite3_reset(was);
		sqlite3_bind_text(was, 1, stored + strlen(s->root) + 1, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(was) == SQLITE_ROW) {
			added = sqlite3_column_int64(was, 0);
			id = sqlite3_column_int64(was, 1);
		}
	}
	if ((pass == 1 && !id) || (pass == 2 && id))
		return -EAGAIN;
	rc = sonde_file__read_data(stored, &buf, &len);
	if (rc)
		return rc;
	digest_of(buf, len, digest);
	p = sonde_profile__parse(buf, len, stored, err);
	free(buf);
	if (!p)
		return -EINVAL;
	origin = sonde_profile__origin(p);
	rc = origin ? insert(s, p, origin, stored, digest, added, id, err, stored) : -EINVAL;
	sonde_profile__free(p);
	return rc;
}

/*
 * A write transaction on the index that is at .sonde/index.db now: one that
 * sonde fsck replaced while this process held it open is closed and the new
 * one opened (SQLite would refuse the write: "readonly database").
 */
static int begin_write(struct sonde_store *s)
{
	int tries, moved, rc;

	for (tries = 0; tries < 16; tries++) {
		if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
			return -EIO;
		moved = 0;
		if (sqlite3_file_control(s->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) !=
			    SQLITE_OK ||
		    !moved)
			return 0;
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(s->db);
		s->db = NULL;
		rc = open_db(s->root, "index.db", &s->db);
		if (rc)
			return rc;
	}
	return -EBUSY;
}

int sonde_store__add(struct sonde_store *s, const char *path, struct sonde_strbuf *err)
{
	const char *base = strrchr(path, '/');
	char *buf = NULL;
	size_t len;
	int rc = sonde_file__read_data(path, &buf, &len); /* the digest is the JSON's */

	if (rc) {
		sonde_strbuf__addf(err, "cannot read '%s': %s", path, strerror(-rc));
		return rc;
	}
	rc = sonde_store__add_data(s, path, base ? base + 1 : path, buf, len, err);
	free(buf);
	return rc;
}

int sonde_store__add_data(struct sonde_store *s, const char *what, const char *name,
			  const char *buf, size_t len, struct sonde_strbuf *err)
{
	struct sonde_profile *p = sonde_profile__parse(buf, len, what, err);
	const char *origin;
	char dir[PATH_MAX], dest[PATH_MAX * 2], *used = NULL, digest[40];
	sqlite3_stmt *st = NULL;
	int rc;

	if (!p)
		return -errno;
	origin = sonde_profile__origin(p);
	if (!origin) {
		sonde_strbuf__addf(
			err, "'%s' has no origin commit: collect it inside a git work tree", what);
		sonde_profile__free(p);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%s/%s", s->objects, origin);
	rc = sonde_file__mkdir_p(dir, 0755);
	if (rc) {
		sonde_strbuf__addf(err, "cannot store '%s': %s", what, strerror(-rc));
		sonde_profile__free(p);
		return rc;
	}
	digest_of(buf, len, digest);
	/* one writer at a time: the same content is registered once, whoever races */
	rc = begin_write(s);
	if (rc) {
		sonde_strbuf__addf(err, "cannot lock the index: %s",
				   s->db ? sqlite3_errmsg(s->db) : strerror(-rc));
		sonde_profile__free(p);
		return rc;
	}
	if (sqlite3_prepare_v2(s->db, "SELECT path FROM profiles WHERE digest = ?1", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW) {
			sonde_strbuf__addf(err, "'%s' is already registered (as %s)", what,
					   (const char *)sqlite3_column_text(st, 0));
			rc = -EEXIST;
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	snprintf(dest, sizeof(dest), "%s/%s", dir, name);
	if (!rc) {
		rc = sonde_file__write_data(dest, buf, len, SONDE_FILE_NEW, &used);
		if (rc)
			sonde_strbuf__addf(err, "cannot store '%s': %s", what, strerror(-rc));
	}
	if (rc) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		sonde_profile__free(p);
		return rc;
	}
	rc = insert(s, p, origin, used, digest, (long long)time(NULL), 0, err, what);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
	if (rc) {
		if (!err->len)
			sonde_strbuf__addf(err, "cannot index '%s': %s", what,
					   sqlite3_errmsg(s->db));
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		unlink(used);
	}
	free(used);
	sonde_profile__free(p);
	return rc;
}

void sonde_store__digest(const char *buf, size_t len, char out[40])
{
	digest_of(buf, len, out);
}

int sonde_store__has_digest(struct sonde_store *s, const char *digest)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM profiles WHERE digest = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, digest, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -EIO;
}

/* One row for a profile stored at `stored` (under objects/). */
static int insert(struct sonde_store *s, struct sonde_profile *p, const char *origin,
		  const char *stored, const char *digest, long long added, long long id,
		  struct sonde_strbuf *err, const char *path)
{
	json_t *h = sonde_profile__header(p);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(
		s->db,
		"INSERT INTO profiles (origin, path, collector, type, cmd, workload, "
		"added, digest, id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
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
		sqlite3_bind_int64(st, 7, (sqlite3_int64)added);
		sqlite3_bind_text(st, 8, digest, -1, SQLITE_STATIC);
		if (id > 0) /* the old index's row keeps its id (rm resolves N@i to one) */
			sqlite3_bind_int64(st, 9, (sqlite3_int64)id);
		else
			sqlite3_bind_null(st, 9);
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
	int rc = begin_write(s);

	if (rc)
		return rc;
	rc = -ENOENT;
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

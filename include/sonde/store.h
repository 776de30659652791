/*
 * store.h - the .sonde/ store beside a user's repository.
 *
 *   .sonde/jobs/      fresh profiles (pending), named bin-collector-workload-time.json
 *   .sonde/objects/   registered profiles, objects/<origin>/<name>.json
 *   .sonde/index.db   SQLite index of registered profiles (commit, collector, cmd, ...)
 *
 * Registered profiles are written to objects/ first and indexed in one SQLite
 * transaction, so an interrupted add leaves the index unchanged.
 */
#ifndef SONDE_STORE_H
#define SONDE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sonde/profile.h>
#include <sonde/strbuf.h>

struct sonde_store;

/* One profile known to the store. Strings are owned by the list. */
struct sonde_store_entry {
	long long id;	 /* index row id (registered), 0 for pending */
	char *path;	 /* absolute path */
	char *origin;	 /* may be NULL */
	char *collector; /* may be NULL */
	char *type;
	char *cmd;
	char *workload;
	int64_t added; /* seconds since the epoch (registered) or mtime (pending) */
};

struct sonde_store_list {
	struct sonde_store_entry *v;
	size_t n;
};
void sonde_store_list__release(struct sonde_store_list *l);

/* Create .sonde/ in dir (idempotent). Returns 0 or -errno. */
int sonde_store__init(const char *dir);
/*
 * Open the store of dir or its nearest parent that has one. NULL with errno
 * ENOENT when there is none.
 */
struct sonde_store *sonde_store__open(const char *dir);
/* The directory at or above dir that holds a .sonde (heap), or NULL (errno ENOENT). */
char *sonde_store__find(const char *dir);
void sonde_store__free(struct sonde_store *s);
const char *sonde_store__root(const struct sonde_store *s); /* the .sonde directory */
const char *sonde_store__jobs(const struct sonde_store *s);
/* The directory containing .sonde (where git commands run). */
const char *sonde_store__worktree(const struct sonde_store *s);

/* Pending profiles, oldest first (N@p numbers index this list). */
int sonde_store__pending(struct sonde_store *s, struct sonde_store_list *out);
/* Registered profiles of a commit (NULL: all), oldest first (N@i numbers). */
int sonde_store__registered(struct sonde_store *s, const char *commit,
			    struct sonde_store_list *out);
/* Number of registered profiles per commit. Returns count >= 0 or -errno. */
long sonde_store__count(struct sonde_store *s, const char *commit);

/*
 * Register the profile at path against its origin: copy it into objects/ and index
 * it. The profile is loaded and checked first. Returns 0 or -errno (message in err).
 */
int sonde_store__add(struct sonde_store *s, const char *path, struct sonde_strbuf *err);
/*
 * The same for a profile's JSON in memory (buf, len), stored as objects/<origin>/name;
 * what names it in messages. -EEXIST when that content is registered already.
 */
int sonde_store__add_data(struct sonde_store *s, const char *what, const char *name,
			  const char *buf, size_t len, struct sonde_strbuf *err);
/* The digest the store knows a profile's JSON by (32 hex digits and a NUL). */
void sonde_store__digest(const char *buf, size_t len, char out[40]);
/* 1 when a profile of that digest is registered, 0 when not, or -errno. */
int sonde_store__has_digest(struct sonde_store *s, const char *digest);
/* Unregister (and delete the object of) a registered profile by index row id. */
int sonde_store__remove(struct sonde_store *s, long long id);
/*
 * Rebuild the index of the store in dir from the profiles in objects/ (the
 * damaged index is kept beside it as index.db.damaged-TIME). *n: profiles
 * indexed. Returns 0 or -errno, with a message in err.
 */
int sonde_store__rebuild(const char *dir, unsigned *n, struct sonde_strbuf *err);

#endif

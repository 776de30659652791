/*
 * profile.h - the profile model: what every collector produces and every view reads.
 *
 * A profile is a JSON document (specified in docs/profile-format.md, checked by
 * docs/profile.schema.json) held as a jansson tree:
 *
 *   format_version, origin, header {type, cmd, args, workload, units},
 *   collector_info {name, params}, machine, metadata, stats,
 *   resource_type_map { "uid#n": {uid, type, subtype, ...fixed properties} },
 *   resources         { "uid#n": {amount: [...], order: [...], ...columns} },
 *   models, postprocessors.
 *
 * Fixed properties describe what a resource is; columns hold one value per
 * event/run, all columns of one resource having the same length.
 *
 * Loading also accepts Perun's stored profiles (no format_version, and the
 * list-of-records form under global.resources or snapshots), which are converted
 * to the columnar form. A profile with a newer format_version is refused (ENOTSUP).
 */
#ifndef SONDE_PROFILE_H
#define SONDE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <sonde/strbuf.h>

#define SONDE_PROFILE_FORMAT_VERSION 1

struct sonde_profile;

/* A new, empty profile of the given type ("time", "memory", "mixed", ...). */
struct sonde_profile *sonde_profile__new(const char *type);
void sonde_profile__free(struct sonde_profile *p);

/*
 * Parse a profile from memory; name is used in messages. On failure returns NULL,
 * sets errno (EINVAL malformed, ENOTSUP newer format, ENOMEM) and writes one line
 * into err (when not NULL), naming line and column for malformed JSON.
 */
struct sonde_profile *sonde_profile__parse(const char *buf, size_t len, const char *name,
					   struct sonde_strbuf *err);
/*
 * Like __parse(), from a file (errno also from open/read); gzip'ed or zstd'ed
 * JSON is read as the JSON it holds, whatever the file's name.
 */
struct sonde_profile *sonde_profile__load(const char *path, struct sonde_strbuf *err);

/*
 * The length of a profile file's extension at the end of name: ".json",
 * ".json.gz" or ".json.zst"; 0 when name has none of them.
 */
size_t sonde_profile__extension(const char *name);

/*
 * Record where and when p is measured: machine, the origin commit and whether
 * the work tree is dirty (when the current directory is in a git work tree),
 * metadata.date and metadata.sonde_version, and the job of this process
 * (sonde_profile__stamp_job). Returns 0 or -ENOMEM.
 */
int sonde_profile__stamp(struct sonde_profile *p);
/* The origin, machine, date and version only, with the origin already asked
 * of git (sonde_git__origin_finish done). */
struct sonde_git_origin;
int sonde_profile__stamp_origin(struct sonde_profile *p, const struct sonde_git_origin *o);
/*
 * Record the clocks of this host (metadata.clock: sonde_job__clock) and,
 * where this process is a rank of a distributed job (job.h), metadata.job
 * and the job's run id as header.run_id. Returns 0 or -ENOMEM.
 */
int sonde_profile__stamp_job(struct sonde_profile *p);

/* Serialise (indented JSON, keys in a stable order). Caller frees. NULL on ENOMEM. */
char *sonde_profile__dump(const struct sonde_profile *p, size_t *len);
/* Atomically write to path. Returns 0 or -errno. */
int sonde_profile__save(const struct sonde_profile *p, const char *path);
/*
 * Write to path as sonde_file__write_data() does with flags (SONDE_FILE_NEW:
 * never replace, the name used in *used), the dump and a newline. Members and
 * columns given as text are written from where they are (writev), not copied
 * into the dump. Returns 0 or -errno.
 */
int sonde_profile__write(const struct sonde_profile *p, const char *path, unsigned flags,
			 char **used);

/*
 * Borrowed parts of the document; always objects (arrays for models). A
 * loaded profile keeps its resources compact until they are asked for: root()
 * makes the whole document (a jansson tree of about a kilobyte a resource),
 * so views that only read a member name it with __part() (which makes the
 * resources only when the member is resource_type_map or resources) and
 * read resources through __resource_at(), __fixed_scalar() and __numbers().
 */
json_t *sonde_profile__root(const struct sonde_profile *p);
json_t *sonde_profile__part(const struct sonde_profile *p, const char *name);
json_t *sonde_profile__header(const struct sonde_profile *p);
json_t *sonde_profile__stats(const struct sonde_profile *p);
json_t *sonde_profile__metadata(const struct sonde_profile *p);
json_t *sonde_profile__collector_info(const struct sonde_profile *p);
const char *sonde_profile__type(const struct sonde_profile *p);
/* The origin commit, or NULL when the profile has none. */
const char *sonde_profile__origin(const struct sonde_profile *p);
int sonde_profile__set_origin(struct sonde_profile *p, const char *commit);
/*
 * Set a top-level member, without making the rest of the document (as
 * __root() would); value is stolen. 0 or -ENOMEM.
 */
int sonde_profile__set_part(struct sonde_profile *p, const char *name, json_t *value);
/*
 * Set a top-level member as JSON text, laid out as the profile's writer lays
 * it out at depth 1 (sonde_json__put_member and the rest, lib/json.h), for
 * a writer that would otherwise make a tree of millions of values. The text
 * (text's buffer, taken: text is left empty) is written as it is; __part()
 * and __root() make its tree when asked. 0 or -ENOMEM.
 */
int sonde_profile__set_text(struct sonde_profile *p, const char *name, struct sonde_strbuf *text);
/* Set one key of a part; value is stolen. Returns 0 or -errno. */
int sonde_profile__set(json_t *part, const char *key, json_t *value);

/*
 * Find or create the resource whose fixed properties are uid, type, subtype and
 * the members of extra (may be NULL; borrowed). Returns its index (>= 0) or -errno.
 */
long sonde_profile__resource(struct sonde_profile *p, const char *uid, const char *type,
			     const char *subtype, json_t *extra);
/* Append one value to a column of resource res; value is stolen. Returns 0 or -errno. */
int sonde_profile__append(struct sonde_profile *p, long res, const char *column, json_t *value);
/*
 * Set all of resource res's columns as JSON text, an object written compact
 * (sonde_json__put_member and __put_row with indent 0, lib/json.h), for a
 * writer of many rows: text's buffer is taken (text is left empty), written
 * as it is, and made a tree only when the columns are asked for. res is one
 * this writer made (not a loaded one). 0, -ERANGE, -EINVAL or -ENOMEM.
 */
int sonde_profile__set_columns_text(struct sonde_profile *p, long res, struct sonde_strbuf *text);

size_t sonde_profile__resource_count(const struct sonde_profile *p);
/*
 * The res-th resource: its key ("uid#n"), fixed properties and columns
 * (borrowed; for a loaded profile, made on the first request and kept).
 * Returns 0, -ERANGE, or -ENOMEM (a tree that could not be made is NULL).
 * Safe from several threads at once, as are the accessors below.
 */
int sonde_profile__resource_at(const struct sonde_profile *p, size_t res, const char **key,
			       json_t **fixed, json_t **columns);

/*
 * One fixed property of resource res, read without making the resource's
 * tree: its json_type (-1 when absent), and the value of a string (s,
 * borrowed while the profile lives), an integer (i, and d) or a real (d).
 * Returns the type.
 */
struct sonde_scalar {
	int type;
	const char *s;
	long long i;
	double d;
};
int sonde_profile__fixed_scalar(const struct sonde_profile *p, size_t res, const char *name,
				struct sonde_scalar *out);
/* The same for member `member` of an object property (summary.bytes, say). */
int sonde_profile__fixed_member(const struct sonde_profile *p, size_t res, const char *name,
				const char *member, struct sonde_scalar *out);
/*
 * A property that is an array of objects (a memory resource's trace): each
 * one's member `member` as a string (NULL where it is not one), into *out
 * grown to *cap: how many, -ENOENT when the property is not an array, or
 * -ENOMEM. The strings are borrowed while the profile lives.
 */
long sonde_profile__fixed_strings(const struct sonde_profile *p, size_t res, const char *name,
				  const char *member, const char ***out, size_t *cap);
/* The same for a string property: NULL when absent or not a string. */
const char *sonde_profile__fixed_string(const struct sonde_profile *p, size_t res,
					const char *name);
/*
 * Column `column` of resource res as doubles (NAN where a value is not a
 * number) into *vals, grown to *cap as needed (vals NULL: only how many): how
 * many, -ENOENT when the resource has no such column, or -ENOMEM.
 */
long sonde_profile__numbers(const struct sonde_profile *p, size_t res, const char *column,
			    double **vals, size_t *cap);
/*
 * The same, for a quantity of each of a resource's `rows` rows: its column, or
 * where it has none a numeric fixed property of that name, which holds for
 * every row (Perun's memory profiles keep the snapshot there). -ENOENT when
 * the resource has neither.
 */
long sonde_profile__row_numbers(const struct sonde_profile *p, size_t res, const char *name,
				size_t rows, double **vals, size_t *cap);

/* Length of a column of a resource (0 when absent). */
size_t sonde_profile__column_len(json_t *columns, const char *column);

/*
 * Add a measurement warning to stats.warnings: code from the closed list in
 * warning.h, message and fix are copied. Returns 0 or -errno.
 */
int sonde_profile__add_warning(struct sonde_profile *p, const char *code, const char *message,
			       const char *fix);
/* The same, about one workload (NULL: about the whole series). */
int sonde_profile__add_workload_warning(struct sonde_profile *p, const char *code,
					const char *workload, const char *message, const char *fix);

/*
 * Add events in the list-of-records form (Perun's): each record is an object with
 * uid, type, subtype; numbers and nulls become columns, other members fixed
 * properties. Records of one resource become rows. Returns 0, -EINVAL, -ENOMEM.
 */
int sonde_profile__add_records(struct sonde_profile *p, json_t *records);

/* The string form of a uid (a string as is; an object's values joined by ':'). */
int sonde_profile__uid_string(json_t *uid, struct sonde_strbuf *out);
/* The same for resource res's uid, its tree made only for a uid not a string. */
int sonde_profile__uid_text(const struct sonde_profile *p, size_t res, struct sonde_strbuf *out);

#endif

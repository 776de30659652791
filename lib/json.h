/*
 * json.h - JSON in and out at the speed of large profiles. Internal to libsonde.
 *
 * sonde_json__load() reads what json_loadb(buf, len, JSON_REJECT_DUPLICATES, err)
 * reads, to the same tree, about three times faster on a profile of numbers
 * (json-read.cc); err is filled as jansson fills it when the document is bad.
 * slack: how many bytes after buf[len] may be read (their values do not
 * matter); with SONDE_JSON_SLACK or more the document is parsed where it is,
 * without a copy.
 *
 * sonde_json__dump_compact() appends v as json_dumps(v, JSON_ENCODE_ANY |
 * JSON_COMPACT | JSON_REAL_PRECISION(15)) writes it, byte for byte, with
 * printf only for reals with an exponent or near a rounding tie (json.c). 0,
 * or -ENOMEM. sonde_json__dump_indented() writes as JSON_INDENT(indent) would, with
 * the value's first line already depth levels in (depth 0: a document), and
 * sonde_json__dump_string() a string as jansson quotes it.
 * sonde_json__dump_layout() is dump_indented with arrays of scalars on one line.
 */
#ifndef SONDE_JSON_H
#define SONDE_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct sonde_strbuf;

#define SONDE_JSON_SLACK 64

/*
 * One shared value per small integer (0 to 4095), for trees that hold the same
 * small numbers again and again (a loaded profile, a timeline): each value not
 * made is a malloc and 32 bytes saved. sonde_json__int() returns a new
 * reference (or NULL: no memory); release drops the table's own.
 */
#define SONDE_JSON_SMALL_INTS 4096
struct sonde_json_ints {
	json_t *v[SONDE_JSON_SMALL_INTS];
};
json_t *sonde_json__int(struct sonde_json_ints *k, json_int_t n);
void sonde_json__ints_release(struct sonde_json_ints *k);

json_t *sonde_json__load(const char *buf, size_t len, size_t slack, json_error_t *err);
/* simdjson's part alone: NULL where it leaves the document to jansson */
json_t *sonde_json__load_fast(const char *buf, size_t len, size_t slack);
/*
 * A profile's resources kept on simdjson's tape. sonde_json__load_packed()
 * reads as sonde_json__load() does, except that a document with a
 * format_version whose resource_type_map and resources are objects (that
 * jansson would read: no key twice, and every resources key in
 * resource_type_map) comes back with those two members empty objects, and
 * *pack (NULL otherwise) holding them: the tape, 16 bytes a value, instead of
 * a jansson tree of about a kilobyte a resource. Resource i is the i-th entry
 * of resource_type_map. sonde_json_pack__fixed() and __columns() make its two
 * trees (new references; an empty object for a resource without columns;
 * NULL: no memory), sharing equal small values with the trees made before:
 * not thread-safe. The rest read the tape and may be called from any thread:
 * __check() says what is wrong with resource i's two values as a profile
 * (0: nothing), __fixed_scalar() reads one fixed property, or a member of
 * one (its jansson type, -1 when absent; s points into the tape),
 * __fixed_strings() a member of each object of an array property (NULL where
 * it is not a string), __numbers() one column as doubles
 * (NAN where a value is not a number; -ENOENT when absent). Resources were in
 * the document in the order __res_order(j), j < __res_count(); those without
 * columns come after them.
 */
struct sonde_json_pack;
enum {
	SONDE_PACK_FIXED_NOT_OBJECT = 1,
	SONDE_PACK_COLUMNS_NOT_OBJECT,
	SONDE_PACK_COLUMN_NOT_ARRAY,
	SONDE_PACK_COLUMN_LENGTHS,
};
struct sonde_scalar; /* sonde/profile.h */
json_t *sonde_json__load_packed(const char *buf, size_t len, size_t slack, json_error_t *err,
				struct sonde_json_pack **pack);
void sonde_json_pack__free(struct sonde_json_pack *pk);
size_t sonde_json_pack__count(const struct sonde_json_pack *pk);
const char *sonde_json_pack__key(const struct sonde_json_pack *pk, size_t i);
int sonde_json_pack__check(const struct sonde_json_pack *pk, size_t i);
size_t sonde_json_pack__res_count(const struct sonde_json_pack *pk);
size_t sonde_json_pack__res_order(const struct sonde_json_pack *pk, size_t j);
json_t *sonde_json_pack__fixed(struct sonde_json_pack *pk, size_t i);
json_t *sonde_json_pack__columns(struct sonde_json_pack *pk, size_t i);
int sonde_json_pack__fixed_scalar(const struct sonde_json_pack *pk, size_t i, const char *name,
				  const char *member, struct sonde_scalar *out);
long sonde_json_pack__fixed_strings(const struct sonde_json_pack *pk, size_t i, const char *name,
				    const char *member, const char ***out, size_t *cap);
/*
 * Resource i's fixed properties (which 0) or columns (which 1) written as
 * sonde_json__dump_layout (flat) or __dump_indented would write their tree:
 * indent 0 is compact. 0 or -ENOMEM.
 */
int sonde_json_pack__dump(const struct sonde_json_pack *pk, size_t i, int which,
			  struct sonde_strbuf *sb, size_t indent, size_t depth, int flat);
long sonde_json_pack__numbers(const struct sonde_json_pack *pk, size_t i, const char *column,
			      double **vals, size_t *cap);

/*
 * How many of jansson's allocations have failed in this process so far. A
 * document is trusted when the count did not move while it was built.
 */
unsigned long sonde_json__alloc_failures(void);
/*
 * A profile is written only while that count stands where it stood when the
 * profile was made; a session whose collectors kept JSON before the profile
 * existed moves that mark back to when it began.
 */
struct sonde_profile;
void sonde_profile__trust_from(struct sonde_profile *p, unsigned long failures);

int sonde_json__dump_compact(struct sonde_strbuf *sb, const json_t *v);
int sonde_json__dump_indented(struct sonde_strbuf *sb, const json_t *v, size_t indent,
			      size_t depth);
/* The same, except that an array of scalars goes on one line (profiles). */
int sonde_json__dump_layout(struct sonde_strbuf *sb, const json_t *v, size_t indent, size_t depth);
int sonde_json__dump_string(struct sonde_strbuf *sb, const char *s);
/* The writers' parts, for the tape's writer (json-read.cc): the same bytes. */
int sonde_json__put_string(struct sonde_strbuf *sb, const char *s, size_t len);
int sonde_json__put_integer(struct sonde_strbuf *sb, json_int_t i);
int sonde_json__put_real(struct sonde_strbuf *sb, double v);
int sonde_json__put_indent(struct sonde_strbuf *sb, size_t spaces);
/*
 * A document laid out as sonde_json__dump_layout() lays it out, written
 * without a tree (a timeline of 200 000 slices is a million values, a
 * malloc each as a tree): at depth levels in, indent spaces a level (0:
 * compact). After the caller's '{', __put_member() writes what comes before
 * a member's value (first: the object's first); after its '[',
 * __put_row() writes element i, an array of n integers on one line;
 * __put_close() ends an object or array of n members with c. 0 or -ENOMEM.
 */
int sonde_json__put_member(struct sonde_strbuf *sb, const char *key, size_t indent, size_t depth,
			   bool first);
int sonde_json__put_row(struct sonde_strbuf *sb, const json_int_t *v, size_t n, size_t indent,
			size_t depth, size_t i);
int sonde_json__put_close(struct sonde_strbuf *sb, char c, size_t n, size_t indent, size_t depth);
/*
 * v as jansson writes it, into buf (48 bytes), without printf: its length, or
 * 0 where printf is needed (an exponent, or digits too near a rounding tie).
 */
size_t sonde_json__real(double v, char *buf);

#endif

/*
 * profile.c - the profile model (see profile.h and docs/profile-format.md).
 *
 * Invariants:
 *  - root always holds every top-level member of format_version 1;
 *  - resource_type_map and resources have the same keys, in the same order, and
 *    keys[] lists them in that order;
 *  - index maps the canonical form of a resource's fixed properties (compact JSON,
 *    sorted keys) to its position in keys[], for keys[0..indexed); a loaded
 *    profile's resources are indexed when the first resource is looked up, since
 *    most loaded profiles are only read (a stack's canonical form costs more than
 *    parsing it);
 *  - all columns of one resource have the same length.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sonde/file.h>
#include <sonde/parallel.h>
#include <sonde/clock.h>
#include <sonde/log.h>
#include <sonde/profile.h>
#include "grow.h"
#include "json.h"
#include "u64map.h"

struct sonde_profile {
	json_t *root;
	json_t *rtm;	    /* borrowed from root */
	json_t *res;	    /* borrowed from root */
	json_t *index;	    /* canonical fixed properties -> position */
	json_t *uid_counts; /* uid string -> resources of keys[0..indexed) with that uid */
	/* per resource, in order, borrowed: its key (the string resource_type_map
	   holds), its fixed properties and its columns (no lookup in objects that
	   may hold a million keys) */
	const char **keys;
	json_t **fixed, **cols;
	size_t n, cap;
	size_t indexed; /* keys[0..indexed) are in index */
	/*
	 * A loaded profile's resources stay on the JSON reader's tape (json.h)
	 * until a view asks for one's trees (made then, kept: fixed[i] and
	 * cols[i], NULL until made, are the profile's own references for i <
	 * packed) or something needs the whole document (thaw(): rtm and res,
	 * empty until then, are filled in the document's order).
	 */
	struct sonde_json_pack *pack;
	size_t packed;
	/* sonde_json__alloc_failures() when the profile was made: written only
	   while the count stands there (a failed set_new loses a member silently) */
	unsigned long alloc_failures;
	bool thawed;
	pthread_mutex_t lock; /* making a packed resource's trees, or a text part's */
	/*
	 * Top-level members a writer gave as JSON text (sonde_profile__set_text):
	 * root holds an empty object in each one's place until the member's tree
	 * is asked for; the text is written as it is.
	 */
	struct text_part {
		char *name;
		json_t *holder; /* borrowed from root; NULL once the tree is made */
		char *text;
		size_t len;
	} * texts;
	size_t ntexts, ntexts_cap;
	/*
	 * Resources whose columns a writer gave as text
	 * (sonde_profile__set_columns_text): cols[i] is an empty object in
	 * resources until the tree is asked for; ctext[i] (NULL: none) is written
	 * in its place.
	 */
	char **ctext;
	size_t *clen;
	size_t ctext_cap, nctext;
};

static const char *const toplevel_objects[] = {
	"header", "collector_info",    "machine",   "metadata",
	"stats",  "resource_type_map", "resources", NULL,
};

static int ensure_member(json_t *obj, const char *key, json_t *(*make)(void))
{
	json_t *v = json_object_get(obj, key);

	if (v)
		return 0;
	v = make();
	if (!v || json_object_set_new(obj, key, v))
		return -ENOMEM;
	return 0;
}

/* Give root every member a format_version 1 profile has. */
static int fill_defaults(json_t *root, const char *type)
{
	const char *const *k;
	json_t *h, *ci;
	int err = 0;

	if (!json_object_get(root, "format_version"))
		err |= json_object_set_new(root, "format_version",
					   json_integer(SONDE_PROFILE_FORMAT_VERSION));
	if (!json_object_get(root, "origin"))
		err |= json_object_set_new(root, "origin", json_null());
	for (k = toplevel_objects; *k; k++)
		err |= ensure_member(root, *k, json_object);
	err |= ensure_member(root, "models", json_array);
	err |= ensure_member(root, "postprocessors", json_array);
	h = json_object_get(root, "header");
	if (type && !json_object_get(h, "type"))
		err |= json_object_set_new(h, "type", json_string(type));
	if (!json_object_get(h, "cmd"))
		err |= json_object_set_new(h, "cmd", json_string(""));
	if (!json_object_get(h, "workload"))
		err |= json_object_set_new(h, "workload", json_string(""));
	err |= ensure_member(h, "units", json_object);
	ci = json_object_get(root, "collector_info");
	if (!json_object_get(ci, "name"))
		err |= json_object_set_new(ci, "name", json_string(""));
	err |= ensure_member(ci, "params", json_object);
	return err ? -ENOMEM : 0;
}

static struct sonde_profile *wrap(json_t *root)
{
	struct sonde_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->root = root;
	p->alloc_failures = sonde_json__alloc_failures();
	p->rtm = json_object_get(root, "resource_type_map");
	p->res = json_object_get(root, "resources");
	p->index = json_object();
	p->uid_counts = json_object();
	pthread_mutex_init(&p->lock, NULL);
	if (!p->index || !p->uid_counts) {
		json_decref(p->index);
		json_decref(p->uid_counts);
		free(p);
		return NULL;
	}
	return p;
}

struct sonde_profile *sonde_profile__new(const char *type)
{
	json_t *root = json_object();
	struct sonde_profile *p;

	if (!root || fill_defaults(root, type ? type : "custom")) {
		json_decref(root);
		errno = ENOMEM;
		return NULL;
	}
	p = wrap(root);
	if (!p) {
		json_decref(root);
		errno = ENOMEM;
	}
	return p;
}

void sonde_profile__free(struct sonde_profile *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->packed; i++) {
		json_decref(p->fixed[i]);
		json_decref(p->cols[i]);
	}
	sonde_json_pack__free(p->pack);
	for (i = 0; i < p->ntexts; i++) {
		free(p->texts[i].name);
		free(p->texts[i].text);
	}
	free(p->texts);
	for (i = 0; i < p->ctext_cap; i++)
		free(p->ctext[i]);
	free(p->ctext);
	free(p->clen);
	pthread_mutex_destroy(&p->lock);
	free(p->keys);
	free(p->fixed);
	free(p->cols);
	json_decref(p->index);
	json_decref(p->uid_counts);
	json_decref(p->root);
	free(p);
}

/* Resource i's trees made from the tape, where not made before; the lock held. */
static int unpack_locked(struct sonde_profile *w, size_t i)
{
	if (!w->fixed[i])
		__atomic_store_n(&w->fixed[i], sonde_json_pack__fixed(w->pack, i),
				 __ATOMIC_RELEASE);
	if (!w->cols[i])
		__atomic_store_n(&w->cols[i], sonde_json_pack__columns(w->pack, i),
				 __ATOMIC_RELEASE);
	return w->fixed[i] && w->cols[i] ? 0 : -ENOMEM;
}

/* The same, taking the lock when they are not both made. 0 or -ENOMEM. */
static int unpack(const struct sonde_profile *p, size_t i)
{
	struct sonde_profile *w = (struct sonde_profile *)p; /* a cache: the same answers */
	int rc;

	if (i >= p->packed || (__atomic_load_n(&p->fixed[i], __ATOMIC_ACQUIRE) &&
			       __atomic_load_n(&p->cols[i], __ATOMIC_ACQUIRE)))
		return 0;
	pthread_mutex_lock(&w->lock);
	rc = unpack_locked(w, i);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

/*
 * The packed resources in the order resources held them, then those without
 * columns (where a tree-loaded profile adds them): n indices to free, or NULL.
 */
static size_t *res_order(const struct sonde_profile *p)
{
	size_t nres = sonde_json_pack__res_count(p->pack), n = p->packed ? p->packed : 1, i, j;
	size_t *order = malloc(n * sizeof(*order));
	unsigned char *placed = calloc(n, 1);

	if (order && placed) {
		for (j = 0; j < nres; j++) {
			order[j] = sonde_json_pack__res_order(p->pack, j);
			placed[order[j]] = 1;
		}
		for (i = 0; i < p->packed; i++)
			if (!placed[i])
				order[j++] = i;
	} else {
		free(order);
		order = NULL;
	}
	free(placed);
	return order;
}

/*
 * Every packed resource into resource_type_map and resources, in the
 * document's order (those without columns after the rest, as a tree-loaded
 * profile adds them): the profile is then what a tree would have made. Under
 * the lock, so that views on several threads may ask at once.
 */
static int thaw(const struct sonde_profile *p)
{
	struct sonde_profile *w = (struct sonde_profile *)p;
	size_t i, *order = NULL;
	int rc = 0;

	if (!p->pack || __atomic_load_n(&p->thawed, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&w->lock);
	if (p->thawed)
		goto out;
	for (i = 0; i < p->packed && !rc; i++)
		rc = unpack_locked(w, i);
	order = rc ? NULL : res_order(p);
	if (!order) {
		rc = -ENOMEM;
		goto out;
	}
	/* set again after a failure part way: the same keys, the same values */
	for (i = 0; i < p->packed; i++) {
		rc |= json_object_set_nocheck(p->rtm, p->keys[i], p->fixed[i]);
		rc |= json_object_set_nocheck(p->res, p->keys[order[i]], p->cols[order[i]]);
	}
	if (rc)
		rc = -ENOMEM;
	else
		__atomic_store_n(&w->thawed, true, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&w->lock);
	free(order);
	return rc;
}

/* The text part called name (NULL: every one) made a tree in its place. */
static int thaw_text(const struct sonde_profile *p, const char *name)
{
	struct sonde_profile *w = (struct sonde_profile *)p;
	size_t i;
	int rc = 0;

	for (i = 0; i < p->ntexts; i++) {
		struct text_part *t = &w->texts[i];
		json_t *tree;

		if ((name && strcmp(t->name, name)) ||
		    !__atomic_load_n(&t->holder, __ATOMIC_ACQUIRE))
			continue;
		pthread_mutex_lock(&w->lock);
		if (t->holder) {
			/* the text is this library's own writing: only memory can fail */
			tree = sonde_json__load(t->text, t->len, 0, NULL);
			if (tree && !json_object_set_new_nocheck(p->root, t->name, tree)) {
				free(t->text);
				t->text = NULL;
				__atomic_store_n(&t->holder, NULL, __ATOMIC_RELEASE);
			} else {
				rc = -ENOMEM;
			}
		}
		pthread_mutex_unlock(&w->lock);
	}
	return rc;
}

/* Resource i's columns made a tree from their text, if they are text. */
static int thaw_cols(const struct sonde_profile *p, size_t i)
{
	struct sonde_profile *w = (struct sonde_profile *)p;
	json_t *tree;
	int rc = 0;

	if (i >= p->ctext_cap || !__atomic_load_n(&p->ctext[i], __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&w->lock);
	if (p->ctext[i]) {
		/* the text is this library's own writing: only memory can fail */
		tree = sonde_json__load(p->ctext[i], p->clen[i], 0, NULL);
		if (tree && !json_object_set_nocheck(p->res, p->keys[i], tree)) {
			__atomic_store_n(&w->cols[i], tree, __ATOMIC_RELEASE);
			free(p->ctext[i]);
			__atomic_store_n(&w->ctext[i], NULL, __ATOMIC_RELEASE);
			w->nctext--;
		} else {
			rc = -ENOMEM;
		}
		json_decref(tree);
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

json_t *sonde_profile__root(const struct sonde_profile *p)
{
	size_t i;

	/* out of memory: the document without some resources, or a part empty */
	thaw(p);
	thaw_text(p, NULL);
	for (i = 0; i < p->ctext_cap && p->nctext; i++)
		thaw_cols(p, i);
	return p->root;
}

json_t *sonde_profile__part(const struct sonde_profile *p, const char *name)
{
	json_t *v = json_object_get(p->root, name);

	if (v && (v == p->rtm || v == p->res))
		thaw(p);
	if (v && p->ntexts) {
		thaw_text(p, name);
		v = json_object_get(p->root, name);
	}
	return v;
}

/* The text part called name, if it is still text. */
static struct text_part *text_of(struct sonde_profile *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->ntexts; i++)
		if (p->texts[i].holder && !strcmp(p->texts[i].name, name))
			return &p->texts[i];
	return NULL;
}

int sonde_profile__set_part(struct sonde_profile *p, const char *name, json_t *value)
{
	struct text_part *t = text_of(p, name);

	if (!value)
		return -ENOMEM;
	if (json_object_set_new(p->root, name, value))
		return -ENOMEM;
	if (t) { /* replaced */
		free(t->text);
		t->text = NULL;
		t->holder = NULL;
	}
	return 0;
}

int sonde_profile__set_text(struct sonde_profile *p, const char *name, struct sonde_strbuf *text)
{
	struct text_part *t = text_of(p, name);
	json_t *holder = json_object();
	size_t len = 0;
	char *s = sonde_strbuf__detach(text, &len);

	if (t) {
		free(t->text);
		t->text = NULL;
		t->holder = NULL;
	} else if (s && holder &&
		   !sonde_grow((void **)&p->texts, &p->ntexts_cap, p->ntexts + 1,
			       sizeof(*p->texts))) {
		t = &p->texts[p->ntexts];
		*t = (struct text_part){ .name = strdup(name) };
		if (t->name)
			p->ntexts++;
		else
			t = NULL;
	}
	if (!t || !s || !holder) {
		json_decref(holder);
		free(s);
		return -ENOMEM;
	}
	if (json_object_set_new_nocheck(p->root, name, holder)) { /* (holder taken) */
		free(s);
		return -ENOMEM;
	}
	t->text = s;
	t->len = len;
	t->holder = holder;
	return 0;
}

json_t *sonde_profile__header(const struct sonde_profile *p)
{
	return json_object_get(p->root, "header");
}

json_t *sonde_profile__stats(const struct sonde_profile *p)
{
	return json_object_get(p->root, "stats");
}

json_t *sonde_profile__metadata(const struct sonde_profile *p)
{
	return json_object_get(p->root, "metadata");
}

json_t *sonde_profile__collector_info(const struct sonde_profile *p)
{
	return json_object_get(p->root, "collector_info");
}

const char *sonde_profile__type(const struct sonde_profile *p)
{
	return json_string_value(json_object_get(sonde_profile__header(p), "type"));
}

const char *sonde_profile__origin(const struct sonde_profile *p)
{
	return json_string_value(json_object_get(p->root, "origin"));
}

int sonde_profile__set(json_t *part, const char *key, json_t *value)
{
	if (!value)
		return -ENOMEM;
	return json_object_set_new(part, key, value) ? -ENOMEM : 0;
}

int sonde_profile__set_origin(struct sonde_profile *p, const char *commit)
{
	return sonde_profile__set(p->root, "origin", commit ? json_string(commit) : json_null());
}

int sonde_profile__uid_string(json_t *uid, struct sonde_strbuf *out)
{
	const char *k;
	json_t *v;
	int first = 1, err = 0;

	if (json_is_string(uid))
		return sonde_strbuf__adds(out, json_string_value(uid));
	if (json_is_object(uid)) {
		json_object_foreach(uid, k, v)
		{
			if (!first)
				err |= sonde_strbuf__addch(out, ':');
			first = 0;
			if (json_is_string(v)) {
				err |= sonde_strbuf__adds(out, json_string_value(v));
			} else {
				char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

				err |= s ? sonde_strbuf__adds(out, s) : -ENOMEM;
				free(s);
			}
		}
		return err;
	}
	{
		char *s = json_dumps(uid, JSON_ENCODE_ANY | JSON_COMPACT);

		err = s ? sonde_strbuf__adds(out, s) : -ENOMEM;
		free(s);
	}
	return err;
}

static char *canonical(json_t *fixed)
{
	return json_dumps(fixed, JSON_COMPACT | JSON_SORT_KEYS);
}

/* keys[indexed] into index under canon (NULL: not indexable), its uid counted. */
static int index_next(struct sonde_profile *p, const char *canon, const char *uid)
{
	json_t *count;

	if (canon && json_object_set_new(p->index, canon, json_integer((json_int_t)p->indexed)))
		return -ENOMEM;
	if (uid) {
		count = json_object_get(p->uid_counts, uid);
		if (json_object_set_new(p->uid_counts, uid,
					json_integer(count ? json_integer_value(count) + 1 : 1)))
			return -ENOMEM;
	}
	p->indexed++;
	return 0;
}

/* Put keys[indexed..n) into index, in order (a later equal form wins, as it did). */
static int index_pending(struct sonde_profile *p)
{
	while (p->indexed < p->n) {
		json_t *fixed = p->fixed[p->indexed];
		char *canon = fixed ? canonical(fixed) : NULL;
		int rc = fixed && !canon
				 ? -ENOMEM
				 : index_next(p, canon,
					      json_string_value(json_object_get(fixed, "uid")));

		free(canon);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Record the next resource (indexed later, or by the caller): key is the
 * string resource_type_map holds, fixed and cols its values there and in
 * resources.
 */
static int index_resource(struct sonde_profile *p, const char *key, json_t *fixed, json_t *cols)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		const char **nk = realloc(p->keys, cap * sizeof(*nk));
		json_t **nf = nk ? realloc(p->fixed, cap * sizeof(*nf)) : NULL;
		json_t **nc = nf ? realloc(p->cols, cap * sizeof(*nc)) : NULL;

		if (nk)
			p->keys = nk;
		if (nf)
			p->fixed = nf;
		if (!nc)
			return -ENOMEM;
		p->cols = nc;
		p->cap = cap;
	}
	p->keys[p->n] = key;
	p->fixed[p->n] = fixed;
	p->cols[p->n++] = cols;
	return 0;
}

long sonde_profile__resource(struct sonde_profile *p, const char *uid, const char *type,
			     const char *subtype, json_t *extra)
{
	struct sonde_strbuf key = SONDE_STRBUF_INIT;
	json_t *fixed = json_object(), *hit, *count, *cols;
	char *canon;
	long pos;
	int err = 0;

	if (!fixed)
		return -ENOMEM;
	if (extra && json_object_update(fixed, extra))
		err = -ENOMEM;
	err |= json_object_set_new(fixed, "uid", json_string(uid));
	if (type)
		err |= json_object_set_new(fixed, "type", json_string(type));
	if (subtype)
		err |= json_object_set_new(fixed, "subtype", json_string(subtype));
	canon = err || thaw(p) || index_pending(p) ? NULL : canonical(fixed);
	if (!canon) {
		json_decref(fixed);
		return -ENOMEM;
	}
	hit = json_object_get(p->index, canon);
	if (hit) {
		free(canon);
		json_decref(fixed);
		return (long)json_integer_value(hit);
	}
	count = json_object_get(p->uid_counts, uid);
	err = sonde_strbuf__addf(&key, "%s#%lld", uid,
				 count ? (long long)json_integer_value(count) : 0LL);
	cols = json_object();
	if (err || !cols || json_object_set(p->rtm, key.buf, fixed) ||
	    json_object_set_new(p->res, key.buf, cols)) {
		free(canon);
		json_decref(fixed);
		sonde_strbuf__release(&key);
		return -ENOMEM;
	}
	pos = (long)p->n;
	/* every earlier resource is indexed: this one goes in under the form just made */
	err = index_resource(p, json_object_iter_key(json_object_iter_at(p->rtm, key.buf)), fixed,
			     cols);
	err = err ? err : index_next(p, canon, uid);
	free(canon);
	json_decref(fixed);
	sonde_strbuf__release(&key);
	return err ? err : pos;
}

int sonde_profile__append(struct sonde_profile *p, long res, const char *column, json_t *value)
{
	json_t *cols, *arr;

	if (!value)
		return -ENOMEM;
	if (res < 0 || (size_t)res >= p->n) {
		json_decref(value);
		return -ERANGE;
	}
	if (thaw(p) || thaw_cols(p, (size_t)res)) {
		json_decref(value);
		return -ENOMEM;
	}
	cols = p->cols[res];
	arr = json_object_get(cols, column);
	if (!arr) {
		arr = json_array();
		if (!arr || json_object_set_new(cols, column, arr)) {
			json_decref(value);
			return -ENOMEM;
		}
	}
	return json_array_append_new(arr, value) ? -ENOMEM : 0;
}

int sonde_profile__set_columns_text(struct sonde_profile *p, long res, struct sonde_strbuf *text)
{
	size_t len = 0, i = (size_t)res;
	char *s = sonde_strbuf__detach(text, &len);
	json_t *holder = json_object();

	if (res < 0 || i >= p->n || i < p->packed) {
		free(s);
		json_decref(holder);
		return res < 0 || i >= p->n ? -ERANGE : -EINVAL;
	}
	if (i >= p->ctext_cap) {
		size_t cap = p->ctext_cap, ccap = p->ctext_cap;

		if (!s || sonde_grow((void **)&p->ctext, &cap, i + 1, sizeof(*p->ctext)) ||
		    sonde_grow((void **)&p->clen, &ccap, i + 1, sizeof(*p->clen))) {
			free(s);
			json_decref(holder);
			return -ENOMEM;
		}
		p->ctext_cap = cap; /* (both grown alike) */
	}
	if (!s || !holder || json_object_set_nocheck(p->res, p->keys[i], holder)) {
		free(s);
		json_decref(holder);
		return -ENOMEM;
	}
	json_decref(holder); /* resources' now */
	p->cols[i] = holder;
	if (p->ctext[i])
		free(p->ctext[i]);
	else
		p->nctext++;
	p->ctext[i] = s;
	p->clen[i] = len;
	return 0;
}

size_t sonde_profile__resource_count(const struct sonde_profile *p)
{
	return p->n;
}

/* Resource i's tree of fixed properties (which == 0) or columns, if made; NULL when packed. */
static json_t *made(const struct sonde_profile *p, size_t i, int which)
{
	json_t *const *a = which ? p->cols : p->fixed;

	return i < p->packed || (which && p->ctext_cap) ? __atomic_load_n(&a[i], __ATOMIC_ACQUIRE)
							: a[i];
}

int sonde_profile__resource_at(const struct sonde_profile *p, size_t res, const char **key,
			       json_t **fixed, json_t **columns)
{
	int rc;

	if (res >= p->n)
		return -ERANGE;
	/* out of memory: NULL for a tree not made (jansson's getters take NULL) */
	rc = fixed || columns ? unpack(p, res) : 0;
	if (columns && !rc)
		rc = thaw_cols(p, res);
	if (key)
		*key = p->keys[res];
	if (fixed)
		*fixed = made(p, res, 0);
	if (columns)
		*columns = made(p, res, 1);
	return rc;
}

/* fixed_scalar() and fixed_member(): name, or member of name when member. */
static int fixed_value(const struct sonde_profile *p, size_t res, const char *name,
		       const char *member, struct sonde_scalar *out)
{
	json_t *fixed, *v;

	memset(out, 0, sizeof(*out));
	out->type = -1;
	if (res >= p->n)
		return -1;
	fixed = made(p, res, 0);
	if (!fixed && p->pack)
		return sonde_json_pack__fixed_scalar(p->pack, res, name, member, out);
	v = json_object_get(fixed, name);
	if (member)
		v = json_object_get(v, member);
	if (!v)
		return -1;
	out->type = (int)json_typeof(v);
	out->s = json_string_value(v);
	out->i = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
	out->d = json_number_value(v);
	return out->type;
}

int sonde_profile__fixed_scalar(const struct sonde_profile *p, size_t res, const char *name,
				struct sonde_scalar *out)
{
	return fixed_value(p, res, name, NULL, out);
}

int sonde_profile__fixed_member(const struct sonde_profile *p, size_t res, const char *name,
				const char *member, struct sonde_scalar *out)
{
	return fixed_value(p, res, name, member, out);
}

long sonde_profile__fixed_strings(const struct sonde_profile *p, size_t res, const char *name,
				  const char *member, const char ***out, size_t *cap)
{
	json_t *fixed, *a, *e;
	size_t n, j;

	if (res >= p->n)
		return -ENOENT;
	fixed = made(p, res, 0);
	if (!fixed && p->pack)
		return sonde_json_pack__fixed_strings(p->pack, res, name, member, out, cap);
	a = json_object_get(fixed, name);
	if (!json_is_array(a))
		return -ENOENT;
	n = json_array_size(a);
	if (sonde_grow((void **)out, cap, n, sizeof(**out)))
		return -ENOMEM;
	json_array_foreach(a, j, e)(*out)[j] = json_string_value(json_object_get(e, member));
	return (long)n;
}

int sonde_profile__uid_text(const struct sonde_profile *p, size_t res, struct sonde_strbuf *out)
{
	struct sonde_scalar u;
	json_t *fixed;

	if (fixed_value(p, res, "uid", NULL, &u) == JSON_STRING)
		return sonde_strbuf__adds(out, u.s);
	if (sonde_profile__resource_at(p, res, NULL, &fixed, NULL))
		return -ENOMEM;
	return sonde_profile__uid_string(json_object_get(fixed, "uid"), out);
}

const char *sonde_profile__fixed_string(const struct sonde_profile *p, size_t res, const char *name)
{
	struct sonde_scalar v;

	return sonde_profile__fixed_scalar(p, res, name, &v) == JSON_STRING ? v.s : NULL;
}

long sonde_profile__numbers(const struct sonde_profile *p, size_t res, const char *column,
			    double **vals, size_t *cap)
{
	json_t *cols, *col, *v;
	size_t n, j;

	if (res >= p->n)
		return -ENOENT;
	if (thaw_cols(p, res))
		return -ENOMEM;
	cols = made(p, res, 1);
	if (!cols && p->pack)
		return sonde_json_pack__numbers(p->pack, res, column, vals, cap);
	col = json_object_get(cols, column);
	if (!json_is_array(col))
		return -ENOENT;
	n = json_array_size(col);
	if (!vals)
		return (long)n;
	if (sonde_grow((void **)vals, cap, n, sizeof(**vals)))
		return -ENOMEM;
	json_array_foreach(col, j, v)(*vals)[j] = json_is_number(v) ? json_number_value(v) : NAN;
	return (long)n;
}

long sonde_profile__row_numbers(const struct sonde_profile *p, size_t res, const char *name,
				size_t rows, double **vals, size_t *cap)
{
	long n = sonde_profile__numbers(p, res, name, vals, cap);
	struct sonde_scalar v;
	size_t j;

	if (n != -ENOENT)
		return n;
	if (sonde_profile__fixed_scalar(p, res, name, &v) != JSON_INTEGER && v.type != JSON_REAL)
		return -ENOENT;
	if (!vals)
		return (long)rows;
	if (sonde_grow((void **)vals, cap, rows, sizeof(**vals)))
		return -ENOMEM;
	for (j = 0; j < rows; j++)
		(*vals)[j] = v.d;
	return (long)rows;
}

size_t sonde_profile__column_len(json_t *columns, const char *column)
{
	return json_array_size(json_object_get(columns, column));
}

int sonde_profile__add_warning(struct sonde_profile *p, const char *code, const char *message,
			       const char *fix)
{
	json_t *stats = sonde_profile__stats(p), *arr = json_object_get(stats, "warnings");
	json_t *w;

	if (!arr) {
		arr = json_array();
		if (!arr || json_object_set_new(stats, "warnings", arr))
			return -ENOMEM;
	}
	w = json_pack("{s:s, s:s, s:s}", "code", code, "message", message, "fix", fix ? fix : "");
	if (!w)
		return -ENOMEM;
	return json_array_append_new(arr, w) ? -ENOMEM : 0;
}

int sonde_profile__add_workload_warning(struct sonde_profile *p, const char *code,
					const char *workload, const char *message, const char *fix)
{
	int rc = sonde_profile__add_warning(p, code, message, fix);
	json_t *arr = json_object_get(sonde_profile__stats(p), "warnings");

	if (rc || !workload)
		return rc;
	return json_object_set_new(json_array_get(arr, json_array_size(arr) - 1), "workload",
				   json_string(workload))
		       ? -ENOMEM
		       : 0;
}

/* Entries [from, to) of a packed map (dump_packed), each after its separator. */
static int dump_entries(const struct sonde_profile *p, const size_t *order, int res, size_t from,
			size_t to, struct sonde_strbuf *sb)
{
	size_t j, i;
	int err = 0;

	for (j = from; j < to && !err; j++) {
		json_t *t;

		i = res ? order[j] : j;
		t = made(p, i, res);
		err |= sonde_strbuf__adds(sb, j ? ",\n  " : "\n  ");
		err |= sonde_json__dump_string(sb, p->keys[i]);
		err |= sonde_strbuf__adds(sb, ": ");
		if (t)
			err |= res ? sonde_json__dump_compact(sb, t)
				   : sonde_json__dump_layout(sb, t, 1, 2);
		else
			err |= sonde_json_pack__dump(p->pack, i, res, sb, res ? 0 : 1, 2, 1);
	}
	return err;
}

/*
 * A map of many entries is written in parts on the machine's CPUs (up to 64
 * parts of as many entries each), then joined in order.
 */
#define DUMP_PARTS 64

struct dump_parts {
	const struct sonde_profile *p;
	const size_t *order;
	int res;
	size_t nparts;
	struct sonde_strbuf *sb; /* one a part */
	int *err;
};

static void dump_part(void *ctx, size_t k)
{
	struct dump_parts *d = ctx;
	struct sonde_strbuf sb = SONDE_STRBUF_INIT; /* (the parts' side by side share lines) */
	size_t n = d->p->packed;

	d->err[k] = dump_entries(d->p, d->order, d->res, n * k / d->nparts, n * (k + 1) / d->nparts,
				 &sb);
	d->sb[k] = sb;
}

/*
 * A packed profile's resource_type_map (res 0) or resources (1) as the tree
 * would be written (dump_layout at depth 1, or one compact line each): from
 * the tape, or from the trees made (and perhaps changed) since the load. The
 * tape and the trees are only read, so parts of it are written at once.
 */
static int dump_packed(const struct sonde_profile *p, struct sonde_strbuf *sb, int res)
{
	size_t *order = res ? res_order(p) : NULL, k;
	struct dump_parts d = {
		p, order, res, p->packed < DUMP_PARTS ? 1 : DUMP_PARTS, NULL, NULL
	};
	int err = res && !order ? -ENOMEM : sonde_strbuf__addch(sb, '{');

	if (!err && d.nparts > 1) {
		d.sb = calloc(d.nparts, sizeof(*d.sb));
		d.err = calloc(d.nparts, sizeof(*d.err));
	}
	if (!err && d.sb && d.err) {
		sonde_parallel__for(d.nparts, 1, dump_part, &d);
		for (k = 0; k < d.nparts; k++) {
			err |= d.err[k] | sonde_strbuf__add(sb, d.sb[k].buf, d.sb[k].len);
			sonde_strbuf__release(&d.sb[k]);
		}
	} else if (!err) { /* one part, or no memory for parts */
		err = dump_entries(p, order, res, 0, p->packed, sb);
	}
	free(d.sb);
	free(d.err);
	free(order);
	if (p->packed)
		err |= sonde_strbuf__adds(sb, "\n ");
	return err | sonde_strbuf__addch(sb, '}');
}

/* Text a writer gave, written from where it is (sonde_profile__write): at sb's offset `at`. */
struct text_ref {
	size_t at;
	const char *text;
	size_t len;
};

struct text_refs {
	struct text_ref *v;
	size_t n, cap;
};

/* A text part or column text onto sb, or (refs) a reference to it at sb's end. */
static int put_text(struct sonde_strbuf *sb, struct text_refs *refs, const char *text, size_t len)
{
	if (!refs)
		return sonde_strbuf__add(sb, text, len);
	if (sonde_grow((void **)&refs->v, &refs->cap, refs->n + 1, sizeof(*refs->v)))
		return -ENOMEM;
	refs->v[refs->n++] = (struct text_ref){ sb->len, text, len };
	return 0;
}

/*
 * Indented JSON, except that each resource's columns go on one line, and so
 * does every array of scalars (a timeline slice, a context): a profile with a
 * million values stays a file of a few lines per resource, not a million lines.
 * With refs, the text parts are referenced there instead of copied into sb.
 */
static int dump_to(const struct sonde_profile *p, struct sonde_strbuf *sb, struct text_refs *refs)
{
	const char *key, *rk;
	json_t *v, *r;
	int err, first = 1, rfirst;
	bool packed = p->pack && !__atomic_load_n(&p->thawed, __ATOMIC_ACQUIRE);
	const struct text_part *t;
	struct u64map texts = { 0 };
	uint64_t i;

	if (sonde_json__alloc_failures() != p->alloc_failures)
		return -ENOMEM; /* some member may be missing: no profile rather than a wrong one */

	err = sonde_strbuf__addch(sb, '{');
	json_object_foreach(p->root, key, v)
	{
		err |= sonde_strbuf__adds(sb, first ? "\n " : ",\n ");
		first = 0;
		err |= sonde_json__dump_string(sb, key);
		err |= sonde_strbuf__adds(sb, ": ");
		if (packed && (v == p->rtm || v == p->res)) {
			err |= dump_packed(p, sb, v == p->res);
			continue;
		}
		if (p->ntexts && (t = text_of((struct sonde_profile *)p, key)) && t->holder == v) {
			err |= put_text(sb, refs, t->text, t->len);
			continue;
		}
		if (v != p->res) {
			err |= sonde_json__dump_layout(sb, v, 1, 1);
			continue;
		}
		/* the columns given as text, by their placeholder in resources */
		for (i = 0; i < p->ctext_cap && p->nctext && !err; i++)
			if (p->ctext[i])
				err |= u64map__put(&texts, (uint64_t)(uintptr_t)p->cols[i], i);
		err |= sonde_strbuf__addch(sb, '{');
		rfirst = 1;
		json_object_foreach(v, rk, r)
		{
			err |= sonde_strbuf__adds(sb, rfirst ? "\n  " : ",\n  ");
			rfirst = 0;
			err |= sonde_json__dump_string(sb, rk);
			err |= sonde_strbuf__adds(sb, ": ");
			if (texts.n && u64map__get(&texts, (uint64_t)(uintptr_t)r, &i))
				err |= put_text(sb, refs, p->ctext[i], p->clen[i]);
			else
				err |= sonde_json__dump_compact(sb, r);
		}
		u64map__release(&texts);
		err |= sonde_strbuf__adds(sb, json_object_size(v) ? "\n }" : "}");
	}
	err |= sonde_strbuf__adds(sb, first ? "}" : "\n}");
	return err ? -ENOMEM : 0;
}

void sonde_profile__trust_from(struct sonde_profile *p, unsigned long failures)
{
	if (failures < p->alloc_failures)
		p->alloc_failures = failures;
}

char *sonde_profile__dump(const struct sonde_profile *p, size_t *len)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;

	if (dump_to(p, &sb, NULL)) {
		sonde_strbuf__release(&sb);
		errno = ENOMEM;
		return NULL;
	}
	return sonde_strbuf__detach(&sb, len);
}

int sonde_profile__write(const struct sonde_profile *p, const char *path, unsigned flags,
			 char **used)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	struct text_refs refs = { 0 };
	struct iovec *iov = NULL;
	size_t k, n = 0, from = 0;
	int err = dump_to(p, &sb, &refs);

	if (used)
		*used = NULL;
	if (!err)
		err = sonde_strbuf__addch(&sb, '\n'); /* the file ends with a newline */
	if (!err && !(iov = malloc((2 * refs.n + 1) * sizeof(*iov))))
		err = -ENOMEM;
	for (k = 0; !err && k < refs.n; k++) { /* the dump up to each text, then the text */
		iov[n++] = (struct iovec){ sb.buf + from, refs.v[k].at - from };
		iov[n++] = (struct iovec){ (void *)refs.v[k].text, refs.v[k].len };
		from = refs.v[k].at;
	}
	if (!err) {
		iov[n++] = (struct iovec){ sb.buf + from, sb.len - from };
		err = sonde_file__write_datav(path, iov, n, flags, used);
	}
	if (!err) {
		size_t bytes = 0;

		for (k = 0; k < n; k++)
			bytes += iov[k].iov_len;
		sonde_log(SONDE_LOG_INFO, "profile", "wrote '%s': %s profile, %zu resources, %zu bytes",
			  used && *used ? *used : path, sonde_profile__type(p),
			  sonde_profile__resource_count(p), bytes);
	}
	free(iov);
	free(refs.v);
	sonde_strbuf__release(&sb);
	return err;
}

int sonde_profile__save(const struct sonde_profile *p, const char *path)
{
	return sonde_profile__write(p, path, 0, NULL);
}

/* ---- loading ----------------------------------------------------------------------- */

static void *fail(struct sonde_strbuf *err, int e, const char *fmt, const char *name,
		  const char *detail)
{
	if (err)
		sonde_strbuf__addf(err, fmt, name, detail);
	errno = e;
	return NULL;
}

/*
 * Perun's list-of-records form: each record is one event. Numbers (and null) are
 * columns; everything else (uid, type, subtype, trace, ...) is a fixed property.
 */
static int convert_records(struct sonde_profile *p, json_t *records, long snapshot)
{
	size_t i;
	json_t *rec;

	json_array_foreach(records, i, rec)
	{
		json_t *fixed, *cols, *v, *uid;
		struct sonde_strbuf us = SONDE_STRBUF_INIT;
		const char *k;
		size_t rows = 0, len;
		long res;
		int err = 0;

		if (!json_is_object(rec))
			return -EINVAL;
		fixed = json_object();
		if (!fixed)
			return -ENOMEM;
		json_object_foreach(rec, k, v)
		{
			if (!strcmp(k, "uid") || !strcmp(k, "type") || !strcmp(k, "subtype") ||
			    !(json_is_number(v) || json_is_null(v)))
				err |= json_object_set(fixed, k, v);
		}
		uid = json_object_get(rec, "uid");
		if (uid)
			err |= sonde_profile__uid_string(uid, &us);
		json_object_del(fixed, "uid");
		json_object_del(fixed, "type");
		json_object_del(fixed, "subtype");
		if (uid && !json_is_string(uid))
			err |= json_object_set(fixed, "uid_object", uid);
		res = err ? -ENOMEM
			  : sonde_profile__resource(
				    p, us.buf, json_string_value(json_object_get(rec, "type")),
				    json_string_value(json_object_get(rec, "subtype")), fixed);
		json_decref(fixed);
		sonde_strbuf__release(&us);
		if (res < 0)
			return (int)res;
		cols = p->cols[res];
		json_object_foreach(cols, k, v)
		{
			len = json_array_size(v);
			rows = len > rows ? len : rows;
		}
		json_object_foreach(rec, k, v)
		{
			if (!strcmp(k, "uid") || !(json_is_number(v) || json_is_null(v)))
				continue;
			if (!json_object_get(cols, k)) {
				json_t *arr = json_array();
				size_t r;

				for (r = 0; arr && r < rows; r++)
					json_array_append_new(arr, json_null());
				if (!arr || json_object_set_new(cols, k, arr))
					return -ENOMEM;
			}
			json_array_append(json_object_get(cols, k), v);
		}
		if (snapshot >= 0) {
			if (!json_object_get(cols, "snapshot")) {
				json_t *arr = json_array();
				size_t r;

				for (r = 0; arr && r < rows; r++)
					json_array_append_new(arr, json_null());
				if (!arr || json_object_set_new(cols, "snapshot", arr))
					return -ENOMEM;
			}
			json_array_append_new(json_object_get(cols, "snapshot"),
					      json_integer(snapshot));
		}
		/* Pad columns this record lacks so all stay the same length. */
		json_object_foreach(cols, k, v)
		{
			while (json_array_size(v) < rows + 1)
				json_array_append_new(v, json_null());
		}
	}
	return 0;
}

int sonde_profile__add_records(struct sonde_profile *p, json_t *records)
{
	if (!json_is_array(records))
		return -EINVAL;
	return convert_records(p, records, -1);
}

/*
 * A list of Perun's records, where: each must be an object with a uid (Perun's
 * loader stops at the first that is not); *why says what is wrong with it.
 */
static int take_records(struct sonde_profile *p, json_t *list, long snapshot, const char *where,
			char *why, size_t len)
{
	json_t *rec;
	size_t i;

	if (!json_is_array(list)) {
		snprintf(why, len, "%s is not a list of resources", where);
		return -EINVAL;
	}
	json_array_foreach(list, i, rec)
	{
		if (!json_is_object(rec) || !json_object_get(rec, "uid")) {
			snprintf(why, len, "%s[%zu] is not a resource record with a uid", where, i);
			return -EINVAL;
		}
	}
	return convert_records(p, list, snapshot);
}

/*
 * Turn a Perun profile (no format_version) into format_version 1; records is its
 * top-level list of resource records, taken out of the document, or NULL.
 * global is an object {time, resources} (Perun's) or a list of them (its first
 * memory profiles); each snapshot is {time, resources}. A part without its list
 * of resources is malformed, as Perun's loader finds: *why says which.
 */
static int convert_perun(struct sonde_profile *p, json_t *root, json_t *records, char *why,
			 size_t len)
{
	json_t *global = json_object_get(root, "global");
	json_t *snaps = json_object_get(root, "snapshots"), *s;
	char where[48];
	size_t i;
	int err = 0;

	json_object_set_new(json_object_get(root, "metadata"), "converted_from",
			    json_string("perun"));
	if (records)
		err = take_records(p, records, -1, "resources", why, len);
	if (!err && json_is_object(global)) {
		json_t *ts = json_object_get(global, "timestamp");

		if (json_object_get(global, "resources"))
			err = take_records(p, json_object_get(global, "resources"), -1,
					   "global.resources", why, len);
		if (ts)
			json_object_set(json_object_get(root, "metadata"), "perun_timestamp", ts);
		json_object_del(root, "global");
	} else if (!err && json_is_array(global)) {
		json_array_foreach(global, i, s)
		{
			snprintf(where, sizeof(where), "global[%zu].resources", i);
			if ((err = take_records(p, json_object_get(s, "resources"), -1, where, why,
						len)))
				break;
		}
		json_object_del(root, "global");
	}
	if (!err && json_is_array(snaps)) {
		json_array_foreach(snaps, i, s)
		{
			snprintf(where, sizeof(where), "snapshots[%zu].resources", i);
			if ((err = take_records(p, json_object_get(s, "resources"), (long)i, where,
						why, len)))
				break;
		}
		json_object_del(root, "snapshots");
	}
	return err;
}

/* What is wrong with a resource (name, key), by json.h's SONDE_PACK_* */
static const char *const bad_resource[] = {
	[SONDE_PACK_FIXED_NOT_OBJECT] = "'%s': resource_type_map entry '%s' is not an object",
	[SONDE_PACK_COLUMNS_NOT_OBJECT] = "'%s': resources entry '%s' is not an object",
	[SONDE_PACK_COLUMN_NOT_ARRAY] = "'%s': a column of resource '%s' is not an array",
	[SONDE_PACK_COLUMN_LENGTHS] = "'%s': the columns of resource '%s' differ in length",
};

/* Check the columnar part and build the lookup structures. */
static int index_loaded(struct sonde_profile *p, const char *name, struct sonde_strbuf *err)
{
	const char *key, *ck;
	json_t *fixed, *cols, *col;
	void *it = json_object_iter(p->res);
	bool in_step = true;

	json_object_foreach(p->rtm, key, fixed)
	{
		size_t len = (size_t)-1;

		if (!json_is_object(fixed)) {
			fail(err, EINVAL, bad_resource[SONDE_PACK_FIXED_NOT_OBJECT], name, key);
			return -EINVAL;
		}
		/* resources in the order of resource_type_map: no lookup */
		if (in_step && it && !strcmp(json_object_iter_key(it), key)) {
			cols = json_object_iter_value(it);
			it = json_object_iter_next(p->res, it);
		} else {
			in_step = false;
			cols = json_object_get(p->res, key);
		}
		if (!cols) {
			cols = json_object();
			json_object_set_new(p->res, key, cols);
		}
		if (!json_is_object(cols)) {
			fail(err, EINVAL, bad_resource[SONDE_PACK_COLUMNS_NOT_OBJECT], name, key);
			return -EINVAL;
		}
		json_object_foreach(cols, ck, col)
		{
			if (!json_is_array(col)) {
				fail(err, EINVAL, bad_resource[SONDE_PACK_COLUMN_NOT_ARRAY], name,
				     key);
				return -EINVAL;
			}
			if (len != (size_t)-1 && json_array_size(col) != len) {
				fail(err, EINVAL, bad_resource[SONDE_PACK_COLUMN_LENGTHS], name,
				     key);
				return -EINVAL;
			}
			len = json_array_size(col);
		}
		if (index_resource(p, key, fixed, cols))
			return -ENOMEM;
	}
	/* the same keys in the same order (as sonde writes them): nothing left to check */
	if (in_step && json_object_size(p->res) == json_object_size(p->rtm))
		return 0;
	json_object_foreach(p->res, key, cols)
	{
		if (!json_object_get(p->rtm, key)) {
			fail(err, EINVAL, "'%s': resource '%s' has no resource_type_map entry",
			     name, key);
			return -EINVAL;
		}
	}
	return 0;
}

/* index_loaded() for a packed profile: the same checks, on the tape. */
static int index_packed(struct sonde_profile *p, const char *name, struct sonde_strbuf *err)
{
	size_t n = sonde_json_pack__count(p->pack), i;

	for (i = 0; i < n; i++) {
		int bad = sonde_json_pack__check(p->pack, i);

		if (bad) {
			fail(err, EINVAL, bad_resource[bad], name,
			     sonde_json_pack__key(p->pack, i));
			return -EINVAL;
		}
	}
	p->keys = malloc((n ? n : 1) * sizeof(*p->keys));
	p->fixed = calloc(n ? n : 1, sizeof(*p->fixed));
	p->cols = calloc(n ? n : 1, sizeof(*p->cols));
	if (!p->keys || !p->fixed || !p->cols)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		p->keys[i] = sonde_json_pack__key(p->pack, i);
	p->n = p->cap = p->packed = n;
	return 0;
}

/*
 * Python's json module (Perun's) writes NaN, Infinity and -Infinity as bare
 * words, which JSON does not have. A copy of buf with each of them, outside
 * strings, read as null; *n counts them. NULL: out of memory.
 */
static char *nonfinite_as_null(const char *buf, size_t len, size_t *outlen, size_t *n)
{
	static const char *const words[] = { "-Infinity", "Infinity", "NaN" };
	struct sonde_strbuf out = SONDE_STRBUF_INIT;
	bool in_string = false;
	size_t i, w;

	*n = 0;
	for (i = 0; i < len; i++) {
		char c = buf[i];

		if (in_string) {
			if (c == '\\' && i + 1 < len) {
				if (sonde_strbuf__add(&out, buf + i, 2))
					goto oom;
				i++;
				continue;
			}
			in_string = c != '"';
		} else if (c == '"') {
			in_string = true;
		} else {
			for (w = 0; w < 3; w++) {
				size_t l = strlen(words[w]);

				if (len - i >= l && !memcmp(buf + i, words[w], l))
					break;
			}
			if (w < 3) {
				if (sonde_strbuf__adds(&out, "null"))
					goto oom;
				i += strlen(words[w]) - 1;
				(*n)++;
				continue;
			}
		}
		if (sonde_strbuf__addch(&out, c))
			goto oom;
	}
	return sonde_strbuf__detach(&out, outlen);
oom:
	sonde_strbuf__release(&out);
	return NULL;
}

/*
 * The fields every command reads, with the JSON type each must have when it is
 * there: checked once on load, so no view meets a number where it reads a
 * string (a non-string header.type crashed `show ... counters`).
 */
static const struct {
	const char *object, *field;
	json_type type, also; /* also: a second type accepted (JSON_NULL: none) */
} typed_fields[] = {
	{ "header", "type", JSON_STRING, JSON_NULL },
	{ "header", "cmd", JSON_STRING, JSON_NULL },
	{ "header", "workload", JSON_STRING, JSON_NULL },
	{ "header", "units", JSON_OBJECT, JSON_NULL },
	/* sonde writes the arguments as an array, Perun as one string */
	{ "header", "args", JSON_ARRAY, JSON_STRING },
	{ "collector_info", "name", JSON_STRING, JSON_NULL },
	{ "collector_info", "params", JSON_OBJECT, JSON_NULL },
	{ "stats", "warnings", JSON_ARRAY, JSON_NULL },
	{ "stats", "notes", JSON_ARRAY, JSON_NULL },
	{ "metadata", "date", JSON_STRING, JSON_NULL },
};

static const char *type_name(json_type t)
{
	return t == JSON_STRING ? "a string" : t == JSON_OBJECT ? "an object" : "an array";
}

static int cmp_id(const void *a, const void *b)
{
	const json_int_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

/*
 * trace.contexts: rows [id, parent, function, calls, inclusive, exclusive] of
 * integers, ids unique and positive, parents 0 (the root) or an id, and no
 * context its own ancestor. The views walk this tree: a cycle would never end.
 */
static const char *bad_contexts(json_t *root, char *buf, size_t len)
{
	json_t *ctx = json_object_get(json_object_get(root, "trace"), "contexts"), *row;
	size_t n = json_array_size(ctx), i, k;
	json_int_t *by_id; /* pairs: id, position */
	unsigned char *state;
	size_t *parent;
	const char *why = NULL;

	if (!ctx)
		return NULL;
	if (!json_is_array(ctx))
		return "trace.contexts is not an array";
	by_id = malloc((n + 1) * 2 * sizeof(*by_id));
	state = calloc(n + 1, 1);
	parent = malloc((n + 1) * sizeof(*parent));
	if (!by_id || !state || !parent) {
		free(by_id);
		free(state);
		free(parent);
		return "trace.contexts is too large";
	}
	json_array_foreach(ctx, i, row)
	{
		for (k = 0; k < 6 && json_is_array(row); k++)
			if (!json_is_integer(json_array_get(row, k)))
				break;
		if (k < 6 || json_integer_value(json_array_get(row, 0)) <= 0 ||
		    json_integer_value(json_array_get(row, 1)) < 0) {
			snprintf(buf, len,
				 "trace.contexts[%zu] is not 6 integers with a positive id", i);
			why = buf;
			goto out;
		}
		by_id[2 * i] = json_integer_value(json_array_get(row, 0));
		by_id[2 * i + 1] = (json_int_t)i;
	}
	qsort(by_id, n, 2 * sizeof(*by_id), cmp_id);
	for (i = 1; i < n; i++)
		if (by_id[2 * i] == by_id[2 * i - 2]) {
			snprintf(buf, len, "trace.contexts: the id %lld is used twice",
				 (long long)by_id[2 * i]);
			why = buf;
			goto out;
		}
	/* each context's parent, by position (n: the root), looked up once */
	for (i = 0; i < n; i++) {
		json_int_t par = json_integer_value(json_array_get(json_array_get(ctx, i), 1)),
			   key[2] = { par, 0 }, *hit;

		hit = par ? bsearch(key, by_id, n, 2 * sizeof(*by_id), cmp_id) : NULL;
		if (par && !hit) {
			snprintf(buf, len, "trace.contexts: the parent %lld is not a context",
				 (long long)par);
			why = buf;
			goto out;
		}
		parent[i] = hit ? (size_t)hit[1] : n;
	}
	/* walk up from each context; state 1: on this walk, 2: known to reach the root */
	for (i = 0; i < n && !why; i++) {
		size_t at;

		for (at = i; at < n && state[at] == 0; at = parent[at])
			state[at] = 1;
		if (at < n && state[at] == 1) {
			snprintf(buf, len,
				 "trace.contexts form a cycle (context %lld is its own ancestor)",
				 (long long)json_integer_value(
					 json_array_get(json_array_get(ctx, at), 0)));
			why = buf;
		}
		for (at = i; at < n && state[at] == 1; at = parent[at])
			state[at] = 2;
	}
out:
	free(by_id);
	free(state);
	free(parent);
	return why;
}

/* The first field of typed_fields[] of the wrong type, described in buf; NULL: none. */
static const char *mistyped(json_t *root, char *buf, size_t len)
{
	size_t i, j;
	json_t *w;

	for (i = 0; i < sizeof(typed_fields) / sizeof(typed_fields[0]); i++) {
		json_t *v = json_object_get(json_object_get(root, typed_fields[i].object),
					    typed_fields[i].field);

		if (v && !json_is_null(v) && json_typeof(v) != typed_fields[i].type &&
		    (typed_fields[i].also == JSON_NULL || json_typeof(v) != typed_fields[i].also)) {
			snprintf(buf, len, "%s.%s is not %s%s%s", typed_fields[i].object,
				 typed_fields[i].field, type_name(typed_fields[i].type),
				 typed_fields[i].also == JSON_NULL ? "" : " or ",
				 typed_fields[i].also == JSON_NULL
					 ? ""
					 : type_name(typed_fields[i].also));
			return buf;
		}
	}
	json_array_foreach(json_object_get(json_object_get(root, "stats"), "warnings"), j, w)
	{
		if (!json_is_object(w) || !json_is_string(json_object_get(w, "message")) ||
		    !json_is_string(json_object_get(w, "code")) ||
		    (json_object_get(w, "fix") && !json_is_string(json_object_get(w, "fix")))) {
			snprintf(buf, len,
				 "stats.warnings[%zu] is not {code, message, fix} strings", j);
			return buf;
		}
	}
	json_array_foreach(json_object_get(json_object_get(root, "stats"), "notes"), j, w)
	{
		if (!json_is_string(w)) {
			snprintf(buf, len, "stats.notes[%zu] is not a string", j);
			return buf;
		}
	}
	return bad_contexts(root, buf, len);
}

/* Append a note to root's stats.notes (made where missing); -ENOMEM on failure. */
static int add_note(json_t *root, const char *note)
{
	json_t *st = json_object_get(root, "stats"), *notes;

	if (!st) {
		st = json_object();
		if (!st || json_object_set_new(root, "stats", st))
			return -ENOMEM;
	}
	notes = json_object_get(st, "notes");
	if (!notes) {
		notes = json_array();
		if (!notes || json_object_set_new(st, "notes", notes))
			return -ENOMEM;
	}
	if (!json_is_array(notes))
		return 0; /* the type check refuses the profile */
	return json_array_append_new(notes, json_string(note)) ? -ENOMEM : 0;
}

/* Move root[from] to obj[to] where obj has no member to; the member is gone from root. */
static int move_member(json_t *root, const char *from, json_t *obj, const char *to)
{
	json_t *v = json_object_get(root, from);

	if (!v)
		return 0;
	if (!json_object_get(obj, to) && json_object_set(obj, to, v))
		return -ENOMEM;
	return json_object_del(root, from) ? -ENOMEM : 0;
}

/*
 * The shapes Perun's profiles take in its own history, turned into the ones
 * sonde reads (docs/profile-format.md, "Perun's profiles"). Perun's loader
 * takes any JSON object; sonde's stays strict on the fields it relies on, so
 * only these known shapes are read:
 *  - the flat form of Perun's first releases: cmd, type, workload, param
 *    (the arguments), collector and minor_version at the top level;
 *  - collector (not collector_info) beside a header, header.params for the
 *    arguments, and a collector's params given as one string of options;
 *  - header.units that is not an object ([null] in old complexity profiles):
 *    read as no units, with a note.
 * header.args stays a string where Perun wrote one.
 */
static int perun_shapes(json_t *root)
{
	static const char *const flat[][2] = {
		{ "cmd", "cmd" },
		{ "type", "type" },
		{ "workload", "workload" },
		{ "param", "args" },
	};
	json_t *h = json_object_get(root, "header"), *ci, *params, *units;
	size_t i;
	int err = 0;

	if (!h) {
		h = json_object();
		if (!h || json_object_set_new(root, "header", h))
			return -ENOMEM;
	}
	if (!json_is_object(h))
		return 0; /* the type check refuses it */
	for (i = 0; i < sizeof(flat) / sizeof(flat[0]); i++)
		err |= move_member(root, flat[i][0], h, flat[i][1]);
	err |= move_member(h, "params", h, "args");
	if (!json_object_get(root, "collector_info"))
		err |= move_member(root, "collector", root, "collector_info");
	if (json_is_string(json_object_get(root, "minor_version")) &&
	    !json_is_string(json_object_get(root, "origin")))
		err |= move_member(root, "minor_version", root, "origin");
	ci = json_object_get(root, "collector_info");
	params = json_object_get(ci, "params");
	if (json_is_object(ci) && json_is_string(params))
		err |= json_object_set_new(ci, "params", json_pack("{s:O}", "options", params));
	units = json_object_get(h, "units");
	if (units && !json_is_object(units) && !json_is_null(units)) {
		char *text = json_dumps(units, JSON_COMPACT | JSON_ENCODE_ANY), note[192];

		snprintf(note, sizeof(note),
			 "header.units (%.60s) is not an object of units: read as no units",
			 text ? text : "?");
		free(text);
		err |= json_object_del(h, "units");
		err |= add_note(root, note);
	}
	return err ? -ENOMEM : 0;
}

/* sonde_profile__parse(), from a buffer with slack bytes readable after buf[len] */
static struct sonde_profile *parse(const char *buf, size_t len, size_t slack, const char *name,
				   struct sonde_strbuf *err)
{
	char why[128];
	json_error_t jerr;
	struct sonde_json_pack *pack = NULL;
	json_t *root = sonde_json__load_packed(buf, len, slack, &jerr, &pack), *fv, *v, *records;
	struct sonde_profile *p;
	const char *const *k;
	size_t nonfinite = 0;
	bool perun;

	if (!root) {
		size_t l2;
		char *copy = nonfinite_as_null(buf, len, &l2, &nonfinite);

		if (copy && nonfinite)
			root = sonde_json__load_packed(copy, l2, 0, NULL, &pack);
		free(copy);
	}
	if (!root) {
		/* jansson quotes a few characters: show the line around the error */
		size_t at = jerr.position > 0 && (size_t)jerr.position <= len
				    ? (size_t)jerr.position
				    : 0,
		       from = at > 30 ? at - 30 : 0, to = at + 30 < len ? at + 30 : len, w = 0, i;
		char where[384], excerpt[80];

		for (i = from; i < to && w + 1 < sizeof(excerpt); i++)
			excerpt[w++] =
				(unsigned char)buf[i] < 0x20 || buf[i] == 0x7f ? ' ' : buf[i];
		excerpt[w] = 0;
		snprintf(where, sizeof(where), "line %d, column %d: %s, at \"%s%s%s\"", jerr.line,
			 jerr.column, jerr.text, from ? "..." : "", excerpt, to < len ? "..." : "");
		return fail(err, EINVAL, "'%s' is not valid JSON: %s", name, where);
	}
	if (!json_is_object(root)) {
		json_decref(root);
		sonde_json_pack__free(pack);
		return fail(err, EINVAL, "'%s' is not a profile: %s", name,
			    "the document is not a JSON object");
	}
	fv = json_object_get(root, "format_version");
	perun = fv == NULL;
	if (fv && (!json_is_integer(fv) || json_integer_value(fv) < 1)) {
		json_decref(root);
		sonde_json_pack__free(pack);
		return fail(err, EINVAL, "'%s' is not a profile: %s", name,
			    "format_version is not a positive integer");
	}
	if (fv && json_integer_value(fv) > SONDE_PROFILE_FORMAT_VERSION) {
		char detail[128];

		snprintf(detail, sizeof(detail),
			 "format_version %lld is newer than this sonde reads (%d); upgrade sonde",
			 (long long)json_integer_value(fv), SONDE_PROFILE_FORMAT_VERSION);
		json_decref(root);
		sonde_json_pack__free(pack);
		return fail(err, ENOTSUP, "'%s' has %s", name, detail);
	}
	if (perun && !json_object_get(root, "header") && !json_object_get(root, "resources") &&
	    !json_object_get(root, "global") && !json_object_get(root, "snapshots")) {
		json_decref(root);
		sonde_json_pack__free(pack);
		return fail(err, EINVAL, "'%s' is not a profile: %s", name,
			    "no format_version, header or resources");
	}
	if (perun && perun_shapes(root)) {
		json_decref(root);
		sonde_json_pack__free(pack);
		errno = ENOMEM;
		return NULL;
	}
	for (k = toplevel_objects; *k; k++) {
		v = json_object_get(root, *k);
		if (v && !json_is_object(v) && !(perun && !strcmp(*k, "resources"))) {
			char detail[96];

			snprintf(detail, sizeof(detail), "'%s' is not an object", *k);
			json_decref(root);
			sonde_json_pack__free(pack);
			return fail(err, EINVAL, "'%s' is not a profile: %s", name, detail);
		}
	}
	if (mistyped(root, why, sizeof(why))) {
		json_decref(root);
		sonde_json_pack__free(pack);
		return fail(err, EINVAL, "'%s' is not a profile: %s", name, why);
	}
	/* Perun's list of records is kept aside; the document gets a columnar part. */
	records = json_object_get(root, "resources");
	records = perun && json_is_array(records) ? json_incref(records) : NULL;
	if (records)
		json_object_del(root, "resources");
	if (fill_defaults(root, NULL)) {
		json_decref(records);
		json_decref(root);
		sonde_json_pack__free(pack);
		errno = ENOMEM;
		return NULL;
	}
	if (!json_is_string(json_object_get(json_object_get(root, "header"), "type")))
		json_object_set_new(json_object_get(root, "header"), "type", json_string("custom"));
	if (nonfinite) {
		char note[160];

		snprintf(note, sizeof(note),
			 "%zu values were NaN or infinite (Python's JSON): read as missing, and "
			 "left out of statistics and fits",
			 nonfinite);
		add_note(root, note);
	}
	p = wrap(root);
	if (!p) {
		json_decref(records);
		json_decref(root);
		sonde_json_pack__free(pack);
		errno = ENOMEM;
		return NULL;
	}
	p->pack = pack;
	if (pack ? index_packed(p, name, err) : index_loaded(p, name, err)) {
		json_decref(records);
		sonde_profile__free(p);
		errno = EINVAL;
		return NULL;
	}
	if (perun) {
		int e = convert_perun(p, root, records, why, sizeof(why));

		json_decref(records);
		if (e) {
			sonde_profile__free(p);
			return fail(err, e == -ENOMEM ? ENOMEM : EINVAL,
				    "'%s' is not a profile: %s", name,
				    e == -ENOMEM ? "out of memory" : why);
		}
	}
	return p;
}

struct sonde_profile *sonde_profile__parse(const char *buf, size_t len, const char *name,
					   struct sonde_strbuf *err)
{
	return parse(buf, len, 0, name, err);
}

size_t sonde_profile__extension(const char *name)
{
	static const char *const exts[] = { ".json", ".json.gz", ".json.zst" };
	size_t n = strlen(name), i;

	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t m = strlen(exts[i]);

		if (n > m && !strcmp(name + n - m, exts[i]))
			return m;
	}
	return 0;
}

struct sonde_profile *sonde_profile__load(const char *path, struct sonde_strbuf *err)
{
	struct sonde_profile *p;
	char *buf, *big;
	size_t len;
	int e = sonde_file__read_data(path, &buf, &len);

	if (e) {
		if (err)
			sonde_strbuf__addf(err, "cannot read '%s': %s", path,
					   e == -EBADMSG
						   ? "its compressed data is truncated or corrupt"
						   : strerror(-e));
		errno = -e;
		return NULL;
	}
	/* room after the document: the JSON reader then parses it in place */
	big = realloc(buf, len + SONDE_JSON_SLACK);
	if (big) {
		memset(big + len, 0, SONDE_JSON_SLACK);
		buf = big;
	}
	{
		uint64_t t0 = sonde_clock_ns();

		p = parse(buf, len, big ? SONDE_JSON_SLACK : 0, path, err);
		if (p)
			sonde_log(SONDE_LOG_DEBUG, "profile",
				  "loaded '%s': %s profile, %zu resources, %zu bytes in %.3f ms", path,
				  sonde_profile__type(p), sonde_profile__resource_count(p), len,
				  (double)(sonde_clock_ns() - t0) / 1e6);
	}
	free(buf);
	return p;
}

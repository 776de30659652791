/*
 * json-read.cc - the fast way in for large JSON documents (see json.h).
 *
 * simdjson (Debian's libsimdjson) parses the document into its tape, and the
 * tape is copied into a jansson tree, the model the rest of libsonde works on.
 * jansson spends most of a profile's load lexing numbers one character at a
 * time (strtod under the locale, a growing token buffer); simdjson parses a
 * megabyte of numbers in about a millisecond.
 *
 * The answer must be the one json_loadb(JSON_REJECT_DUPLICATES) gives, so
 * this reader declines whatever jansson would read differently or refuse,
 * and jansson then decides (and says why a document is bad):
 *  - any document simdjson refuses (syntax, depth, number range, encoding);
 *  - a top level that is not an object or an array, and a byte order mark;
 *  - an integer above INT64_MAX (simdjson reads it, jansson does not);
 *  - a string or key with a NUL in it (jansson refuses \u0000);
 *  - a key twice in one object.
 * tests/unit/test-json.c and tests/fuzz/fuzz-json.c hold the two readers to
 * the same trees.
 */
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>
#include <simdjson.h>

extern "C" {
#include <sonde/profile.h>
#include <sonde/strbuf.h>
#include "grow.h"
#include "json.h"
#include "strmap.h"
}

namespace
{

/*
 * simdjson picks its implementation for this CPU on first use, allocating in
 * a function that may not throw: out of memory there, the process ends
 * (std::terminate). It is picked when the library loads instead, before any
 * work of the program's.
 */
__attribute__((constructor)) void pick_implementation()
{
	try {
		simdjson::dom::parser warm;
		simdjson::padded_string one("1", 1);

		(void)warm.parse(one); /* the first parse picks it */
	} catch (...) {
	}
}

using namespace simdjson;

/*
 * The tree of one document. Equal small integers and equal short strings
 * are one jansson value, shared (jansson counts references, and libsonde
 * never changes a loaded number or string in place): a profile repeats its
 * sizes, function names and file names thousands of times, and each value
 * not made is a malloc and 24 to 40 bytes saved.
 */
class builder
{
      public:
	~builder()
	{
		sonde_json__ints_release(&ints);
		for (auto &c : strings)
			json_decref(c.v);
	}

	json_t *tree(dom::element e)
	{
		switch (e.type()) {
		case dom::element_type::OBJECT:
			return object_of(e.get_object().value_unsafe());
		case dom::element_type::ARRAY:
			return array_of(e.get_array().value_unsafe());
		case dom::element_type::INT64:
			return integer(e.get_int64().value_unsafe());
		case dom::element_type::UINT64:
			return nullptr; /* above INT64_MAX: jansson refuses it */
		case dom::element_type::DOUBLE:
			return json_real(e.get_double().value_unsafe());
		case dom::element_type::STRING:
			return string(e.get_string().value_unsafe());
		case dom::element_type::BOOL:
			return json_boolean(e.get_bool().value_unsafe());
		case dom::element_type::NULL_VALUE:
			return json_null();
		}
		return nullptr;
	}

      private:
	static constexpr size_t short_string = 64, cached_strings = 16384; /* a power of two */
	struct sonde_json_ints ints = {};
	/*
	 * The short strings seen last, one per slot of their hash: a string that
	 * repeats (a name, a unit) stays, one that does not (a document of a
	 * million distinct names) costs a hash and a compare, and makes way.
	 * The texts point into the parser's strings, which outlive the builder.
	 */
	struct cached {
		std::string_view s;
		uint64_t hash = 0;
		json_t *v = nullptr;
	};
	std::vector<cached> strings = std::vector<cached>(cached_strings);

	json_t *integer(int64_t i)
	{
		return sonde_json__int(&ints, i);
	}

	json_t *string(std::string_view s)
	{
		json_t *v;

		if (std::memchr(s.data(), 0, s.size()))
			return nullptr; /* jansson refuses \u0000 */
		if (s.size() > short_string)
			return json_stringn_nocheck(s.data(), s.size());
		uint64_t h = sonde_strmap__hash(s.data(), s.size());
		cached &c = strings[h & (cached_strings - 1)];
		/* the hash first: the text a slot points to is far away in memory */
		if (c.v && c.hash == h && c.s == s)
			return json_incref(c.v);
		v = json_stringn_nocheck(s.data(), s.size());
		if (v) {
			json_decref(c.v);
			c = cached{ s, h, json_incref(v) };
		}
		return v;
	}

	json_t *array_of(dom::array a)
	{
		json_t *out = json_array();

		if (!out)
			return nullptr;
		for (dom::element c : a) {
			json_t *v = tree(c);

			if (!v || json_array_append_new(out, v)) {
				json_decref(out);
				return nullptr;
			}
		}
		return out;
	}

	json_t *object_of(dom::object o)
	{
		json_t *out = json_object();
		size_t n = 0;

		if (!out)
			return nullptr;
		for (dom::key_value_pair kv : o) {
			/* the tape's strings end with a NUL: a key without one inside is a C string
			 */
			const char *key = kv.key.data();
			json_t *v;

			if (std::memchr(key, 0, kv.key.size())) {
				json_decref(out);
				return nullptr;
			}
			v = tree(kv.value);
			/* a key seen before replaces its value: the object then holds fewer than n
			 */
			if (!v || json_object_set_new_nocheck(out, key, v) ||
			    json_object_size(out) != ++n) {
				json_decref(out);
				return nullptr;
			}
		}
		return out;
	}
};

static_assert(SIMDJSON_PADDING <= SONDE_JSON_SLACK, "simdjson reads past the slack");

/*
 * Whether e holds nothing the builder would refuse (so that making its tree
 * later cannot fail but for memory): no NUL in a string or key, no integer
 * above INT64_MAX, no key twice in one object.
 */
bool clean(dom::element e)
{
	switch (e.type()) {
	case dom::element_type::OBJECT: {
		dom::object o = e.get_object().value_unsafe();
		size_t n = o.size();

		if (n > 16) {
			struct sonde_strmap seen = {};
			bool ok = true;

			for (dom::key_value_pair kv : o) {
				bool again = false;

				if (!ok || std::memchr(kv.key.data(), 0, kv.key.size()) ||
				    !sonde_strmap__upsert(&seen, kv.key.data(), kv.key.size(),
							  &again) ||
				    again || !clean(kv.value))
					ok = false;
			}
			sonde_strmap__release(&seen);
			return ok;
		}
		std::string_view keys[16];
		size_t k = 0;

		for (dom::key_value_pair kv : o) {
			if (std::memchr(kv.key.data(), 0, kv.key.size()))
				return false;
			for (size_t j = 0; j < k; j++)
				if (keys[j] == kv.key)
					return false;
			keys[k++] = kv.key;
			if (!clean(kv.value))
				return false;
		}
		return true;
	}
	case dom::element_type::ARRAY: {
		dom::array a = e.get_array().value_unsafe();

		for (dom::element c : a)
			if (!clean(c))
				return false;
		return true;
	}
	case dom::element_type::UINT64:
		return false;
	case dom::element_type::STRING: {
		std::string_view v = e.get_string().value_unsafe();

		return !std::memchr(v.data(), 0, v.size());
	}
	default:
		return true;
	}
}

/*
 * The document parsed into doc (its tape kept after the parser's working
 * buffers are freed), *root its top: false for a document left to jansson.
 */
bool parse_doc(const char *buf, size_t len, size_t slack, dom::document &doc, dom::element *root)
{
	dom::parser parser;

	if (len >= 3 && !std::memcmp(buf, "\xef\xbb\xbf", 3))
		return false;
	if (parser.parse_into_document(doc, buf, len, slack < SIMDJSON_PADDING).get(*root) !=
	    SUCCESS)
		return false;
	return root->type() == dom::element_type::OBJECT ||
	       root->type() == dom::element_type::ARRAY;
}

json_t *fast(const char *buf, size_t len, size_t slack)
{
	dom::document doc;
	dom::element root;

	return parse_doc(buf, len, slack, doc, &root) ? builder().tree(root) : nullptr;
}

} // namespace

/*
 * A profile whose resources stay on simdjson's tape (see json.h): the tape
 * and its strings, and each resource's two values on it.
 */
struct sonde_json_pack {
	dom::document doc;
	std::vector<const char *> keys;	 /* in resource_type_map's order */
	std::vector<dom::element> fixed; /* its values there */
	std::vector<dom::element> cols;	 /* and in resources (when has_cols) */
	std::vector<unsigned char> has_cols;
	std::vector<size_t> res_order; /* resources' own order, when not that one */
	dom::element rtm, res;
	builder b; /* shares equal small values between the trees made */
};

namespace
{

/*
 * Each resource of rtm matched with its columns in res: false where the
 * document is one to leave to jansson (a key twice in either), with
 * pk->keys etc. filled otherwise.
 */
bool match(sonde_json_pack *pk)
{
	dom::object rtm = pk->rtm.get_object().value_unsafe();
	dom::object res = pk->res.get_object().value_unsafe();
	struct sonde_strmap at = {};
	size_t n = rtm.size(), i = 0;
	bool ok = true, in_step = true;

	pk->keys.reserve(n);
	pk->fixed.reserve(n);
	pk->cols.resize(n);
	pk->has_cols.assign(n, 0);
	for (dom::key_value_pair kv : rtm) {
		bool again = false;
		uint64_t *v;

		if (std::memchr(kv.key.data(), 0, kv.key.size()) || !clean(kv.value) ||
		    !(v = sonde_strmap__upsert(&at, kv.key.data(), kv.key.size(), &again)) ||
		    again) {
			ok = false;
			break;
		}
		*v = i++;
		pk->keys.push_back(kv.key.data());
		pk->fixed.push_back(kv.value);
	}
	i = 0;
	for (dom::key_value_pair kv : res) {
		size_t k;

		if (!ok)
			break;
		if (std::memchr(kv.key.data(), 0, kv.key.size()) || !clean(kv.value)) {
			ok = false;
			break;
		}
		if (in_step && i < n && kv.key == std::string_view(pk->keys[i])) {
			k = i;
		} else {
			uint64_t *v = sonde_strmap__get(&at, kv.key.data(), kv.key.size());

			if (in_step) {
				in_step = false;
				for (size_t j = 0; j < i; j++)
					pk->res_order.push_back(j);
			}
			if (!v) { /* columns without an entry: jansson's tree says so */
				ok = false;
				break;
			}
			k = (size_t)*v;
		}
		i++;
		if (pk->has_cols[k]) { /* a key twice */
			ok = false;
			break;
		}
		if (!in_step)
			pk->res_order.push_back(k);
		pk->has_cols[k] = 1;
		pk->cols[k] = kv.value;
	}
	/* resources in step with resource_type_map but fewer: the same order */
	if (ok && in_step && i < n)
		for (size_t j = 0; j < i; j++)
			pk->res_order.push_back(j);
	sonde_strmap__release(&at);
	return ok;
}

json_t *fast_packed(const char *buf, size_t len, size_t slack, sonde_json_pack **out)
{
	sonde_json_pack *pk = new sonde_json_pack;
	dom::element root;
	json_t *tree = nullptr;
	int seen = 0;

	*out = nullptr;
	if (!parse_doc(buf, len, slack, pk->doc, &root)) {
		delete pk;
		return nullptr;
	}
	if (root.type() == dom::element_type::ARRAY) {
		tree = pk->b.tree(root);
		delete pk;
		return tree;
	}
	dom::object o = root.get_object().value_unsafe();
	bool versioned = false;

	for (dom::key_value_pair kv : o) {
		if (kv.key == "resource_type_map" && kv.value.is_object()) {
			pk->rtm = kv.value;
			seen |= 1;
		} else if (kv.key == "resources" && kv.value.is_object()) {
			pk->res = kv.value;
			seen |= 2;
		} else if (kv.key == "format_version") {
			versioned = true;
		}
	}
	/* a profile of the documented form, whose two maps jansson would read alike */
	if (seen != 3 || !versioned || !match(pk)) {
		tree = pk->b.tree(root);
		delete pk;
		return tree;
	}
	/* the rest as a tree, with the two maps empty objects in their places */
	tree = json_object();
	size_t n = 0;

	for (dom::key_value_pair kv : o) {
		const char *key = kv.key.data();
		bool packed = kv.key == "resource_type_map" || kv.key == "resources";
		json_t *v;

		if (std::memchr(key, 0, kv.key.size())) {
			n = (size_t)-1;
			break;
		}
		v = packed ? json_object() : pk->b.tree(kv.value);
		if (!v || json_object_set_new_nocheck(tree, key, v) ||
		    json_object_size(tree) != ++n) {
			n = (size_t)-1;
			break;
		}
	}
	if (!tree || n == (size_t)-1) {
		json_decref(tree);
		delete pk;
		return nullptr;
	}
	*out = pk;
	return tree;
}

} // namespace

extern "C" json_t *sonde_json__load_packed(const char *buf, size_t len, size_t slack,
					   json_error_t *err, struct sonde_json_pack **pack)
{
	json_t *root = nullptr;

	*pack = nullptr;
	try {
		root = fast_packed(buf, len, slack, pack);
	} catch (...) {
		root = nullptr; /* out of memory in simdjson: jansson decides */
	}
	return root ? root : json_loadb(buf, len, JSON_REJECT_DUPLICATES, err);
}

extern "C" void sonde_json_pack__free(struct sonde_json_pack *pk)
{
	delete pk;
}

extern "C" size_t sonde_json_pack__count(const struct sonde_json_pack *pk)
{
	return pk->keys.size();
}

extern "C" const char *sonde_json_pack__key(const struct sonde_json_pack *pk, size_t i)
{
	return pk->keys[i];
}

extern "C" int sonde_json_pack__check(const struct sonde_json_pack *pk, size_t i)
{
	size_t len = (size_t)-1;

	if (!pk->fixed[i].is_object())
		return SONDE_PACK_FIXED_NOT_OBJECT;
	if (!pk->has_cols[i])
		return 0;
	if (!pk->cols[i].is_object())
		return SONDE_PACK_COLUMNS_NOT_OBJECT;
	dom::object cols = pk->cols[i].get_object().value_unsafe();

	for (dom::key_value_pair kv : cols) {
		if (!kv.value.is_array())
			return SONDE_PACK_COLUMN_NOT_ARRAY;
		size_t m = kv.value.get_array().value_unsafe().size();

		if (len != (size_t)-1 && m != len)
			return SONDE_PACK_COLUMN_LENGTHS;
		len = m;
	}
	return 0;
}

extern "C" size_t sonde_json_pack__res_order(const struct sonde_json_pack *pk, size_t j)
{
	return pk->res_order.empty() ? j : pk->res_order[j];
}

extern "C" size_t sonde_json_pack__res_count(const struct sonde_json_pack *pk)
{
	return pk->res_order.empty() ? pk->keys.size() : pk->res_order.size();
}

extern "C" json_t *sonde_json_pack__fixed(struct sonde_json_pack *pk, size_t i)
{
	try {
		return pk->b.tree(pk->fixed[i]);
	} catch (...) {
		return nullptr;
	}
}

extern "C" json_t *sonde_json_pack__columns(struct sonde_json_pack *pk, size_t i)
{
	try {
		return pk->has_cols[i] ? pk->b.tree(pk->cols[i]) : json_object();
	} catch (...) {
		return nullptr;
	}
}

namespace
{

bool member_of(dom::element obj, const char *name, dom::element *out)
{
	if (!obj.is_object())
		return false;
	dom::object o = obj.get_object().value_unsafe();

	for (dom::key_value_pair kv : o)
		if (kv.key == name) {
			*out = kv.value;
			return true;
		}
	return false;
}

} // namespace

namespace
{

/* v's type and value, as sonde_json_pack__fixed_scalar() gives them */
int scalar_of(dom::element v, struct sonde_scalar *out)
{
	switch (v.type()) {
	case dom::element_type::OBJECT:
		return out->type = JSON_OBJECT;
	case dom::element_type::ARRAY:
		return out->type = JSON_ARRAY;
	case dom::element_type::STRING:
		out->s = v.get_c_str().value_unsafe();
		return out->type = JSON_STRING;
	case dom::element_type::INT64:
		out->i = v.get_int64().value_unsafe();
		out->d = (double)out->i;
		return out->type = JSON_INTEGER;
	case dom::element_type::UINT64: /* not in a pack (clean) */
	case dom::element_type::DOUBLE:
		out->d = v.get_double().value_unsafe();
		return out->type = JSON_REAL;
	case dom::element_type::BOOL:
		return out->type = v.get_bool().value_unsafe() ? JSON_TRUE : JSON_FALSE;
	case dom::element_type::NULL_VALUE:
		return out->type = JSON_NULL;
	}
	return -1;
}

} // namespace

extern "C" int sonde_json_pack__fixed_scalar(const struct sonde_json_pack *pk, size_t i,
					     const char *name, const char *member,
					     struct sonde_scalar *out)
{
	dom::element v;

	*out = sonde_scalar{};
	out->type = -1;
	if (!member_of(pk->fixed[i], name, &v) || (member && !member_of(v, member, &v)))
		return -1;
	return scalar_of(v, out);
}

extern "C" long sonde_json_pack__fixed_strings(const struct sonde_json_pack *pk, size_t i,
					       const char *name, const char *member,
					       const char ***out, size_t *cap)
{
	dom::element v;
	size_t n, k = 0;

	if (!member_of(pk->fixed[i], name, &v) || !v.is_array())
		return -ENOENT;
	dom::array a = v.get_array().value_unsafe();

	n = a.size();
	if (sonde_grow((void **)out, cap, n, sizeof(**out)))
		return -ENOMEM;
	for (dom::element e : a) {
		dom::element m;

		(*out)[k++] = member_of(e, member, &m) && m.is_string()
				      ? m.get_c_str().value_unsafe()
				      : nullptr;
	}
	return (long)k;
}

namespace
{

/* Before a member or an element: a comma after the first, and its own line when indented. */
int lead(struct sonde_strbuf *sb, bool *first, size_t indent, size_t depth)
{
	int err = *first ? 0 : sonde_strbuf__addch(sb, ',');

	*first = false;
	return indent ? err | sonde_json__put_indent(sb, indent * (depth + 1)) : err;
}

/* The closing bracket, on its own line when indented and after something. */
int closing(struct sonde_strbuf *sb, bool first, size_t indent, size_t depth, char c)
{
	int err = indent && !first ? sonde_json__put_indent(sb, indent * depth) : 0;

	return err | sonde_strbuf__addch(sb, c);
}

/* json.c's dump() over the tape: the same bytes for the same values */
int tape_dump(struct sonde_strbuf *sb, dom::element v, size_t indent, size_t depth, bool flat)
{
	int err = 0;
	bool first = true;

	switch (v.type()) {
	case dom::element_type::OBJECT: {
		dom::object o = v.get_object().value_unsafe();

		err = sonde_strbuf__addch(sb, '{');
		for (dom::key_value_pair kv : o) {
			if (err)
				break;
			err |= lead(sb, &first, indent, depth);
			err |= sonde_json__put_string(sb, kv.key.data(), kv.key.size());
			err |= indent ? sonde_strbuf__add(sb, ": ", 2)
				      : sonde_strbuf__addch(sb, ':');
			err |= tape_dump(sb, kv.value, indent, depth + 1, flat);
		}
		return err | closing(sb, first, indent, depth, '}');
	}
	case dom::element_type::ARRAY: {
		dom::array a = v.get_array().value_unsafe();
		bool scalars = true;

		if (indent && flat) { /* an array of scalars on one line */
			for (dom::element e : a)
				if (e.is_object() || e.is_array())
					scalars = false;
			if (scalars)
				indent = 0;
		}
		err = sonde_strbuf__addch(sb, '[');
		for (dom::element e : a) {
			if (err)
				break;
			err |= lead(sb, &first, indent, depth);
			err |= tape_dump(sb, e, indent, depth + 1, flat);
		}
		return err | closing(sb, first, indent, depth, ']');
	}
	case dom::element_type::STRING: {
		std::string_view s = v.get_string().value_unsafe();

		return sonde_json__put_string(sb, s.data(), s.size());
	}
	case dom::element_type::INT64:
		return sonde_json__put_integer(sb, v.get_int64().value_unsafe());
	case dom::element_type::DOUBLE:
		return sonde_json__put_real(sb, v.get_double().value_unsafe());
	case dom::element_type::BOOL:
		return sonde_strbuf__adds(sb, v.get_bool().value_unsafe() ? "true" : "false");
	case dom::element_type::NULL_VALUE:
		return sonde_strbuf__adds(sb, "null");
	case dom::element_type::UINT64: /* not in a pack (clean) */
		break;
	}
	return -EINVAL;
}

} // namespace

extern "C" int sonde_json_pack__dump(const struct sonde_json_pack *pk, size_t i, int which,
				     struct sonde_strbuf *sb, size_t indent, size_t depth, int flat)
{
	if (which && !pk->has_cols[i])
		return sonde_strbuf__adds(sb, "{}") ? -ENOMEM : 0;
	return tape_dump(sb, which ? pk->cols[i] : pk->fixed[i], indent, depth, flat) ? -ENOMEM : 0;
}

extern "C" long sonde_json_pack__numbers(const struct sonde_json_pack *pk, size_t i,
					 const char *column, double **vals, size_t *cap)
{
	dom::element col;
	size_t n, k = 0;

	if (!pk->has_cols[i] || !member_of(pk->cols[i], column, &col) || !col.is_array())
		return -ENOENT;
	dom::array a = col.get_array().value_unsafe();

	n = a.size();
	if (!vals)
		return (long)n;
	if (sonde_grow((void **)vals, cap, n, sizeof(**vals)))
		return -ENOMEM;
	for (dom::element e : a) {
		double d = NAN;

		if (e.type() == dom::element_type::INT64)
			d = (double)e.get_int64().value_unsafe();
		else if (e.type() == dom::element_type::DOUBLE)
			d = e.get_double().value_unsafe();
		(*vals)[k++] = d;
	}
	return (long)k;
}

extern "C" json_t *sonde_json__load_fast(const char *buf, size_t len, size_t slack)
{
	try {
		return fast(buf, len, slack);
	} catch (...) {
		return nullptr; /* out of memory in simdjson: jansson decides */
	}
}

extern "C" json_t *sonde_json__load(const char *buf, size_t len, size_t slack, json_error_t *err)
{
	json_t *root = sonde_json__load_fast(buf, len, slack);

	return root ? root : json_loadb(buf, len, JSON_REJECT_DUPLICATES, err);
}

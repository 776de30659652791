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
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>
#include <simdjson.h>

extern "C" {
#include "json.h"
#include "strmap.h"
}

namespace
{

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

json_t *fast(const char *buf, size_t len, size_t slack)
{
	dom::parser parser;
	dom::element root;

	if (len >= 3 && !std::memcmp(buf, "\xef\xbb\xbf", 3))
		return nullptr;
	if (parser.parse(buf, len, slack < SIMDJSON_PADDING).get(root) != SUCCESS)
		return nullptr;
	if (root.type() != dom::element_type::OBJECT && root.type() != dom::element_type::ARRAY)
		return nullptr;
	return builder().tree(root);
}

} // namespace

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

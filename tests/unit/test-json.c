/*
 * Unit tests: the fast JSON reader and writer against jansson, the reference.
 * Whatever the reader gives must be jansson's tree (or jansson's refusal, with
 * jansson's reason), and whatever the writer gives must be jansson's bytes.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sonde/strbuf.h>
#include "json.h"

/*
 * Same tree: json_equal, and integers stay integers (json_equal says so too).
 * A document jansson reads is read by simdjson's part itself (not handed back
 * to jansson), unless it nests deeper than simdjson's 1024 levels.
 */
static void same_reading(const char *doc, size_t len)
{
	json_error_t je, fe;
	json_t *j = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &je);
	json_t *f = sonde_json__load(doc, len, 0, &fe);

	if (!j) {
		if (f)
			fail_msg("jansson refuses '%.*s' (%s), the fast reader reads it", (int)len,
				 doc, je.text);
		assert_string_equal(je.text, fe.text);
		assert_int_equal(je.line, fe.line);
		assert_int_equal(je.column, fe.column);
		return;
	}
	if (!f)
		fail_msg("jansson reads '%.*s', the fast reader refuses it", (int)len, doc);
	if (len < 2048 || doc[1024] != '[') {
		json_t *direct = sonde_json__load_fast(doc, len, 0);

		if (!direct)
			fail_msg("'%.*s' went to jansson", (int)len, doc);
		json_decref(direct);
	}
	if (!json_equal(j, f)) {
		char *a = json_dumps(j, JSON_ENCODE_ANY), *b = json_dumps(f, JSON_ENCODE_ANY);

		fail_msg("'%.*s': jansson %s, fast %s", (int)len, doc, a, b);
	}
	json_decref(f);
	/* in place: the same document with room after it */
	{
		char *room = malloc(len + SONDE_JSON_SLACK);

		assert_non_null(room);
		memcpy(room, doc, len);
		memset(room + len, 'x', SONDE_JSON_SLACK);
		f = sonde_json__load(room, len, SONDE_JSON_SLACK, &fe);
		assert_non_null(f);
		assert_true(json_equal(j, f));
		json_decref(f);
		free(room);
	}
	json_decref(j);
}

static void test_reader_agrees(void **state)
{
	static const char *const docs[] = {
		"{}",
		"[]",
		"[1, -2, 3.5, -0, -0.0, 0e0, 1E2, 1e-400, 2.5e-308]",
		"{\"a\": {\"b\": [true, false, null, \"x\"]}, \"c\": \"\\u00e9\\n\\t\\\"\"}",
		"[9223372036854775807, -9223372036854775808]",
		"[9223372036854775808]",
		"[18446744073709551615]",
		"[18446744073709551616]",
		"[-9223372036854775809]",
		"[1e309]",
		"[-1e309]",
		"[0.1, 0.2, 123456789012345678901234567890]",
		"{\"a\": 1, \"a\": 2}",
		"{\"a\": {\"x\": 1, \"x\": 1}}",
		"[\"a\\u0000b\"]",
		"{\"a\\u0000b\": 1}",
		"[\"\\ud800\"]",
		"[\"\\udc00\"]",
		"[\"\\ud83d\\ude00\"]",
		"[\"\xc3\x28\"]",
		"[\"\xed\xa0\x80\"]",
		"\xef\xbb\xbf{}",
		"1",
		"\"s\"",
		"null",
		"",
		"   ",
		"[1,]",
		"[1 2]",
		"{\"a\" 1}",
		"{\"a\":1,}",
		"[01]",
		"[1.]",
		"[.5]",
		"[+1]",
		"[NaN]",
		"[Infinity]",
		"[-]",
		"{} {}",
		"{}  \n",
		"[\"\t\"]",
		"[\"\\x\"]",
		"[\"\\/\"]",
		"{\"\": 0}",
		"[[[[[[]]]]]]",
		"[1e+5, 1E-5, -1.5e10]",
		"[true false]",
		"[nul]",
		"{\"a\":[1,2,{\"b\":null}],\"c\":[]}",
	};
	char deep[5000];
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		same_reading(docs[i], strlen(docs[i]));
	/* deeper than simdjson's 1024 levels, and deeper than jansson's 2048 */
	for (i = 0; i < 1500; i++)
		deep[i] = '[', deep[3000 - 1 - i] = ']';
	same_reading(deep, 3000);
	for (i = 0; i < 2500; i++)
		deep[i] = '[', deep[5000 - 1 - i] = ']';
	same_reading(deep, 5000);
	/* a document that stops early, at every byte */
	{
		const char *d = "{\"a\": [1.5, \"xy\", {\"b\": null}], \"c\": -12}";

		for (i = 0; i < strlen(d); i++)
			same_reading(d, i);
	}
}

/* A profile-like document of random numbers reads the same. */
static void test_reader_agrees_on_numbers(void **state)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	unsigned seed = 11;
	int i;

	sonde_strbuf__adds(&sb, "{\"x\": [");
	for (i = 0; i < 20000; i++) {
		double v = (double)rand_r(&seed) / RAND_MAX;
		int e = rand_r(&seed) % 40 - 20;

		switch (i % 4) {
		case 0:
			sonde_strbuf__addf(&sb, "%s%.17g", i ? "," : "", ldexp(v, e * 3));
			break;
		case 1:
			sonde_strbuf__addf(&sb, ",%.3f", v * 1e4);
			break;
		case 2:
			sonde_strbuf__addf(&sb, ",%d", rand_r(&seed) - RAND_MAX / 2);
			break;
		default:
			sonde_strbuf__addf(&sb, ",%.6e", -v * pow(10, e));
		}
	}
	sonde_strbuf__adds(&sb, "]}");
	same_reading(sb.buf, sb.len);
	sonde_strbuf__release(&sb);
}

static void same_writing(json_t *v)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	char *want = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));

	assert_non_null(want);
	assert_int_equal(sonde_json__dump_compact(&sb, v), 0);
	if (strcmp(want, sb.buf))
		fail_msg("jansson writes %s, the fast writer %s", want, sb.buf);
	free(want);
	for (size_t indent = 1; indent <= 2; indent++) {
		want = json_dumps(v,
				  JSON_ENCODE_ANY | JSON_INDENT(indent) | JSON_REAL_PRECISION(15));
		sonde_strbuf__reset(&sb);
		assert_int_equal(sonde_json__dump_indented(&sb, v, indent, 0), 0);
		if (strcmp(want, sb.buf))
			fail_msg("jansson indents %s, the fast writer %s", want, sb.buf);
		free(want);
	}
	sonde_strbuf__release(&sb);
	json_decref(v);
}

static void test_writer_agrees(void **state)
{
	static const double reals[] = {
		0.0,
		-0.0,
		1.0,
		-1.0,
		0.1,
		0.5,
		39.5,
		-123.456,
		1e-4,
		9.99e-5,
		1.0001e-4,
		0.000123456789012345,
		1e14,
		99999999999999.9,
		999999999999999.0,
		1e15,
		1e16,
		1e21,
		1e22,
		1e100,
		-1e-300,
		DBL_MIN,
		DBL_MAX,
		5e-324,
		1.0 / 3.0,
		2.0 / 3.0,
		M_PI,
		123456789.123456789,
		0.30000000000000004,
		4503599627370496.5,
		9007199254740993.0,
		1234.5678,
		0.0001,
		100.0,
		1e5,
	};
	static const json_int_t ints[] = {
		0, 1, -1, 10, -10, 1234567890123LL, INT64_MAX, INT64_MIN
	};
	static const char *const strings[] = {
		"",
		"plain",
		"q\"uote",
		"back\\slash",
		"ctl\x01\x1f",
		"\b\f\n\r\t",
		"sl/ash",
		"utf8 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		"del\x7f",
	};
	unsigned seed = 5;
	json_t *o = json_object(), *a = json_array();
	size_t i, fixed = 0, printed = 0;

	for (i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
		same_writing(json_real(reals[i]));
		same_writing(json_real(-reals[i]));
	}
	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		same_writing(json_integer(ints[i]));
	{ /* each side of every power of ten: the writer counts the digits first */
		json_int_t d = 1;

		for (i = 0; i < 19; i++) { /* 10^0 .. 10^18 (10^19 is past INT64_MAX) */
			same_writing(json_integer(d - 1));
			same_writing(json_integer(d));
			same_writing(json_integer(-d));
			same_writing(json_integer(1 - d));
			if (i < 18)
				d *= 10;
		}
	}
	for (i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		same_writing(json_string(strings[i]));
	/* measurements with a few decimals, and arbitrary doubles, at every scale */
	for (i = 0; i < 200000; i++) {
		double v = (double)rand_r(&seed) / RAND_MAX * pow(10, (int)(i % 24) - 6);
		char buf[48];

		if (i % 3 == 0)
			v = round(v * pow(10, (int)(i % 7))) / pow(10, (int)(i % 7));
		same_writing(json_real(i % 2 ? v : -v));
		/* without printf, but for exponents and near-ties (about 1 in 500) */
		if (fabs(v) >= 1e-4 && fabs(v) < 1e15) {
			fixed++;
			printed += !sonde_json__real(v, buf);
		}
	}
	assert_true(fixed > 100000 && printed < fixed / 100);
	same_writing(json_null());
	same_writing(json_true());
	same_writing(json_false());
	json_object_set_new(o, "a\"b", json_integer(1));
	json_object_set_new(o, "c", json_pack("[f, s, n, {}, []]", 2.5, "x"));
	json_object_set_new(o, "z", json_object());
	json_array_append_new(a, o);
	json_array_append_new(a, json_pack("{s:[i,i,f]}", "amount", 1, 2, 3.25));
	json_array_append_new(a, json_pack("{s:{s:[[]]}, s:[{}]}", "x", "y", "z"));
	same_writing(a);
	/* a long compact array of every kind, which grows the buffer many times */
	a = json_array();
	for (i = 0; i < 20000; i++)
		switch (i % 6) {
		case 0:
			json_array_append_new(a, json_integer((json_int_t)i * -7919));
			break;
		case 1:
			json_array_append_new(a, json_real((double)i / 8.0));
			break;
		case 2: /* printf's way: an exponent */
			json_array_append_new(a, json_real((double)i * 1e22));
			break;
		case 3:
			json_array_append_new(a, json_string("s"));
			break;
		case 4:
			json_array_append_new(a, json_pack("[i, {s:f}]", (int)i, "r", 0.5));
			break;
		default:
			json_array_append_new(a, json_integer(INT64_MIN));
		}
	same_writing(a);
}

/* A profile's layout: indented, but an array of scalars on one line. */
static void test_layout(void **state)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	json_t *v = json_pack("{s:[i, f, s, n], s:[[i, i], {s:[i]}, []], s:{}}", "a", 1, 2.5, "x",
			      "b", 1, 2, "c", 3, "d");

	(void)state;
	assert_int_equal(sonde_json__dump_layout(&sb, v, 1, 0), 0);
	assert_string_equal(sb.buf, "{\n \"a\": [1,2.5,\"x\",null],\n \"b\": [\n  [1,2],\n  {\n"
				    "   \"c\": [3]\n  },\n  []\n ],\n \"d\": {}\n}");
	sonde_strbuf__release(&sb);
	json_decref(v);
}

/*
 * The layout written without a tree: the same bytes as the tree's, for rows
 * (none, one, several, the extreme integers), a member after them, at depth 1
 * and compact.
 */
static void test_layout_pieces(void **state)
{
	static const json_int_t rows[3][3] = { { 0, -1, 9 },
					       { INT64_MIN, INT64_MAX, 100 },
					       { 1234567890123, 99, 10 } };
	size_t indent, n, i, k;

	(void)state;
	for (indent = 0; indent <= 1; indent++)
		for (n = 0; n <= 3; n++) {
			struct sonde_strbuf a = SONDE_STRBUF_INIT, b = SONDE_STRBUF_INIT;
			json_t *v = json_object(), *arr = json_array();

			json_object_set_new(v, "rows", arr);
			json_object_set_new(v, "name", json_string("x\"y"));
			assert_int_equal(sonde_strbuf__addch(&b, '{'), 0);
			assert_int_equal(sonde_json__put_member(&b, "rows", indent, 1, true), 0);
			assert_int_equal(sonde_strbuf__addch(&b, '['), 0);
			for (i = 0; i < n; i++) {
				json_t *r = json_array();

				for (k = 0; k < 3; k++)
					json_array_append_new(r, json_integer(rows[i][k]));
				json_array_append_new(arr, r);
				assert_int_equal(sonde_json__put_row(&b, rows[i], 3, indent, 2, i),
						 0);
			}
			assert_int_equal(sonde_json__put_close(&b, ']', n, indent, 2), 0);
			assert_int_equal(sonde_json__put_member(&b, "name", indent, 1, false), 0);
			assert_int_equal(sonde_json__dump_string(&b, "x\"y"), 0);
			assert_int_equal(sonde_json__put_close(&b, '}', 2, indent, 1), 0);
			assert_int_equal(sonde_json__dump_layout(&a, v, indent, 1), 0);
			assert_string_equal(a.buf, b.buf);
			sonde_strbuf__release(&a);
			sonde_strbuf__release(&b);
			json_decref(v);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_agrees),
		cmocka_unit_test(test_reader_agrees_on_numbers),
		cmocka_unit_test(test_writer_agrees),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_layout_pieces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * svg.c - what every drawn view shares: escaping of names for XML and for
 * JSON inside HTML, stable colours, writing an output file atomically.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "views.h"

int sonde_view__escape(struct sonde_strbuf *sb, const char *s)
{
	int err = 0;

	for (; s && *s && !err; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&':
			err = sonde_strbuf__adds(sb, "&amp;");
			break;
		case '<':
			err = sonde_strbuf__adds(sb, "&lt;");
			break;
		case '>':
			err = sonde_strbuf__adds(sb, "&gt;");
			break;
		case '"':
			err = sonde_strbuf__adds(sb, "&quot;");
			break;
		case '\'':
			err = sonde_strbuf__adds(sb, "&#39;");
			break;
		default:
			/* XML 1.0 forbids most control characters, even escaped. */
			err = sonde_strbuf__addch(sb, c < 0x20 && c != '\t' ? '?' : (char)c);
		}
	}
	return err;
}

static int dump_cb(const char *buf, size_t size, void *data)
{
	struct sonde_strbuf *sb = data;
	size_t i;
	int err = 0;

	for (i = 0; i < size && !err; i++) {
		if (buf[i] == '<')
			err = sonde_strbuf__adds(sb, "\\u003c");
		else if (buf[i] == '>')
			err = sonde_strbuf__adds(sb, "\\u003e");
		else if (buf[i] == '&')
			err = sonde_strbuf__adds(sb, "\\u0026");
		else
			err = sonde_strbuf__addch(sb, buf[i]);
	}
	return err ? -1 : 0;
}

int sonde_view__html_json(struct sonde_strbuf *sb, json_t *v)
{
	/* ESCAPE_SLASH and ENSURE_ASCII leave no "</" and no raw U+2028/U+2029. */
	return json_dump_callback(v, dump_cb, sb,
				  JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ESCAPE_SLASH |
					  JSON_REAL_PRECISION(10))
		       ? -ENOMEM
		       : 0;
}

void sonde_view__color(const char *name, const char *palette, char out[24])
{
	uint32_t h = 2166136261u;
	int r, g, b;

	for (; name && *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	if (!strcmp(palette, "cool")) {
		r = 60 + (int)(h % 60);
		g = 120 + (int)((h >> 8) % 80);
		b = 190 + (int)((h >> 16) % 60);
	} else if (!strcmp(palette, "green")) {
		r = 60 + (int)(h % 70);
		g = 170 + (int)((h >> 8) % 70);
		b = 60 + (int)((h >> 16) % 60);
	} else {
		r = 205 + (int)(h % 50);
		g = 80 + (int)((h >> 8) % 150);
		b = 30 + (int)((h >> 16) % 50);
	}
	snprintf(out, 24, "rgb(%d,%d,%d)", r, g, b);
}

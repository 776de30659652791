/*
 * terminal.c - what sonde prints to a terminal cannot drive it.
 *
 * Names in profiles come from the programs measured (function names, file
 * paths, command lines, thread names) and may hold control characters: an
 * escape sequence printed raw can retitle the window, hide lines or rewrite
 * what was printed before. As ls does, sonde shows them instead when stdout or
 * stderr is a terminal: C0 controls other than newline and tab, DEL, and the
 * C1 controls (U+0080..U+009F, which some terminals obey as CSI and OSC) come
 * out as \xNN and \u00NN. Output to files and pipes is left byte for byte as
 * it is: data formats (JSON, CSV, folded stacks) quote on their own terms.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sonde/file.h>
#include "cli.h"

struct guard {
	int fd;
	bool lead; /* a 0xC2 byte is held: it may start a C1 control */
};

static struct guard guards[2];
static FILE *raw_stderr, *guarded[2];

static ssize_t guard_write(void *cookie, const char *buf, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	struct guard *g = cookie;
	char out[4096 + 16];
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (g->lead) {
			g->lead = false;
			if (c >= 0x80 && c <= 0x9f) {
				memcpy(out + o, "\\u00", 4);
				out[o + 4] = hex[c >> 4];
				out[o + 5] = hex[c & 15];
				o += 6;
				goto next;
			}
			out[o++] = (char)0xc2;
		}
		if (c == 0xc2) {
			g->lead = true;
		} else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		} else {
			out[o++] = (char)c;
		}
	next:
		if (o >= 4096) {
			if (sonde_file__write_all(g->fd, out, o))
				return -1;
			o = 0;
		}
	}
	return o && sonde_file__write_all(g->fd, out, o) ? -1 : (ssize_t)n;
}

static int guard_close(void *cookie)
{
	struct guard *g = cookie;

	if (g->lead) {
		g->lead = false;
		return sonde_file__write_all(g->fd, "\xc2", 1) ? EOF : 0;
	}
	return 0;
}

static FILE *guard(int fd, FILE *orig, int mode)
{
	cookie_io_functions_t io = { .write = guard_write, .close = guard_close };
	struct guard *g = &guards[fd - 1];
	FILE *f;

	if (!isatty(fd))
		return orig;
	g->fd = fd;
	f = fopencookie(g, "w", io);
	if (!f)
		return orig;
	fflush(orig);
	setvbuf(f, NULL, mode, 0);
	return f;
}

void cli_terminal_guard(void)
{
	raw_stderr = stderr;
	stdout = guard(1, stdout, _IOLBF);
	stderr = guard(2, stderr, _IONBF);
	guarded[0] = stdout;
	guarded[1] = stderr;
}

int cli_terminal_fd(FILE *f)
{
	if (f && f == guarded[0] && guards[0].fd)
		return 1;
	if (f && f == guarded[1] && guards[1].fd)
		return 2;
	return f ? fileno(f) : -1;
}

FILE *cli_terminal_raw(void)
{
	return raw_stderr ? raw_stderr : stderr;
}

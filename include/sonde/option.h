/*
 * option.h - option tables: one table per command parses argv and generates --help.
 *
 * A table is an array of struct sonde_option ending with SONDE_OPT_END. A GROUP
 * entry starts a headed section in --help and may point at a nested table (so a
 * command can show the options of the collector it runs). Every option given on
 * the command line can also be recorded into a JSON object (collector params).
 */
#ifndef SONDE_OPTION_H
#define SONDE_OPTION_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <sonde/strbuf.h>

enum sonde_option_type {
	SONDE_OPT_END = 0,
	SONDE_OPT_GROUP,  /* help heading; .sub: nested table (optional) */
	SONDE_OPT_FLAG,	  /* bool *; set to true */
	SONDE_OPT_COUNT,  /* int *; incremented per use (-vv) */
	SONDE_OPT_INT,	  /* long long *; within [min, max] */
	SONDE_OPT_DOUBLE, /* double *; within [min, max] */
	SONDE_OPT_STRING, /* const char ** (points into argv) */
	SONDE_OPT_CHOICE, /* const char **; one of .choices */
	SONDE_OPT_LIST,	  /* struct sonde_strlist *; repeatable */
	/*
	 * double *; a duration with a unit suffix (1s, 500ms, 20us, 2m); a plain
	 * number is in units of .unit_s seconds, and so are the value stored,
	 * the param recorded and [min, max].
	 */
	SONDE_OPT_DURATION,
};

struct sonde_option {
	enum sonde_option_type type;
	char short_name; /* 0: none */
	const char *long_name;
	void *value; /* may be NULL when only params are wanted */
	const char *argname;
	const char *help;
	double min, max;		/* INT and DOUBLE; min == max == 0: unbounded */
	const char *const *choices;	/* CHOICE: NULL-terminated */
	const struct sonde_option *sub; /* GROUP */
	double unit_s;			/* DURATION: seconds per plain number (0: 1 s) */
};

/* A list of strings borrowed from argv (LIST options). */
struct sonde_strlist {
	const char **items;
	size_t n;
};
void sonde_strlist__release(struct sonde_strlist *l);
int sonde_strlist__push(struct sonde_strlist *l, const char *s);

enum {
	/* Options may follow positional arguments (`show P table --format csv`). */
	SONDE_OPTPARSE_PERMUTE = 1u << 0,
};

struct sonde_optparse {
	unsigned flags;
	json_t *params;		 /* optional: each option given is stored here by long name */
	bool help;		 /* out: -h or --help was given */
	struct sonde_strbuf err; /* out: the message of a failed parse */
};

/*
 * Parse argv[0..argc) (argv[0] is not skipped: pass argv + 1). Parsing stops at
 * "--" (consumed) or, without PERMUTE, at the first positional argument.
 * Returns the index of the first positional argument (argv is reordered under
 * PERMUTE so positionals come last), or -EINVAL with st->err set.
 */
int sonde_options__parse(const struct sonde_option *opts, int argc, char **argv,
			 struct sonde_optparse *st);

/* Whether an option takes a value (all but FLAG and COUNT). */
bool sonde_option__takes_value(const struct sonde_option *o);
/* The name of an option's value as help shows it: argname, DURATION, a|b|c or VALUE. */
int sonde_option__value_name(const struct sonde_option *o, struct sonde_strbuf *out);

/* Append the option lines of a table (nested groups included) to out. */
int sonde_options__help(const struct sonde_option *opts, struct sonde_strbuf *out);

void sonde_optparse__release(struct sonde_optparse *st);

/*
 * The candidate closest to word, for "did you mean": one that word is a prefix
 * of, or within an edit distance of a third of its length (at least 1, at most
 * 3); NULL when none is close. cands is NULL-terminated.
 */
const char *sonde_options__suggest(const char *word, const char *const *cands);
/* The long names of a table (groups included), NULL-terminated; free() the array. */
const char **sonde_options__names(const struct sonde_option *opts);

#endif

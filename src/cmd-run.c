/*
 * cmd-run.c - `sonde run job` and `sonde run matrix`: profiles in batches.
 *
 * A job is one collector over one command line and one workload; the matrix
 * is every combination of the configuration's cmds, args, workloads and
 * collectors (docs/config.md). Each job is a `sonde collect` of its own (a
 * child process, so that a job that fails or crashes loses nothing of the
 * others), then its postprocessors, then, with profiles.register_after_run,
 * `sonde add`. A workload that names a generator of integers (or strings,
 * text files) becomes one job over all its sizes (collect --parameter: one
 * profile whose structure-unit-size is the size), or one job per size with
 * profile_for_each_workload.
 *
 * --jobs N runs N jobs at a time, except the jobs of collectors that measure
 * time, CPU shares or machine-wide counts: those run alone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sonde/config.h>
#include <sonde/file.h>
#include <sonde/store.h>
#include "cli.h"

static const char usage[] =
	"usage: sonde run job -b CMD [-a ARGS] [-w WORKLOAD]... -c COLLECTOR... [--cp K=V]...\n"
	"                     [-p POSTPROCESSOR]... [--pp K=V]... [--jobs N]\n"
	"       sonde run matrix [--jobs N] [--slurm [--sbatch-args ARGS]]\n\n"
	"Collect profiles in a batch. 'job' runs each COLLECTOR over CMD ARGS WORKLOAD\n"
	"for each workload; 'matrix' runs every combination of the configuration's\n"
	"cmds, args, workloads and collectors (sonde config; keys in config.md in\n"
	"/usr/local/share/doc/sonde), after its execute.pre_run commands. A workload\n"
	"that names a generator (generators.workload) is expanded: integers become\n"
	"one profile over all sizes, their structure-unit-size. Each job prints a\n"
	"line as it ends, and a table follows. Profiles go to the store's jobs/\n"
	"(or the current directory), named by format.output_profile_template.\n"
	"Exit status: 0 all jobs made their profiles, 1 some failed (listed; the\n"
	"others' profiles are kept), 2 a bad job or configuration, 130 interrupted.";

struct job {
	char *collector;
	json_t *cparams; /* {K: V}: the collector's options */
	const char *cmd;
	const char *args; /* words, split as the shell would (no substitution) */
	char *workload;	  /* as the table shows it; "" for none */
	char *value;	  /* appended to the command line, or NULL */
	char *parameter;  /* collect --parameter SPEC, or NULL */
	json_t *posts;	  /* [{name, params}] */
	bool exclusive;
	/* the outcome */
	char *path, *log;
	pid_t pid;
	int status;		 /* exit status of the step that failed, or 0 */
	const char *failed;	 /* the step: "collect", "postprocess", "add" */
	const char *failed_post; /* the postprocessor that failed (borrowed from posts) */
	double secs;
	struct timespec t0;
	bool done;
};

struct batch {
	struct job *j;
	size_t n, cap;
	char self[PATH_MAX];
	char *outdir; /* the store's jobs/ with a slash, or "" */
	char *gendir; /* generated workloads (textfile): the store's workloads/, or a temporary */
	bool gendir_temporary; /* removed at the end */
	const char *template;
	bool register_after;
};

static volatile sig_atomic_t interrupted;

static void on_int(int sig)
{
	interrupted = sig;
}

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void sanitize(struct sonde_strbuf *sb, const char *s)
{
	for (; *s; s++)
		sonde_strbuf__addch(sb, (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
							(*s >= '0' && *s <= '9') || *s == '.' ||
							*s == '_' || *s == '-' || *s == ','
						? *s
						: '_');
}

/* The profile's path: the template's %collector% %cmd% %args% %workload% %date% filled. */
static char *name_of(const struct batch *b, const struct job *j, size_t index)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	const char *t = b->template, *base = strrchr(j->cmd, '/');
	char date[32];
	time_t now = time(NULL);
	struct tm tm;
	size_t k;

	localtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%d-%H-%M-%S", &tm);
	sonde_strbuf__adds(&sb, b->outdir);
	while (*t) {
		if (!strncmp(t, "%collector%", 11)) {
			sanitize(&sb, j->collector);
			t += 11;
		} else if (!strncmp(t, "%cmd%", 5)) {
			sanitize(&sb, base ? base + 1 : j->cmd);
			t += 5;
		} else if (!strncmp(t, "%args%", 6)) {
			sanitize(&sb, j->args);
			t += 6;
		} else if (!strncmp(t, "%workload%", 10)) {
			sanitize(&sb, j->workload);
			t += 10;
		} else if (!strncmp(t, "%date%", 6)) {
			sonde_strbuf__adds(&sb, date);
			t += 6;
		} else {
			char c[2] = { *t == '/' ? '_' : *t, 0 };

			sanitize(&sb, c);
			t++;
		}
	}
	/* two jobs that fill the template alike (args differ, same second) */
	for (k = 0; k < index; k++)
		if (b->j[k].path && !strncmp(b->j[k].path, sb.buf, sb.len) &&
		    !strcmp(b->j[k].path + sb.len, ".json"))
			break;
	if (k < index)
		sonde_strbuf__addf(&sb, "-%zu", index + 1);
	sonde_strbuf__adds(&sb, ".json");
	return sonde_strbuf__detach(&sb, NULL);
}

/* ---- the jobs ------------------------------------------------------------------------------- */

static struct job *add_job(struct batch *b)
{
	struct job *j;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		struct job *n = realloc(b->j, cap * sizeof(*n));

		if (!n)
			return NULL;
		b->j = n;
		b->cap = cap;
	}
	j = &b->j[b->n++];
	memset(j, 0, sizeof(*j));
	return j;
}

static const char *str_of(json_t *v, char *buf, size_t size)
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v))
		snprintf(buf, size, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, size, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
	else
		return NULL;
	return buf;
}

/* A generator of the configuration by id, or NULL. */
static json_t *generator(json_t *cfg, const char *id)
{
	json_t *g;
	size_t i;

	json_array_foreach(
		sonde_config__get(cfg, "generators.workload"), i,
		g) if (json_is_string(json_object_get(g, "id")) &&
		       !strcmp(json_string_value(json_object_get(g, "id")), id)) return g;
	return NULL;
}

static int bad(const char *fmt, const char *what)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, what);
	return cli_usage("run", "%s", msg);
}

/*
 * One workload value, the command's last argument. It goes through collect's
 * --parameter, so that the profile records it (header.workload; a number is
 * also its structure-unit-size), unless --parameter would read it as a list
 * or a range.
 */
static void set_value(struct job *j, const char *v)
{
	j->workload = strdup(v);
	if (!*v)
		return;
	if (strchr(v, ',') || strstr(v, "..")) {
		j->value = strdup(v);
		return;
	}
	if (asprintf(&j->parameter, "workload=%s", v) < 0)
		j->parameter = NULL;
	j->value = strdup("{workload}");
}

static long long int_key(json_t *g, const char *k, long long def, bool *ok)
{
	json_t *v = json_object_get(g, k);

	if (!v)
		return def;
	if (!json_is_integer(v))
		*ok = false;
	return json_integer_value(v);
}

/*
 * A textfile generator's files, made once per batch: DIR/LINES.txt for each
 * number of lines from min_lines to max_lines by step, each line of
 * min_chars..max_chars letters and spaces (the same text every time: a fixed
 * seed). *dir: the directory (heap).
 */
static int textfiles(struct batch *b, json_t *cfg, json_t *g, const char *id, long long *lo,
		     long long *hi, long long *step, char **dir)
{
	const char *wd = json_string_value(sonde_config__get(cfg, "generators.workload_dir"));
	bool ok = true;
	long long cmin, cmax, n, i, k;
	unsigned seed = 1;

	json_t *rnd = json_object_get(g, "randomize_rows");
	bool randomize = !rnd || json_is_true(rnd) ||
			 (json_is_string(rnd) && !strcasecmp(json_string_value(rnd), "true"));

	*lo = int_key(g, "min_lines", 1, &ok);
	*hi = int_key(g, "max_lines", 0, &ok);
	*step = int_key(g, "step", 1, &ok);
	/* Perun's min_rows and max_rows (characters on a line), or sonde's older names */
	cmin = int_key(g, json_object_get(g, "min_rows") ? "min_rows" : "min_chars",
		       json_object_get(g, "min_chars") ? 40 : 5, &ok);
	cmax = int_key(g, json_object_get(g, "max_rows") ? "max_rows" : "max_chars", 80, &ok);
	if (rnd && !json_is_boolean(rnd) && !json_is_string(rnd))
		ok = false;
	if (!ok || *lo < 0 || *hi < *lo || *step <= 0 || (*hi - *lo) / *step > 10000 || cmin < 0 ||
	    cmax < cmin || cmax > 100000)
		return bad("generator '%s' (textfile): integer min_lines <= max_lines, step > 0 "
			   "(at most 10000 files), 0 <= min_rows <= max_rows, randomize_rows "
			   "true or false",
			   id);
	if (!randomize)
		cmin = cmax;	       /* every line of the longest length, as Perun makes them */
	if (!b->gendir && wd && *wd) { /* where the configuration says (check -c: the store's) */
		if (sonde_file__mkdir_p(wd, 0755) || !(b->gendir = strdup(wd)))
			return bad("generators.workload_dir: cannot make '%s'", wd);
	}
	if (!b->gendir) {
		/* in the store, at a path that stays: the command line names it, and the
		   history check pairs profiles by command line */
		char tmp[] = "/tmp/sonde-workloads-XXXXXX";
		struct sonde_store *st = sonde_store__open(".");

		if (st) {
			if (asprintf(&b->gendir, "%s/workloads", sonde_store__root(st)) < 0)
				b->gendir = NULL;
			sonde_store__free(st);
			if (!b->gendir || (mkdir(b->gendir, 0755) && errno != EEXIST))
				return -ENOMEM;
		} else {
			if (!mkdtemp(tmp) || !(b->gendir = strdup(tmp)))
				return -ENOMEM;
			b->gendir_temporary = true;
		}
	}
	if (asprintf(dir, "%s/%s", b->gendir, id) < 0 || (mkdir(*dir, 0700) && errno != EEXIST))
		return -ENOMEM;
	for (n = *lo; n <= *hi; n += *step) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%lld.txt", *dir, n);
		f = fopen(path, "we");
		if (!f)
			return -errno;
		for (i = 0; i < n; i++) {
			long long len =
				cmin + (long long)(rand_r(&seed) % (unsigned)(cmax - cmin + 1));

			for (k = 0; k < len; k++)
				fputc(rand_r(&seed) % 6 ? 'a' + rand_r(&seed) % 26 : ' ', f);
			fputc('\n', f);
		}
		if (fclose(f))
			return -EIO;
	}
	return 0;
}

static struct job *new_job(struct batch *b, json_t *col, const char *name, const char *cmd,
			   const char *args, json_t *posts)
{
	struct job *j = add_job(b);

	if (!j)
		return NULL;
	j->collector = strdup(name);
	j->cparams = json_incref(json_object_get(col, "params"));
	j->cmd = cmd;
	j->args = args ? args : "";
	j->posts = json_incref(posts);
	{
		const struct sonde_collector *c = sonde_collector__find(name);

		j->exclusive = c && (c->flags & SONDE_COLLECTOR_EXCLUSIVE);
	}
	return j;
}

/*
 * An external generator: its command run once per batch (sh -c, here), then
 * the files of output_dir whose names fit file_format ("img_{w}x{h}.pgm": its
 * fields between the delimiters, {} by default) are the workloads. Each run
 * gets a file's path; its fields are the values of collect --parameter
 * (several: a tuple, each a column of the rows), the first one the size (a
 * file whose first field is not a number is not a workload).
 */
struct gen_file {
	char *tuple; /* "10:5" */
	double first;
};

static int by_first(const void *a, const void *b)
{
	const struct gen_file *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return strcmp(x->tuple, y->tuple);
}

/* Split file_format into its fixed parts (k + 1) and field names (k). */
static int parse_format(const char *fmt, char open_d, char close_d, struct sonde_strlist *fixed,
			struct sonde_strlist *fields)
{
	const char *p = fmt;

	for (;;) {
		const char *o = strchr(p, open_d), *c = o ? strchr(o + 1, close_d) : NULL;

		if (!o) {
			sonde_strlist__push(fixed, strdup(p));
			break;
		}
		if (!c || c == o + 1 || memchr(o + 1, open_d, (size_t)(c - o - 1)))
			return -EINVAL;
		sonde_strlist__push(fixed, strndup(p, (size_t)(o - p)));
		sonde_strlist__push(fields, strndup(o + 1, (size_t)(c - o - 1)));
		p = c + 1;
	}
	for (size_t i = 1; i + 1 < fixed->n; i++)
		if (!*fixed->items[i])
			return -EINVAL; /* two fields side by side cannot be told apart */
	return fields->n ? 0 : -EINVAL;
}

/* A file name's fields as a tuple "A:B" (heap), or NULL when it does not fit. */
static char *match_format(const char *name, const struct sonde_strlist *fixed, size_t k)
{
	struct sonde_strbuf t = SONDE_STRBUF_INIT;
	const char *p = name, *last = fixed->items[k];
	size_t i, ln = strlen(name), ll = strlen(last);

	if (strncmp(p, fixed->items[0], strlen(fixed->items[0])) || ln < ll ||
	    strcmp(name + ln - ll, last))
		return NULL;
	p += strlen(fixed->items[0]);
	for (i = 0; i < k; i++) {
		const char *end = i + 1 < k ? strstr(p, fixed->items[i + 1]) : name + ln - ll;

		if (!end || end <= p || memchr(p, ':', (size_t)(end - p)) ||
		    memchr(p, ',', (size_t)(end - p))) {
			sonde_strbuf__release(&t);
			return NULL;
		}
		sonde_strbuf__addf(&t, "%s%.*s", i ? ":" : "", (int)(end - p), p);
		p = end + (i + 1 < k ? strlen(fixed->items[i + 1]) : 0);
	}
	return sonde_strbuf__detach(&t, NULL);
}

static int external_jobs(struct batch *b, json_t *g, const char *id, json_t *col, const char *name,
			 const char *cmd, const char *args, json_t *posts, bool each)
{
	const char *gen = json_string_value(json_object_get(g, "generator"));
	const char *dir = json_string_value(json_object_get(g, "output_dir"));
	const char *fmt = json_string_value(json_object_get(g, "file_format"));
	const char *delim = json_string_value(json_object_get(g, "delimiters"));
	struct sonde_strlist fixed = { 0 }, fields = { 0 };
	struct sonde_strbuf names = SONDE_STRBUF_INIT, tmpl = SONDE_STRBUF_INIT;
	struct gen_file *files = NULL;
	size_t nf = 0, cap = 0, i, k;
	struct dirent *e;
	struct job *j = NULL;
	int rc = 0;
	DIR *d;

	if (!gen) /* Perun's name for it */
		gen = json_string_value(json_object_get(g, "external_generator"));
	if (!delim)
		delim = "{}";
	if (!gen || !dir || !fmt || strlen(delim) != 2 ||
	    parse_format(fmt, delim[0], delim[1], &fixed, &fields)) {
		rc = bad("generator '%s' (external) needs generator (a command), output_dir and "
			 "file_format with {FIELD}s between fixed text",
			 id);
		goto out;
	}
	k = fields.n;
	if (!json_is_true(json_object_get(g, "_ran"))) { /* once per batch */
		char *const sh[] = { "/bin/sh", "-c", (char *)gen, NULL };

		if (!cli_quiet())
			fprintf(stderr, "sonde: run: generator '%s': %s\n", id, gen);
		if (cli_run(NULL, sh, NULL, NULL)) {
			cli_error("run", "generator '%s' failed: '%s'", id, gen);
			rc = EXIT_FAILURE_;
			goto out;
		}
		json_object_set_new(g, "_ran", json_true());
	}
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		char *tuple = match_format(e->d_name, &fixed, k), *end;
		double first = tuple ? strtod(tuple, &end) : 0;

		if (!tuple || end == tuple || (*end && *end != ':')) {
			free(tuple); /* the first field is the size: a number */
			continue;
		}
		if (nf == cap) {
			struct gen_file *more =
				realloc(files, (cap = cap ? 2 * cap : 16) * sizeof(*files));

			if (!more) {
				free(tuple);
				break;
			}
			files = more;
		}
		files[nf].tuple = tuple;
		files[nf].first = first;
		nf++;
	}
	if (d)
		closedir(d);
	if (!nf) {
		cli_error("run", "generator '%s' made no file in '%s' named as '%s'", id, dir, fmt);
		rc = EXIT_FAILURE_;
		goto out;
	}
	qsort(files, nf, sizeof(*files), by_first);
	for (i = 0; i < k; i++)
		sonde_strbuf__addf(&names, "%s%s", i ? "," : "", fields.items[i]);
	/* the argument: output_dir/file_format with the fields as {NAME} */
	sonde_strbuf__addf(&tmpl, "%s/", dir);
	for (i = 0; i < k; i++)
		sonde_strbuf__addf(&tmpl, "%s{%s}", fixed.items[i], fields.items[i]);
	sonde_strbuf__adds(&tmpl, fixed.items[k]);
	for (i = 0; i < nf; i++) {
		struct sonde_strbuf list = SONDE_STRBUF_INIT;
		size_t m;

		if (!(j = new_job(b, col, name, cmd, args, posts))) {
			rc = -ENOMEM;
			break;
		}
		for (m = each ? i : 0; m < (each ? i + 1 : nf); m++)
			sonde_strbuf__addf(&list, "%s%s", list.len ? "," : "", files[m].tuple);
		if (asprintf(&j->parameter, "%s=%s", names.buf, list.buf) < 0)
			j->parameter = NULL;
		if (each ? !(j->workload = strdup(files[i].tuple))
			 : asprintf(&j->workload, "%s (%zu files)", id, nf) < 0)
			j->workload = NULL;
		j->value = strdup(tmpl.buf);
		sonde_strbuf__release(&list);
		if (!each)
			break;
	}
out:
	for (i = 0; i < nf; i++)
		free(files[i].tuple);
	free(files);
	for (i = 0; i < fixed.n; i++) /* the lists own their strings here */
		free((char *)fixed.items[i]);
	for (i = 0; i < fields.n; i++)
		free((char *)fields.items[i]);
	sonde_strlist__release(&fixed);
	sonde_strlist__release(&fields);
	sonde_strbuf__release(&names);
	sonde_strbuf__release(&tmpl);
	return rc;
}

/*
 * The keys a generator of each type takes: Perun's (perun/workload/), and the
 * names sonde used before it read Perun's (step for a string's step_len;
 * min_chars and max_chars for a text file's min_rows and max_rows; generator
 * for external_generator). Any other key is refused: a key sonde does not know
 * would otherwise change nothing without a word.
 */
static const struct {
	const char *type, *keys;
} generator_keys[] = {
	{ "integer", "min_range max_range step" },
	{ "string", "min_len max_len step_len step" },
	{ "textfile",
	  "min_lines max_lines step min_rows max_rows randomize_rows min_chars max_chars" },
	{ "singleton", "value" },
	{ "external", "external_generator generator output_dir file_format delimiters" },
};

static bool word_in(const char *words, const char *w)
{
	size_t n = strlen(w);
	const char *p;

	for (p = strstr(words, w); p; p = strstr(p + 1, w))
		if ((p == words || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

static int check_generator_keys(json_t *g, const char *id, const char *type)
{
	const char *k;
	json_t *v;
	size_t i;

	for (i = 0; i < sizeof(generator_keys) / sizeof(generator_keys[0]); i++)
		if (!strcmp(generator_keys[i].type, type))
			break;
	if (i == sizeof(generator_keys) / sizeof(generator_keys[0]))
		return 0; /* the type is refused by its caller */
	json_object_foreach(g, k, v)
	{
		char msg[512], keys[256];
		const char *c;
		size_t w = 0;

		if (!strcmp(k, "id") || !strcmp(k, "type") ||
		    !strcmp(k, "profile_for_each_workload") || *k == '_' ||
		    word_in(generator_keys[i].keys, k))
			continue;
		for (c = generator_keys[i].keys; *c && w + 3 < sizeof(keys); c++) {
			if (*c == ' ')
				keys[w++] = ',';
			keys[w++] = *c;
		}
		keys[w] = 0;
		snprintf(msg, sizeof(msg),
			 "generator '%s' (%s): unknown key '%s' (it takes id, type, "
			 "profile_for_each_workload, %s)",
			 id, type, k, keys);
		return bad("%s", msg);
	}
	return 0;
}

/*
 * An integer or string generator's range: integers KEY_MIN to KEY_MAX by step
 * (1), at most 100000 values; a length (max_value > 0) is 0 to max_value.
 */
static int range_of(json_t *g, const char *id, const char *type, const char *kmin, const char *kmax,
		    const char *kstep, long long max_value, long long *lo, long long *hi,
		    long long *step)
{
	json_t *a = json_object_get(g, kmin), *z = json_object_get(g, kmax),
	       *s = json_object_get(g, kstep);

	char msg[256];

	if (!s && strcmp(kstep, "step"))
		s = json_object_get(g, "step"); /* sonde's older name */
	if (!json_is_integer(a) || !json_is_integer(z) || (s && !json_is_integer(s))) {
		snprintf(msg, sizeof(msg), "generator '%s' (%s) needs integer %s and %s (and %s)",
			 id, type, kmin, kmax, kstep);
		return bad("%s", msg);
	}
	*lo = json_integer_value(a);
	*hi = json_integer_value(z);
	*step = s ? json_integer_value(s) : 1;
	if (*step <= 0 || *hi < *lo || (*hi - *lo) / *step > 100000 ||
	    (max_value > 0 && (*lo < 0 || *hi > max_value))) {
		snprintf(msg, sizeof(msg),
			 "generator '%s' (%s): %s%s <= %s%s, %s > 0, and at most 100000 values", id,
			 type, max_value > 0 ? "0 <= " : "", kmin, kmax,
			 max_value > 0 ? " <= 1048576" : "", kstep);
		return bad("%s", msg);
	}
	return 0;
}

/* The jobs of one collector, command, args and workload (a generator's expanded). */
static int add_jobs(struct batch *b, json_t *cfg, json_t *col, const char *cmd, const char *args,
		    const char *wl, json_t *posts)
{
	const char *name = json_string_value(json_object_get(col, "name"));
	json_t *g = wl && *wl ? generator(cfg, wl) : NULL;
	long long lo = 0, hi = 0, step = 1, v;
	bool each = json_is_true(sonde_config__get(cfg, "profile_for_each_workload"));
	const char *type = g ? json_string_value(json_object_get(g, "type")) : NULL;
	char *dir = NULL;

	if (!name || !*name)
		return bad("a collector without a name%s", "");
	if (g && !type)
		return bad("generator '%s' has no type", wl);
	if (g && check_generator_keys(g, wl, type))
		return EXIT_USAGE;
	/* Perun sets it on the generator; sonde's configuration has it for all too */
	if (g && json_object_get(g, "profile_for_each_workload"))
		each = json_is_true(json_object_get(g, "profile_for_each_workload")) ||
		       (json_is_string(json_object_get(g, "profile_for_each_workload")) &&
			!strcasecmp(
				json_string_value(json_object_get(g, "profile_for_each_workload")),
				"true"));
	if (g && !strcmp(type, "integer")) {
		int rc = range_of(g, wl, "integer", "min_range", "max_range", "step", 0, &lo, &hi,
				  &step);

		if (rc)
			return rc;
	} else if (g && !strcmp(type, "string")) {
		int rc = range_of(g, wl, "string", "min_len", "max_len", "step_len", 1 << 20, &lo,
				  &hi, &step);

		if (rc)
			return rc;
	} else if (g && !strcmp(type, "textfile")) {
		int rc = textfiles(b, cfg, g, wl, &lo, &hi, &step, &dir);

		if (rc)
			return rc;
	} else if (g && !strcmp(type, "external")) {
		return external_jobs(b, g, wl, col, name, cmd, args, posts, each);
	} else if (g && strcmp(type, "singleton")) {
		return bad("generator type '%s': sonde knows integer, string, textfile, external "
			   "and singleton",
			   type);
	}
	for (v = lo; v <= hi; v += step) {
		struct job *j = new_job(b, col, name, cmd, args, posts);
		char buf[64];

		if (!j)
			return -ENOMEM;
		if (!g) { /* a plain workload: the last argument */
			set_value(j, wl ? wl : "");
			break;
		}
		if (!strcmp(type, "singleton")) {
			const char *val = str_of(json_object_get(g, "value"), buf, sizeof(buf));

			if (!val)
				return bad("generator '%s' (singleton) needs a value", wl);
			set_value(j, val);
			break;
		}
		if (dir) { /* text files: the size is the file's lines, the argument its path */
			if (each ? asprintf(&j->parameter, "lines=%lld", v) < 0
				 : asprintf(&j->parameter, "lines=%lld..%lld:%lld", lo, hi, step) <
					    0)
				j->parameter = NULL;
			if (each ? asprintf(&j->workload, "%lld", v) < 0
				 : asprintf(&j->workload, "%s (%lld..%lld lines)", wl, lo, hi) < 0)
				j->workload = NULL;
			if (asprintf(&j->value, "%s/{lines}.txt", dir) < 0)
				j->value = NULL;
			if (!each)
				break;
			continue;
		}
		if (!strcmp(type, "string")) { /* the argument: a string of that length */
			if (each ? asprintf(&j->parameter, "length=%lld", v) < 0
				 : asprintf(&j->parameter, "length=%lld..%lld:%lld", lo, hi, step) <
					    0)
				j->parameter = NULL;
			if (each ? asprintf(&j->workload, "%lld", v) < 0
				 : asprintf(&j->workload, "%s (%lld..%lld characters)", wl, lo,
					    hi) < 0)
				j->workload = NULL;
			j->value = strdup("{length:string}");
			if (!each)
				break;
			continue;
		}
		if (!each) { /* integers: one job, one profile over every size */
			if (asprintf(&j->parameter, "size=%lld..%lld:%lld", lo, hi, step) < 0)
				j->parameter = NULL;
			if (asprintf(&j->workload, "%s (%lld..%lld)", wl, lo, hi) < 0)
				j->workload = NULL;
			j->value = strdup("{size}");
			break;
		}
		snprintf(buf, sizeof(buf), "%lld", v);
		set_value(j, buf);
	}
	free(dir);
	return 0;
}

/* ---- running -------------------------------------------------------------------------------- */

static void push(char ***argv, size_t *n, size_t *cap, const char *s)
{
	if (*n + 2 > *cap) {
		size_t c = *cap ? *cap * 2 : 32;
		char **a = realloc(*argv, c * sizeof(*a));

		if (!a)
			return;
		*argv = a;
		*cap = c;
	}
	(*argv)[(*n)++] = xstrdup(s);
	(*argv)[*n] = NULL;
}

static void free_argv(char **argv)
{
	size_t i;

	for (i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* K: V as command-line options: --K V, a flag for true, one --K per item of a list. */
static void push_params(char ***argv, size_t *n, size_t *cap, json_t *params)
{
	const char *k;
	json_t *v, *x;
	size_t i;
	char opt[256], buf[64];

	json_object_foreach(params, k, v)
	{
		snprintf(opt, sizeof(opt), "--%s", k);
		if (json_is_true(v)) {
			push(argv, n, cap, opt);
		} else if (json_is_array(v)) {
			json_array_foreach(v, i, x) if (str_of(x, buf, sizeof(buf)))
			{
				push(argv, n, cap, opt);
				push(argv, n, cap, str_of(x, buf, sizeof(buf)));
			}
		} else if (!json_is_false(v) && !json_is_null(v) && str_of(v, buf, sizeof(buf))) {
			push(argv, n, cap, opt);
			push(argv, n, cap, str_of(v, buf, sizeof(buf)));
		}
	}
}

/* The collect command line of job j (its path set); NULL when memory ran out. */
static char **collect_argv(struct batch *b, struct job *j)
{
	char **argv = NULL, **words;
	size_t n = 0, cap = 0, nwords, i;

	push(&argv, &n, &cap, b->self);
	push(&argv, &n, &cap, "collect");
	push(&argv, &n, &cap, j->collector);
	push_params(&argv, &n, &cap, j->cparams);
	push(&argv, &n, &cap, "-o");
	push(&argv, &n, &cap, j->path);
	if (j->parameter) {
		push(&argv, &n, &cap, "--parameter");
		push(&argv, &n, &cap, j->parameter);
	}
	push(&argv, &n, &cap, "--");
	push(&argv, &n, &cap, j->cmd);
	if (*j->args) {
		/* split as a shell splits, nothing substituted (docs/config.md) */
		if (cli_split_words(j->args, &words, &nwords)) {
			free_argv(argv);
			return NULL;
		}
		for (i = 0; i < nwords; i++)
			push(&argv, &n, &cap, words[i]);
		cli_free_words(words, nwords);
	}
	if (j->value)
		push(&argv, &n, &cap, j->value);
	return argv;
}

static int start(struct batch *b, struct job *j, size_t index)
{
	const char *dir = getenv("TMPDIR");
	char **argv, tmp[4096];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s/sonde-run-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	j->log = strdup(tmp);
	j->path = name_of(b, j, index);
	argv = j->path ? collect_argv(b, j) : NULL;
	if (!argv || !j->log || !j->path) {
		free_argv(argv);
		return -ENOMEM;
	}
	clock_gettime(CLOCK_MONOTONIC, &j->t0);
	j->pid = cli_spawn(NULL, argv, j->log, NULL);
	free_argv(argv);
	return j->pid < 0 ? -errno : 0;
}

/* The last line of a job's output that says something, for its progress line. */
static bool last_line(const char *path, char *out, size_t size)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	char line[1024];
	bool any = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = 0;
		if (!strncmp(line, "sonde: ", 7) && strncmp(line, "sonde: warning", 14)) {
			snprintf(out, size, "%.200s", line + 7);
			any = true;
		}
	}
	fclose(f);
	return any;
}

/* After collect: the postprocessors and the registration, then one line. */
static void finish(struct batch *b, struct job *j, size_t index, int status)
{
	struct timespec t1;
	json_t *p;
	size_t i;

	j->done = true;
	if (status) {
		j->status = status;
		j->failed = "collect";
	}
	json_array_foreach(j->posts, i, p)
	{
		char **argv = NULL;
		size_t n = 0, cap = 0;
		const char *name = json_string_value(json_object_get(p, "name"));
		int rc;

		if (j->failed || !name)
			break;
		push(&argv, &n, &cap, b->self);
		push(&argv, &n, &cap, "postprocess");
		push(&argv, &n, &cap, j->path);
		push(&argv, &n, &cap, name);
		push_params(&argv, &n, &cap, json_object_get(p, "params"));
		rc = cli_run(NULL, argv, j->log, NULL);
		free_argv(argv);
		if (rc) {
			j->status = rc;
			j->failed = "postprocess";
			j->failed_post = name;
		}
	}
	if (!j->failed && b->register_after) {
		char **argv = NULL;
		size_t n = 0, cap = 0;
		int rc;

		push(&argv, &n, &cap, b->self);
		push(&argv, &n, &cap, "add");
		push(&argv, &n, &cap, j->path);
		rc = cli_run(NULL, argv, j->log, NULL);
		free_argv(argv);
		if (rc) {
			j->status = rc;
			j->failed = "add";
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	j->secs = (double)(t1.tv_sec - j->t0.tv_sec) + (double)(t1.tv_nsec - j->t0.tv_nsec) / 1e9;
	/* a job that ended well leaves no log, whatever ends the batch after it; one
	   ended by the batch's interrupt neither (it says only that) */
	if (j->log &&
	    (!j->failed || (interrupted && !strcmp(j->failed, "collect") &&
			    (j->status == EXIT_INTERRUPTED || j->status == 128 + SIGINT)))) {
		unlink(j->log);
		free(j->log);
		j->log = NULL;
	}
	if (cli_quiet())
		return;
	fprintf(stderr, "[%zu/%zu] ", index + 1, b->n);
	if (j->failed) {
		char last[256];

		cli_paint(stderr, CLI_RED);
		fprintf(stderr, "failed (%s%s%s, exit %d", j->failed, j->failed_post ? " " : "",
			j->failed_post ? j->failed_post : "", j->status);
		if (last_line(j->log, last, sizeof(last)))
			fprintf(stderr, ": %s", last);
		fputc(')', stderr);
	} else {
		cli_paint(stderr, CLI_GREEN);
		fprintf(stderr, "ok");
	}
	cli_paint(stderr, CLI_RESET);
	fprintf(stderr, "  %.1f s  %s  %s%s%s%s%s  -> %s\n", j->secs, j->collector, j->cmd,
		*j->args ? " " : "", j->args, *j->workload ? " " : "", j->workload,
		j->failed ? j->log : j->path);
}

static int run_all(struct batch *b, long long parallel)
{
	size_t next = 0, running = 0, i, failed = 0;
	bool alone_running = false, said = false;
	struct sigaction sa = { .sa_handler = on_int }, old;

	sigaction(SIGINT, &sa, &old);
	if (!cli_quiet())
		fprintf(stderr, "sonde: run: %zu job%s, %lld at a time\n", b->n,
			b->n == 1 ? "" : "s", parallel);
	while ((next < b->n && !interrupted) || running) {
		int status;
		pid_t pid;

		while (!interrupted && next < b->n && running < (size_t)parallel &&
		       !alone_running && !(b->j[next].exclusive && running)) {
			int rc;

			if (parallel > 1 && b->j[next].exclusive && !said && !cli_quiet()) {
				const struct sonde_collector *const *all;
				size_t na, k;

				fprintf(stderr, "sonde: run: jobs of");
				for (all = sonde_collector__builtins(&na), k = 0; k < na; k++)
					if (all[k]->flags & SONDE_COLLECTOR_EXCLUSIVE)
						fprintf(stderr, " %s", all[k]->name);
				fprintf(stderr, " run alone: jobs beside them would change the "
						"times, CPU shares and counts they measure\n");
				said = true;
			}
			rc = start(b, &b->j[next], next);
			if (rc) {
				b->j[next].done = true;
				b->j[next].failed = rc == -EINVAL ? "its arguments" : "start";
				b->j[next].status = 2;
				next++;
				continue;
			}
			alone_running = b->j[next].exclusive;
			running++;
			next++;
		}
		if (!running)
			break;
		pid = wait(&status);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < b->n; i++)
			if (b->j[i].pid == pid && !b->j[i].done)
				break;
		if (i == b->n)
			continue;
		running--;
		if (b->j[i].exclusive)
			alone_running = false;
		finish(b, &b->j[i], i,
		       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	sigaction(SIGINT, &old, NULL);
	/* the table */
	if (!cli_quiet()) {
		int wc = 9, wk = 7, ww = 8, ws = 6;

		for (i = 0; i < b->n; i++) {
			struct job *j = &b->j[i];
			int lc = (int)(strlen(j->cmd) + (*j->args ? 1 + strlen(j->args) : 0));

			wc = (int)strlen(j->collector) > wc ? (int)strlen(j->collector) : wc;
			wk = lc > wk ? lc : wk;
			ww = (int)strlen(j->workload) > ww ? (int)strlen(j->workload) : ww;
		}
		printf("%-4s %-*s %-*s %-*s %-*s %s\n", "job", wc, "collector", ws, "status", wk,
		       "command", ww, "workload", "profile");
		for (i = 0; i < b->n; i++) {
			struct job *j = &b->j[i];
			bool made = j->done && (!j->failed || strcmp(j->failed, "collect")) &&
				    j->path && access(j->path, F_OK) == 0;

			printf("%-4zu %-*s %-*s %s%s%-*s %-*s %s\n", i + 1, wc, j->collector, ws,
			       !j->done	   ? "-"
			       : j->failed ? "failed"
					   : "ok",
			       j->cmd, *j->args ? " " : "",
			       wk - (int)strlen(j->cmd) - (*j->args ? 1 : 0), j->args, ww,
			       *j->workload ? j->workload : "-",
			       made					    ? j->path
			       : j->done && !j->failed && b->register_after ? "(registered)"
									    : "-");
		}
	}
	for (i = 0; i < b->n; i++)
		if (!b->j[i].done || b->j[i].failed)
			failed++;
	if (interrupted) {
		cli_error("run", "interrupted: %zu of %zu jobs did not make their profile", failed,
			  b->n);
		return EXIT_INTERRUPTED;
	}
	if (failed) {
		struct sonde_strbuf sb = SONDE_STRBUF_INIT;

		for (i = 0; i < b->n; i++)
			if (b->j[i].failed)
				sonde_strbuf__addf(&sb, "%s%zu (%s: %s)", sb.len ? ", " : "", i + 1,
						   b->j[i].failed, b->j[i].log ? b->j[i].log : "-");
		cli_error("run", "%zu of %zu jobs failed: %s", failed, b->n, sb.buf);
		sonde_strbuf__release(&sb);
		return EXIT_FAILURE_;
	}
	for (i = 0; i < b->n; i++)
		if (b->j[i].log)
			unlink(b->j[i].log);
	return EXIT_OK;
}

/*
 * --slurm: the batch as one Slurm job array. The store's slurm/STAMP/ gets
 * the script (task N: job N's collect, its postprocessors, its add, then
 * its exit status into task-N.rc), batch.json (the job id and each task's
 * job), and each task's output (task-N.log). sonde status reads them.
 */
static int submit_slurm(struct batch *b, const char *sbatch_args)
{
	struct sonde_store *store = sonde_store__open(".");
	struct sonde_strbuf sh = SONDE_STRBUF_INIT, out = SONDE_STRBUF_INIT;
	char dir[PATH_MAX], cwd[PATH_MAX], script[PATH_MAX + 16], arr[64], stamp[32], *bin;
	char **argv = NULL, **words = NULL;
	size_t n = 0, cap = 0, nwords = 0, i;
	json_t *doc = NULL, *tasks = json_array();
	bool exclusive = false;
	time_t now = time(NULL);
	struct tm tm;
	int code = EXIT_OK, rc;

	bin = cli_which("sbatch");
	if (!bin) {
		cli_error("run", "--slurm: sbatch is not installed here (Slurm's client, "
				 "package slurm-client), or not on PATH");
		code = EXIT_UNSUPPORTED;
		goto out;
	}
	if (!store || !getcwd(cwd, sizeof(cwd)) || !tasks) {
		cli_error("run", "--slurm: %s",
			  !store ? "no store" : strerror(errno ? errno : ENOMEM));
		code = EXIT_FAILURE_;
		goto out;
	}
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(dir, sizeof(dir), "%s/slurm/%s-%ld", sonde_store__root(store), stamp,
		 (long)getpid());
	rc = sonde_file__mkdir_p(dir, 0755);
	if (rc) {
		cli_error("run", "cannot make '%s': %s", dir, strerror(-rc));
		code = EXIT_FAILURE_;
		goto out;
	}
	sonde_strbuf__adds(&sh, "#!/bin/sh\n# sonde run --slurm: task N is job N of the batch\n"
				"#SBATCH --job-name=sonde-batch\n#SBATCH --output=");
	sonde_strbuf__addf(&sh, "%s/task-%%a.log\ncd ", dir);
	sonde_strbuf__add_quoted(&sh, cwd);
	sonde_strbuf__adds(&sh, " || exit 1\ncase \"$SLURM_ARRAY_TASK_ID\" in\n");
	for (i = 0; i < b->n; i++) {
		struct job *j = &b->j[i];
		char **cv;
		json_t *p;
		size_t k;

		j->path = name_of(b, j, i);
		cv = j->path ? collect_argv(b, j) : NULL;
		if (!cv) {
			cli_error("run", "out of memory");
			code = EXIT_FAILURE_;
			goto out;
		}
		exclusive |= j->exclusive;
		sonde_strbuf__addf(&sh, "%zu)", i);
		for (k = 0; cv[k]; k++) {
			sonde_strbuf__addch(&sh, ' ');
			sonde_strbuf__add_quoted(&sh, cv[k]);
		}
		free_argv(cv);
		json_array_foreach(j->posts, k, p)
		{
			const char *name = json_string_value(json_object_get(p, "name"));
			const char *key;
			json_t *v;

			if (!name)
				continue;
			sonde_strbuf__adds(&sh, " &&\n   ");
			sonde_strbuf__add_quoted(&sh, b->self);
			sonde_strbuf__adds(&sh, " postprocess ");
			sonde_strbuf__add_quoted(&sh, j->path);
			sonde_strbuf__addch(&sh, ' ');
			sonde_strbuf__add_quoted(&sh, name);
			json_object_foreach(json_object_get(p, "params"), key, v)
			{
				char buf[64], opt[256];
				const char *val = str_of(v, buf, sizeof(buf));

				snprintf(opt, sizeof(opt), "--%s", key);
				sonde_strbuf__addch(&sh, ' ');
				sonde_strbuf__add_quoted(&sh, opt);
				if (val && !json_is_true(v)) {
					sonde_strbuf__addch(&sh, ' ');
					sonde_strbuf__add_quoted(&sh, val);
				}
			}
		}
		if (b->register_after) {
			sonde_strbuf__adds(&sh, " &&\n   ");
			sonde_strbuf__add_quoted(&sh, b->self);
			sonde_strbuf__adds(&sh, " add ");
			sonde_strbuf__add_quoted(&sh, j->path);
		}
		sonde_strbuf__adds(&sh, " ;;\n");
		json_array_append_new(tasks, json_pack("{s:I, s:s, s:s, s:s, s:s, s:s}", "task",
						       (json_int_t)i, "collector", j->collector,
						       "cmd", j->cmd, "args", j->args, "workload",
						       j->workload, "profile", j->path));
	}
	sonde_strbuf__adds(&sh,
			   "*) echo \"sonde: no task $SLURM_ARRAY_TASK_ID in this batch\" >&2; "
			   "false ;;\nesac\nrc=$?\n");
	sonde_strbuf__addf(&sh,
			   "echo \"$rc\" >\"%s/task-$SLURM_ARRAY_TASK_ID.rc.new\" &&\n"
			   "  mv -f \"%s/task-$SLURM_ARRAY_TASK_ID.rc.new\" "
			   "\"%s/task-$SLURM_ARRAY_TASK_ID.rc\"\nexit \"$rc\"\n",
			   dir, dir, dir);
	snprintf(script, sizeof(script), "%s/batch.sh", dir);
	rc = sonde_strbuf__error(&sh) ? -ENOMEM : sonde_file__write_atomic(script, sh.buf, sh.len);
	if (rc) {
		cli_error("run", "cannot write '%s': %s", script, strerror(-rc));
		code = EXIT_FAILURE_;
		goto out;
	}
	/* sbatch --parsable --array=0-(N-1) [--exclusive] [ARGS] SCRIPT */
	snprintf(arr, sizeof(arr), "--array=0-%zu", b->n ? b->n - 1 : 0);
	push(&argv, &n, &cap, bin);
	push(&argv, &n, &cap, "--parsable");
	push(&argv, &n, &cap, arr);
	if (sbatch_args) {
		rc = cli_split_words(sbatch_args, &words, &nwords);
		if (rc) {
			code = cli_usage("run", "--sbatch-args: %s",
					 rc == -EINVAL ? "a quote left open" : strerror(-rc));
			goto out;
		}
	}
	/* jobs that measure time or machine-wide counts run alone here: so on the nodes */
	if (exclusive && (!sbatch_args || (!strstr(sbatch_args, "--exclusive") &&
					   !strstr(sbatch_args, "--oversubscribe"))))
		push(&argv, &n, &cap, "--exclusive");
	for (i = 0; i < nwords; i++)
		push(&argv, &n, &cap, words[i]);
	push(&argv, &n, &cap, script);
	{
		char log[PATH_MAX + 16], line[256] = "";
		FILE *f;

		snprintf(log, sizeof(log), "%s/sbatch.out", dir);
		rc = argv ? cli_run(NULL, argv, log, NULL) : -ENOMEM;
		f = fopen(log, "re");
		if (f) {
			while (fgets(line, sizeof(line), f))
				if (line[0] >= '0' && line[0] <= '9')
					break;
			fclose(f);
		}
		if (rc || !(line[0] >= '0' && line[0] <= '9')) {
			cli_error("run", "sbatch refused the batch (exit %d): %s", rc,
				  line[0] ? line : "see the log");
			code = EXIT_FAILURE_;
			goto out;
		}
		line[strcspn(line, ";\n")] = '\0';
		doc = json_pack("{s:s, s:s, s:s, s:I, s:O}", "job_id", line, "dir", dir,
				"submitted", stamp, "tasks_total", (json_int_t)b->n, "tasks",
				tasks);
		snprintf(log, sizeof(log), "%s/batch.json", dir);
		{
			char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;

			rc = text ? sonde_file__write_atomic(log, text, strlen(text)) : -ENOMEM;
			free(text);
		}
		if (rc) {
			cli_error("run", "submitted as Slurm job %s, but cannot write '%s': %s",
				  line, log, strerror(-rc));
			code = EXIT_FAILURE_;
			goto out;
		}
		if (!cli_quiet())
			printf("submitted %zu job%s as Slurm job array %s; 'sonde status' follows "
			       "them (logs in %s)\n",
			       b->n, b->n == 1 ? "" : "s", line, dir);
	}
out:
	free(bin);
	free_argv(argv);
	if (words)
		cli_free_words(words, nwords);
	json_decref(doc);
	json_decref(tasks);
	sonde_strbuf__release(&sh);
	sonde_strbuf__release(&out);
	sonde_store__free(store);
	return code;
}

static void batch_free(struct batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		free(b->j[i].collector);
		json_decref(b->j[i].cparams);
		free(b->j[i].workload);
		free(b->j[i].value);
		free(b->j[i].parameter);
		json_decref(b->j[i].posts);
		free(b->j[i].path);
		free(b->j[i].log);
	}
	free(b->j);
	free(b->outdir);
	if (b->gendir && b->gendir_temporary) { /* the generated files */
		char *const rm[] = { "rm", "-rf", b->gendir, NULL };

		cli_run(NULL, rm, NULL, NULL);
	}
	free(b->gendir);
}

/* "K=V" items into {K: V} (V typed as YAML). */
static int kv_params(const struct sonde_strlist *l, json_t *into)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	size_t i;

	for (i = 0; i < l->n; i++) {
		const char *eq = strchr(l->items[i], '=');
		char key[128];
		json_t *v;

		if (!eq || eq == l->items[i] || (size_t)(eq - l->items[i]) >= sizeof(key))
			return bad("'%s': parameters are K=V", l->items[i]);
		snprintf(key, sizeof(key), "%.*s", (int)(eq - l->items[i]), l->items[i]);
		if (sonde_config__value(eq + 1, &v, &err)) {
			sonde_strbuf__release(&err);
			return bad("'%s': the value is not YAML", l->items[i]);
		}
		json_object_set_new(into, key, v);
	}
	return 0;
}

static int pre_run(json_t *cfg)
{
	json_t *x;
	size_t i;

	json_array_foreach(sonde_config__get(cfg, "execute.pre_run"), i, x)
	{
		const char *c = json_string_value(x);
		char *const sh[] = { "/bin/sh", "-c", (char *)c, NULL };

		if (!c)
			return bad("execute.pre_run: commands are strings%s", "");
		if (!cli_quiet())
			fprintf(stderr, "sonde: run: pre_run: %s\n", c);
		if (cli_run(NULL, sh, NULL, NULL)) {
			cli_error("run", "pre_run '%s' failed: no job was run", c);
			return EXIT_FAILURE_;
		}
	}
	return 0;
}

int cmd_run(int argc, char **argv)
{
	const char *cmd = NULL, *args = NULL;
	struct sonde_strlist workloads = { 0 }, collectors = { 0 }, cps = { 0 }, posts = { 0 },
			     pps = { 0 };
	long long parallel = 1;
	bool slurm = false;
	const char *sbatch_args = NULL;
	const struct sonde_option opts[] = {
		{ SONDE_OPT_GROUP, 0, NULL, NULL, NULL, "run job" },
		{ SONDE_OPT_STRING, 'b', "cmd", &cmd, "CMD", "the command (job)" },
		{ SONDE_OPT_STRING, 'a', "args", &args, "ARGS", "its arguments, one string (job)" },
		{ SONDE_OPT_LIST, 'w', "workload", &workloads, "W",
		  "a workload: the last argument, or a generator's id (job; repeatable)" },
		{ SONDE_OPT_LIST, 'c', "collector", &collectors, "NAME",
		  "a collector (job; repeatable)" },
		{ SONDE_OPT_LIST, 0, "cp", &cps, "K=V",
		  "an option of the collectors: --K V (job; repeatable)" },
		{ SONDE_OPT_LIST, 'p', "postprocessor", &posts, "NAME",
		  "a postprocessor run on each profile (job; repeatable)" },
		{ SONDE_OPT_LIST, 0, "pp", &pps, "K=V",
		  "an option of the postprocessors (job; repeatable)" },
		{ SONDE_OPT_GROUP, 0, NULL, NULL, NULL, "both" },
		{ SONDE_OPT_FLAG, 0, "slurm", &slurm, NULL,
		  "submit the jobs as one Slurm job array (sbatch) instead of running them "
		  "here; sonde status follows them" },
		{ SONDE_OPT_STRING, 0, "sbatch-args", &sbatch_args, "ARGS",
		  "with --slurm: sbatch's options, one string (--partition=p --time=10)" },
		{ SONDE_OPT_INT, 'j', "jobs", &parallel, "N",
		  "jobs at a time (1); time, counters, sched, system, power and sample jobs run "
		  "alone",
		  1, 256 },
		{ .type = SONDE_OPT_END }
	};
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	struct batch b = { 0 };
	struct sonde_store *store;
	json_t *cfg = NULL, *job = NULL, *cmds, *argl, *wls, *cols, *pl, *c, *a, *w, *col;
	int first, code = EXIT_OK, n, rc;
	ssize_t len;
	size_t i, k, l, m;

	first = cli_parse("run", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	n = argc - 1 - first;
	if (n != 1 || (strcmp(argv[0], "job") && strcmp(argv[0], "matrix"))) {
		code = cli_usage("run", "job or matrix?");
		goto out;
	}
	rc = sonde_config__load(SONDE_CONFIG_MERGED, ".", &cfg, &err);
	if (rc) {
		cli_error("run", "%s", cli_why(&err, rc));
		code = EXIT_USAGE;
		goto out;
	}
	cli_config_warnings("run", cfg);
	if (!strcmp(argv[0], "job")) {
		json_t *cp = json_object(), *pp = json_object();

		if (!cmd || !collectors.n) {
			json_decref(cp);
			json_decref(pp);
			code = cli_usage("run", "a job needs -b CMD and -c COLLECTOR");
			goto out;
		}
		if (kv_params(&cps, cp) || kv_params(&pps, pp)) {
			json_decref(cp);
			json_decref(pp);
			code = EXIT_USAGE;
			goto out;
		}
		job = json_pack("{s:[s], s:[s], s:[], s:[], s:[]}", "cmds", cmd, "args",
				args ? args : "", "workloads", "collectors", "postprocessors");
		for (i = 0; job && i < workloads.n; i++)
			json_array_append_new(json_object_get(job, "workloads"),
					      json_string(workloads.items[i]));
		for (i = 0; job && i < collectors.n; i++)
			json_array_append_new(
				json_object_get(job, "collectors"),
				json_pack("{s:s, s:O}", "name", collectors.items[i], "params", cp));
		for (i = 0; job && i < posts.n; i++)
			json_array_append_new(
				json_object_get(job, "postprocessors"),
				json_pack("{s:s, s:O}", "name", posts.items[i], "params", pp));
		json_decref(cp);
		json_decref(pp);
	} else {
		if (cmd || args || workloads.n || collectors.n || cps.n || posts.n || pps.n) {
			code = cli_usage("run",
					 "matrix takes its jobs from the configuration: -b, -a, "
					 "-w, -c, -p, --cp and --pp are for 'run job'");
			goto out;
		}
		job = json_incref(cfg);
	}
	if (!job) {
		cli_error("run", "out of memory");
		code = EXIT_FAILURE_;
		goto out;
	}
	cmds = json_object_get(job, "cmds");
	argl = json_object_get(job, "args");
	wls = json_object_get(job, "workloads");
	cols = json_object_get(job, "collectors");
	pl = json_object_get(job, "postprocessors");
	if (!json_array_size(cmds) || !json_array_size(cols)) {
		code = bad("%s", "the matrix needs cmds and collectors in the configuration "
				 "(sonde config set cmds \"[./prog]\"; sonde config set "
				 "collectors.0.name time)");
		goto out;
	}
	/* cmds x args x workloads x collectors */
	json_array_foreach(cmds, i, c)
	{
		size_t na = json_array_size(argl) ? json_array_size(argl) : 1;
		size_t nw = json_array_size(wls) ? json_array_size(wls) : 1;

		if (!json_is_string(c)) {
			code = bad("%s", "cmds are strings");
			goto out;
		}
		for (k = 0; k < na; k++) {
			a = json_array_get(argl, k);
			if (a && !json_is_string(a)) {
				code = bad("%s", "args are strings");
				goto out;
			}
			for (l = 0; l < nw; l++) {
				char buf[64];
				const char *wl;

				w = json_array_get(wls, l);
				wl = w ? str_of(w, buf, sizeof(buf)) : "";
				if (!wl) {
					code = bad("%s", "workloads are values");
					goto out;
				}
				json_array_foreach(cols, m, col)
				{
					json_t *one = json_is_string(col)
							      ? json_pack("{s:O}", "name", col)
							      : json_incref(col);

					rc = add_jobs(&b, cfg, one, json_string_value(c),
						      a ? json_string_value(a) : "", wl, pl);
					json_decref(one);
					if (rc) {
						code = rc < 0 ? EXIT_FAILURE_ : rc;
						goto out;
					}
				}
			}
		}
	}
	b.template = json_string_value(sonde_config__get(cfg, "format.output_profile_template"));
	if (!b.template)
		b.template = "%collector%-%cmd%-%workload%-%date%";
	b.register_after = json_is_true(sonde_config__get(cfg, "profiles.register_after_run"));
	len = readlink("/proc/self/exe", b.self, sizeof(b.self) - 1);
	if (len <= 0) {
		cli_error("run", "cannot find sonde's own program: %s", strerror(errno));
		code = EXIT_FAILURE_;
		goto out;
	}
	b.self[len] = 0;
	store = sonde_store__open(".");
	if (asprintf(&b.outdir, "%s%s", store ? sonde_store__jobs(store) : "", store ? "/" : "") <
	    0)
		b.outdir = NULL;
	sonde_store__free(store);
	if (b.register_after && !*b.outdir) {
		code = bad("%s", "profiles.register_after_run needs a store (sonde init)");
		goto out;
	}
	if (sbatch_args && !slurm) {
		code = cli_usage("run", "--sbatch-args goes with --slurm");
		goto out;
	}
	if (slurm && !*b.outdir) {
		code = bad("%s", "--slurm needs a store (sonde init) on a file system the "
				 "cluster's nodes share: the tasks write their profiles there");
		goto out;
	}
	if (!strcmp(argv[0], "matrix") && (code = pre_run(cfg)))
		goto out;
	code = slurm ? submit_slurm(&b, sbatch_args) : run_all(&b, parallel);
out:
	batch_free(&b);
	json_decref(job);
	json_decref(cfg);
	sonde_strbuf__release(&err);
	sonde_strlist__release(&workloads);
	sonde_strlist__release(&collectors);
	sonde_strlist__release(&cps);
	sonde_strlist__release(&posts);
	sonde_strlist__release(&pps);
	return code;
}

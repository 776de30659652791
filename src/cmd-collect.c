/*
 * cmd-collect.c - `sonde collect COLLECTOR [options] -- CMD [ARGS...]`.
 *
 * Runs the command under one collector (built-in, --plugin PATH or --external
 * EXE), or several built-ins joined by '+' on the same runs, and writes a
 * profile per collector: to -o FILE (FILE-COLLECTOR.json when there are
 * several), else to .sonde/jobs/ inside an
 * initialised tree, else to the current directory, named
 * BIN-COLLECTOR[-WORKLOAD]-YYYY-MM-DD-HH-MM-SS.json. The profile is written
 * whatever happened to the runs (failure, crash, timeout, SIGINT): the runs
 * completed are kept and the profile says how the series ended.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sonde/callgraph.h>
#include "cli.h"

static const char *const output_handlings[] = { "default", "capture", "suppress", NULL };

static const char usage[] =
	"usage: sonde collect COLLECTOR[+COLLECTOR...] [options] [--] CMD [ARGS...]\n"
	"       sonde collect COLLECTOR [options] -- CMD_A [ARGS...] ::: CMD_B [ARGS...]...\n"
	"       sonde collect --plugin PATH [options] [--] CMD [ARGS...]\n"
	"       sonde collect --external EXE [options] [--] CMD [ARGS...]\n"
	"\n"
	"Run CMD under a collector and write its profile. Collectors: time, memory, trace,\n"
	"counters, sample, python, system, sched, power, gpu, external. With several joined by\n"
	"'+' (time+system+sched) the runs carry them all at once, on one clock: each\n"
	"writes its own profile, and the profiles share a run id (sonde export RUN\n"
	"--format perfetto lays them on one timeline). An option that two of them have\n"
	"applies to both. 'sonde collect COLLECTOR --help' also lists its own options.\n"
	"With ':::' between commands, each is measured in turn into its own profile and\n"
	"each later one is compared with the first (\"B ran 1.31 ± 0.05 × slower than A\",\n"
	"and the verdict of sonde check).";

struct collect_opts {
	long long warmup, repeat;
	const char *prepare, *setup, *cleanup, *parameter, *input, *out_file, *plugin, *external;
	double timeout, duration;
	long long pid;
	bool ignore_failure, show_output, discard_output, capture_output, no_shell;
	const char *output_handling; /* Perun's spelling: default, capture, suppress */
};

/*
 * --setup and --cleanup: CMD through /bin/sh, its output on stderr, once. 0, or
 * the exit code after one line that says how it failed.
 */
static int shell_step(const char *what, const char *cmd)
{
	int st;

	fflush(NULL);
	st = system(cmd);
	if (st == 0)
		return EXIT_OK;
	if (st < 0)
		cli_error("collect", "%s '%s': cannot run /bin/sh: %s", what, cmd, strerror(errno));
	else if (WIFSIGNALED(st))
		cli_error("collect", "%s '%s' was killed by %s", what, cmd,
			  strsignal(WTERMSIG(st)));
	else
		cli_error("collect", "%s '%s' failed (exit %d)", what, cmd, WEXITSTATUS(st));
	return EXIT_FAILURE_;
}

/* Parse NAME=V1,V2,... or NAME=A..B[:STEP] into a NULL-terminated list. */
static int parse_parameter(const char *spec, char **name, char ***values)
{
	const char *eq = strchr(spec, '=');
	struct sonde_strlist l = { 0 };
	char *list, *tok, *save, *dots;
	size_t i;

	size_t names = 1;

	if (!eq || eq == spec)
		return -EINVAL;
	/* NAME, or NAME,NAME... whose values are tuples A:B... */
	for (i = 0; spec + i < eq; i++) {
		bool start = !i || spec[i - 1] == ',';

		if (spec[i] == ',' && !start && spec + i + 1 < eq) {
			names++;
			continue;
		}
		if (!(spec[i] == '_' || (spec[i] >= 'a' && spec[i] <= 'z') ||
		      (spec[i] >= 'A' && spec[i] <= 'Z') ||
		      (!start && spec[i] >= '0' && spec[i] <= '9')))
			return -EINVAL;
	}
	*name = strndup(spec, (size_t)(eq - spec));
	list = strdup(eq + 1);
	if (!*name || !list)
		return -ENOMEM;
	dots = names > 1 ? NULL : strstr(list, "..");
	if (dots) {
		char *end, *colon = strchr(dots, ':');
		double a, b, step = 1;
		long k, count;

		*dots = '\0';
		if (colon)
			*colon = '\0';
		a = strtod(list, &end);
		if (!*list || *end)
			goto bad;
		b = strtod(dots + 2, &end);
		if (!dots[2] || *end)
			goto bad;
		if (colon) {
			step = strtod(colon + 1, &end);
			if (!colon[1] || *end)
				goto bad;
		}
		if (!(step > 0) || b < a || (b - a) / step > 1e6)
			goto bad;
		count = (long)floor((b - a) / step + 1e-9) + 1;
		for (k = 0; k < count; k++) {
			char buf[64];

			snprintf(buf, sizeof(buf), "%.15g", a + (double)k * step);
			sonde_strlist__push(&l, strdup(buf));
		}
	} else {
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			size_t parts = 1;
			const char *c;

			for (c = tok; *c; c++)
				parts += *c == ':';
			if (names > 1 && parts != names)
				goto bad; /* a tuple has one part per name */
			sonde_strlist__push(&l, strdup(tok));
		}
		if (!l.n)
			goto bad;
	}
	free(list);
	*values = (char **)l.items;
	return 0;
bad:
	free(list);
	for (i = 0; i < l.n; i++)
		free((char *)l.items[i]);
	sonde_strlist__release(&l);
	return -EINVAL;
}

/* ---- progress ------------------------------------------------------------------------- */

static void draw_progress(const struct sonde_progress *pr, void *ctx)
{
	char el[32], eta[32], bar[31];
	FILE *tty = cli_terminal_raw();
	int fill = 0, i;

	(void)ctx;
	sonde_format__duration((double)pr->elapsed_ns, el, sizeof(el));
	if (pr->total)
		fill = (int)(30.0 * pr->done / pr->total);
	for (i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = '\0';
	/* sonde's own control sequences: past the terminal guard */
	if (pr->warmup)
		fprintf(tty, "\r\033[Kwarming up%s%s  %s", pr->workload ? " @" : "",
			pr->workload ? pr->workload : "", el);
	else if (pr->total)
		fprintf(tty, "\r\033[K[%s] %u/%u%s%s  %s  ETA %s", bar, pr->done, pr->total,
			pr->workload ? " @" : "", pr->workload ? pr->workload : "", el,
			pr->done ? sonde_format__duration((double)pr->eta_ns, eta, sizeof(eta))
				 : "-");
	else
		fprintf(tty, "\r\033[Kmeasuring the first run%s%s", pr->workload ? " @" : "",
			pr->workload ? pr->workload : "");
	fflush(tty);
}

/* A target that ignores SIGINT/SIGTERM is killed this long after (timeout -k's way). */
#define KILL_GRACE_S 5

static void on_signal(int sig)
{
	sonde_runner__interrupt(sig);
	alarm(KILL_GRACE_S);
}

static void on_alarm(int sig)
{
	(void)sig;
	sonde_runner__kill();
}

static void install_signals(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal; /* no SA_RESTART: wait4 returns EINTR, then resumes */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* ---- where the profile goes ----------------------------------------------------------- */

/* The directory part of path must be writable; say so before running anything. */
/* Bytes under which a profile's file system counts as full before the run: the
   workload is not run for a profile that has no room (a run of minutes lost). */
#define MIN_FREE_BYTES (1u << 20)

static int check_writable(const char *path)
{
	char *d = strdup(path);
	struct statvfs sv;
	int rc = 0;

	if (!d)
		return -ENOMEM;
	if (access(dirname(d), W_OK) < 0)
		rc = -errno;
	else if (strcmp(path, "-") && statvfs(d, &sv) == 0 &&
		 (uint64_t)sv.f_bavail * sv.f_frsize < MIN_FREE_BYTES)
		rc = -ENOSPC;
	free(d);
	return rc;
}

/*
 * The profile could not be written where it goes (a file system that filled
 * during the run): it goes to $TMPDIR (or /tmp) rather than being lost. The
 * name written is in *used. Returns 0 or -errno.
 */
static int write_elsewhere(struct sonde_profile *p, const char *path, char **used)
{
	const char *dir = getenv("TMPDIR"), *base = strrchr(path, '/');
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	int rc;

	sonde_strbuf__addf(&sb, "%s/%s", dir && *dir ? dir : "/tmp", base ? base + 1 : path);
	rc = sb.buf ? sonde_profile__write(p, sb.buf, SONDE_FILE_NEW, used) : -ENOMEM;
	sonde_strbuf__release(&sb);
	return rc;
}

/*
 * Open a temporary capture file beside the profile: unnamed where the file
 * system can (*tmp is then ""), so that a sonde killed during the run leaves
 * no temporary behind; else named.
 */
static int open_capture(const char *profile, char **tmp)
{
	char *d = strdup(profile);
	int fd = sonde_file__open_unnamed(profile);

	if (fd >= 0) {
		free(d);
		*tmp = strdup("");
		if (!*tmp) {
			close(fd);
			return -ENOMEM;
		}
		return fd;
	}
	if (!d || asprintf(tmp, "%s/.sonde-output-XXXXXX", dirname(d)) < 0) {
		free(d);
		return -ENOMEM;
	}
	free(d);
	fd = mkostemp(*tmp, O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void describe_status(struct sonde_strbuf *sb, int status)
{
	if (WIFEXITED(status))
		sonde_strbuf__addf(sb, "exited with status %d", WEXITSTATUS(status));
	else
		sonde_strbuf__addf(sb, "was killed by signal %d (%s)%s", WTERMSIG(status),
				   strsignal(WTERMSIG(status)),
				   WCOREDUMP(status) ? ", core dumped" : "");
}

/* ---- the command ---------------------------------------------------------------------- */

#define MAX_COLLECTORS	8
#define MAX_OPTIONS	64 /* of one collector */
#define COLLECTOR_NAMES collector_names()

/* The collectors' names, for messages: "time, memory, ..., external", then the registered. */
static const char *collector_names(void)
{
	static char buf[1024];
	const struct sonde_collector *const *b;
	size_t n, i, len = 0;
	json_t *cfg = NULL, *e;
	const char *name;

	if (buf[0])
		return buf;
	b = sonde_collector__builtins(&n);
	for (i = 0; i < n && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ", " : "",
					b[i]->name);
	cli_registered_collector("", &cfg);
	json_object_foreach(json_object_get(cfg, "registered_collectors"), name, e)
	{
		if (len < sizeof(buf))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s (registered)",
						", ", name);
	}
	json_decref(cfg);
	return buf;
}

/*
 * trace --only-extract-cg (Perun's -cg): the binary's static call graph, one
 * "caller -> callee" line per edge, and nothing run.
 */
static int print_call_graph(const char *binary, const char *cmd)
{
	char *path = binary ? realpath(binary, NULL) : sonde_runner__resolve(cmd);
	struct sonde_call_edge *e = NULL;
	size_t n = 0, indirect = 0, i;
	int rc;

	if (!path) {
		cli_error("collect", "cannot find '%s': %s", binary ? binary : cmd,
			  strerror(errno));
		return EXIT_NOTFOUND;
	}
	rc = sonde_callgraph__static(path, &e, &n, &indirect);
	if (rc) {
		cli_error("collect", "cannot read the call graph of '%s': %s", path,
			  rc == -ENOTSUP   ? "only x86-64 files, with capstone (libcapstone-dev)"
			  : rc == -ENOEXEC ? "not an ELF file"
					   : strerror(-rc));
		free(path);
		return rc == -ENOTSUP ? EXIT_UNSUPPORTED : EXIT_FAILURE_;
	}
	for (i = 0; i < n; i++)
		printf("%s -> %s\n", e[i].caller, e[i].callee);
	if (!cli_quiet())
		fprintf(stderr,
			"sonde: %zu edges in the static call graph of '%s' (direct calls; %zu "
			"indirect calls have no static target); nothing was run\n",
			n, path, indirect);
	sonde_callgraph__free(e, n);
	free(path);
	return EXIT_OK;
}

/*
 * Perun's trace collector spells some options with two letters after one
 * dash (-cg, -np, -vt...): before "--", each becomes the long option it names.
 */
static void perun_short_names(int argc, char **argv)
{
	static const char *const names[][2] = {
		{ "-cg", "--only-extract-cg" }, { "-np", "--no-profile" },
		{ "-vt", "--verbose-trace" },	{ "-sc", "--stap-cache-off" },
		{ "-nds", "--no-ds-update" },	{ "-mt", "--max-simultaneous-threads" },
	};
	int i;
	size_t k;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (!strcmp(argv[i], names[k][0]))
				argv[i] = (char *)names[k][1];
}

/* Whether -h or --help comes before "--": only then is the registry read for the usage. */
static bool asks_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	return false;
}

/* The usage, and the registered collectors when there are some (for --help). */
static const char *usage_with_registered(void)
{
	static char buf[sizeof(usage) + 1024];
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	json_t *cfg = NULL, *e;
	const char *name;

	if (cli_describing) /* man pages and completion: the same on every machine */
		return usage;
	cli_registered_collector("", &cfg);
	json_object_foreach(json_object_get(cfg, "registered_collectors"), name, e)
	{
		sonde_strbuf__addf(&sb, "%s%s (%s)", sb.len ? ", " : "", name,
				   json_object_get(e, "plugin") ? "plugin" : "external");
	}
	json_decref(cfg);
	if (!sb.len)
		return usage;
	snprintf(buf, sizeof(buf), "%s\nRegistered (sonde collector add): %s.", usage, sb.buf);
	sonde_strbuf__release(&sb);
	return buf;
}

/*
 * The collectors named by argv[1]: one, or several joined by '+' (time+system+sched),
 * or a plugin or external collector (alone). Returns how many, or 0 with *code set
 * (-1: none named, for help or usage to decide).
 */
/* A global option that takes no separate value (-v, -vv, -q, --color=WHEN, ...). */
static bool lone_global(const char *a)
{
	return !strcmp(a, "-q") || !strcmp(a, "--quiet") || !strcmp(a, "--verbose") ||
	       (a[0] == '-' && a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1)) ||
	       !strncmp(a, "--color=", 8) || !strncmp(a, "--debug=", 8);
}

/* `collect -vv time ...`: global options before the collector's name move after it,
   where the option parser takes them (argv is permuted in place). */
static void collector_first(int argc, char **argv)
{
	int j;

	for (j = 1; j < argc && lone_global(argv[j]); j++)
		;
	if (j > 1 && j < argc && argv[j][0] != '-') {
		char *name = argv[j];

		memmove(&argv[2], &argv[1], (size_t)(j - 1) * sizeof(*argv));
		argv[1] = name;
	}
}

static size_t pick_collectors(int argc, char **argv, const struct sonde_collector **cols, int *skip,
			      int *code, char **external)
{
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	const char *plugin = NULL, *w, *plus;
	size_t n = 0, k;
	int i;

	*skip = 0;
	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strncmp(argv[i], "--plugin=", 9))
			plugin = argv[i] + 9;
		else if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
			plugin = argv[i + 1];
		else if (!strcmp(argv[i], "--external") || !strncmp(argv[i], "--external=", 11)) {
			cols[0] = sonde_collector__find("external");
			return 1;
		}
		if (argv[i][0] != '-' && !plugin && i == 1)
			break;
	}
	if (plugin) {
		cols[0] = sonde_collector__load_plugin(plugin, &err);
		if (!cols[0]) {
			cli_error("collect", "%s", cli_why(&err, -errno));
			*code = EXIT_FAILURE_;
		}
		sonde_strbuf__release(&err);
		return cols[0] ? 1 : 0;
	}
	if (argc < 2 || argv[1][0] == '-') {
		*code = -1; /* no collector: help or usage, decided by the caller */
		return 0;
	}
	*skip = 1;
	for (w = argv[1];; w = plus + 1) {
		char name[64];
		size_t len;

		plus = strchr(w, '+');
		len = plus ? (size_t)(plus - w) : strlen(w);
		snprintf(name, sizeof(name), "%.*s", (int)(len < 63 ? len : 63), w);
		if (n == MAX_COLLECTORS) {
			*code = cli_usage("collect", "at most %d collectors in one run",
					  MAX_COLLECTORS);
			return 0;
		}
		cols[n] = sonde_collector__find(name);
		if (!cols[n] && !n && !plus) { /* one registered by `sonde collector add` */
			json_t *cfg, *e = cli_registered_collector(name, &cfg);
			const char *p = json_string_value(json_object_get(e, "plugin"));
			const char *x = json_string_value(json_object_get(e, "external"));

			if (p)
				cols[0] = sonde_collector__load_plugin(p, &err);
			else if (x && (*external = strdup(x)))
				cols[0] = sonde_collector__find("external");
			if (e && !cols[0]) {
				cli_error("collect", "registered collector '%s': %s", name,
					  err.len ? err.buf : "no plugin or external in its entry");
				*code = EXIT_FAILURE_;
			}
			json_decref(cfg);
			sonde_strbuf__release(&err);
			if (e)
				return cols[0] ? 1 : 0;
		}
		if (!cols[n] && strcmp(name, "external")) {
			const struct sonde_collector *const *all;
			const char *names[32], *near;
			size_t na, j;

			all = sonde_collector__builtins(&na);
			for (j = 0; j < na && j < 31; j++)
				names[j] = all[j]->name;
			names[j] = NULL;
			if ((near = sonde_options__suggest(name, names))) {
				*code = cli_usage("collect",
						  "unknown collector '%s'; did you mean '%s'? "
						  "(collectors: %s)",
						  name, near, COLLECTOR_NAMES);
				return 0;
			}
		}
		if (!cols[n] || !strcmp(name, "external")) {
			*code = cli_usage("collect",
					  !cols[n] ? "unknown collector '%s' (collectors: %s)"
						   : "the %s collector runs alone (collectors: %s)",
					  name, COLLECTOR_NAMES);
			return 0;
		}
		for (k = 0; k < n; k++)
			if (cols[k] == cols[n]) {
				*code = cli_usage("collect", "the %s collector is named twice",
						  name);
				return 0;
			}
		n++;
		if (!plus)
			break;
	}
	return n;
}

/* Whether opts (nested groups included) has an option whose params key is name. */
static bool has_option(const struct sonde_option *opts, const char *name)
{
	for (; opts && opts->type != SONDE_OPT_END; opts++)
		if (opts->type == SONDE_OPT_GROUP
			    ? has_option(opts->sub, name)
			    : opts->long_name && !strcmp(opts->long_name, name))
			return true;
	return false;
}

/*
 * Collector k's options, for a run of several: a short letter two of them use
 * for different long options (counters' -g is --metrics, sample's
 * --call-graph) is dropped from both, so that only the long names work there.
 * copy has room for the options; returns the table to use.
 */
static const struct sonde_option *unshared_shorts(const struct sonde_collector *const *cols,
						  size_t ncols, size_t k, struct sonde_option *copy)
{
	const struct sonde_option *o = cols[k]->options;
	size_t n, j;
	bool changed = false;

	for (n = 0; o[n].type != SONDE_OPT_END && n + 1 < MAX_OPTIONS; n++) {
		copy[n] = o[n];
		for (j = 0; o[n].short_name && j < ncols; j++) {
			const struct sonde_option *x = cols[j]->options;

			for (; j != k && x && x->type != SONDE_OPT_END; x++)
				if (x->short_name == o[n].short_name &&
				    strcmp(x->long_name ? x->long_name : "",
					   o[n].long_name ? o[n].long_name : "")) {
					copy[n].short_name = 0;
					changed = true;
				}
		}
	}
	copy[n] = (struct sonde_option){ .type = SONDE_OPT_END };
	return changed ? copy : o;
}

/* Collector k's params: all that were given, less the options only the others have. */
static json_t *params_of(json_t *params, const struct sonde_collector *const *cols, size_t n,
			 size_t k)
{
	json_t *mine = json_copy(params), *v;
	const char *key;
	void *tmp;
	size_t j;

	json_object_foreach_safe(params, tmp, key, v)
	{
		if (has_option(cols[k]->options, key))
			continue;
		for (j = 0; j < n; j++)
			if (j != k && has_option(cols[j]->options, key))
				json_object_del(mine, key);
	}
	return mine;
}

static int profile_stdout = -1; /* -o -: the real stdout while the runs use stderr */
static char *last_written;	/* the path of the profile finish() wrote (for :::) */

/*
 * Where collector name's profile goes: -o FILE, or with several collectors in
 * the run FILE with -NAME before its extension (run.json: run-sched.json);
 * else the default path. A rank of a job of several: -rankR after FILE's stem.
 */
static char *profile_path(const struct collect_opts *o, char **argv, const char *name,
			  char **values, size_t ncols)
{
	char *path = NULL, *base;
	size_t stem;
	int rc;

	if (!o->out_file)
		return cli_job_path(argv[0], name, values);
	base = cli_rank_path(o->out_file); /* a rank's: FILE-rankR */
	if (!base || ncols == 1)
		return base;
	stem = strlen(base) - sonde_profile__extension(base);
	if (!sonde_profile__extension(base))
		rc = asprintf(&path, "%s-%s.json", base, name);
	else
		rc = asprintf(&path, "%.*s-%s%s", (int)stem, base, name, base + stem);
	free(base);
	return rc < 0 ? NULL : path;
}

/* Keep the captured output beside the first profile (PROFILE.out); every profile names it. */
static void keep_capture(struct sonde_session *s, const char *path, int *capture_fd,
			 char **capture_tmp)
{
	char *out_name = NULL;
	size_t stem = strlen(path) - sonde_profile__extension(path), k;

	if (asprintf(&out_name, "%.*s.out", (int)stem, path) >= 0 &&
	    (**capture_tmp ? rename(*capture_tmp, out_name)
			   : sonde_file__publish(*capture_fd, out_name)) == 0) {
		char *b = strdup(out_name);

		for (k = 0; b && k < sonde_session__profile_count(s); k++)
			sonde_profile__set(sonde_profile__metadata(sonde_session__profile(s, k)),
					   "captured_output", json_string(basename(b)));
		free(b);
	} else if (**capture_tmp) {
		unlink(*capture_tmp);
	}
	close(*capture_fd);
	*capture_fd = -1;
	free(*capture_tmp);
	*capture_tmp = NULL;
	free(out_name);
}

/* The collector's own view of p, and what it warns of; else the table (and its). */
static void print_view(struct sonde_profile *p, FILE *rep)
{
	struct sonde_strbuf v = SONDE_STRBUF_INIT;
	/* the notes went to stderr as the run went; the warnings follow */
	const struct sonde_view_args a = { .sz = sizeof(a), .fmt = SONDE_VIEW_TEXT, .top = 10 };

	cli_emit(sonde_view__show(p, NULL, &a, &v), &v, rep);
	cli_print_warnings(p, rep, false); /* notes went to stderr */
}

static int finish(struct sonde_session *s, const struct collect_opts *o, char **argv, char **values,
		  int *capture_fd, char **capture_tmp, bool broken)
{
	const struct sonde_outcome *out = sonde_session__outcome(s);
	struct sonde_strbuf err = SONDE_STRBUF_INIT, written = SONDE_STRBUF_INIT;
	size_t ncols = sonde_session__profile_count(s), k;
	bool quiet_view = cli_quiet() || broken || out->stopped_on_failure || out->interrupted_by;
	char *first = NULL;
	FILE *rep = stderr; /* as perf stat: stdout is the target's (or the profile's, -o -) */
	int rc, code = EXIT_OK;

	rc = sonde_session__after(s, &err);
	if (rc) {
		cli_error("collect", "%s", cli_why(&err, rc));
		sonde_strbuf__release(&err);
		return cli_exit_code(rc);
	}
	for (k = 0; k < ncols; k++) {
		struct sonde_profile *p = sonde_session__profile(s, k);
		const char *name = json_string_value(
			json_object_get(sonde_profile__collector_info(p), "name"));
		char *path = profile_path(o, argv, name ? name : "profile", values, ncols);
		char *used = NULL;

		if (path && json_is_true(json_object_get(
				    json_object_get(sonde_profile__collector_info(p), "params"),
				    "no-profile"))) { /* trace -np: the raw log only */
			fprintf(rep, "no profile written (--no-profile): '%s' was not written\n",
				path);
			free(path);
			continue;
		}
		if (!path) {
			rc = -ENOMEM;
		} else {
			if (!k && *capture_tmp)
				keep_capture(s, path, capture_fd, capture_tmp);
			rc = sonde_profile__write(p, path, o->out_file ? 0 : SONDE_FILE_NEW, &used);
		}
		if (rc && rc != -ENOMEM && path && strcmp(path, "-") &&
		    !write_elsewhere(p, path, &used)) {
			cli_error("collect",
				  "cannot write profile '%s': %s; it is saved as '%s' instead",
				  path, strerror(-rc), used);
			code = EXIT_FAILURE_;
			rc = 0;
		}
		if (rc) {
			cli_error("collect", "cannot write profile '%s': %s", path ? path : name,
				  strerror(-rc));
			free(path);
			free(first);
			sonde_strbuf__release(&err);
			sonde_strbuf__release(&written);
			return EXIT_FAILURE_;
		}
		if (!quiet_view) {
			if (ncols > 1)
				fprintf(rep, "%s== %s ==\n", k ? "\n" : "", name);
			print_view(p, rep);
		}
		sonde_strbuf__addf(&written, "%s'%s'", k ? ", " : "", used ? used : path);
		if (!first)
			first = strdup(used ? used : path);
		free(used);
		free(path);
	}
	if (out->interrupted_by) {
		cli_error("collect", "interrupted by %s after %u run(s); profile%s written to %s",
			  strsignal(out->interrupted_by), out->runs, ncols > 1 ? "s" : "",
			  written.buf);
		code = EXIT_INTERRUPTED;
	} else if (out->stopped_on_failure) {
		describe_status(&err, out->failure_status);
		cli_error("collect",
			  "'%s' %s%s in run %u; profile%s written to %s (use --ignore-failure to "
			  "measure failing runs)",
			  argv[0], out->timed_out ? "timed out and " : "", err.buf,
			  out->failure_run, ncols > 1 ? "s" : "", written.buf);
		code = EXIT_FAILURE_;
	} else if (!cli_quiet() && written.len) {
		if (ncols > 1)
			fprintf(rep, "\nrun %s: profiles written to %s\n", sonde_session__run_id(s),
				written.buf);
		else
			fprintf(rep, "profile written to %s\n", written.buf);
	}
	free(last_written);
	last_written = first;
	sonde_strbuf__release(&err);
	sonde_strbuf__release(&written);
	return code;
}

static int cmd_collect_one(int argc, char **argv);

/* ---- CMD_A ::: CMD_B: each command measured in turn, then compared, as hyperfine ---------- */

/* The wall time ("real") of a profile's first workload: mean and σ. */
static int real_times(const struct sonde_profile *p, double *mean, double *sd)
{
	struct sonde_table_row *rows;
	size_t n, i;
	int rc = sonde_table__rows(p, &rows, &n);

	if (rc)
		return rc;
	for (i = 0; i < n; i++)
		if (rows[i].subtype && !strcmp(rows[i].subtype, "real")) {
			*mean = rows[i].s.mean;
			*sd = rows[i].s.stddev;
			break;
		}
	free(rows);
	return i < n ? 0 : -ENOENT;
}

/*
 * The check verdict of B's wall time against A's, the commands taken as one:
 * B's resources are renamed A's (the uid of a time profile is its command).
 */
static const char *verdict_of(const struct sonde_profile *a, struct sonde_profile *b)
{
	struct sonde_check_options co = { 0 };
	struct sonde_check_result *r = NULL;
	const char *v = NULL;
	size_t n = 0, i;

	sonde_check__pair(a, b);
	if (!sonde_check__compare(a, b, &co, &r, &n))
		for (i = 0; i < n; i++)
			if (r[i].subtype && !strcmp(r[i].subtype, "real")) {
				v = sonde_verdict_names[r[i].verdict];
				break;
			}
	sonde_check__free(r, n);
	return v;
}

static int collect_commands(int argc, char **argv, int dashdash)
{
	char **sub = calloc((size_t)argc + 2, sizeof(*sub)), **paths = NULL;
	int i, k = 0, start = dashdash + 1, code = EXIT_OK, ncmd = 0;
	struct sonde_profile *base = NULL;

	if (argc < 2 || strcmp(argv[1], "time")) {
		free(sub);
		return cli_usage("collect", "':::' compares commands' wall times: 'sonde collect "
					    "time -- CMD_A ::: CMD_B'");
	}
	for (i = 1; i < dashdash; i++)
		if (!strncmp(argv[i], "-o", 2) || !strncmp(argv[i], "--output", 8)) {
			free(sub);
			return cli_usage("collect", "with ::: each command gets its own profile, "
						    "named as without -o: leave -o out");
		}
	paths = calloc((size_t)argc, sizeof(*paths));
	if (!sub || !paths) {
		free(sub);
		free(paths);
		cli_error("collect", "out of memory");
		return EXIT_FAILURE_;
	}
	for (i = dashdash + 1; i <= argc && code == EXIT_OK; i++) {
		int n = 0, j;

		if (i < argc && strcmp(argv[i], ":::"))
			continue;
		if (i == start) {
			code = cli_usage("collect", "an empty command around ':::'");
			break;
		}
		/* collect [options] -- CMD_k */
		for (j = 0; j <= dashdash; j++)
			sub[n++] = argv[j];
		for (j = start; j < i; j++)
			sub[n++] = argv[j];
		sub[n] = NULL;
		code = cmd_collect_one(n, sub);
		paths[ncmd] = last_written;
		last_written = NULL;
		ncmd++;
		start = i + 1;
	}
	if (code == EXIT_OK && ncmd >= 2 && !cli_quiet()) {
		struct sonde_strbuf err = SONDE_STRBUF_INIT;
		double ma, sa, mb, sb;

		base = sonde_profile__load(paths[0], &err);
		sonde_strbuf__release(&err);
		if (!base || real_times(base, &ma, &sa) || !(ma > 0)) {
			cli_error("collect", "no wall time to compare the commands by");
			code = EXIT_FAILURE_;
		}
		for (k = 1; k < ncmd && code == EXIT_OK; k++) {
			struct sonde_profile *b = sonde_profile__load(paths[k], &err);
			const char *v, *cmd_a, *cmd_b;
			double ratio, rsd;

			sonde_strbuf__release(&err);
			if (k == 1)
				fprintf(stderr,
					"\nsummary (wall time; the baseline is the first):\n");
			if (!b || real_times(b, &mb, &sb) || !(mb > 0)) {
				fprintf(stderr, "  '%s': no wall time, not compared\n", paths[k]);
				sonde_profile__free(b);
				continue;
			}
			cmd_a = json_string_value(
				json_object_get(sonde_profile__header(base), "cmd"));
			cmd_b = json_string_value(json_object_get(sonde_profile__header(b), "cmd"));
			/* hyperfine's ratio and its error, propagated from both σ */
			ratio = mb / ma;
			rsd = ratio * sqrt((sa / ma) * (sa / ma) + (sb / mb) * (sb / mb));
			fprintf(stderr, "  '%s' ran %.2f ± %.2f × %s than '%s'",
				cmd_b ? cmd_b : "?", ratio >= 1 ? ratio : 1 / ratio,
				ratio >= 1 ? rsd : rsd / (ratio * ratio),
				ratio >= 1 ? "slower" : "faster", cmd_a ? cmd_a : "?");
			v = verdict_of(base, b); /* renames b's resources: after cmd_b is printed */
			sonde_profile__free(b);
			fprintf(stderr, "; check: ");
			cli_paint(stderr, v && strstr(v, "degradation")	   ? CLI_RED
					  : v && strstr(v, "optimization") ? CLI_GREEN
									   : "");
			fprintf(stderr, "%s", v ? v : "not judged");
			cli_paint(stderr, CLI_RESET);
			fputc('\n', stderr);
		}
	}
	sonde_profile__free(base);
	for (k = 0; k < ncmd; k++)
		free(paths[k]);
	free(paths);
	free(sub);
	return code;
}

int cmd_collect(int argc, char **argv)
{
	int i, dashdash = -1;

	if (argc >= 2 && !strcmp(argv[1], "bounds")) /* sources, not a run */
		return collect_bounds(argc, argv);

	/* CMD_A ::: CMD_B (after --): one series per command, then the comparison */
	for (i = 1; i < argc; i++) {
		if (dashdash < 0 && !strcmp(argv[i], "--"))
			dashdash = i;
		else if (dashdash >= 0 && !strcmp(argv[i], ":::"))
			return cli_describing ? cmd_collect_one(argc, argv)
					      : collect_commands(argc, argv, dashdash);
	}
	return cmd_collect_one(argc, argv);
}

static int cmd_collect_one(int argc, char **argv)
{
	struct collect_opts o = { .repeat = 0 };
	static char repeat_help[96];
	const struct sonde_option common[] = {
		{ SONDE_OPT_INT, 'w', "warmup", &o.warmup, "N",
		  "run the command N times before measuring", 0, 1e9 },
		{ SONDE_OPT_INT, 'r', "repeat", &o.repeat, "N", repeat_help, 1, 1e9 },
		{ SONDE_OPT_STRING, 0, "prepare", &o.prepare, "CMD",
		  "shell command run before every run (not measured)" },
		{ SONDE_OPT_STRING, 0, "setup", &o.setup, "CMD",
		  "shell command run once before the first run, warm-ups included (not measured)" },
		{ SONDE_OPT_STRING, 0, "cleanup", &o.cleanup, "CMD",
		  "shell command run once after the last run (not measured)" },
		{ SONDE_OPT_FLAG, 'N', "no-shell", &o.no_shell, NULL,
		  "a command given as one quoted word with spaces is a program's name, not a "
		  "shell command line" },
		{ SONDE_OPT_STRING, 0, "parameter", &o.parameter, "NAME=LIST|A..B:STEP",
		  "run once per value, with {NAME} replaced in the arguments ({NAME:string}: a "
		  "string of that length); N1,N2=A1:A2,... runs once per tuple, {N1} and {N2} "
		  "replaced, N1's the size, each a column of the rows" },
		{ SONDE_OPT_DURATION, 't', "timeout", &o.timeout, NULL,
		  "kill a run (its whole process group) after DURATION (30s, 2m; plain: seconds)",
		  0, 1e9 },
		{ SONDE_OPT_FLAG, 0, "show-output", &o.show_output, NULL,
		  "show the command's output (the default, but for time)" },
		{ SONDE_OPT_FLAG, 0, "discard-output", &o.discard_output, NULL,
		  "discard the command's output (the default of time, as hyperfine's)" },
		{ SONDE_OPT_CHOICE, 0, "output-handling", &o.output_handling, "HOW",
		  "Perun's spelling of the three: default (the collector's), capture "
		  "(--capture-output) or suppress (--discard-output)",
		  0, 0, output_handlings },
		{ SONDE_OPT_FLAG, 0, "capture-output", &o.capture_output, NULL,
		  "show the command's output and keep it beside the profile (PROFILE.out)" },
		{ SONDE_OPT_STRING, 0, "input", &o.input, "FILE",
		  "the command's stdin, read from its start by every run (default: sonde's own "
		  "stdin when the command runs once, else /dev/null)" },
		{ SONDE_OPT_FLAG, 'i', "ignore-failure", &o.ignore_failure, NULL,
		  "measure runs that exit non-zero instead of stopping" },
		{ SONDE_OPT_STRING, 'o', "output", &o.out_file, "FILE",
		  "write the profile to FILE (-: to stdout; the command's output then goes to "
		  "stderr)" },
		{ SONDE_OPT_INT, 'p', "pid", &o.pid, "PID",
		  "attach to the running process PID instead of starting a command (sample); "
		  "detach when it exits, after --duration, or at Ctrl-C, leaving it running",
		  1, 4194304 },
		{ SONDE_OPT_DURATION, 0, "duration", &o.duration, NULL,
		  "-p: watch for DURATION (10s, 2m; plain: seconds), then detach", 0, 1e9 },
		{ SONDE_OPT_STRING, 0, "plugin", &o.plugin, "PATH",
		  "use the collector of a plugin (a shared object)" },
		{ SONDE_OPT_STRING, 0, "external", &o.external, "EXE",
		  "use an executable as the collector (its protocol: sonde-collect(1), EXTERNAL "
		  "COLLECTORS)" },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_option table[MAX_COLLECTORS + 2] = { 0 };
	static struct sonde_option own[MAX_COLLECTORS][MAX_OPTIONS];
	static char headings[MAX_COLLECTORS][96];
	struct sonde_session_opts so = { .sz = sizeof(so) };
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	const struct sonde_collector *cols[MAX_COLLECTORS], *col;
	size_t ncols, t = 1;
	const char *spec;
	char *pname = NULL, **values = NULL, *capture_tmp = NULL, *probe;
	static char *registered_exe; /* the external of a registered name */
	json_t *params = json_object();
	struct sonde_session *s = NULL;
	int skip, first, code = EXIT_OK, rc, capture_fd = -1;
	size_t i;

	if (!params) { /* how the profile was made is part of it */
		cli_error("collect", "%s", strerror(ENOMEM));
		return EXIT_FAILURE_;
	}
	collector_first(argc, argv);
	ncols = pick_collectors(argc, argv, cols, &skip, &code, &registered_exe);
	if (!ncols && code != -1) {
		json_decref(params);
		return code;
	}
	col = ncols ? cols[0] : NULL;
	for (i = 0; i < ncols; i++)
		if (!strcmp(cols[i]->name, "trace"))
			perun_short_names(argc, argv);
	snprintf(repeat_help, sizeof(repeat_help), "measure N runs (default: %s)",
		 !col ? "1 for memory, trace and counters; time: "
			"at least 10 runs and 3 s"
		 : ncols > 1 || col->flags & SONDE_COLLECTOR_ONE_RUN ? "1"
								     : "at least 10 runs and 3 s");
	table[0] = (struct sonde_option){ SONDE_OPT_GROUP, 0, NULL, NULL, NULL, NULL, 0, 0, NULL,
					  common };
	for (i = 0; i < ncols; i++) {
		if (!cols[i]->options || cols[i]->options[0].type == SONDE_OPT_END)
			continue;
		snprintf(headings[i], sizeof(headings[i]), "options of the %s collector",
			 cols[i]->name);
		table[t++] = (struct sonde_option){
			SONDE_OPT_GROUP, 0, NULL, NULL, NULL,
			headings[i],	 0, 0,	  NULL, unshared_shorts(cols, ncols, i, own[i])
		};
	}
	first = cli_parse("collect", asks_help(argc, argv) ? usage_with_registered() : usage, table,
			  argc - 1 - skip, argv + 1 + skip, 0, params, &code);
	if (first < 0) {
		json_decref(params);
		return code;
	}
	if (!col) {
		json_decref(params);
		return cli_usage("collect", "which collector? (collectors: %s)", COLLECTOR_NAMES);
	}
	spec = skip ? argv[1] : col->name;
	argv += 1 + skip + first;
	argc -= 1 + skip + first;
	if (o.pid && argc > 0) {
		json_decref(params);
		return cli_usage("collect", "-p attaches to a running process: give no command");
	}
	if (o.duration && !o.pid) {
		json_decref(params);
		return cli_usage("collect", "--duration goes with -p PID");
	}
	if (o.pid) { /* the process's executable stands for the command */
		static char exe[4096];
		static char *pid_argv[2] = { exe, NULL };
		char link[64];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%lld/exe", o.pid);
		n = readlink(link, exe, sizeof(exe) - 1);
		if (n <= 0) {
			json_decref(params);
			cli_error("collect", "cannot attach to process %lld: %s", o.pid,
				  errno == ENOENT ? "no such process" : strerror(errno));
			return errno == ENOENT ? EXIT_NOTFOUND : EXIT_FAILURE_;
		}
		exe[n] = 0;
		argv = pid_argv;
		argc = 1;
	}
	if (argc < 1) {
		json_decref(params);
		return cli_usage("collect",
				 "which command? give it after the options: "
				 "sonde collect %s -- CMD",
				 spec);
	}
	/* one quoted word with spaces ('sort -n nums.txt', as hyperfine takes it) and no
	   program of that name: a shell command line, run by /bin/sh (measured with it) */
	if (argc == 1 && !o.no_shell && !o.pid && strpbrk(argv[0], " \t\n|;&<>()$`'\"*?") &&
	    access(argv[0], X_OK) != 0) {
		static char *sh_argv[4] = { "/bin/sh", "-c", NULL, NULL };

		sh_argv[2] = argv[0];
		argv = sh_argv;
		argc = 3;
	}
	if (json_is_true(json_object_get(params, "only-extract-cg"))) {
		code = print_call_graph(json_string_value(json_object_get(params, "binary")),
					argv[0]);
		json_decref(params);
		return code;
	}
	/* collector_info.params: every option the user gave, and the external's path. */
	if (!o.external && registered_exe)
		o.external = registered_exe; /* sonde collector add NAME --external EXE */
	if (o.external)
		json_object_set_new(params, "exe", json_string(o.external));
	if (o.parameter && parse_parameter(o.parameter, &pname, &values)) {
		json_decref(params);
		free(pname);
		return cli_usage("collect",
				 "invalid value '%s' for '--parameter': expected NAME=V1,V2,..., "
				 "NAME=A..B:STEP or N1,N2=A1:A2,B1:B2,...",
				 o.parameter);
	}
	if (ncols > 1 && o.out_file && !strcmp(o.out_file, "-")) {
		code = cli_usage("collect",
				 "-o - writes one profile to stdout, and %s makes %zu: "
				 "give -o FILE (each is FILE-COLLECTOR.json)",
				 spec, ncols);
		goto out;
	}
	probe = profile_path(&o, argv, col->name, values, ncols);
	rc = probe ? check_writable(probe) : -ENOMEM;
	if (!rc && ncols == 1 &&
	    (json_is_true(json_object_get(params, "keep-temps")) ||
	     json_is_true(json_object_get(params, "zip-temps")) ||
	     json_is_true(json_object_get(params, "verbose-trace")) ||
	     json_is_true(json_object_get(params, "no-profile")))) {
		/* trace -k/-z/-np: the raw log beside where the profile goes */
		struct sonde_strbuf kp = SONDE_STRBUF_INIT;

		sonde_strbuf__addf(&kp, "%s.events", strcmp(probe, "-") ? probe : "stdout");
		json_object_set_new(params, "keep-temps-to", json_string(kp.buf));
		sonde_strbuf__release(&kp);
	}
	if (rc == -ENOSPC) {
		cli_error("collect",
			  "cannot write the profile to '%s': %s (less than %u KiB free there): "
			  "the command was not run",
			  probe, strerror(-rc), MIN_FREE_BYTES >> 10);
		code = EXIT_FAILURE_;
		free(probe);
		goto out;
	}
	if (rc) {
		cli_error("collect", "cannot write the profile to '%s': %s", probe, strerror(-rc));
		code = EXIT_FAILURE_;
		free(probe);
		goto out;
	}
	if (o.output_handling && !strcmp(o.output_handling, "capture"))
		o.capture_output = true;
	else if (o.output_handling && !strcmp(o.output_handling, "suppress"))
		o.discard_output = true;
	if (o.show_output + o.discard_output + o.capture_output > 1) {
		code = cli_usage("collect", "--show-output, --discard-output and --capture-output "
					    "exclude each other");
		free(probe);
		goto out;
	}
	if (o.capture_output) {
		capture_fd = open_capture(probe, &capture_tmp);
		if (capture_fd < 0) {
			cli_error("collect", "cannot create the capture file: %s",
				  strerror(-capture_fd));
			free(probe);
			code = EXIT_FAILURE_;
			goto out;
		}
	}
	free(probe);
	so.argv = argv;
	so.warmup = (unsigned)o.warmup;
	so.repeat = (unsigned)o.repeat;
	so.prepare = o.prepare;
	so.param_name = pname;
	so.param_values = (const char *const *)values;
	so.timeout_s = o.timeout;
	so.input = o.input;
	/* time discards the command's output, as hyperfine does; the others show it */
	so.output = o.capture_output   ? SONDE_OUTPUT_CAPTURE
		    : o.discard_output ? SONDE_OUTPUT_SUPPRESS
		    : o.show_output    ? SONDE_OUTPUT_DEFAULT
		    : ncols == 1 && (col->flags & SONDE_COLLECTOR_QUIET_TARGET)
			    ? SONDE_OUTPUT_SUPPRESS
			    : SONDE_OUTPUT_DEFAULT;
	so.capture_fd = capture_fd;
	so.ignore_failure = o.ignore_failure;
	so.attach_pid = (pid_t)o.pid;
	so.duration_s = o.duration;
	/* a bar only where the target's own output does not reach the terminal: redrawn over
	   a line, it would run into what the program prints (the one-run collectors show it) */
	if (!cli_quiet() && isatty(2) && so.output != SONDE_OUTPUT_DEFAULT)
		so.progress = draw_progress;
	s = sonde_session__new(&so);
	for (i = 0; s && i < ncols; i++)
		if (sonde_session__add(s, cols[i],
				       ncols == 1 ? json_incref(params)
						  : params_of(params, cols, ncols, i)))
			break;
	if (!s || i < ncols) {
		cli_error("collect", "out of memory");
		code = EXIT_FAILURE_;
		goto out;
	}
	rc = sonde_session__before(s, &err);
	if (rc) {
		cli_error("collect", "%s", cli_why(&err, rc));
		/* -EINVAL from a collector: one of its options has a bad value */
		code = rc == -ENOENT   ? EXIT_NOTFOUND
		       : rc == -EACCES ? EXIT_NOEXEC
		       : rc == -EINVAL ? EXIT_USAGE
				       : cli_exit_code(rc);
		goto out;
	}
	install_signals();
	if (o.setup && (rc = shell_step("--setup", o.setup))) {
		code = rc;
		goto out;
	}
	/* -o -: stdout is the profile's; the runs (the target's output) go to stderr */
	if (o.out_file && !strcmp(o.out_file, "-")) {
		fflush(stdout);
		profile_stdout = dup(1);
		if (profile_stdout >= 0)
			dup2(2, 1);
	}
	rc = sonde_session__run(s, &err);
	if (profile_stdout >= 0) {
		fflush(stdout);
		dup2(profile_stdout, 1);
		close(profile_stdout);
		profile_stdout = -1;
	}
	if (so.progress) {
		fputs("\r\033[K", cli_terminal_raw());
		fflush(cli_terminal_raw());
	}
	if (o.cleanup) { /* whatever the runs did: what --setup made is undone */
		int crc = shell_step("--cleanup", o.cleanup);

		if (crc && !rc) {
			code = crc;
			goto out;
		}
	}
	if (rc) {
		/* Nothing measured can be trusted if the runner broke; still keep the runs. */
		cli_error("collect", "%s", cli_why(&err, rc));
		if (sonde_session__outcome(s)->runs || sonde_session__outcome(s)->warmups)
			finish(s, &o, argv, values, &capture_fd, &capture_tmp, true);
		code = rc < 0 ? cli_exit_code(rc) : EXIT_FAILURE_; /* 3: a missing capability */
		goto out;
	}
	code = finish(s, &o, argv, values, &capture_fd, &capture_tmp, false);
out:
	if (capture_tmp) {
		close(capture_fd);
		if (*capture_tmp)
			unlink(capture_tmp);
	}
	free(capture_tmp);
	/* a big profile takes a tenth of a second to free: the process's exit does it */
	for (i = 0; s && i < sonde_session__profile_count(s); i++)
		cli_drop_profile(sonde_session__take_profile(s, i));
	sonde_session__free(s);
	sonde_strbuf__release(&err);
	json_decref(params);
	for (i = 0; values && values[i]; i++)
		free(values[i]);
	free(values);
	free(pname);
	return code;
}

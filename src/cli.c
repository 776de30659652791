/*
 * cli.c - helpers shared by the commands: messages, exit codes, option parsing
 * with generated help, and profile names (path, N@p, N@i).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sonde/config.h>
#include <sonde/job.h>
#include "cli.h"

pid_t cli_spawn(const char *dir, char *const *argv, const char *out, const char *env)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = out ? open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		signal(SIGINT, SIG_DFL);
		if ((dir && chdir(dir) < 0) || (env && putenv((char *)env)))
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

int cli_run(const char *dir, char *const *argv, const char *out, const char *env)
{
	int status;
	pid_t pid = cli_spawn(dir, argv, out, env);

	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- global options: before the command or among its options -------------------------- */

static const char *const color_modes[] = { "auto", "always", "never", NULL };
static struct {
	int verbose;
	const char *debug, *color;
	bool quiet;
} g = { .color = "auto" };

static const struct sonde_option globals[] = {
	{ SONDE_OPT_COUNT, 'v', "verbose", &g.verbose, NULL, "more messages (-vv: debug)" },
	{ SONDE_OPT_FLAG, 'q', "quiet", &g.quiet, NULL,
	  "errors only: no progress, no report, no warnings" },
	{ SONDE_OPT_STRING, 0, "debug", &g.debug, "DOMAINS",
	  "debug messages of domains (runner,store,... or all)" },
	{ SONDE_OPT_CHOICE, 0, "color", &g.color, "WHEN",
	  "colour verdicts and headings: auto (a terminal, no NO_COLOR), always, never", 0, 0,
	  color_modes },
	{ .type = SONDE_OPT_END },
};

const struct sonde_option *cli_global_options(void)
{
	return globals;
}

void cli_apply_globals(void)
{
	if (g.debug)
		sonde_log__enable_domains(g.debug);
	else if (g.verbose >= 2) /* -vv: every domain's debug messages */
		sonde_log__enable_domains("all");
	sonde_log__set_level(g.quiet			 ? SONDE_LOG_ERROR
			     : g.verbose >= 2 || g.debug ? SONDE_LOG_DEBUG
			     : g.verbose		 ? SONDE_LOG_INFO
							 : SONDE_LOG_WARN);
}

bool cli_quiet(void)
{
	return g.quiet;
}

bool cli_colored(FILE *f)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	int fd = cli_terminal_fd(f);

	if (!strcmp(g.color, "always"))
		return true;
	if (!strcmp(g.color, "never") || (nc && *nc) || (term && !strcmp(term, "dumb")))
		return false;
	return fd >= 0 && isatty(fd);
}

void cli_paint(FILE *f, const char *sgr)
{
	int fd = cli_terminal_fd(f);

	if (!*sgr || !cli_colored(f))
		return;
	if (fd < 0 || fd == fileno(f)) {
		fputs(sgr, f);
		return;
	}
	/* a guarded terminal stream: what came before goes through the guard, this past it */
	fflush(f);
	sonde_file__write_all(fd, sgr, strlen(sgr));
}

/*
 * One fprintf for the whole line: stderr is unbuffered, so each call is one
 * write, and the lines of sondes sharing a log file do not interleave.
 */
static void verror(const char *cmd, const char *fmt, va_list ap)
{
	char buf[1024], *msg = buf;
	va_list again;
	int len;

	/* on the stack first: the error may be that the heap is exhausted */
	va_copy(again, ap);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (len >= (int)sizeof(buf) && vasprintf(&msg, fmt, again) < 0)
		msg = buf; /* cut short, but said */
	va_end(again);
	fprintf(stderr, "sonde: %s%s%s\n", cmd ? cmd : "", cmd ? ": " : "",
		len < 0 ? "(an error that could not be formatted)" : msg);
	if (msg != buf)
		free(msg);
}

const char *cli_why(const struct sonde_strbuf *err, int rc)
{
	if (err && err->len && !sonde_strbuf__error(err))
		return err->buf;
	if (err && sonde_strbuf__error(err))
		return strerror(-sonde_strbuf__error(err));
	return rc < 0 ? strerror(-rc) : "failed, and no reason was given";
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cmd, fmt, ap);
	va_end(ap);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(cmd, fmt, ap);
	va_end(ap);
	fprintf(stderr, "try 'sonde %s --help'\n", cmd);
	return EXIT_USAGE;
}

int cli_exit_code(int err)
{
	switch (-err) {
	case 0:
		return EXIT_OK;
	case EPERM:
	case EACCES:
	case ENOTSUP:
	case ENOSYS:
		return EXIT_UNSUPPORTED;
	default:
		return EXIT_FAILURE_;
	}
}

/* The command's table, then the global options under their heading. */
static void with_globals(struct sonde_option table[3], const struct sonde_option *opts)
{
	table[0] = (struct sonde_option){ .type = SONDE_OPT_GROUP, .sub = opts };
	table[1] = (struct sonde_option){ .type = SONDE_OPT_GROUP,
					  .help = "global options",
					  .sub = globals };
	table[2] = (struct sonde_option){ .type = SONDE_OPT_END };
}

void cli_help(const char *usage, const struct sonde_option *opts)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	struct sonde_option table[3];

	with_globals(table, opts);
	sonde_options__help(table, &sb);
	printf("%s\n\noptions:\n%s", usage, sb.buf);
	sonde_strbuf__release(&sb);
}

struct cli_describe *cli_describing;

int cli_parse(const char *cmd, const char *usage, const struct sonde_option *opts, int argc,
	      char **argv, unsigned flags, json_t *params, int *code)
{
	struct sonde_optparse st = { .flags = flags, .params = params };
	struct sonde_option table[3];
	int first;
	size_t i;

	if (cli_describing) {
		/* `sonde help --man/--completion`: the table is wanted, not a run */
		cli_describing->fn(cli_describing, cmd, usage, opts);
		*code = EXIT_OK;
		return -1;
	}
	with_globals(table, opts);
	first = sonde_options__parse(table, argc, argv, &st);
	for (i = 0; params && globals[i].type != SONDE_OPT_END; i++)
		json_object_del(params, globals[i].long_name);
	cli_apply_globals();

	if (first == -ENOMEM || (first < 0 && sonde_strbuf__error(&st.err))) {
		cli_error(cmd, "%s", strerror(ENOMEM)); /* not the user's mistake */
		*code = EXIT_FAILURE_;
		sonde_optparse__release(&st);
		return -1;
	}
	if (first < 0) {
		*code = cli_usage(cmd, "%s", st.err.len ? st.err.buf : strerror(-first));
		sonde_optparse__release(&st);
		return -1;
	}
	if (st.help) {
		cli_help(usage, opts);
		*code = EXIT_OK;
		sonde_optparse__release(&st);
		return -1;
	}
	sonde_optparse__release(&st);
	return first;
}

/* "N@p" / "N@i": 1 and the number and kind when name has that form. */
static int indexed_name(const char *name, long *n, char *kind)
{
	char *end;

	if (!*name || *name < '0' || *name > '9')
		return 0;
	*n = strtol(name, &end, 10);
	if (end[0] != '@' || (end[1] != 'p' && end[1] != 'i') || end[2])
		return 0;
	*kind = end[1];
	return 1;
}

bool cli_is_store_name(const char *name)
{
	long n;
	char kind;

	return indexed_name(name, &n, &kind);
}

struct sonde_store *cli_open_store(const char *cmd)
{
	struct sonde_store *s = sonde_store__open(".");

	if (s)
		return s;
	if (errno == ENOENT)
		cli_error(cmd, "no .sonde store here or above (run 'sonde init')");
	else if (errno == EUCLEAN)
		cli_error(cmd, "the store's index (.sonde/index.db) is damaged: 'sonde fsck' "
			       "rebuilds it from the stored profiles");
	else if (errno == EACCES)
		cli_error(cmd, "cannot open the store's index (.sonde/index.db): permission "
			       "denied");
	else
		cli_error(cmd, "cannot open the store's index (.sonde/index.db): %s",
			  strerror(errno));
	return NULL;
}

char *cli_profile_path(const char *cmd, const char *name, long long *store_id)
{
	struct sonde_store_list l;
	struct sonde_store *s;
	char head[41], kind, *path = NULL;
	long n;
	int rc;

	if (store_id)
		*store_id = 0;
	if (!indexed_name(name, &n, &kind)) {
		path = strdup(name);
		if (!path)
			cli_error(cmd, "out of memory");
		return path;
	}
	s = cli_open_store(cmd);
	if (!s)
		return NULL;
	if (kind == 'p') {
		rc = sonde_store__pending(s, &l);
	} else if ((rc = sonde_git__resolve(sonde_store__worktree(s), "HEAD", head)) &&
		   rc != -ENOENT) {
		cli_error(cmd, "cannot ask git for HEAD: %s", strerror(-rc));
		sonde_store__free(s);
		return NULL;
	} else if (rc) {
		cli_error(cmd,
			  "'%s' names a profile of HEAD, but '%s' is not a git work tree "
			  "with commits",
			  name, sonde_store__worktree(s));
		sonde_store__free(s);
		return NULL;
	} else {
		rc = sonde_store__registered(s, head, &l);
	}
	if (rc) {
		cli_error(cmd, "cannot list the store: %s", strerror(-rc));
	} else if ((size_t)n >= l.n) {
		cli_error(cmd, "no profile '%s': there are %zu %s profile(s)", name, l.n,
			  kind == 'p' ? "pending" : "registered");
	} else {
		path = strdup(l.v[n].path);
		if (store_id)
			*store_id = l.v[n].id;
	}
	if (!rc)
		sonde_store_list__release(&l);
	sonde_store__free(s);
	return path;
}

struct sonde_profile *cli_load_profile(const char *cmd, const char *name, int *code)
{
	struct sonde_profile *p;
	int rc = cli_load_profiles(cmd, &name, 1, &p);

	if (rc != EXIT_OK)
		*code = rc;
	return p;
}

struct loading {
	char **paths;
	struct sonde_profile **out;
	struct sonde_strbuf *err;
	int *errnum;
};

static void load_one(void *ctx, size_t i)
{
	struct loading *l = ctx;

	l->out[i] = sonde_profile__load(l->paths[i], &l->err[i]);
	l->errnum[i] = l->out[i] ? 0 : errno;
}

int cli_load_profiles(const char *cmd, const char *const *names, size_t n,
		      struct sonde_profile **out)
{
	struct loading l = { .out = out };
	int code = EXIT_OK;
	size_t i;

	for (i = 0; i < n; i++) /* none, whatever fails below */
		out[i] = NULL;
	l.paths = calloc(n, sizeof(*l.paths));
	l.err = calloc(n, sizeof(*l.err));
	l.errnum = calloc(n, sizeof(*l.errnum));
	if (!l.paths || !l.err || !l.errnum) {
		cli_error(cmd, "out of memory");
		code = EXIT_FAILURE_;
		goto out;
	}
	for (i = 0; i < n; i++) {
		out[i] = NULL;
		l.err[i] = (struct sonde_strbuf)SONDE_STRBUF_INIT;
	}
	for (i = 0; i < n && code == EXIT_OK; i++) {
		l.paths[i] = cli_profile_path(cmd, names[i], NULL);
		if (!l.paths[i])
			code = EXIT_FAILURE_;
	}
	if (code != EXIT_OK)
		goto out;
	sonde_parallel__for(n, 1, load_one, &l);
	for (i = 0; i < n && code == EXIT_OK; i++) {
		if (!out[i]) {
			code = l.errnum[i] == ENOTSUP ? EXIT_UNSUPPORTED : EXIT_FAILURE_;
			if (l.err[i].len)
				cli_error(cmd, "%s", l.err[i].buf);
			else /* out of memory where no message could be made */
				cli_error(cmd, "cannot load '%s': %s", l.paths[i],
					  strerror(l.errnum[i] ? l.errnum[i] : ENOMEM));
		}
	}
out:
	for (i = 0; l.paths && i < n; i++)
		free(l.paths[i]);
	for (i = 0; l.err && i < n; i++)
		sonde_strbuf__release(&l.err[i]);
	free(l.paths);
	free(l.err);
	free(l.errnum);
	return code;
}

void cli_drop_profile(struct sonde_profile *p)
{
	static struct sonde_profile **kept;
	static size_t n, cap;

	if (p && n == cap) {
		size_t c = cap ? 2 * cap : 8;
		struct sonde_profile **k = realloc(kept, c * sizeof(*k));

		if (!k) {
			sonde_profile__free(p);
			return;
		}
		kept = k;
		cap = c;
	}
	if (p)
		kept[n++] = p;
}

const char *cli_nothing_because(const struct sonde_profile *p, const char *what, char *buf,
				size_t size)
{
	const char *type = sonde_profile__type(p);
	bool stacks = !strcmp(what, "stacks");

	if (!strcmp(type, "memory") || !strcmp(type, "trace"))
		snprintf(buf, size, "it has no %s (a %s profile of a run that %s)",
			 stacks ? "stack" : "event", type,
			 !strcmp(type, "memory") ? "recorded no allocation" : "recorded no call");
	else if (!stacks && !strcmp(type, "sched"))
		snprintf(buf, size,
			 "the sched profile was recorded without one (--no-timeline, or "
			 "the /proc source)");
	else if (!stacks && !strcmp(type, "counters"))
		snprintf(buf, size, "a counters profile has one when counted at intervals (-I)");
	else
		snprintf(buf, size, "a %s profile has no %s%s", type, what,
			 stacks ? " (flame graphs need a memory or trace profile)" : "");
	return buf;
}

void cli_print_warnings(const struct sonde_profile *p, FILE *out, bool notes)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;

	if (out == stderr && cli_quiet())
		return; /* -q: errors only (the profile keeps its warnings) */
	cli_emit(sonde_view__warnings(p, out == stderr ? "sonde: " : "", notes, &sb), &sb, out);
}

int cli_emit(int rc, struct sonde_strbuf *sb, FILE *out)
{
	if (!rc) /* a text cut short by memory is not printed as if whole */
		rc = sonde_strbuf__error(sb);
	if (!rc && sb->len && fwrite(sb->buf, 1, sb->len, out) != sb->len)
		rc = -EIO;
	sonde_strbuf__release(sb);
	return rc;
}

int cli_write_output(const char *path, const char *buf, size_t len)
{
	if (!path || !strcmp(path, "-"))
		return len && fwrite(buf, 1, len, stdout) != len ? -EIO : 0;
	return sonde_file__write_data(path, buf ? buf : "", len, 0, NULL);
}

/* ---- where a new profile goes --------------------------------------------------------- */

static void sanitize(struct sonde_strbuf *sb, const char *s)
{
	for (; *s; s++)
		sonde_strbuf__addch(sb, (*s == '/' || *s == ' ' || *s == '\t' || *s == '*' ||
					 *s == '?' || *s == ':')
						? '_'
						: *s);
}

char *cli_job_path(const char *argv0, const char *collector, char **values)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	struct sonde_store *s = sonde_store__open(".");
	char date[32], *a0 = strdup(argv0);
	time_t now = time(NULL);
	struct tm tm;
	size_t i;

	if (s)
		sonde_strbuf__addf(&sb, "%s/", sonde_store__jobs(s));
	sonde_store__free(s);
	sanitize(&sb, a0 ? basename(a0) : "cmd");
	free(a0);
	sonde_strbuf__addch(&sb, '-');
	sanitize(&sb, collector);
	if (values) {
		sonde_strbuf__addch(&sb, '-');
		for (i = 0; values[i] && i < 4; i++) {
			if (i)
				sonde_strbuf__addch(&sb, ',');
			sanitize(&sb, values[i]);
		}
		if (values[i])
			sonde_strbuf__adds(&sb, ",...");
	}
	localtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%d-%H-%M-%S", &tm);
	sonde_strbuf__addf(&sb, "-%s", date);
	{ /* a rank of a job: its job, rank and host */
		struct sonde_job j;

		if (sonde_job__detect(NULL, &j) > 0) {
			sonde_strbuf__adds(&sb, "-job");
			sanitize(&sb, j.id[0] ? j.id : j.launcher);
			sonde_strbuf__addf(&sb, "-rank%ld-", j.rank);
			sanitize(&sb, j.host);
		}
	}
	sonde_strbuf__adds(&sb, ".json");
	return sonde_strbuf__detach(&sb, NULL);
}

char *cli_rank_path(const char *path)
{
	if (!path || !strcmp(path, "-"))
		return path ? strdup(path) : NULL;
	return sonde_job__path(path);
}

int cli_write_new(const char *path, const char *buf, size_t len, char **used)
{
	return sonde_file__write_data(path, buf ? buf : "", len, SONDE_FILE_NEW, used);
}

static void config_warning(void *ctx, const char *key, bool perun)
{
	const char *cmd = ctx;

	if (perun)
		fprintf(stderr,
			"sonde: %s: warning: '%s' is a key of Perun's configuration that sonde "
			"does not read: it has no effect\n",
			cmd, key);
	else
		fprintf(stderr,
			"sonde: %s: warning: unknown configuration key '%s' (docs/config.md "
			"lists the keys): it has no effect\n",
			cmd, key);
}

void cli_config_warnings(const char *cmd, json_t *cfg)
{
	if (!cli_quiet())
		sonde_config__unread_keys(cfg, config_warning, (void *)cmd);
}

int cli_split_words(const char *s, char ***out, size_t *n)
{
	struct sonde_strbuf w = SONDE_STRBUF_INIT;
	char **v = NULL;
	size_t cap = 0;
	bool in_word = false;
	char q = 0;

	*out = NULL;
	*n = 0;
	for (;; s++) {
		char c = *s;

		if (!c || (!q && (c == ' ' || c == '\t' || c == '\n'))) {
			if (q) {
				errno = EINVAL; /* a quote left open */
				goto fail;
			}
			if (in_word) {
				if (*n + 2 > cap) {
					char **nv =
						realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*nv));

					if (!nv)
						goto fail;
					v = nv;
				}
				v[(*n)++] = sonde_strbuf__detach(&w, NULL);
				v[*n] = NULL;
				if (!v[*n - 1])
					goto fail;
				in_word = false;
			}
			if (!c)
				break;
			continue;
		}
		in_word = true;
		if (q == '\'') {
			if (c == '\'')
				q = 0;
			else if (sonde_strbuf__addch(&w, c))
				goto fail;
		} else if (c == '\\' && s[1] && (!q || strchr("\"\\$`", s[1]))) {
			if (sonde_strbuf__addch(&w, *++s))
				goto fail;
		} else if (c == '"') {
			q = q ? 0 : '"';
		} else if (c == '\'' && !q) {
			q = '\'';
		} else if (sonde_strbuf__addch(&w, c)) {
			goto fail;
		}
	}
	if (!v && !(v = calloc(1, sizeof(*v))))
		goto fail;
	*out = v;
	return 0;
fail:
	sonde_strbuf__release(&w);
	cli_free_words(v, *n);
	*n = 0;
	return errno == EINVAL ? -EINVAL : -ENOMEM;
}

void cli_free_words(char **v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* Whether s looks like a run id or its start: 6 to 32 lowercase hex digits. */
bool cli_is_run_id(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n >= 6 && n <= 32 && !s[n];
}

/* Add the profiles of dir whose run id starts with run. */
static int find_run_in(const char *dir, const char *run, struct sonde_profile ***v, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char key[64];

	if (!d)
		return 0;
	snprintf(key, sizeof(key), "\"%s", run);
	while ((e = readdir(d))) {
		char *path = NULL, *buf = NULL;
		struct sonde_profile *p;
		struct sonde_profile **nv;
		size_t len;
		const char *id;

		if (!sonde_profile__extension(e->d_name) ||
		    asprintf(&path, "%s/%s", dir, e->d_name) < 0)
			continue;
		/* a cheap look first: the id is in the text */
		if (sonde_file__read_data(path, &buf, &len) || !strstr(buf, key)) {
			free(buf);
			free(path);
			continue;
		}
		p = sonde_profile__parse(buf, len, path, NULL);
		free(buf);
		free(path);
		id = p ? json_string_value(json_object_get(sonde_profile__header(p), "run_id"))
		       : NULL;
		if (!id || strncmp(id, run, strlen(run))) {
			sonde_profile__free(p);
			continue;
		}
		nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv) {
			sonde_profile__free(p);
			closedir(d);
			return -ENOMEM;
		}
		*v = nv;
		(*v)[(*n)++] = p;
	}
	closedir(d);
	return 0;
}

int cli_load_run(const char *cmd, const char *run, struct sonde_profile ***v, size_t *n)
{
	struct sonde_store *st = sonde_store__open(".");
	size_t before = *n, k, j;
	const char *id = NULL;

	if (find_run_in(".", run, v, n) || (st && strcmp(sonde_store__jobs(st), ".") &&
					    find_run_in(sonde_store__jobs(st), run, v, n))) {
		sonde_store__free(st);
		cli_error(cmd, "out of memory");
		return EXIT_FAILURE_;
	}
	sonde_store__free(st);
	if (*n == before) {
		cli_error(cmd,
			  "no profile of run '%s' here (looked in the current directory and the "
			  "store's pending profiles)",
			  run);
		return EXIT_FAILURE_; /* as a profile that cannot be read */
	}
	/* a prefix must name one run; a profile found twice counts once */
	for (k = before; k < *n; k++) {
		const char *r = json_string_value(
			json_object_get(sonde_profile__header((*v)[k]), "run_id"));

		if (id && strcmp(id, r)) {
			cli_error(cmd,
				  "'%s' starts more than one run id (%s, %s): give more digits",
				  run, id, r);
			return EXIT_USAGE;
		}
		id = r;
	}
	for (k = before; k < *n; k++)
		for (j = k + 1; j < *n; j++)
			if (sonde_profile__header((*v)[k]) &&
			    json_equal(sonde_profile__root((*v)[k]),
				       sonde_profile__root((*v)[j]))) {
				sonde_profile__free((*v)[j]);
				(*v)[j--] = (*v)[--*n];
			}
	return EXIT_OK;
}

char *cli_which(const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	char *full = NULL;

	if (strchr(name, '/'))
		return access(name, X_OK) ? NULL : strdup(name);
	for (p = path ? path : "/usr/bin:/bin"; p && *p; p = *end ? end + 1 : end) {
		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		if (end == p ? asprintf(&full, "./%s", name) < 0 /* an empty entry: here */
			     : asprintf(&full, "%.*s/%s", (int)(end - p), p, name) < 0)
			return NULL;
		if (!access(full, X_OK))
			return full;
		free(full);
		full = NULL;
	}
	return NULL;
}

/*
 * session.c - one collection: collectors, the runner and the series (session.h).
 *
 * Invariants:
 *  - state only moves UNINITIALIZED -> IDLE -> COLLECTING -> IDLE -> FINALIZED;
 *  - the target's environment is built once in before() and never changes;
 *  - every collector's cleanup() runs exactly once, in sonde_session__free().
 */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "config.h"
#include "grow.h"
#include "json.h"
#include "perf-warm.h"
#include <sonde/clock.h>
#include <sonde/git.h>
#include <sonde/job.h>
#include <sonde/log.h>
#include <sonde/session.h>
#include <sonde/warning.h>
#include "registry.h"

extern char **environ;

struct sonde_collection {
	struct sonde_session *s;
	const struct sonde_collector *col;
	json_t *params;
	void *priv;
	struct sonde_profile *profile;
	unsigned long long dropped;
	json_t *notes;
	int stdout_fd;
	bool preloads;		     /* it added a runtime to the target's LD_PRELOAD */
	bool warmup;		     /* the run from start() to stop() is a warm-up */
	struct sonde_strbuf failure; /* set by sonde_collection__fail() */
};

struct sonde_session {
	struct sonde_session_opts o;
	enum sonde_session_state state;
	struct sonde_collection *cols;
	size_t ncols;
	char **env;	/* the target's environment, built in before() */
	json_t *setenv; /* name -> value, collected in before() */
	struct sonde_strbuf preload;
	char **argv;	  /* the target as run (a wrapper may come first) */
	char **wrap_argv; /* a collector's own command line for the target (owned) */
	bool barrier;
	unsigned long alloc_failures; /* sonde_json__alloc_failures() at new() */
	bool ran_once; /* a run was started: the next ones reset the collectors first */
	bool own_rss;  /* a collector reads the target's ru_maxrss */
	int stdout_fd;
	struct sonde_outcome out;
	uint64_t t0;
	uint64_t busy_ns;		/* time the target (and --prepare) ran */
	char run_id[33];		/* 128 random bits in hex: the profiles of one collection */
	struct sonde_git_origin origin; /* asked in before(), answered before the first run */
	struct sonde_perf_warm perf_warm; /* started in before() where a collector needs it */
	/* each measured run's parameter value, by run number - 1 (info.index) */
	const char **run_values;
	size_t nrun_values, run_values_cap;
};

/*
 * What the target forked and did not wait for gets this long (s) to finish
 * before it is killed, where a collector records children (uftrace waits for
 * every task it traces; a process group that outlives the target by more is
 * killed as before, and counted as left behind).
 */
#define LINGER_S 1.0

/* ---- the collection helpers ---------------------------------------------------------- */

json_t *sonde_collection__params(struct sonde_collection *c)
{
	return c->params;
}

const struct sonde_collector *sonde_collection__collector(struct sonde_collection *c)
{
	return c->col;
}

bool sonde_collection__attaching(struct sonde_collection *c)
{
	return c->s->o.attach_pid > 0;
}

void *sonde_collection__priv(struct sonde_collection *c)
{
	return c->priv;
}

void sonde_collection__set_priv(struct sonde_collection *c, void *priv)
{
	c->priv = priv;
}

char *const *sonde_collection__argv(struct sonde_collection *c)
{
	return c->s->o.argv;
}

uint64_t sonde_collection__t0_ns(struct sonde_collection *c)
{
	return c->s->t0;
}

bool sonde_collection__warmup(struct sonde_collection *c)
{
	return c->warmup;
}

int sonde_collection__setenv(struct sonde_collection *c, const char *name, const char *value)
{
	if (c->s->state != SONDE_SESSION_UNINITIALIZED || !name || strchr(name, '='))
		return -EINVAL;
	return json_object_set_new(c->s->setenv, name, json_string(value)) ? -ENOMEM : 0;
}

int sonde_collection__preload(struct sonde_collection *c, const char *path)
{
	struct sonde_strbuf *p = &c->s->preload;

	if (c->s->state != SONDE_SESSION_UNINITIALIZED)
		return -EINVAL;
	c->preloads = true;
	if (p->len && sonde_strbuf__addch(p, ':'))
		return -ENOMEM;
	return sonde_strbuf__adds(p, path);
}

int sonde_collection__set_stdout(struct sonde_collection *c, int fd)
{
	if (c->s->state != SONDE_SESSION_UNINITIALIZED)
		return -EINVAL;
	c->s->stdout_fd = fd;
	return 0;
}

static void free_strv(char **v);
static int tuple_columns(struct sonde_session *s, struct sonde_profile *p);
static int run_columns(struct sonde_session *s, struct sonde_collection *c,
		       struct sonde_profile *p);

int sonde_collection__wrap_argv(struct sonde_collection *c, char *const *argv)
{
	struct sonde_session *s = c->s;
	size_t n = 0, i;
	char **v;

	if (s->state != SONDE_SESSION_UNINITIALIZED || !argv || !argv[0] || s->wrap_argv)
		return -EINVAL;
	while (argv[n])
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v[i] = strdup(argv[i]);
		if (!v[i]) {
			free_strv(v);
			return -ENOMEM;
		}
	}
	s->wrap_argv = v;
	return 0;
}

void sonde_collection__dropped(struct sonde_collection *c, unsigned long long n)
{
	c->dropped += n;
}

void sonde_collection__note(struct sonde_collection *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(c->notes, json_string(msg));
	sonde_log(SONDE_LOG_WARN, c->col->name, "%s", msg);
}

void sonde_collection__fail(struct sonde_collection *c, const char *fmt, ...)
{
	va_list ap;

	sonde_strbuf__reset(&c->failure);
	va_start(ap, fmt);
	sonde_strbuf__vaddf(&c->failure, fmt, ap);
	va_end(ap);
}

double sonde_collection__param_double(struct sonde_collection *c, const char *name, double def)
{
	json_t *v = json_object_get(c->params, name);

	return json_is_number(v) ? json_number_value(v) : def;
}

bool sonde_collection__param_bool(struct sonde_collection *c, const char *name)
{
	return json_is_true(json_object_get(c->params, name));
}

long long sonde_collection__param_int(struct sonde_collection *c, const char *name, long long def)
{
	json_t *v = json_object_get(c->params, name);

	return json_is_integer(v) ? (long long)json_integer_value(v) : def;
}

const char *sonde_collection__param_str(struct sonde_collection *c, const char *name,
					const char *def)
{
	json_t *v = json_object_get(c->params, name);

	return json_is_string(v) ? json_string_value(v) : def;
}

/* ---- the session --------------------------------------------------------------------- */

/* 128 random bits as 32 hex digits (the clock and pid where getrandom cannot give them). */
static void make_run_id(char out[33])
{
	unsigned char b[16];
	size_t i;

	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
		uint64_t t = sonde_clock_ns(), p = (uint64_t)getpid();

		memcpy(b, &t, 8);
		memcpy(b + 8, &p, 8);
	}
	for (i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

const char *sonde_session__run_id(const struct sonde_session *s)
{
	return s->run_id;
}

struct sonde_session *sonde_session__new(const struct sonde_session_opts *opts)
{
	struct sonde_session *s;

	if (!opts || opts->sz < sizeof(*opts) || !opts->argv || !opts->argv[0]) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->o = *opts;
	s->alloc_failures = sonde_json__alloc_failures();
	if (!s->o.min_runs)
		s->o.min_runs = 10;
	if (!(s->o.min_time_s > 0))
		s->o.min_time_s = 3.0;
	s->setenv = json_object();
	s->stdout_fd = -1;
	sonde_strbuf__init(&s->preload);
	{ /* a rank of a distributed job: the id every rank of it shares */
		struct sonde_job j;

		if (sonde_job__detect(NULL, &j) >= 0 && j.run_id[0])
			memcpy(s->run_id, j.run_id, sizeof(s->run_id));
		else
			make_run_id(s->run_id);
	}
	if (!s->setenv) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

static void free_strv(char **v)
{
	char **p;

	for (p = v; p && *p; p++)
		free(*p);
	free(v);
}

void sonde_session__free(struct sonde_session *s)
{
	size_t i;

	if (!s)
		return;
	sonde_git__origin_finish(&s->origin); /* no git left behind */
	sonde_perf_warm__join(&s->perf_warm);
	for (i = 0; i < s->ncols; i++) {
		struct sonde_collection *c = &s->cols[i];

		if (c->col->cleanup)
			c->col->cleanup(c);
		json_decref(c->params);
		json_decref(c->notes);
		sonde_strbuf__release(&c->failure);
		sonde_profile__free(c->profile);
	}
	free(s->cols);
	free(s->run_values);
	free_strv(s->env);
	free(s->argv);
	free_strv(s->wrap_argv);
	json_decref(s->setenv);
	sonde_strbuf__release(&s->preload);
	free(s);
}

enum sonde_session_state sonde_session__state(const struct sonde_session *s)
{
	return s->state;
}

const struct sonde_outcome *sonde_session__outcome(const struct sonde_session *s)
{
	return &s->out;
}

size_t sonde_session__profile_count(const struct sonde_session *s)
{
	return s->ncols;
}

struct sonde_profile *sonde_session__profile(const struct sonde_session *s, size_t i)
{
	if (s->state != SONDE_SESSION_FINALIZED || i >= s->ncols)
		return NULL;
	return s->cols[i].profile;
}

struct sonde_profile *sonde_session__take_profile(struct sonde_session *s, size_t i)
{
	struct sonde_profile *p = sonde_session__profile(s, i);

	if (p)
		s->cols[i].profile = NULL;
	return p;
}

int sonde_session__add(struct sonde_session *s, const struct sonde_collector *col, json_t *params)
{
	struct sonde_collection *v;
	size_t i;

	if (s->state != SONDE_SESSION_UNINITIALIZED || !col) {
		json_decref(params);
		return -EINVAL;
	}
	/* A wrapping collector owns the target's command line and stdout: it runs alone. */
	for (i = 0; i < s->ncols; i++) {
		if ((s->cols[i].col->flags | col->flags) & SONDE_COLLECTOR_WRAPS_TARGET) {
			json_decref(params);
			return -EINVAL;
		}
	}
	v = realloc(s->cols, (s->ncols + 1) * sizeof(*v));
	if (!v) {
		json_decref(params);
		return -ENOMEM;
	}
	s->cols = v;
	v = &s->cols[s->ncols++];
	memset(v, 0, sizeof(*v));
	v->s = s;
	v->col = col;
	v->params = params ? params : json_object();
	v->notes = json_array();
	v->stdout_fd = -1;
	if (col->flags & SONDE_COLLECTOR_NEEDS_BARRIER)
		s->barrier = true;
	if (col->flags & SONDE_COLLECTOR_OWN_RSS)
		s->own_rss = true;
	return v->params && v->notes ? 0 : -ENOMEM;
}

/* environ with the collectors' variables and LD_PRELOAD additions applied. */
static int build_env(struct sonde_session *s)
{
	size_t n = 0, k = 0, i;
	const char *name;
	json_t *val;
	char **e;

	for (e = environ; e && *e; e++)
		n++;
	s->env = calloc(n + json_object_size(s->setenv) + 2, sizeof(*s->env));
	if (!s->env)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t len = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		char *key = strndup(environ[i], len);
		bool replaced = key && (json_object_get(s->setenv, key) ||
					(s->preload.len && !strcmp(key, "LD_PRELOAD")));

		free(key);
		if (replaced)
			continue;
		if (!(s->env[k++] = strdup(environ[i])))
			return -ENOMEM;
	}
	json_object_foreach(s->setenv, name, val)
	{
		if (asprintf(&s->env[k++], "%s=%s", name, json_string_value(val)) < 0) {
			s->env[--k] = NULL;
			return -ENOMEM;
		}
	}
	if (s->preload.len) {
		const char *old = getenv("LD_PRELOAD");

		if (asprintf(&s->env[k++], "LD_PRELOAD=%s%s%s", s->preload.buf,
			     old && *old ? ":" : "", old ? old : "") < 0) {
			s->env[--k] = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

int sonde_session__before(struct sonde_session *s, struct sonde_strbuf *err)
{
	char *path;
	size_t i, n = 0;
	int rc;

	if (s->state != SONDE_SESSION_UNINITIALIZED || s->ncols == 0) {
		sonde_strbuf__adds(err, s->ncols ? "session already prepared" : "no collector");
		return -EINVAL;
	}
	if (s->o.attach_pid > 0) { /* one run, watched: nothing to start or repeat */
		for (i = 0; i < s->ncols; i++)
			if (!(s->cols[i].col->flags & SONDE_COLLECTOR_ATTACHES)) {
				sonde_strbuf__addf(err,
						   "the %s collector cannot attach to a running "
						   "process (-p); collectors that can: sample",
						   s->cols[i].col->name);
				return -EINVAL;
			}
		if (kill(s->o.attach_pid, 0) < 0 && errno == ESRCH) {
			sonde_strbuf__addf(err, "no process %d", (int)s->o.attach_pid);
			return -ESRCH;
		}
		s->o.repeat = 1;
		s->o.warmup = 0;
		s->o.prepare = NULL;
		s->o.param_values = NULL;
	}
	/* Refuse a command that cannot run before anything else happens. */
	path = sonde_runner__resolve(s->o.argv[0]);
	if (!path) {
		rc = -errno;
		sonde_strbuf__addf(err, "cannot execute '%s': %s", s->o.argv[0],
				   rc == -ENOENT ? "command not found" : strerror(-rc));
		return rc;
	}
	free(path);
	if (s->o.input && access(s->o.input, R_OK) < 0) {
		rc = -errno;
		sonde_strbuf__addf(err, "cannot read the input file '%s': %s", s->o.input,
				   strerror(-rc));
		return rc == -EACCES ? -EPERM : rc == -ENOENT ? -ENODATA : rc;
	}
	/* the kernel's perf hooks, switched on beside all that follows */
	for (i = 0; i < s->ncols; i++)
		if (s->cols[i].col->flags & SONDE_COLLECTOR_PERF_TASK)
			sonde_perf_warm__start(&s->perf_warm);
	/* the origin commit, asked of git while the collectors prepare (a spawn
	   failing leaves the profiles without an origin, as outside a work tree) */
	sonde_git__origin_start(&s->origin, ".");
	for (i = 0; i < s->ncols; i++) {
		struct sonde_collection *c = &s->cols[i];

		rc = c->col->before ? c->col->before(c) : 0;
		if (rc) {
			if (c->failure.len)
				sonde_strbuf__addf(err, "%s", c->failure.buf);
			else
				sonde_strbuf__addf(err, "collector '%s' failed to prepare: %s",
						   c->col->name, strerror(-rc));
			return rc;
		}
		if (!s->o.repeat && (c->col->flags & SONDE_COLLECTOR_ONE_RUN))
			s->o.repeat = 1;
	}
	/* two runtimes in one target would each measure the other's work */
	for (i = 0; i < s->ncols; i++) {
		size_t j;

		for (j = i + 1; j < s->ncols && s->cols[i].preloads; j++)
			if (s->cols[j].preloads) {
				sonde_strbuf__addf(err,
						   "the %s and %s collectors cannot share a run: "
						   "each preloads its runtime into the target, and "
						   "each would measure the other's work; collect "
						   "them in separate runs",
						   s->cols[i].col->name, s->cols[j].col->name);
				return -EINVAL;
			}
	}
	rc = build_env(s);
	if (rc)
		return rc;
	if (s->wrap_argv) { /* a collector's own command line: borrowed from wrap_argv */
		while (s->wrap_argv[n])
			n++;
		s->argv = calloc(n + 1, sizeof(*s->argv));
		if (!s->argv)
			return -ENOMEM;
		memcpy(s->argv, s->wrap_argv, n * sizeof(*s->argv));
		s->state = SONDE_SESSION_IDLE;
		return 0;
	}
	while (s->o.argv[n])
		n++;
	s->argv = calloc(n + 2, sizeof(*s->argv));
	if (!s->argv)
		return -ENOMEM;
	for (i = 0; i < s->ncols; i++) {
		const char *w = s->cols[i].col->flags & SONDE_COLLECTOR_WRAPS_TARGET
					? sonde_collection__param_str(&s->cols[i], "exe", NULL)
					: NULL;
		if (w) {
			s->argv[0] = (char *)w;
			memcpy(s->argv + 1, s->o.argv, n * sizeof(*s->argv));
			break;
		}
	}
	if (!s->argv[0])
		memcpy(s->argv, s->o.argv, n * sizeof(*s->argv));
	s->state = SONDE_SESSION_IDLE;
	return 0;
}

/*
 * A string of n letters and digits, the same for the same n (a xorshift
 * generator seeded by n): Perun's string workloads, reproducible.
 */
static int string_of(struct sonde_strbuf *sb, const char *value)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz"
				       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char *end;
	long long n = strtoll(value, &end, 10);
	uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	long long i;

	if (end == value || *end || n < 0 || n > (1 << 24))
		return sonde_strbuf__adds(sb, value); /* not a length: the value itself */
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (sonde_strbuf__add(sb, &alphabet[x % (sizeof(alphabet) - 1)], 1))
			return -ENOMEM;
	}
	return 0;
}

/*
 * argv with every "{NAME}" replaced by value, and every "{NAME:string}" by a
 * string of value characters; strings are owned by the result. Several names
 * ("w,h") take the parts of a value "10:5" in order.
 */
static char **substitute(char *const *argv, const char *name, const char *value)
{
	const char *comma = name ? strchr(name, ',') : NULL;
	size_t n = 0, i;
	char **v, pat[128], spat[136];

	if (comma && value) { /* one name at a time, each with its part */
		const char *colon = strchr(value, ':');
		char *first = strndup(name, (size_t)(comma - name));
		char *part = strndup(value, colon ? (size_t)(colon - value) : strlen(value));
		char **once = first && part ? substitute(argv, first, part) : NULL;

		v = once ? substitute(once, comma + 1, colon ? colon + 1 : "") : NULL;
		free_strv(once);
		free(first);
		free(part);
		return v;
	}

	while (argv[n])
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return NULL;
	snprintf(pat, sizeof(pat), "{%s}", name ? name : "");
	snprintf(spat, sizeof(spat), "{%s:string}", name ? name : "");
	for (i = 0; i < n; i++) {
		struct sonde_strbuf sb = SONDE_STRBUF_INIT;
		const char *p = argv[i], *hit, *shit;

		while (name && ((hit = strstr(p, pat)) || strstr(p, spat))) {
			shit = strstr(p, spat);
			if (shit && (!hit || shit < hit)) {
				sonde_strbuf__add(&sb, p, (size_t)(shit - p));
				string_of(&sb, value);
				p = shit + strlen(spat);
				continue;
			}
			sonde_strbuf__add(&sb, p, (size_t)(hit - p));
			sonde_strbuf__adds(&sb, value);
			p = hit + strlen(pat);
		}
		sonde_strbuf__adds(&sb, p);
		v[i] = sonde_strbuf__detach(&sb, NULL);
		if (!v[i]) {
			free_strv(v);
			return NULL;
		}
	}
	return v;
}

/*
 * Start every collector on the new target: first those that must attach before
 * its exec (attaching can take tens of ms: BPF programs), then the others, so
 * that what these sample starts as close to the exec as it can.
 */
static int attach_all(pid_t pid, void *ctx)
{
	struct sonde_session *s = ctx;
	size_t i;
	int pass, rc;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < s->ncols; i++) {
			struct sonde_collection *c = &s->cols[i];
			bool early = c->col->flags & SONDE_COLLECTOR_NEEDS_BARRIER;

			if (early != (pass == 0))
				continue;
			rc = c->col->start ? c->col->start(c, pid) : 0;
			if (rc)
				return rc;
		}
	return 0;
}

/* The target exited, not reaped yet: collectors read its final counts. */
static void exited_all(pid_t pid, void *ctx)
{
	struct sonde_session *s = ctx;
	size_t i;

	for (i = 0; i < s->ncols; i++) {
		struct sonde_collection *c = &s->cols[i];

		if (c->col->abi >= 2 && c->col->exited)
			c->col->exited(c, pid);
	}
}

static bool run_failed(const struct sonde_run *r)
{
	return r->timed_out || !WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0;
}

static void progress(struct sonde_session *s, unsigned done, unsigned total, bool warmup,
		     const char *workload)
{
	struct sonde_progress pr = { 0 };

	if (!s->o.progress)
		return;
	pr.done = done;
	pr.total = total;
	pr.warmup = warmup;
	pr.workload = workload;
	pr.elapsed_ns = sonde_clock_ns() - s->t0;
	if (total && done)
		pr.eta_ns = (uint64_t)((double)pr.elapsed_ns / done * (total - done));
	s->o.progress(&pr, s->o.progress_ctx);
}

/* One workload (parameter value): warm-ups, then the measured runs. */
static int run_workload(struct sonde_session *s, const char *value, unsigned *done, unsigned *total,
			struct sonde_strbuf *err)
{
	struct sonde_runner_opts ro = { 0 }, po = { 0 };
	struct sonde_runner *r = NULL, *prep = NULL;
	char **argv = substitute(s->argv, s->o.param_name, value);
	char *prep_argv[] = { "/bin/sh", "-c", (char *)s->o.prepare, NULL };
	double size = 0;
	bool has_size = false;
	unsigned i, want, mine = 0;
	bool auto_count = s->o.repeat == 0;
	uint64_t sum_ns = 0;
	int rc = 0;

	if (!argv)
		return -ENOMEM;
	if (value) {
		char *end;

		size = strtod(value, &end);
		/* a tuple "10:5" of several names: its first part is the size */
		has_size =
			*value &&
			(!*end || (*end == ':' && s->o.param_name && strchr(s->o.param_name, ',')));
	}
	ro.sz = sizeof(ro);
	ro.argv = argv;
	ro.envp = s->env;
	ro.input = s->o.input;
	/* a run made once reads sonde's stdin, as under the peers (a pipe cannot
	   be read twice: a series reads /dev/null, or --input from its start) */
	ro.inherit_stdin = s->o.repeat == 1 && !s->o.warmup &&
			   (!s->o.param_values || !s->o.param_values[0] || !s->o.param_values[1]);
	ro.output = s->o.output;
	ro.capture_fd = s->o.capture_fd;
	ro.stdout_fd = s->stdout_fd;
	ro.timeout_s = s->o.timeout_s;
	for (i = 0; i < s->ncols; i++)
		if (s->cols[i].col->flags & SONDE_COLLECTOR_FOLLOWS_CHILDREN)
			ro.linger_s = LINGER_S;
	ro.barrier = s->barrier;
	ro.own_rss = s->own_rss;
	ro.attach = attach_all;
	ro.attach_ctx = s;
	ro.exited = exited_all;
	ro.exited_ctx = s;
	ro.attach_pid = s->o.attach_pid;
	ro.duration_s = s->o.duration_s;
	r = sonde_runner__new(&ro);
	if (!r) {
		rc = -errno;
		sonde_strbuf__addf(err, "cannot execute '%s': %s", argv[0], strerror(errno));
		goto out;
	}
	if (s->o.prepare) {
		po = ro;
		po.argv = prep_argv;
		po.envp = NULL;
		po.barrier = false;
		po.own_rss = false;
		po.attach = NULL;
		po.exited = NULL;
		po.stdout_fd = -1;
		po.inherit_stdin = false;
		prep = sonde_runner__new(&po);
		if (!prep) {
			rc = -errno;
			goto out;
		}
	}
	want = s->o.repeat;
	for (i = 0;; i++) {
		bool warm = i < s->o.warmup;
		struct sonde_run run;
		struct sonde_run_info info = { 0 };
		size_t k;

		if (!warm && want && mine >= want)
			break;
		if (sonde_runner__interrupted())
			break;
		if (prep) {
			rc = sonde_runner__run(prep, &run);
			if (!rc && run_failed(&run)) {
				sonde_strbuf__addf(err, "the --prepare command failed (status %d)",
						   WIFEXITED(run.status)
							   ? WEXITSTATUS(run.status)
							   : 128 + WTERMSIG(run.status));
				rc = -ECHILD;
			}
			if (rc || sonde_runner__interrupted())
				break;
		}
		progress(s, *done, *total, warm, value);
		/* every run after the first: collectors clear what the last one left */
		for (k = 0; s->ran_once && k < s->ncols && !rc; k++) {
			struct sonde_collection *c = &s->cols[k];

			if (c->col->abi >= 2 && c->col->reset && (rc = c->col->reset(c)))
				sonde_strbuf__addf(err, "%s",
						   c->failure.len ? c->failure.buf
								  : "a collector's reset failed");
		}
		if (rc)
			break;
		s->ran_once = true;
		for (k = 0; k < s->ncols; k++)
			s->cols[k].warmup = warm;
		if (!warm && !auto_count && want && mine + 1 >= want)
			sonde_runner__last(r);
		rc = sonde_runner__run(r, &run);
		if (rc) {
			/* a collector that could not attach says why */
			for (k = 0; k < s->ncols && !err->len; k++)
				if (s->cols[k].failure.len)
					sonde_strbuf__adds(err, s->cols[k].failure.buf);
			if (!err->len)
				sonde_strbuf__addf(err, "cannot run '%s': %s", argv[0],
						   strerror(-rc));
			break;
		}
		s->busy_ns += run.end_ns - run.start_ns;
		sonde_log(SONDE_LOG_DEBUG, "session", "%s %u%s%s: pid %d, %s %d, %.3f ms",
			  warm ? "warm-up" : "run", *done + 1, value ? " @" : "",
			  value ? value : "", (int)run.pid,
			  WIFSIGNALED(run.status) ? "signal" : "exit",
			  WIFSIGNALED(run.status) ? WTERMSIG(run.status) : WEXITSTATUS(run.status),
			  (double)(run.end_ns - run.start_ns) / 1e6);
		info.index = *done;
		info.warmup = warm;
		info.workload = value;
		info.size = size;
		info.has_size = has_size;
		info.t0_ns = s->t0;
		info.run = &run;
		info.interrupted = run.interrupted_by && WIFSIGNALED(run.status) &&
				   WTERMSIG(run.status) == run.interrupted_by;
		s->out.leftover += run.leftover;
		for (k = 0; k < s->ncols; k++) {
			struct sonde_collection *c = &s->cols[k];

			rc = c->col->stop ? c->col->stop(c, &info) : 0;
			if (rc) {
				if (c->failure.len)
					sonde_strbuf__addf(err, "%s", c->failure.buf);
				else
					sonde_strbuf__addf(err, "collector '%s' failed: %s",
							   c->col->name, strerror(-rc));
				goto out;
			}
		}
		if (info.interrupted)
			break; /* a run cut short by the user is not a measurement */
		if (warm)
			s->out.warmups++;
		else {
			/* the value's string lives as long as the session's options */
			if (sonde_grow((void **)&s->run_values, &s->run_values_cap,
				       s->nrun_values + 1, sizeof(*s->run_values))) {
				rc = -ENOMEM;
				goto out;
			}
			s->run_values[s->nrun_values++] = value;
			s->out.runs++;
			(*done)++;
			mine++;
		}
		if (run.timed_out)
			s->out.timed_out = true;
		if (run_failed(&run)) {
			if (!s->out.failed) {
				s->out.failure_status = run.status;
				s->out.failure_run = warm ? i + 1 : mine;
			}
			s->out.failed++;
			if (!s->o.ignore_failure) {
				s->out.stopped_on_failure = true;
				break;
			}
		}
		if (!warm && auto_count) {
			/*
			 * Automatic count: at least min_runs runs and min_time_s of measured
			 * time, re-estimated from the mean run so far (so a slow first run
			 * cannot end the series early).
			 */
			double mean;

			sum_ns += run.end_ns - run.start_ns;
			mean = (double)sum_ns / mine;
			want = mine;
			if ((double)sum_ns < s->o.min_time_s * 1e9 && mean > 0) {
				double more = ceil((s->o.min_time_s * 1e9 - (double)sum_ns) / mean);

				want = mine + (more > 1e7 ? 10000000u : (unsigned)more);
			}
			if (want < s->o.min_runs)
				want = s->o.min_runs;
			*total = *done - mine + want;
		}
		progress(s, *done, *total, false, value);
	}
out:
	sonde_runner__free(r);
	sonde_runner__free(prep);
	free_strv(argv);
	return rc;
}

int sonde_session__run(struct sonde_session *s, struct sonde_strbuf *err)
{
	static const char *const single[] = { NULL };
	const char *const *values = s->o.param_values ? s->o.param_values : single;
	unsigned done = 0, total = 0;
	size_t nvalues = 0, i;
	int rc = 0;

	if (s->state != SONDE_SESSION_IDLE || s->out.runs || s->out.warmups) {
		sonde_strbuf__adds(err, "the session is not ready to run");
		return -EINVAL;
	}
	while (s->o.param_values && values[nvalues])
		nvalues++;
	if (!nvalues)
		nvalues = 1;
	if (s->o.repeat)
		total = s->o.repeat * (unsigned)nvalues;
	/* git, asked in before(), is done before the target starts: never beside it */
	sonde_git__origin_finish(&s->origin);
	if (s->origin.commit[0])
		sonde_log(SONDE_LOG_INFO, "session", "measuring commit %.12s%s", s->origin.commit,
			  s->origin.dirty > 0 ? " (with uncommitted changes)" : "");
	else
		sonde_log(SONDE_LOG_INFO, "session", "not in a git work tree: no commit recorded");
	for (i = 0; i < s->ncols; i++)
		sonde_log(SONDE_LOG_INFO, "session", "collector %s", s->cols[i].col->name);
	s->state = SONDE_SESSION_COLLECTING;
	s->t0 = sonde_clock_ns();
	sonde_runner__clear_interrupt();
	for (i = 0; i < nvalues; i++) {
		rc = run_workload(s, values[i], &done, &total, err);
		if (rc || s->out.stopped_on_failure || sonde_runner__interrupted())
			break;
	}
	s->out.interrupted_by = sonde_runner__interrupted();
	s->out.duration_ns = sonde_clock_ns() - s->t0;
	s->out.own_ns = s->out.duration_ns > s->busy_ns ? s->out.duration_ns - s->busy_ns : 0;
	s->state = SONDE_SESSION_IDLE;
	sonde_log(SONDE_LOG_INFO, "session",
		  "%u runs and %u warm-ups in %.3f ms, %.3f ms of it sonde's own (between runs)",
		  s->out.runs, s->out.warmups, (double)s->out.duration_ns / 1e6,
		  (double)s->out.own_ns / 1e6);
	return rc;
}

/* ---- after: the profile ---------------------------------------------------------------- */

static json_t *exit_status_json(int status, bool any)
{
	if (!any)
		return json_null();
	if (WIFEXITED(status))
		return json_pack("{s:i, s:n, s:b}", "code", WEXITSTATUS(status), "signal",
				 "core_dumped", 0);
	return json_pack("{s:n, s:i, s:b}", "code", "signal", WTERMSIG(status), "core_dumped",
			 WCOREDUMP(status) ? 1 : 0);
}

static int common_warnings(struct sonde_session *s, struct sonde_collection *c,
			   struct sonde_profile *p, bool dirty)
{
	char msg[256];
	int rc = 0;

	if (s->out.timed_out) {
		snprintf(msg, sizeof(msg), "a run was killed after the %g s timeout",
			 s->o.timeout_s);
		rc |= sonde_profile__add_warning(p, "timed-out", msg,
						 sonde_warning__info(SONDE_WARN_TIMED_OUT)->fix);
	}
	if (s->out.interrupted_by) {
		snprintf(msg, sizeof(msg), "the series was interrupted by %s after %u runs",
			 strsignal(s->out.interrupted_by), s->out.runs);
		rc |= sonde_profile__add_warning(p, "interrupted", msg,
						 sonde_warning__info(SONDE_WARN_INTERRUPTED)->fix);
	}
	if (s->out.leftover) {
		snprintf(msg, sizeof(msg), "the command left %u process(es) behind",
			 s->out.leftover);
		rc |= sonde_profile__add_warning(p, "leftover-processes", msg,
						 sonde_warning__info(SONDE_WARN_LEFTOVER)->fix);
	}
	if (s->out.failed && s->o.ignore_failure) {
		snprintf(msg, sizeof(msg), "%u of %u runs failed", s->out.failed,
			 s->out.runs + s->out.warmups);
		rc |= sonde_profile__add_warning(p, "nonzero-exit", msg,
						 sonde_warning__info(SONDE_WARN_NONZERO_EXIT)->fix);
	}
	if (c->dropped) {
		snprintf(msg, sizeof(msg), "%llu events were dropped", c->dropped);
		rc |= sonde_profile__add_warning(
			p, "events-dropped", msg,
			sonde_warning__info(SONDE_WARN_EVENTS_DROPPED)->fix);
	}
	if (dirty)
		rc |= sonde_profile__add_warning(p, "dirty-tree",
						 "the work tree had uncommitted changes",
						 sonde_warning__info(SONDE_WARN_DIRTY_TREE)->fix);
	return rc;
}

static json_t *argv_json(char *const *argv)
{
	json_t *a = json_array();

	for (; a && *argv; argv++)
		if (json_array_append_new(a, json_string(*argv))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* The command as one line, each argument quoted when the shell would need it. */
static json_t *cmd_string(char *const *argv)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	json_t *j;

	for (; *argv; argv++) {
		const char *a = *argv;

		if (sb.len)
			sonde_strbuf__addch(&sb, ' ');
		sonde_strbuf__add_quoted(&sb, a);
	}
	j = sonde_strbuf__error(&sb) ? NULL : json_string(sb.buf);
	sonde_strbuf__release(&sb);
	return j;
}

static int fill_profile(struct sonde_session *s, struct sonde_collection *c,
			struct sonde_profile *p)
{
	json_t *h = sonde_profile__header(p), *units = json_object_get(h, "units");
	json_t *st = sonde_profile__stats(p), *md = sonde_profile__metadata(p);
	json_t *ci = sonde_profile__collector_info(p), *wl;
	const char *const *u;
	int rc = 0;
	size_t i;

	rc |= sonde_profile__set(h, "cmd", cmd_string(s->o.argv));
	rc |= sonde_profile__set(h, "args", argv_json(s->o.argv));
	if (s->o.param_values) {
		struct sonde_strbuf sb = SONDE_STRBUF_INIT;

		for (i = 0; s->o.param_values[i]; i++)
			sonde_strbuf__addf(&sb, "%s%s", i ? "," : "", s->o.param_values[i]);
		wl = sonde_strbuf__error(&sb) ? NULL : json_string(sb.buf);
		sonde_strbuf__release(&sb);
		rc |= sonde_profile__set(md, "parameter", json_string(s->o.param_name));
	} else {
		wl = json_string("");
	}
	rc |= sonde_profile__set(h, "workload", wl);
	rc |= sonde_profile__set(h, "run_id", json_string(s->run_id));
	if (s->ncols > 1) {
		json_t *names = json_array();

		for (i = 0; names && i < s->ncols; i++)
			if (json_array_append_new(names, json_string(s->cols[i].col->name))) {
				json_decref(names);
				names = NULL;
			}
		rc |= sonde_profile__set(md, "run_collectors", names);
	}
	for (u = c->col->units; u && u[0] && u[1]; u += 2)
		rc |= sonde_profile__set(units, u[0], json_string(u[1]));
	rc |= sonde_profile__set(ci, "name", json_string(c->col->name));
	rc |= sonde_profile__set(ci, "params", json_incref(c->params));
	sonde_git__origin_finish(&s->origin); /* done before the runs; here if none ran */
	rc |= sonde_profile__stamp_origin(p, &s->origin);
	rc |= sonde_profile__stamp_job(p);
	/* what the timestamps count from, on the clock stamped: for the ranks' timeline */
	rc |= sonde_profile__set(json_object_get(md, "clock"), "start_monotonic_ns",
				 json_integer((json_int_t)s->t0));
	rc |= sonde_profile__set(st, "runs", json_integer(s->out.runs));
	rc |= sonde_profile__set(st, "warmup_runs", json_integer(s->out.warmups));
	rc |= sonde_profile__set(st, "failed_runs", json_integer(s->out.failed));
	rc |= sonde_profile__set(st, "exit_status",
				 exit_status_json(s->out.failure_status,
						  s->out.failed || s->out.runs || s->out.warmups));
	rc |= sonde_profile__set(st, "timed_out", json_boolean(s->out.timed_out));
	rc |= sonde_profile__set(st, "interrupted", json_boolean(s->out.interrupted_by != 0));
	rc |= sonde_profile__set(st, "dropped_events", json_integer((json_int_t)c->dropped));
	rc |= sonde_profile__set(st, "leftover_processes", json_integer(s->out.leftover));
	rc |= sonde_profile__set(st, "duration_ns", json_integer((json_int_t)s->out.duration_ns));
	rc |= sonde_profile__set(st, "notes", json_incref(c->notes));
	/* Measured, not estimated: sonde's own time between and around the runs. */
	rc |= sonde_profile__set(
		st, "overhead",
		json_pack("{s:s, s:I, s:f}", "method", "measured", "sonde_ns",
			  (json_int_t)s->out.own_ns, "per_run_ns",
			  s->out.runs + s->out.warmups
				  ? (double)s->out.own_ns / (s->out.runs + s->out.warmups)
				  : 0.0));
	if (rc)
		return -ENOMEM;
	rc = c->col->after ? c->col->after(c, p) : 0;
	if (!rc)
		rc = tuple_columns(s, p);
	if (!rc)
		rc = run_columns(s, c, p);
	if (rc)
		return rc;
	return common_warnings(s, c, p, json_is_true(json_object_get(md, "dirty"))) ? -ENOMEM : 0;
}

/*
 * Several parameter names ("w,h", values "10:5"): each row of a resource of
 * one value gets a column per name, that part of the value (a number, or the
 * text), as Perun's external workloads give each resource their fields.
 */
static int tuple_columns(struct sonde_session *s, struct sonde_profile *p)
{
	const char *names = s->o.param_name;
	size_t i, n = sonde_profile__resource_count(p);

	if (!names || !strchr(names, ',') || !s->o.param_values)
		return 0;
	for (i = 0; i < n; i++) {
		json_t *fixed, *cols, *col;
		const char *w, *key, *np = names, *vp;
		size_t rows = 0;

		if (sonde_profile__resource_at(p, i, NULL, &fixed, &cols))
			return -ENOMEM;
		w = json_string_value(json_object_get(fixed, "workload"));
		if (!w || !json_is_object(cols))
			continue;
		json_object_foreach(cols, key, col) if (json_array_size(col) > rows) rows =
			json_array_size(col);
		for (vp = w; np && vp;) {
			const char *nc = strchr(np, ','), *vc = strchr(vp, ':');
			char *name = strndup(np, nc ? (size_t)(nc - np) : strlen(np));
			char *part = strndup(vp, vc ? (size_t)(vc - vp) : strlen(vp)), *end;
			double num = part ? strtod(part, &end) : 0;
			json_t *arr = json_array();
			size_t r;

			if (!name || !part || !arr) {
				free(name);
				free(part);
				json_decref(arr);
				return -ENOMEM;
			}
			for (r = 0; r < rows; r++)
				json_array_append_new(arr, *part && !*end ? json_real(num)
									  : json_string(part));
			if (!json_object_get(cols, name)) /* a collector's own column stays */
				json_object_set(cols, name, arr);
			json_decref(arr);
			free(name);
			free(part);
			np = nc ? nc + 1 : NULL;
			vp = vc ? vc + 1 : NULL;
		}
	}
	return 0;
}

/*
 * The rows of a collector whose resources are not one per parameter value
 * (counters, threads, the machine's figures) mix the values' runs; their
 * "order" is the measured run's number. Each row gets what the run was run
 * with: structure-unit-size (the value, or its first part, where a number) and
 * a column per parameter name (its part: a number, or the text), as the rows
 * of the time collector and Perun's have them.
 */
static int run_columns(struct sonde_session *s, struct sonde_collection *c, struct sonde_profile *p)
{
	const char *names = s->o.param_name;
	size_t i, n = sonde_profile__resource_count(p);
	double *order = NULL;
	size_t ocap = 0;
	int rc = 0;

	if (!(c->col->flags & SONDE_COLLECTOR_ORDER_IS_RUN) || !names || !s->o.param_values)
		return 0;
	for (i = 0; i < n && !rc; i++) {
		json_t *cols, *size = NULL;
		long rows = sonde_profile__numbers(p, i, "order", &order, &ocap), r;
		const char *np;

		if (rows == -ENOMEM)
			rc = -ENOMEM;
		if (rows <= 0 || sonde_profile__resource_at(p, i, NULL, NULL, &cols) ||
		    json_object_get(cols, "structure-unit-size"))
			continue;
		size = json_array();
		for (r = 0; size && r < rows; r++) {
			size_t k =
				isnan(order[r]) || order[r] < 1 ? SIZE_MAX : (size_t)order[r] - 1;
			const char *v = k < s->nrun_values ? s->run_values[k] : NULL;
			char *end;
			double num = v ? strtod(v, &end) : 0;

			json_array_append_new(size, v && *v && end != v && (!*end || *end == ':')
							    ? json_real(num)
							    : json_null());
		}
		if (!size || json_object_set_new(cols, "structure-unit-size", size)) {
			rc = -ENOMEM;
			break;
		}
		/* a column per name: the value's part at the name's place */
		for (np = names; np && !rc; np = strchr(np, ',') ? strchr(np, ',') + 1 : NULL) {
			size_t idx = 0, len = strcspn(np, ",");
			const char *q;
			char name[128];
			json_t *col;

			for (q = names; q < np; q++)
				idx += *q == ',';
			snprintf(name, sizeof(name), "%.*s", (int)len, np);
			if (!*name || json_object_get(cols, name))
				continue; /* a collector's own column stays */
			col = json_array();
			for (r = 0; col && r < rows; r++) {
				size_t k = isnan(order[r]) || order[r] < 1 ? SIZE_MAX
									   : (size_t)order[r] - 1;
				const char *v = k < s->nrun_values ? s->run_values[k] : NULL, *e;
				size_t j;
				char part[256], *end;
				double num;

				for (j = 0; v && j < idx; j++)
					v = strchr(v, ':') ? strchr(v, ':') + 1 : NULL;
				if (!v) {
					json_array_append_new(col, json_null());
					continue;
				}
				e = strchr(v, ':');
				snprintf(part, sizeof(part), "%.*s",
					 (int)(e ? (size_t)(e - v) : strlen(v)), v);
				num = strtod(part, &end);
				json_array_append_new(col, *part && !*end ? json_real(num)
									  : json_string(part));
			}
			if (!col || json_object_set_new(cols, name, col))
				rc = -ENOMEM;
		}
	}
	free(order);
	return rc;
}

/* Profiles of one run that complete each other (registry.h), each pair once. */
static int join_profiles(struct sonde_session *s)
{
	const struct sonde_join *j;
	size_t nj, k, i, w;
	int rc;

	j = sonde_collector__joins(&nj);
	for (k = 0; k < nj; k++)
		for (i = 0; i < s->ncols; i++) {
			if (strcmp(s->cols[i].col->profile_type, j[k].type))
				continue;
			for (w = 0; w < s->ncols; w++)
				if (!strcmp(s->cols[w].col->profile_type, j[k].with)) {
					rc = j[k].join(s->cols[i].profile, s->cols[w].profile);
					if (rc)
						return rc;
					break;
				}
		}
	return 0;
}

int sonde_session__after(struct sonde_session *s, struct sonde_strbuf *err)
{
	size_t i;
	int rc;

	if (s->state != SONDE_SESSION_IDLE) {
		sonde_strbuf__adds(err, "the session has not been prepared, or is finalized");
		return -EINVAL;
	}
	for (i = 0; i < s->ncols; i++) {
		struct sonde_collection *c = &s->cols[i];

		c->profile = sonde_profile__new(c->col->profile_type);
		if (!c->profile)
			return -ENOMEM;
		/* what the collectors kept during the runs (notes, records) is part of it */
		sonde_profile__trust_from(c->profile, s->alloc_failures);
		rc = fill_profile(s, c, c->profile);
		if (rc) {
			sonde_strbuf__addf(err, "collector '%s' could not write its profile: %s",
					   c->col->name, strerror(-rc));
			return rc;
		}
	}
	rc = join_profiles(s);
	if (rc) {
		sonde_strbuf__addf(err, "the power profile's regions could not be written: %s",
				   strerror(-rc));
		return rc;
	}
	s->state = SONDE_SESSION_FINALIZED;
	return 0;
}

/*
 * cmd-check.c - `sonde check BASELINE TARGET`: a verdict per resource, exit 4
 * when anything got worse. Each side is a profile (path, N@p, N@i) or a git
 * revision whose registered profiles are paired with the other side's by
 * collector, command, workload and type.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sonde/config.h>
#include <sonde/file.h>
#include "config.h"
#include "cli.h"

static const char usage[] =
	"usage: sonde check BASELINE TARGET [--method M] [--pair] [--strict] [--format text|json]\n"
	"       sonde check head [REV] [options]\n"
	"       sonde check all [REV] [options]\n"
	"\n"
	"Compare TARGET with BASELINE, resource by resource: no change, maybe,\n"
	"(severe) degradation, (severe) optimization, not in baseline, not in target,\n"
	"not enough data, each with the relative change, the 95% confidence interval\n"
	"of the ratio and a confidence. BASELINE and TARGET are profiles (a path, N@p,\n"
	"N@i) or git revisions with registered profiles (HEAD~1, a branch, a hash).\n"
	"'head' compares each profile registered for REV (HEAD) with the same\n"
	"collector's, command's and workload's profile of its nearest ancestor that\n"
	"has one; 'all' does so for every commit of REV's history that has profiles,\n"
	"and 'sonde log' then shows each commit's degradations.\n"
	"Exit status: 0 no degradation, 4 a degradation was found (or, with --strict,\n"
	"a result that could not be judged), 2 profiles of different collectors.\n"
	"Methods and thresholds: analysis.md in " SONDE_DOCDIR ".";

static const char *const formats[] = { "text", "json", NULL };

struct side {
	struct sonde_store_list l; /* registered profiles of a commit */
	char *single;		   /* or one profile path */
	char commit[41];
};

static bool is_profile_name(const char *s)
{
	return access(s, F_OK) == 0 || cli_is_store_name(s);
}

static const char *collector_name(const struct sonde_profile *p)
{
	const char *n =
		json_string_value(json_object_get(sonde_profile__collector_info(p), "name"));

	return n ? n : "?";
}

static int resolve(const char *name, struct side *s)
{
	struct sonde_store *st;
	int rc;

	memset(s, 0, sizeof(*s));
	if (is_profile_name(name)) {
		s->single = cli_profile_path("check", name, NULL);
		return s->single ? EXIT_OK : EXIT_FAILURE_;
	}
	st = sonde_store__open(".");
	if (!st && errno != ENOENT) { /* a store whose index does not open: say why */
		cli_open_store("check");
		return EXIT_FAILURE_;
	}
	if (!st) {
		cli_error("check",
			  "'%s' is not a profile, and there is no .sonde store here to "
			  "look it up as a commit",
			  name);
		return EXIT_FAILURE_;
	}
	if ((rc = sonde_git__resolve(sonde_store__worktree(st), name, s->commit))) {
		if (rc == -ENOENT)
			cli_error("check", "'%s' is neither a profile nor a git revision", name);
		else
			cli_error("check", "cannot ask git for '%s': %s", name, strerror(-rc));
		sonde_store__free(st);
		return EXIT_FAILURE_;
	}
	rc = sonde_store__registered(st, s->commit, &s->l);
	sonde_store__free(st);
	if (rc) {
		cli_error("check", "cannot list the store: %s", strerror(-rc));
		return EXIT_FAILURE_;
	}
	if (!s->l.n) {
		cli_error("check", "commit %.12s ('%s') has no registered profiles (sonde add)",
			  s->commit, name);
		sonde_store_list__release(&s->l);
		return EXIT_FAILURE_;
	}
	return EXIT_OK;
}

static bool eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static json_t *results_json(const struct sonde_check_result *r, size_t n)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; i < n; i++) {
		const struct sonde_check_result *x = &r[i];
		json_t *o = json_object(), *ci = json_array();

		json_object_set_new(o, "uid", json_string(x->uid ? x->uid : ""));
		json_object_set_new(o, "type", x->type ? json_string(x->type) : json_null());
		json_object_set_new(o, "subtype",
				    x->subtype ? json_string(x->subtype) : json_null());
		json_object_set_new(o, "workload",
				    x->workload ? json_string(x->workload) : json_null());
		json_object_set_new(o, "unit", x->unit ? json_string(x->unit) : json_null());
		json_object_set_new(o, "verdict", json_string(sonde_verdict_names[x->verdict]));
		json_object_set_new(o, "method", json_string(x->method ? x->method : "none"));
		json_object_set_new(o, "n_baseline", json_integer((json_int_t)x->n_baseline));
		json_object_set_new(o, "n_target", json_integer((json_int_t)x->n_target));
		json_object_set_new(o, "baseline", sonde_view__json_number(x->baseline));
		json_object_set_new(o, "target", sonde_view__json_number(x->target));
		json_object_set_new(o, "change", sonde_view__json_number(x->change));
		json_array_append_new(ci, sonde_view__json_number(x->ratio_low));
		json_array_append_new(ci, sonde_view__json_number(x->ratio_high));
		json_object_set_new(o, "ratio_ci95", ci);
		json_object_set_new(o, "confidence", sonde_view__json_number(x->confidence));
		json_object_set_new(o, "p_value", sonde_view__json_number(x->p));
		json_object_set_new(o, "effect_size", sonde_view__json_number(x->effect));
		json_object_set_new(o, "detail", x->detail ? json_string(x->detail) : json_null());
		json_array_append_new(arr, o);
	}
	return arr;
}

static void print_text(const struct sonde_check_result *r, size_t n)
{
	size_t i;

	printf("  %-32s %-20s %-19s %12s %12s %9s  %-18s %6s  %s\n", "uid", "metric", "verdict",
	       "baseline", "target", "change", "95% CI of ratio", "conf.", "method");
	for (i = 0; i < n; i++) {
		const struct sonde_check_result *x = &r[i];
		char b[40] = "-", t[40] = "-", ch[24] = "-", ci[48] = "-", cf[16] = "-", metric[80];

		if (!isnan(x->baseline))
			sonde_format__value(x->baseline, x->unit, b, sizeof(b));
		if (!isnan(x->target))
			sonde_format__value(x->target, x->unit, t, sizeof(t));
		if (!isnan(x->change))
			snprintf(ch, sizeof(ch), "%+.1f%%", 100 * x->change);
		if (!isnan(x->ratio_low))
			snprintf(ci, sizeof(ci), "[%.3f, %.3f]", x->ratio_low, x->ratio_high);
		if (!isnan(x->confidence))
			snprintf(cf, sizeof(cf), "%.1f%%", 100 * x->confidence);
		snprintf(metric, sizeof(metric), "%s%s%s", x->subtype ? x->subtype : "",
			 x->workload && *x->workload ? " @" : "",
			 x->workload && *x->workload ? x->workload : "");
		printf("  %*s %*s ", SONDE_COLS(x->uid, -32), SONDE_COLS(metric, -20));
		/* verdicts coloured: red a degradation, green an optimization, yellow maybe */
		cli_paint(stdout, sonde_verdict__is_degradation(x->verdict) ? CLI_RED
				  : x->verdict == SONDE_OPTIMIZATION ||
						  x->verdict == SONDE_SEVERE_OPTIMIZATION
					  ? CLI_GREEN
				  : x->verdict == SONDE_MAYBE || x->verdict == SONDE_NOT_ENOUGH_DATA
					  ? CLI_YELLOW
					  : "");
		printf("%-19s", sonde_verdict_names[x->verdict]);
		if (x->verdict != SONDE_NO_CHANGE && x->verdict != SONDE_NOT_IN_BASELINE &&
		    x->verdict != SONDE_NOT_IN_TARGET)
			cli_paint(stdout, CLI_RESET);
		printf(" %*s %*s %9s  %-18s %6s  %s%s%s\n", SONDE_COLS(b, 12), SONDE_COLS(t, 12),
		       ch, ci, cf, x->method ? x->method : "none", x->detail ? ": " : "",
		       x->detail ? x->detail : "");
	}
}

/* What to compare: baseline and target paths (heap), and the baseline's commit. */
struct pair {
	char *b, *t;
	char bcommit[41];
};
struct pairs {
	struct pair *v;
	size_t n, cap;
};
/* The pairs of one target commit (head, all), or of the two sides given. */
struct round {
	char commit[41];
	struct pairs ps;
};

static int add_pair(struct pairs *ps, const char *b, const char *t, const char *bcommit)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 8;
		struct pair *v = realloc(ps->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ps->v = v;
		ps->cap = cap;
	}
	ps->v[ps->n].b = strdup(b);
	ps->v[ps->n].t = strdup(t);
	snprintf(ps->v[ps->n].bcommit, sizeof(ps->v[ps->n].bcommit), "%s", bcommit ? bcommit : "");
	if (!ps->v[ps->n].b || !ps->v[ps->n].t)
		return -ENOMEM;
	ps->n++;
	return 0;
}

static void pairs_release(struct pairs *ps)
{
	size_t i;

	for (i = 0; i < ps->n; i++) {
		free(ps->v[i].b);
		free(ps->v[i].t);
	}
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

/* --pair: two command lines of one program meet (sonde_check__pair) */
static bool pairing;

static bool same_config(const struct sonde_store_entry *a, const struct sonde_store_entry *b)
{
	return eq(a->collector, b->collector) && (pairing || eq(a->cmd, b->cmd)) &&
	       eq(a->workload, b->workload) && eq(a->type, b->type);
}

/*
 * Each profile registered for commit, paired with the latest profile of the
 * same configuration of its nearest ancestor that has one (ancestry: commit
 * and its ancestors, nearest first). *lone counts those without, said on
 * stderr; with lone NULL nothing is said and the count is returned.
 */
static int history_pairs(struct sonde_store *st, const char *commit, char **ancestry, size_t nanc,
			 struct pairs *ps, size_t *lone)
{
	struct sonde_store_list t = { 0 }, a = { 0 };
	bool *found = NULL;
	size_t i, j, k, left;
	int rc = sonde_store__registered(st, commit, &t);

	if (rc)
		return rc;
	found = calloc(t.n + 1, sizeof(*found));
	if (!found) {
		sonde_store_list__release(&t);
		return -ENOMEM;
	}
	left = t.n;
	for (k = 0; k < nanc && left && !rc; k++) {
		if (!strcmp(ancestry[k], commit))
			continue;
		rc = sonde_store__registered(st, ancestry[k], &a);
		for (i = 0; !rc && i < t.n; i++) {
			if (found[i])
				continue;
			for (j = a.n; j-- > 0;)
				if (same_config(&a.v[j], &t.v[i]))
					break;
			if (j == (size_t)-1)
				continue;
			rc = add_pair(ps, a.v[j].path, t.v[i].path, ancestry[k]);
			found[i] = true;
			left--;
		}
		sonde_store_list__release(&a);
	}
	for (i = 0; !rc && lone && i < t.n; i++)
		if (!found[i]) {
			fprintf(stderr,
				"sonde: check: %s (%s, %s%s%s): no ancestor of %.12s has a profile "
				"of its collector, command and workload; not checked\n",
				t.v[i].path, t.v[i].collector ? t.v[i].collector : "?",
				t.v[i].cmd ? t.v[i].cmd : "?",
				t.v[i].workload && *t.v[i].workload ? " @" : "",
				t.v[i].workload ? t.v[i].workload : "", commit);
			(*lone)++;
		}
	if (!lone && !rc && left) /* quiet: how many have no pair */
		rc = (int)left;
	free(found);
	sonde_store_list__release(&t);
	return rc;
}

/* A commit's result for `sonde log`: .sonde/checks/COMMIT.json. */
static void record_result(struct sonde_store *st, const char *commit, size_t degradations,
			  size_t pairs)
{
	char path[4096];
	json_t *o = json_pack("{s:s, s:I, s:I, s:I}", "commit", commit, "degradations",
			      (json_int_t)degradations, "pairs", (json_int_t)pairs, "checked_at",
			      (json_int_t)time(NULL));
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	snprintf(path, sizeof(path), "%s/checks", sonde_store__root(st));
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/checks/%s.json", sonde_store__root(st), commit);
	if (text)
		sonde_file__write_atomic(path, text, strlen(text));
	free(text);
	json_decref(o);
}

/* BASELINE TARGET: profiles, or commits whose profiles pair by configuration. */
static int plain_pairs(const char *base, const char *target, struct pairs *ps)
{
	struct side sb, st;
	size_t i, j;
	int code;

	if ((code = resolve(base, &sb)) != EXIT_OK)
		return code;
	if ((code = resolve(target, &st)) != EXIT_OK) {
		free(sb.single);
		sonde_store_list__release(&sb.l);
		return code;
	}
	for (i = 0; i < (st.single ? 1 : st.l.n) && code == EXIT_OK; i++) {
		const struct sonde_store_entry *te = st.single ? NULL : &st.l.v[i], *be = NULL;
		const char *tpath = te ? te->path : st.single, *bpath = sb.single;

		if (!bpath) {
			/* the latest baseline profile of the same collector, command, workload,
			 * type */
			for (j = sb.l.n; j-- > 0 && !be;)
				if (!te || same_config(&sb.l.v[j], te))
					be = &sb.l.v[j];
			if (!be) {
				fprintf(stderr,
					"sonde: check: %s: no baseline profile of the same "
					"command and collector; skipped\n",
					tpath);
				continue;
			}
			bpath = be->path;
		}
		if (add_pair(ps, bpath, tpath, sb.single ? NULL : sb.commit)) {
			cli_error("check", "out of memory");
			code = EXIT_FAILURE_;
		}
	}
	free(sb.single);
	free(st.single);
	sonde_store_list__release(&sb.l);
	sonde_store_list__release(&st.l);
	return code;
}

/*
 * A profile made on the temporary worktree names its sources there; they are
 * the repository's own: the worktree's path becomes the repository's (as JSON
 * writes them), so that its resources meet the commit's.
 */
static int moved_home(const char *path, const char *wt, const char *top)
{
	json_t *a = json_string(wt), *b = json_string(top);
	char *from = a ? json_dumps(a, JSON_ENCODE_ANY) : NULL;
	char *to = b ? json_dumps(b, JSON_ENCODE_ANY) : NULL;
	struct sonde_strbuf out = SONDE_STRBUF_INIT;
	char *buf = NULL, *p, *hit;
	size_t len, nf;
	int rc = -ENOMEM;

	json_decref(a);
	json_decref(b);
	if (from && to && !(rc = sonde_file__read(path, &buf, &len))) {
		/* without the quotes: the path inside longer strings */
		from[strlen(from) - 1] = 0;
		to[strlen(to) - 1] = 0;
		nf = strlen(from + 1);
		for (p = buf; (hit = strstr(p, from + 1)); p = hit + nf) {
			sonde_strbuf__add(&out, p, (size_t)(hit - p));
			sonde_strbuf__adds(&out, to + 1);
		}
		sonde_strbuf__adds(&out, p);
		rc = sonde_file__write_atomic(path, out.buf, out.len);
	}
	free(buf);
	free(from);
	free(to);
	sonde_strbuf__release(&out);
	return rc;
}

/* The first parent of commit; -ENOENT for a root commit. */
static int parent_of(struct sonde_store *st, const char *commit, char out[41])
{
	char rev[64];

	snprintf(rev, sizeof(rev), "%s^", commit);
	return sonde_git__resolve(sonde_store__worktree(st), rev, out);
}

/* -c: collect the baselines that are missing, on a worktree of the parent. */
static bool collect_missing;

/*
 * The parent's profiles, as the configuration makes them: `sonde run matrix`
 * on a temporary worktree of the parent, then registered (`sonde add
 * --force`: their origin is the parent). Returns how many were registered.
 */
static int collect_baseline(struct sonde_store *st, const char *parent)
{
	char tmp[] = "/tmp/sonde-baseline-XXXXXX", wt[64], cfgpath[64], env[96], self[4096];
	const char *top = sonde_store__worktree(st);
	struct sonde_strbuf err = SONDE_STRBUF_INIT;
	json_t *cfg = NULL;
	int made = 0, rc;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	DIR *d;
	struct dirent *e;

	if (len <= 0 || !mkdtemp(tmp))
		return -1;
	self[len] = 0;
	snprintf(wt, sizeof(wt), "%s/tree", tmp);
	snprintf(cfgpath, sizeof(cfgpath), "%s/config.yaml", tmp);
	snprintf(env, sizeof(env), "SONDE_CONFIG=%s", cfgpath);
	if (!cli_quiet())
		fprintf(stderr,
			"sonde: check: collecting the baselines of %.12s (run matrix on a "
			"worktree of it)\n",
			parent);
	rc = sonde_config__load(SONDE_CONFIG_MERGED, top, &cfg, &err);
	sonde_strbuf__release(&err);
	if (!rc) { /* the store's configuration, run where there is no store */
		char wd[PATH_MAX + 16];

		sonde_config__set(cfg, "profiles.register_after_run", json_false());
		/* generated files where the repository's runs found them: the same
		   command lines, so that the baselines pair with its profiles */
		snprintf(wd, sizeof(wd), "%s/.sonde/workloads", top);
		sonde_config__set(cfg, "generators.workload_dir", json_string(wd));
		rc = sonde_config__write(cfgpath, cfg);
	}
	json_decref(cfg);
	{
		char *const add_wt[] = { "git",	     "-C",	(char *)top, "worktree",     "add",
					 "--detach", "--quiet", wt,	     (char *)parent, NULL };
		char *const matrix[] = { self, "run", "matrix", NULL };

		if (!rc && cli_run(top, add_wt, "/dev/null", NULL) == 0) {
			/* the .json files the commit has are its own, not profiles of this
			   run: only those the matrix adds are registered */
			struct sonde_strbuf had = SONDE_STRBUF_INIT;

			d = opendir(wt);
			while (d && (e = readdir(d)))
				if (strstr(e->d_name, ".json"))
					sonde_strbuf__addf(&had, "/%s/", e->d_name);
			if (d)
				closedir(d);
			rc = cli_run(wt, matrix, "/dev/null", env);
			if (rc)
				cli_error("check", "the baseline matrix on %.12s failed (exit %d)",
					  parent, rc);
			d = opendir(wt);
			while (d && (e = readdir(d))) {
				char path[512];
				char *const add[] = { self, "add", "--force", path, NULL };

				if (!strstr(e->d_name, ".json"))
					continue;
				snprintf(path, sizeof(path), "/%s/", e->d_name);
				if (had.buf && strstr(had.buf, path))
					continue;
				snprintf(path, sizeof(path), "%s/%s", wt, e->d_name);
				if (moved_home(path, wt, top) == 0 &&
				    cli_run(top, add, "/dev/null", NULL) == 0)
					made++;
			}
			if (d)
				closedir(d);
			sonde_strbuf__release(&had);
		}
	}
	{
		char *const rm_wt[] = { "git",	  "-C",	     (char *)top, "worktree",
					"remove", "--force", wt,	  NULL };
		char *const rm[] = { "rm", "-rf", tmp, NULL };

		cli_run("/", rm_wt, "/dev/null", NULL);
		cli_run("/", rm, "/dev/null", NULL);
	}
	return made;
}

/* The commits to check (head: REV; all: REV's history with profiles), and their pairs. */
static int history_rounds(const char *mode, const char *rev, struct round **out, size_t *nout,
			  size_t *lone)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	struct sonde_store *st = cli_open_store("check");
	char commit[41], parent[41], **anc = NULL, *line, *save;
	size_t nanc = 0, cap = 0, k;
	int code = EXIT_OK, rc;

	*out = NULL;
	*nout = 0;
	if (!st)
		return EXIT_FAILURE_;
	rc = sonde_git__resolve(sonde_store__worktree(st), rev, commit);
	if (!rc)
		rc = sonde_git__ancestry(sonde_store__worktree(st), commit, 100000, &sb);
	if (rc) {
		if (rc == -ENOENT)
			cli_error("check", "'%s' is not a commit of '%s'", rev,
				  sonde_store__worktree(st));
		else
			cli_error("check", "cannot ask git for the history of '%s': %s", rev,
				  strerror(-rc));
		sonde_strbuf__release(&sb);
		sonde_store__free(st);
		return EXIT_FAILURE_;
	}
	for (line = strtok_r(sb.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (nanc == cap) {
			char **n = realloc(anc, (cap = cap ? cap * 2 : 64) * sizeof(*n));

			if (!n) { /* a history cut short would check the wrong pairs */
				cli_error("check", "out of memory");
				free(anc);
				sonde_strbuf__release(&sb);
				sonde_store__free(st);
				return EXIT_FAILURE_;
			}
			anc = n;
		}
		anc[nanc++] = line;
	}
	/* head: the one commit; all: each commit of the history that has profiles */
	for (k = 0; k < nanc && code == EXIT_OK; k++) {
		struct round *r;

		if (!strcmp(mode, "head") && k)
			break;
		if (strcmp(mode, "head")) {
			long c = sonde_store__count(st, anc[k]);

			if (c < 0) {
				cli_error("check", "cannot read the store: %s", strerror((int)-c));
				code = EXIT_FAILURE_;
				break;
			}
			if (!c)
				continue;
		}
		r = realloc(*out, (*nout + 1) * sizeof(**out));
		if (!r) {
			cli_error("check", "out of memory");
			code = EXIT_FAILURE_;
			break;
		}
		*out = r;
		memset(&r[*nout], 0, sizeof(r[*nout]));
		snprintf(r[*nout].commit, sizeof(r[*nout].commit), "%s", anc[k]);
		if (collect_missing) { /* the parent lacks some of the commit's baselines */
			struct pairs scratch = { 0 };
			char *near[2] = { anc[k], parent };

			if (parent_of(st, anc[k], parent) == 0 &&
			    history_pairs(st, anc[k], near, 2, &scratch, NULL) > 0 &&
			    collect_baseline(st, parent) <= 0)
				cli_error("check", "no baseline could be collected on %.12s",
					  parent);
			pairs_release(&scratch);
		}
		if (k == 0) {
			rc = history_pairs(st, anc[k], anc, nanc, &r[*nout].ps, lone);
		} else {
			/* in a history with merges, the commits listed after this one are
			   not all its ancestors (a side branch's): its own ancestry */
			struct sonde_strbuf own = SONDE_STRBUF_INIT;
			char **v = NULL, *l, *sv;
			size_t nv = 0, cv = 0;

			rc = sonde_git__ancestry(sonde_store__worktree(st), anc[k], 100000, &own);
			for (l = rc ? NULL : strtok_r(own.buf, "\n", &sv); l;
			     l = strtok_r(NULL, "\n", &sv)) {
				if (nv == cv) {
					char **nw =
						realloc(v, (cv = cv ? cv * 2 : 64) * sizeof(*nw));

					if (!nw) {
						rc = -ENOMEM;
						break;
					}
					v = nw;
				}
				v[nv++] = l;
			}
			if (!rc)
				rc = history_pairs(st, anc[k], v, nv, &r[*nout].ps, lone);
			free(v);
			sonde_strbuf__release(&own);
		}
		(*nout)++;
		if (rc) {
			cli_error("check", "cannot read the store: %s", strerror(-rc));
			code = EXIT_FAILURE_;
		}
	}
	if (code == EXIT_OK && !strcmp(mode, "head") && sonde_store__count(st, commit) <= 0) {
		cli_error("check", "commit %.12s ('%s') has no registered profiles (sonde add)",
			  commit, rev);
		code = EXIT_FAILURE_;
	}
	free(anc);
	sonde_strbuf__release(&sb);
	sonde_store__free(st);
	return code;
}

/* Compare one pair: its table (text) or its entry (json); the counts. */
static int compare_with(const struct pair *pr, const struct sonde_profile *pb,
			const struct sonde_profile *pt, const struct sonde_check_options *base,
			enum sonde_check_method m, bool say_method, const char *format,
			json_t *pairs, size_t *degradations, size_t *unjudged, size_t shown);

/* degradation.strategies of the configuration: which methods judge which profiles. */
struct strategy {
	const char *type, *collector, *cmd; /* NULL: any */
	enum sonde_check_method m;
};
static struct strategy strategies[64];
static size_t nstrategies;
static bool apply_all;

/* A method by sonde's name or Perun's; -1 for one sonde does not have. */
static int method_named(const char *name)
{
	static const struct {
		const char *perun;
		enum sonde_check_method m;
	} alias[] = { { "average_amount_threshold", SONDE_CHECK_AVERAGE_AMOUNT },
		      { "best_model_order_equality", SONDE_CHECK_BEST_MODEL_ORDER },
		      { "integral_comparison", SONDE_CHECK_INTEGRAL },
		      { "linear_regression", SONDE_CHECK_LINEAR_REGRESSION },
		      { "polynomial_regression", SONDE_CHECK_POLYNOMIAL_REGRESSION },
		      { "local_statistics", SONDE_CHECK_LOCAL_STATISTICS },
		      { "exclusive_time_outliers", SONDE_CHECK_EXCLUSIVE_TIME_OUTLIERS },
		      { "fast_check", SONDE_CHECK_FAST_CHECK },
		      { "fast", SONDE_CHECK_FAST_CHECK },
		      { "bmoe", SONDE_CHECK_BEST_MODEL_ORDER },
		      { "aat", SONDE_CHECK_AVERAGE_AMOUNT },
		      { "int", SONDE_CHECK_INTEGRAL },
		      { "lreg", SONDE_CHECK_LINEAR_REGRESSION },
		      { "preg", SONDE_CHECK_POLYNOMIAL_REGRESSION },
		      { "loc", SONDE_CHECK_LOCAL_STATISTICS },
		      { "eto", SONDE_CHECK_EXCLUSIVE_TIME_OUTLIERS } };
	size_t i;

	for (i = 0; sonde_check_methods[i]; i++)
		if (!strcmp(sonde_check_methods[i], name))
			return (int)i;
	for (i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (!strcmp(alias[i].perun, name))
			return (int)alias[i].m;
	return -1;
}

/* Read degradation.strategies and degradation.apply; EXIT_USAGE after one line. */
static int load_strategies(json_t *cfg)
{
	json_t *list = sonde_config__get(cfg, "degradation.strategies"), *x;
	const char *apply = json_string_value(sonde_config__get(cfg, "degradation.apply"));
	size_t i;

	nstrategies = 0;
	if (apply && strcmp(apply, "first") && strcmp(apply, "all"))
		return cli_usage("check", "degradation.apply: first or all, not '%s'", apply);
	apply_all = apply && !strcmp(apply, "all");
	json_array_foreach(list, i, x)
	{
		const char *m = json_string_value(json_object_get(x, "method"));
		int k = m ? method_named(m) : -1;

		if (k < 0)
			return cli_usage("check",
					 "degradation.strategies: method '%s' is not one sonde has "
					 "(see 'sonde check --help', or Perun's names: "
					 "average_amount_threshold, best_model_order_equality, "
					 "integral_comparison, linear_regression, "
					 "polynomial_regression, local_statistics, "
					 "exclusive_time_outliers, fast_check, or aat, bmoe, int, "
					 "lreg, preg, loc, eto, fast)",
					 m ? m : "(none)");
		if (nstrategies == sizeof(strategies) / sizeof(strategies[0]))
			break;
		strategies[nstrategies++] =
			(struct strategy){ json_string_value(json_object_get(x, "type")),
					   json_string_value(json_object_get(x, "collector")),
					   json_string_value(json_object_get(x, "cmd")),
					   (enum sonde_check_method)k };
	}
	return EXIT_OK;
}

/* The methods that judge a pair: the strategies that match the baseline, else def. */
static size_t methods_for(const struct sonde_profile *p, enum sonde_check_method def,
			  enum sonde_check_method *out)
{
	const char *type = sonde_profile__type(p), *col = collector_name(p);
	const char *cmd = json_string_value(json_object_get(sonde_profile__header(p), "cmd"));
	size_t i, n = 0;

	for (i = 0; i < nstrategies && (apply_all || !n); i++) {
		const struct strategy *st = &strategies[i];

		if ((st->type && (!type || strcmp(st->type, type))) ||
		    (st->collector && strcmp(st->collector, col)) ||
		    (st->cmd && (!cmd || strcmp(st->cmd, cmd))))
			continue;
		out[n++] = st->m;
	}
	if (!n)
		out[n++] = def;
	return n;
}

static int compare_pair(const struct pair *pr, const struct sonde_check_options *o,
			const char *format, json_t *pairs, size_t *degradations, size_t *unjudged,
			size_t shown)
{
	enum sonde_check_method ms[64];
	struct sonde_profile *pb, *pt;
	int code = EXIT_OK;
	size_t nm, k;

	pb = cli_load_profile("check", pr->b, &code);
	pt = pb ? cli_load_profile("check", pr->t, &code) : NULL;
	if (!pt) {
		sonde_profile__free(pb);
		return code;
	}
	if (pairing)
		sonde_check__pair(pb, pt);
	nm = methods_for(pb, o->method, ms);
	for (k = 0; k < nm && code == EXIT_OK; k++)
		code = compare_with(pr, pb, pt, o, ms[k], nm > 1, format, pairs, degradations,
				    unjudged, shown + k);
	sonde_profile__free(pb);
	sonde_profile__free(pt);
	return code;
}

/* One method's verdicts on a pair: its table (text) or entry (json); the counts. */
static int compare_with(const struct pair *pr, const struct sonde_profile *pb,
			const struct sonde_profile *pt, const struct sonde_check_options *base,
			enum sonde_check_method m, bool say_method, const char *format,
			json_t *pairs, size_t *degradations, size_t *unjudged, size_t shown)
{
	struct sonde_check_options o = *base;
	struct sonde_check_result *r;
	int code = EXIT_OK, rc;
	size_t n, j;

	o.method = m;
	rc = sonde_check__compare(pb, pt, &o, &r, &n);
	if (rc == -EXDEV) {
		cli_error("check", "cannot compare '%s' (a %s profile) with '%s' (a %s profile)",
			  pr->b, collector_name(pb), pr->t, collector_name(pt));
		code = EXIT_USAGE;
	} else if (rc) {
		cli_error("check", "out of memory");
		code = EXIT_FAILURE_;
	} else {
		json_t *pair = json_object();

		for (j = 0; j < n; j++) {
			*degradations += sonde_verdict__is_degradation(r[j].verdict);
			*unjudged += r[j].verdict == SONDE_NOT_ENOUGH_DATA;
		}
		if (!strcmp(format, "text")) {
			printf("%sbaseline: %s", shown ? "\n" : "", pr->b);
			if (pr->bcommit[0])
				printf(" (commit %.12s)", pr->bcommit);
			printf("\ntarget:   %s\n", pr->t);
			if (say_method)
				printf("method:   %s (degradation.apply: all)\n",
				       sonde_check_methods[m]);
			print_text(r, n);
		}
		json_object_set_new(pair, "baseline", json_string(pr->b));
		if (pr->bcommit[0])
			json_object_set_new(pair, "baseline_commit", json_string(pr->bcommit));
		json_object_set_new(pair, "target", json_string(pr->t));
		json_object_set_new(pair, "method", json_string(sonde_check_methods[m]));
		json_object_set_new(pair, "results", results_json(r, n));
		json_array_append_new(pairs, pair);
		sonde_check__free(r, n);
	}
	return code;
}

int cmd_check(int argc, char **argv)
{
	const char *method = NULL, *format = "text";
	double alpha = 0.05, threshold = 0.05, severe = 0.25, cutoff = -1;
	bool strict = false;
	struct sonde_option opts[] = {
		{ SONDE_OPT_CHOICE, 'm', "method", &method, NULL,
		  "auto (a test where both sides have samples, else models, else averages), "
		  "welch, mann-whitney, average-amount, best-model-order, integral, "
		  "linear-regression, polynomial-regression, local-statistics, "
		  "exclusive-time-outliers, fast-check (default: the configuration's "
		  "degradation.strategies, else auto)",
		  0, 0, sonde_check_methods },
		{ SONDE_OPT_DOUBLE, 0, "cutoff", &cutoff, "PCT",
		  "exclusive-time-outliers: changes under PCT % of the target's exclusive time "
		  "are no change (default: degradation.cutoff, else 0)",
		  0, 100 },
		{ SONDE_OPT_DOUBLE, 0, "threshold", &threshold, "X",
		  "smallest relative change that counts (0.05)", 1e-9, 1e9 },
		{ SONDE_OPT_DOUBLE, 0, "severe", &severe, "X",
		  "relative change that is severe (0.25)", 1e-9, 1e9 },
		{ SONDE_OPT_DOUBLE, 0, "alpha", &alpha, "P",
		  "significance level of the tests (0.05)", 1e-12, 0.5 },
		{ SONDE_OPT_CHOICE, 'f', "format", &format, NULL, "text or json", 0, 0, formats },
		{ SONDE_OPT_FLAG, 'c', "collect", &collect_missing, NULL,
		  "head, all: when the parent lacks a profile's baseline, collect it first "
		  "(sonde run matrix on a temporary worktree of the parent, registered)" },
		{ SONDE_OPT_FLAG, 0, "pair", &pairing, NULL,
		  "compare two command lines of one program (two configurations): the "
		  "resources named by the command meet, and commits' profiles pair "
		  "whatever their command" },
		{ SONDE_OPT_FLAG, 0, "strict", &strict, NULL,
		  "fail (exit 4) when a resource cannot be judged (not enough data), as on a "
		  "degradation" },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_check_options o;
	struct round *rounds = NULL;
	json_t *doc = json_object(), *pairs = json_array();
	size_t degradations = 0, unjudged = 0, i, k, npairs = 0, nrounds = 0, lone = 0;
	bool history;
	json_t *cfg_keep = NULL;
	int first, code = EXIT_OK;

	first = cli_parse("check", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		goto done;
	argv += 1 + first;
	argc -= 1 + first;
	history = argc >= 1 && argc <= 2 && (!strcmp(argv[0], "head") || !strcmp(argv[0], "all"));
	if (!history && argc != 2) {
		code = cli_usage("check", argc < 2 ? "give a baseline and a target, or head or all"
						   : "too many arguments");
		goto done;
	}
	if (severe < threshold) {
		code = cli_usage("check", "--severe (%g) is below --threshold (%g)", severe,
				 threshold);
		goto done;
	}
	/* --method decides alone; without it, the configuration's strategies, else auto */
	nstrategies = 0;
	{
		struct sonde_strbuf err = SONDE_STRBUF_INIT;
		json_t *cfg = NULL, *c;

		if (sonde_config__load(SONDE_CONFIG_MERGED, ".", &cfg, &err)) {
			cli_error("check", "%s", cli_why(&err, 0));
			code = EXIT_USAGE;
		} else if (cli_config_warnings("check", cfg), !method) {
			code = load_strategies(cfg);
		}
		sonde_strbuf__release(&err);
		c = sonde_config__get(cfg, "degradation.cutoff");
		if (code == EXIT_OK && cutoff < 0 && c) {
			cutoff = json_is_number(c) ? json_number_value(c) : -1;
			if (!(cutoff >= 0 && cutoff <= 100))
				code = cli_usage("check",
						 "degradation.cutoff: a share of the target's "
						 "exclusive time from 0 to 100 (%%), not '%s'",
						 json_is_string(c) ? json_string_value(c) : "that");
		}
		if (code != EXIT_OK) {
			json_decref(cfg);
			goto done;
		}
		cfg_keep = cfg; /* the strategies borrow its strings */
	}
	for (i = 0; method && sonde_check_methods[i] && strcmp(sonde_check_methods[i], method); i++)
		;
	o = (struct sonde_check_options){ method ? (enum sonde_check_method)i : SONDE_CHECK_AUTO,
					  alpha, threshold, severe, cutoff > 0 ? cutoff : 0 };
	if (history) {
		code = history_rounds(argv[0], argc == 2 ? argv[1] : "HEAD", &rounds, &nrounds,
				      &lone);
	} else {
		rounds = calloc(1, sizeof(*rounds));
		nrounds = rounds ? 1 : 0;
		code = rounds ? plain_pairs(argv[0], argv[1], &rounds[0].ps) : EXIT_FAILURE_;
	}
	for (k = 0; k < nrounds && code == EXIT_OK; k++) {
		size_t before = degradations, np = 0;

		if (history && !strcmp(format, "text"))
			printf("%scommit %.12s\n", k ? "\n" : "", rounds[k].commit);
		for (i = 0; i < rounds[k].ps.n && code == EXIT_OK; i++) {
			const struct pair *pr = &rounds[k].ps.v[i];

			code = compare_pair(pr, &o, format, pairs, &degradations, &unjudged,
					    npairs + np);
			np++;
		}
		npairs += np;
		if (history && code == EXIT_OK) {
			struct sonde_store *st = sonde_store__open(".");

			if (st)
				record_result(st, rounds[k].commit, degradations - before, np);
			sonde_store__free(st);
			if (!strcmp(format, "text"))
				printf("commit %.12s: %zu degradation%s in %zu pair%s\n",
				       rounds[k].commit, degradations - before,
				       degradations - before == 1 ? "" : "s", np,
				       np == 1 ? "" : "s");
		}
	}
	for (k = 0; k < nrounds; k++)
		pairs_release(&rounds[k].ps);
	free(rounds);
	if (code != EXIT_OK)
		goto done;
	if (!npairs) {
		cli_error("check", "no pair of profiles to compare%s",
			  lone ? " (no ancestor has profiles of the same configuration)" : "");
		code = EXIT_FAILURE_;
		goto done;
	}
	if (!strcmp(format, "json")) {
		json_object_set_new(doc, "pairs", pairs);
		pairs = NULL;
		json_object_set_new(doc, "degradations", json_integer((json_int_t)degradations));
		json_object_set_new(doc, "not_enough_data", json_integer((json_int_t)unjudged));
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		putchar('\n');
	} else {
		putchar('\n');
		cli_paint(stdout, degradations ? CLI_RED CLI_BOLD : CLI_GREEN);
		printf("%zu degradation%s found", degradations, degradations == 1 ? "" : "s");
		cli_paint(stdout, CLI_RESET);
		if (unjudged)
			printf("; %zu result%s could not be judged (not enough data%s)", unjudged,
			       unjudged == 1 ? "" : "s",
			       strict ? ", --strict: a failure" : "; --strict fails on them");
		putchar('\n');
	}
	code = degradations || (strict && unjudged) ? EXIT_DEGRADATION : EXIT_OK;
done:
	json_decref(pairs);
	json_decref(doc);
	json_decref(cfg_keep);
	return code;
}

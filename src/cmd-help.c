/*
 * cmd-help.c - `sonde help [COMMAND]`, and the man pages and shell completion
 * generated from the commands' own option tables.
 *
 * Each command hands its table to cli_parse(); while cli_describing is set,
 * cli_parse() passes the table here instead of parsing, so the pages and the
 * completion scripts are written from the very tables that parse argv and
 * print --help. `collect` is asked once per built-in collector, for the
 * collector's options.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"

static const char usage[] = "usage: sonde help [COMMAND]\n"
			    "       sonde help --man [COMMAND]\n"
			    "       sonde help --man-dir DIR\n"
			    "       sonde help --completion bash|zsh\n"
			    "\n"
			    "Describe a command, or write the manual pages (roff) and the shell\n"
			    "completion, both generated from the commands' option tables.";

/* One option as described: the table entry and the heading of its group. */
struct dopt {
	struct sonde_option o;
	char *group; /* NULL: the command's own options */
};

struct dcmd {
	char *name, *collector, *usage, *summary;
	struct dopt *v;
	size_t n;
};

struct model {
	struct dcmd *cmds;
	size_t n;
	const char *collector; /* the collector being asked for */
	const char *summary;
};

static void flatten(struct dcmd *c, const struct sonde_option *o, const char *group)
{
	for (; o->type != SONDE_OPT_END; o++) {
		struct dopt *v;

		if (o->type == SONDE_OPT_GROUP) {
			if (o->sub)
				flatten(c, o->sub, o->help ? o->help : group);
			continue;
		}
		v = realloc(c->v, (c->n + 1) * sizeof(*v));
		if (!v)
			return;
		c->v = v;
		v[c->n].o = *o;
		v[c->n].group = group ? strdup(group) : NULL;
		c->n++;
	}
}

static void describe_one(struct cli_describe *d, const char *cmd, const char *use,
			 const struct sonde_option *opts)
{
	struct model *m = d->ctx;
	struct dcmd *c, *v = realloc(m->cmds, (m->n + 1) * sizeof(*v));

	if (!v)
		return;
	m->cmds = v;
	c = &v[m->n++];
	memset(c, 0, sizeof(*c));
	c->name = strdup(cmd);
	c->collector = m->collector ? strdup(m->collector) : NULL;
	c->usage = strdup(use);
	c->summary = m->summary ? strdup(m->summary) : NULL;
	flatten(c, opts, NULL);
}

static void model_release(struct model *m)
{
	size_t i, k;

	for (i = 0; i < m->n; i++) {
		for (k = 0; k < m->cmds[i].n; k++)
			free(m->cmds[i].v[k].group);
		free(m->cmds[i].v);
		free(m->cmds[i].name);
		free(m->cmds[i].collector);
		free(m->cmds[i].usage);
		free(m->cmds[i].summary);
	}
	free(m->cmds);
}

/* Ask every command (and collect, every collector) for its table. */
static void build_model(struct model *m)
{
	struct cli_describe d = { describe_one, m };
	const struct cli_command *cmds;
	const struct sonde_collector *const *cols;
	size_t n, k, nc;

	cmds = cli_commands(&n);
	cols = sonde_collector__builtins(&nc);
	cli_describing = &d;
	for (k = 0; k < n; k++) {
		char *argv[] = { (char *)cmds[k].name, "--help", NULL };
		size_t c;

		m->collector = NULL;
		m->summary = cmds[k].summary;
		cmds[k].fn(2, argv);
		if (strcmp(cmds[k].name, "collect"))
			continue;
		for (c = 0; c < nc; c++) {
			char *cargv[] = { "collect", (char *)cols[c]->name, "--help", NULL };

			m->collector = cols[c]->name;
			m->summary = cols[c]->summary;
			cmds[k].fn(3, cargv);
		}
	}
	cli_describing = NULL;
	m->collector = NULL;
}

/* ---- man pages ------------------------------------------------------------------------- */

/* Text for roff: backslashes doubled, a leading dot or quote made harmless. */
static void roff(struct sonde_strbuf *sb, const char *s, size_t len)
{
	size_t i;
	bool bol = sb->len == 0 || sb->buf[sb->len - 1] == '\n';

	for (i = 0; i < len && s[i]; i++) {
		if (bol && (s[i] == '.' || s[i] == '\''))
			sonde_strbuf__adds(sb, "\\&");
		if (s[i] == '\\')
			sonde_strbuf__adds(sb, "\\e");
		else if (s[i] == '-')
			sonde_strbuf__adds(sb, "\\-");
		else
			sonde_strbuf__addch(sb, s[i]);
		bol = s[i] == '\n';
	}
}

static void roffs(struct sonde_strbuf *sb, const char *s)
{
	roff(sb, s, strlen(s));
}

static void man_option(struct sonde_strbuf *sb, const struct sonde_option *o)
{
	sonde_strbuf__adds(sb, ".TP\n");
	if (o->short_name)
		sonde_strbuf__addf(sb, "\\fB\\-%c\\fR%s", o->short_name, o->long_name ? ", " : "");
	if (o->long_name) {
		sonde_strbuf__adds(sb, "\\fB\\-\\-");
		roffs(sb, o->long_name);
		sonde_strbuf__adds(sb, "\\fR");
	}
	if (sonde_option__takes_value(o)) {
		struct sonde_strbuf name = SONDE_STRBUF_INIT;

		sonde_option__value_name(o, &name);
		sonde_strbuf__adds(sb, " \\fI");
		roffs(sb, name.buf ? name.buf : "");
		sonde_strbuf__adds(sb, "\\fR");
		sonde_strbuf__release(&name);
	}
	sonde_strbuf__addch(sb, '\n');
	roffs(sb, o->help ? o->help : "");
	if (o->type == SONDE_OPT_CHOICE && o->argname && o->choices && o->help &&
	    !strstr(o->help, o->choices[0])) {
		const char *const *c;

		sonde_strbuf__adds(sb, " (");
		for (c = o->choices; *c; c++) {
			if (c != o->choices)
				sonde_strbuf__adds(sb, ", ");
			roffs(sb, *c);
		}
		sonde_strbuf__adds(sb, ")");
	}
	if (o->type == SONDE_OPT_LIST && o->help && !strstr(o->help, "repeatable"))
		sonde_strbuf__adds(sb, " (repeatable)");
	sonde_strbuf__addch(sb, '\n');
}

static void man_header(struct sonde_strbuf *sb, const char *page, const char *summary)
{
	char upper[64];
	size_t i;

	for (i = 0; page[i] && i + 1 < sizeof(upper); i++)
		upper[i] = (char)(page[i] >= 'a' && page[i] <= 'z' ? page[i] - 32 : page[i]);
	upper[i] = '\0';
	sonde_strbuf__addf(sb,
			   ".\\\" generated by 'sonde help --man' from the option tables\n"
			   ".TH %s 1 \"\" \"sonde %s\" \"sonde manual\"\n.SH NAME\n",
			   upper, sonde_version());
	roffs(sb, page);
	sonde_strbuf__adds(sb, " \\- ");
	roffs(sb, summary);
	sonde_strbuf__addch(sb, '\n');
}

/* The usage text: "usage:" lines are the synopsis, the paragraphs after it the description. */
static void man_usage(struct sonde_strbuf *sb, const char *use)
{
	const char *body = strstr(use, "\n\n"), *line = use;
	size_t synopsis = body ? (size_t)(body - use) : strlen(use);

	sonde_strbuf__adds(sb, ".SH SYNOPSIS\n.nf\n");
	while (line < use + synopsis) {
		const char *nl = memchr(line, '\n', (size_t)(use + synopsis - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(use + synopsis - line);

		if (!strncmp(line, "usage: ", 7)) {
			line += 7;
			len -= 7;
		}
		while (len && *line == ' ') {
			line++;
			len--;
		}
		roff(sb, line, len);
		sonde_strbuf__addch(sb, '\n');
		line += len + (nl ? 1 : 0);
	}
	sonde_strbuf__adds(sb, ".fi\n");
	if (body) {
		sonde_strbuf__adds(sb, ".SH DESCRIPTION\n");
		for (body += 2; *body; body++) {
			if (*body == '\n' && body[1] == '\n') {
				sonde_strbuf__adds(sb, "\n.PP\n");
				body++;
			} else {
				roff(sb, body, 1);
			}
		}
		sonde_strbuf__addch(sb, '\n');
	}
}

static void man_globals(struct sonde_strbuf *sb)
{
	const struct sonde_option *o;

	sonde_strbuf__adds(sb, ".SH GLOBAL OPTIONS\nAccepted before the command and among "
			       "its options.\n");
	for (o = cli_global_options(); o->type != SONDE_OPT_END; o++)
		man_option(sb, o);
	sonde_strbuf__adds(sb, ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nshow the help\n");
}

static void man_tail(struct sonde_strbuf *sb, const char *see)
{
	sonde_strbuf__adds(
		sb,
		".SH EXIT STATUS\n"
		".TP\n0\nsuccess\n.TP\n1\nfailure (a run failed, a file could not be written)\n"
		".TP\n2\nusage: an unknown option, a bad value\n"
		".TP\n3\nnot supported here, or not permitted\n"
		".TP\n4\na degradation was found (\\fBsonde check\\fR)\n"
		".TP\n126\nthe command cannot be executed\n.TP\n127\nthe command was not found\n"
		".TP\n130\ninterrupted (SIGINT, SIGTERM)\n"
		".SH ENVIRONMENT\n.TP\nNO_COLOR\nwhen set and not empty, no colour "
		"(\\fB\\-\\-color=auto\\fR)\n"
		".TP\nSONDE_CACHE_DIR\nwhere what objects' addresses resolved to is kept "
		"between runs, one file per build id, so that a later run need not read their "
		"debug information again (default \\fI$XDG_CACHE_HOME/sonde\\fR, else "
		"\\fI~/.cache/sonde\\fR; empty: no cache)\n"
		".SH SEE ALSO\n");
	sonde_strbuf__adds(sb, see);
	sonde_strbuf__addch(sb, '\n');
}

static void man_command(struct sonde_strbuf *sb, const struct model *m, size_t first)
{
	const struct dcmd *c = &m->cmds[first];
	char page[64];
	size_t i, k;

	snprintf(page, sizeof(page), "sonde-%s", c->name);
	man_header(sb, page, c->summary ? c->summary : "");
	man_usage(sb, c->usage);
	sonde_strbuf__adds(sb, ".SH OPTIONS\n");
	for (k = 0; k < c->n; k++)
		man_option(sb, &c->v[k].o);
	/* collect: one section per collector, its own options only */
	for (i = first + 1; i < m->n && !strcmp(m->cmds[i].name, c->name); i++) {
		const struct dcmd *cc = &m->cmds[i];

		sonde_strbuf__adds(sb, ".SH COLLECTOR ");
		roffs(sb, cc->collector);
		sonde_strbuf__adds(sb, "\n");
		roffs(sb, cc->summary ? cc->summary : "");
		sonde_strbuf__adds(sb, ".\n");
		for (k = 0; k < cc->n; k++)
			if (cc->v[k].group)
				man_option(sb, &cc->v[k].o);
	}
	if (!strcmp(c->name, "collect"))
		sonde_strbuf__adds(
			sb,
			".SH EXTERNAL COLLECTORS\n"
			"\\fBsonde collect \\-\\-external\\fR \\fIEXE\\fR \\fB\\-\\-\\fR "
			"\\fICMD ARGS\\fR runs \\fIEXE CMD ARGS\\fR for every run. EXE runs the "
			"command as it likes, sends the command's output to stderr and prints "
			"one JSON document on stdout: an array of records, or {\\(dqtype\\(dq: "
			"T, \\(dqunits\\(dq: {...}, \\(dqresources\\(dq: [records]}. A record "
			"has uid, type, subtype and numeric members such as amount; sonde adds "
			"order (the run number) and structure\\-unit\\-size (with "
			"\\fB\\-\\-parameter\\fR). Invalid JSON stops the collection with a "
			"message naming its line and column.\n"
			".SH PLUGINS\n"
			"A plugin is a shared object exporting sonde_collector_entry(abi), "
			"which returns its collector table (<sonde/collector.h>). "
			"\\fBsonde utils create collector\\fR \\fINAME\\fR writes one to start "
			"from.\n");
	man_globals(sb);
	man_tail(sb, ".BR sonde (1)");
}

static void man_main(struct sonde_strbuf *sb, const struct model *m)
{
	size_t i;

	man_header(sb, "sonde", "run programs under collectors and keep their profiles");
	sonde_strbuf__adds(
		sb, ".SH SYNOPSIS\n.nf\nsonde [\\-v|\\-q] [\\-\\-debug=DOMAINS] "
		    "[\\-\\-color=WHEN] COMMAND [ARGS...]\n.fi\n"
		    ".SH DESCRIPTION\nsonde runs a program under a collector (time, memory, "
		    "function traces, counters) and writes a profile: a JSON document, kept in "
		    "a .sonde store against the git commit it was measured on. Other commands "
		    "show, export, compare and post\\-process profiles.\n.SH COMMANDS\n");
	for (i = 0; i < m->n; i++) {
		if (m->cmds[i].collector)
			continue;
		sonde_strbuf__addf(sb, ".TP\n\\fBsonde\\-%s\\fR(1)\n", m->cmds[i].name);
		roffs(sb, m->cmds[i].summary ? m->cmds[i].summary : "");
		sonde_strbuf__addch(sb, '\n');
	}
	man_globals(sb);
	sonde_strbuf__adds(sb, ".TP\n\\fB\\-\\-version\\fR\nprint the version\n");
	man_tail(sb, "perf(1), hyperfine(1), heaptrack(1), uftrace(1)");
}

/* Write the page named page (NULL: sonde(1)) of the model to sb; -ENOENT if none. */
static int man_page(struct sonde_strbuf *sb, const struct model *m, const char *cmd)
{
	size_t i;

	if (!cmd) {
		man_main(sb, m);
		return 0;
	}
	for (i = 0; i < m->n; i++)
		if (!m->cmds[i].collector && !strcmp(m->cmds[i].name, cmd)) {
			man_command(sb, m, i);
			return 0;
		}
	return -ENOENT;
}

static int write_page(const char *dir, const char *name, const struct sonde_strbuf *sb)
{
	char *path;
	int rc;

	if (asprintf(&path, "%s/%s.1", dir, name) < 0)
		return -ENOMEM;
	rc = sonde_file__write_atomic(path, sb->buf, sb->len);
	if (rc)
		cli_error("help", "cannot write '%s': %s", path, strerror(-rc));
	free(path);
	return rc;
}

static int man_dir(const struct model *m, const char *dir)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	char name[64];
	size_t i;
	int rc;

	man_main(&sb, m);
	rc = write_page(dir, "sonde", &sb);
	for (i = 0; !rc && i < m->n; i++) {
		if (m->cmds[i].collector)
			continue;
		sonde_strbuf__reset(&sb);
		man_command(&sb, m, i);
		snprintf(name, sizeof(name), "sonde-%s", m->cmds[i].name);
		rc = write_page(dir, name, &sb);
	}
	sonde_strbuf__release(&sb);
	return rc;
}

/* ---- completion ------------------------------------------------------------------------ */

/* An option's words (-x --name), or nothing when only those taking a value are wanted. */
static void option_words(struct sonde_strbuf *sb, const struct sonde_option *o, bool values_only)
{
	if (values_only && !sonde_option__takes_value(o))
		return;
	if (o->short_name)
		sonde_strbuf__addf(sb, "-%c ", o->short_name);
	if (o->long_name)
		sonde_strbuf__addf(sb, "--%s ", o->long_name);
}

/* The option words of one command (or collect with a collector), with the globals. */
static void words(struct sonde_strbuf *sb, const struct dcmd *c, bool values_only)
{
	const struct sonde_option *o;
	size_t k;

	for (k = 0; k < c->n; k++)
		option_words(sb, &c->v[k].o, values_only);
	for (o = cli_global_options(); o->type != SONDE_OPT_END; o++)
		option_words(sb, o, values_only);
	if (!values_only)
		sonde_strbuf__adds(sb, "--help");
}

/* A case of _sonde_choices: "CMD:COL:-f|CMD:COL:--format) echo "a b c" ;;" */
static void bash_choices(struct sonde_strbuf *sb, const char *cmd, const char *col,
			 const struct sonde_option *o)
{
	const char *const *c;

	if (o->type != SONDE_OPT_CHOICE || !o->choices)
		return;
	sonde_strbuf__adds(sb, "    ");
	if (o->short_name)
		sonde_strbuf__addf(sb, "%s:%s:-%c|", cmd, col, o->short_name);
	sonde_strbuf__addf(sb, "%s:%s:--%s) echo \"", cmd, col, o->long_name);
	for (c = o->choices; *c; c++)
		sonde_strbuf__addf(sb, "%s%s", c == o->choices ? "" : " ", *c);
	sonde_strbuf__adds(sb, "\" ;;\n");
}

static void bash(struct sonde_strbuf *sb, const struct model *m)
{
	size_t i, k;
	const struct sonde_option *o;

	sonde_strbuf__addf(sb,
			   "# bash completion for sonde %s, generated by 'sonde help --completion "
			   "bash'\n\n_sonde_commands=\"",
			   sonde_version());
	for (i = 0; i < m->n; i++)
		if (!m->cmds[i].collector)
			sonde_strbuf__addf(sb, "%s ", m->cmds[i].name);
	sonde_strbuf__adds(sb, "help\"\n_sonde_collectors=\"");
	for (i = 0; i < m->n; i++)
		if (m->cmds[i].collector)
			sonde_strbuf__addf(sb, "%s ", m->cmds[i].collector);
	sonde_strbuf__adds(
		sb, "\"\n\n# _sonde_options CMD COLLECTOR [values]: the options (that take a "
		    "value)\n_sonde_options() {\n    local v=$3\n    case \"$1:$2\" in\n");
	for (i = 0; i < m->n; i++) {
		const struct dcmd *c = &m->cmds[i];

		sonde_strbuf__addf(sb, "    %s:%s) if [[ -n $v ]]; then echo \"", c->name,
				   c->collector ? c->collector : "");
		words(sb, c, true);
		sonde_strbuf__adds(sb, "\"; else echo \"");
		words(sb, c, false);
		sonde_strbuf__adds(sb, "\"; fi ;;\n");
	}
	sonde_strbuf__adds(sb, "    *) if [[ -n $v ]]; then echo \"");
	for (o = cli_global_options(); o->type != SONDE_OPT_END; o++)
		option_words(sb, o, true);
	sonde_strbuf__adds(sb, "\"; else echo \"");
	for (o = cli_global_options(); o->type != SONDE_OPT_END; o++)
		option_words(sb, o, false);
	sonde_strbuf__adds(sb, "--help --version\"; fi ;;\n    esac\n}\n\n"
			       "# _sonde_choices CMD COLLECTOR OPTION: the values of a choice "
			       "option\n_sonde_choices() {\n    case \"$1:$2:$3\" in\n");
	for (i = 0; i < m->n; i++)
		for (k = 0; k < m->cmds[i].n; k++)
			bash_choices(sb, m->cmds[i].name,
				     m->cmds[i].collector ? m->cmds[i].collector : "",
				     &m->cmds[i].v[k].o);
	for (o = cli_global_options(); o->type != SONDE_OPT_END; o++)
		bash_choices(sb, "*", "*", o);
	sonde_strbuf__adds(
		sb,
		"    *) return 1 ;;\n    esac\n}\n\n"
		"_sonde() {\n"
		"    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
		"    local i w cmd= col= target= dashdash= choices\n"
		"    COMPREPLY=()\n"
		"    for ((i = 1; i < COMP_CWORD; i++)); do\n"
		"        w=${COMP_WORDS[i]}\n"
		"        if [[ -n $target || -n $dashdash ]]; then target=${target:-$w}; continue; "
		"fi\n"
		"        case $w in\n"
		"        --) [[ $cmd == collect ]] && dashdash=1; continue ;;\n"
		"        --*=*) continue ;;\n"
		"        -*) [[ \" $(_sonde_options \"$cmd\" \"$col\" v) \" == *\" $w \"* ]] && "
		"((i++)); continue ;;\n"
		"        esac\n"
		"        if [[ -z $cmd ]]; then cmd=$w\n"
		"        elif [[ $cmd == collect && -z $col ]]; then col=$w\n"
		"        elif [[ $cmd == collect ]]; then target=$w\n"
		"        fi\n"
		"    done\n"
		"    if [[ -n $target || -n $dashdash ]]; then\n"
		"        if [[ -z $target ]]; then COMPREPLY=($(compgen -c -- \"$cur\"));\n"
		"        else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
		"        return 0\n"
		"    fi\n"
		"    if choices=$(_sonde_choices \"$cmd\" \"$col\" \"$prev\"); then\n"
		"        COMPREPLY=($(compgen -W \"$choices\" -- \"$cur\")); return 0\n"
		"    fi\n"
		"    if [[ $prev == -* && \" $(_sonde_options \"$cmd\" \"$col\" v) \" == *\" $prev "
		"\"* ]]; then\n"
		"        COMPREPLY=($(compgen -f -- \"$cur\")); return 0\n"
		"    fi\n"
		"    if [[ $cur == -* ]]; then\n"
		"        COMPREPLY=($(compgen -W \"$(_sonde_options \"$cmd\" \"$col\")\" -- "
		"\"$cur\"))\n"
		"    elif [[ -z $cmd ]]; then\n"
		"        COMPREPLY=($(compgen -W \"$_sonde_commands\" -- \"$cur\"))\n"
		"    elif [[ $cmd == help ]]; then\n"
		"        COMPREPLY=($(compgen -W \"$_sonde_commands\" -- \"$cur\"))\n"
		"    elif [[ $cmd == collect && -z $col ]]; then\n"
		"        COMPREPLY=($(compgen -W \"$_sonde_collectors\" -- \"$cur\"))\n"
		"    elif [[ $cmd == collect ]]; then\n"
		"        COMPREPLY=($(compgen -c -- \"$cur\"))\n"
		"    else\n"
		"        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
		"    fi\n"
		"    return 0\n"
		"}\n"
		"complete -o filenames -F _sonde sonde\n");
}

/* zsh: an _arguments spec per command; help text with brackets and colons escaped. */
static void zsh_text(struct sonde_strbuf *sb, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '[' || *s == ']' || *s == ':' || *s == '\\')
			sonde_strbuf__addch(sb, '\\');
		if (*s == '\'')
			sonde_strbuf__adds(sb, "'\\''");
		else
			sonde_strbuf__addch(sb, *s);
	}
}

static void zsh_spec(struct sonde_strbuf *sb, const struct sonde_option *o)
{
	const char *const *c;
	int forms = (o->short_name ? 1 : 0) + (o->long_name ? 1 : 0);

	sonde_strbuf__adds(sb, "        ");
	if (o->type == SONDE_OPT_LIST || o->type == SONDE_OPT_COUNT)
		sonde_strbuf__addch(sb, '*');
	else if (forms == 2)
		sonde_strbuf__addf(sb, "'(-%c --%s)'", o->short_name, o->long_name);
	if (forms == 2)
		sonde_strbuf__addf(sb, "{-%c,--%s}'", o->short_name, o->long_name);
	else if (o->short_name)
		sonde_strbuf__addf(sb, "'-%c", o->short_name);
	else
		sonde_strbuf__addf(sb, "'--%s%s", o->long_name,
				   sonde_option__takes_value(o) ? "=" : "");
	sonde_strbuf__addch(sb, '[');
	zsh_text(sb, o->help);
	sonde_strbuf__addch(sb, ']');
	if (sonde_option__takes_value(o)) {
		sonde_strbuf__adds(sb, ":");
		zsh_text(sb, o->argname ? o->argname : "value");
		sonde_strbuf__addch(sb, ':');
		if (o->type == SONDE_OPT_CHOICE && o->choices) {
			sonde_strbuf__addch(sb, '(');
			for (c = o->choices; *c; c++)
				sonde_strbuf__addf(sb, "%s%s", c == o->choices ? "" : " ", *c);
			sonde_strbuf__addch(sb, ')');
		} else if (o->type == SONDE_OPT_STRING || o->type == SONDE_OPT_LIST) {
			sonde_strbuf__adds(sb, "_files");
		}
	}
	sonde_strbuf__adds(sb, "' \\\n");
}

static void zsh(struct sonde_strbuf *sb, const struct model *m)
{
	const struct sonde_option *o;
	size_t i, k;

	sonde_strbuf__addf(sb,
			   "#compdef sonde\n# zsh completion for sonde %s, generated by 'sonde "
			   "help --completion zsh'\n\n_sonde() {\n    local -a commands collectors "
			   "globals\n    commands=(\n",
			   sonde_version());
	for (i = 0; i < m->n; i++) {
		if (m->cmds[i].collector)
			continue;
		sonde_strbuf__addf(sb, "        '%s:", m->cmds[i].name);
		zsh_text(sb, m->cmds[i].summary);
		sonde_strbuf__adds(sb, "'\n");
	}
	sonde_strbuf__adds(sb, "        'help:describe a command'\n    )\n    collectors=(");
	for (i = 0; i < m->n; i++)
		if (m->cmds[i].collector)
			sonde_strbuf__addf(sb, " %s", m->cmds[i].collector);
	sonde_strbuf__adds(sb, ")\n    globals=(\n");
	for (o = cli_global_options(); o->type != SONDE_OPT_END; o++)
		zsh_spec(sb, o);
	sonde_strbuf__adds(sb,
			   "    )\n"
			   "    if (( CURRENT == 2 )); then\n"
			   "        _describe -t commands 'sonde command' commands\n"
			   "        return\n"
			   "    fi\n"
			   "    local cmd=${words[2]} col=\n"
			   "    if [[ $cmd == collect ]]; then\n"
			   "        if (( CURRENT == 3 )); then _describe -t collectors collector "
			   "collectors; return; fi\n"
			   "        col=${words[3]}\n"
			   "    fi\n"
			   "    case \"$cmd:$col\" in\n");
	for (i = 0; i < m->n; i++) {
		const struct dcmd *c = &m->cmds[i];

		sonde_strbuf__addf(sb, "    %s:%s)\n        _arguments -s \"${globals[@]}\" \\\n",
				   c->name, c->collector ? c->collector : "");
		for (k = 0; k < c->n; k++)
			zsh_spec(sb, &c->v[k].o);
		sonde_strbuf__addf(sb, "        '*:%s:%s'\n        ;;\n",
				   !strcmp(c->name, "collect") ? "command" : "file",
				   !strcmp(c->name, "collect") ? "_command_names -e" : "_files");
	}
	sonde_strbuf__adds(sb, "    help:) _describe -t commands 'sonde command' commands ;;\n"
			       "    *) _files ;;\n    esac\n}\n\n_sonde \"$@\"\n");
}

/* ---- the command ----------------------------------------------------------------------- */

int cmd_help(int argc, char **argv)
{
	const char *completion = NULL, *dir = NULL;
	bool man = false;
	const struct sonde_option opts[] = {
		{ SONDE_OPT_FLAG, 0, "man", &man, NULL,
		  "write the manual page of COMMAND (or sonde(1)) to stdout, in roff" },
		{ SONDE_OPT_STRING, 0, "man-dir", &dir, "DIR",
		  "write every manual page to DIR (sonde.1, sonde-COMMAND.1)" },
		{ SONDE_OPT_CHOICE, 0, "completion", &completion, "SHELL",
		  "write the completion script of SHELL to stdout", 0, 0,
		  (const char *const[]){ "bash", "zsh", NULL } },
		{ .type = SONDE_OPT_END },
	};
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	struct model m = { 0 };
	const struct cli_command *cmds;
	size_t n, k = 0;
	int first, code = EXIT_OK, rc = 0;

	first = cli_parse("help", usage, opts, argc - 1, argv + 1, SONDE_OPTPARSE_PERMUTE, NULL,
			  &code);
	if (first < 0)
		return code;
	argv += 1 + first;
	argc -= 1 + first;
	if (argc > 1)
		return cli_usage("help", "one command at most");
	cmds = cli_commands(&n);
	if (argc == 1) {
		for (k = 0; k < n && strcmp(cmds[k].name, argv[0]); k++)
			;
		if (k == n)
			return cli_usage("help", "'%s' is not a sonde command", argv[0]);
	}
	if (!man && !dir && !completion) {
		char *h[] = { argc ? argv[0] : NULL, "--help", NULL };

		if (!argc)
			return cli_usage("help", "which command? ('sonde --help' lists them)");

		return cmds[k].fn(2, h);
	}
	build_model(&m);
	if (dir) {
		rc = man_dir(&m, dir);
	} else if (man) {
		rc = man_page(&sb, &m, argc ? argv[0] : NULL);
	} else if (!strcmp(completion, "bash")) {
		bash(&sb, &m);
	} else {
		zsh(&sb, &m);
	}
	if (!rc && sb.len)
		rc = sonde_file__write_all(1, sb.buf, sb.len);
	if (rc && !dir)
		cli_error("help", "%s", strerror(-rc));
	sonde_strbuf__release(&sb);
	model_release(&m);
	return rc ? EXIT_FAILURE_ : EXIT_OK;
}

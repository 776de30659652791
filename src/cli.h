/*
 * cli.h - what the commands of the sonde program share: exit codes, messages,
 * option handling, profile names, and the summary table.
 */
#ifndef SONDE_CLI_H
#define SONDE_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <sonde/sonde.h>
#include <sonde/view.h>

/* The one exit-code table (docs/cli.md). */
enum {
	EXIT_OK = 0,
	EXIT_FAILURE_ = 1,
	EXIT_USAGE = 2,
	EXIT_UNSUPPORTED = 3,
	EXIT_DEGRADATION = 4,
	EXIT_NOEXEC = 126,
	EXIT_NOTFOUND = 127,
	EXIT_INTERRUPTED = 130,
};

struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

/* "sonde: CMD: message" on stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * The reason a library call gave in err, or, when it could write none (the heap
 * exhausted), what its return code rc (-errno, or 0 when it has none) says.
 */
const char *cli_why(const struct sonde_strbuf *err, int rc);
/* cli_error + "try 'sonde CMD --help'"; returns EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The exit code for a library error (-errno). */
int cli_exit_code(int err);

/*
 * When stdout or stderr is a terminal, replace it by a stream that shows the
 * control characters of what is printed (\xNN, \u00NN) instead of sending
 * them (terminal.c). Call once, first thing.
 */
void cli_terminal_guard(void);
/* stderr as it was: for sonde's own control sequences (the progress bar). */
FILE *cli_terminal_raw(void);
/* The descriptor f writes to in the end (guarded or not), or -1. */
int cli_terminal_fd(FILE *f);

/*
 * The global options (-v, -q, --debug, --color): main() parses them before the
 * command and cli_parse() among the command's own, then applies them.
 */
const struct sonde_option *cli_global_options(void);
void cli_apply_globals(void);
/* -q was given: print errors only. */
bool cli_quiet(void);
/* A warning on stderr (unless -q) for each configuration key sonde does not read. */
void cli_config_warnings(const char *cmd, json_t *cfg);
/* Whether colour is on for f (--color, NO_COLOR, TERM=dumb, a terminal). */
bool cli_colored(FILE *f);
/* Write an SGR sequence (CLI_RED...) to f when colour is on for it. */
void cli_paint(FILE *f, const char *sgr);
#define CLI_RED	   "\033[31m"
#define CLI_GREEN  "\033[32m"
#define CLI_YELLOW "\033[33m"
#define CLI_BOLD   "\033[1m"
#define CLI_RESET  "\033[0m"

/*
 * `sonde help --man/--completion` walks the commands' option tables: while
 * cli_describing is set, cli_parse() hands fn the table instead of parsing.
 */
struct cli_describe {
	void (*fn)(struct cli_describe *d, const char *cmd, const char *usage,
		   const struct sonde_option *opts);
	void *ctx;
};
extern struct cli_describe *cli_describing;

/*
 * Parse a command's options. Returns the index of the first positional argument,
 * or -1 after printing help (*code = EXIT_OK) or an error (*code = EXIT_USAGE).
 */
int cli_parse(const char *cmd, const char *usage, const struct sonde_option *opts, int argc,
	      char **argv, unsigned flags, json_t *params, int *code);
void cli_help(const char *usage, const struct sonde_option *opts);

/*
 * Resolve a profile name: a path, N@p (pending) or N@i (registered for HEAD).
 * Returns a heap path or NULL after printing why. *store_id gets the index id of
 * a registered profile (0 otherwise) when not NULL.
 */
char *cli_profile_path(const char *cmd, const char *name, long long *store_id);
/*
 * The store of the current directory, or NULL after one line that says why: none
 * (run sonde init), a damaged index (sonde fsck), no permission, or the error.
 */
struct sonde_store *cli_open_store(const char *cmd);
/* Whether name is N@p or N@i (a profile in the store). */
bool cli_is_store_name(const char *name);
/* Load a profile named as above; prints why on failure and sets *code. */
struct sonde_profile *cli_load_profile(const char *cmd, const char *name, int *code);
/*
 * Load names[0..n) into out[] (NULL where not loaded), several at a time on
 * the machine's CPUs; the first that cannot be loaded is said, in order, and
 * gives the exit code (EXIT_OK when all loaded).
 */
int cli_load_profiles(const char *cmd, const char *const *names, size_t n,
		      struct sonde_profile **out);
/*
 * The command is done with p and the process ends next: p is left to the exit,
 * still reachable (no leak for LeakSanitizer or valgrind). Freeing a profile of
 * a million values node by node takes longer than reading it did.
 */
void cli_drop_profile(struct sonde_profile *p);

/* The profile's warnings (with their fixes), and with notes its notes; on stderr not with -q. */
/*
 * Why p has no stacks (a flame graph, folded stacks) or no timeline, WHAT
 * ("stacks", "timeline"): a memory or trace profile whose run recorded none,
 * or a profile of a type that has none. One line, without the profile's name.
 */
const char *cli_nothing_because(const struct sonde_profile *p, const char *what, char *buf,
				size_t size);
void cli_print_warnings(const struct sonde_profile *p, FILE *out, bool notes);
/*
 * Write what a view appended to sb (rc: the view's answer) to out, and release
 * sb. Returns rc, or -EIO when out could not take it.
 */
int cli_emit(int rc, struct sonde_strbuf *sb, FILE *out);
/* Write buf atomically to path (or stdout for NULL / "-"). Returns 0 or -errno. */
int cli_write_output(const char *path, const char *buf, size_t len);
/*
 * Write a file whose name sonde chose (not the user): never over an existing
 * entry, a link included, but beside it as NAME-1.EXT, NAME-2.EXT...; the name
 * used goes to *used (malloc'ed). 0 or -errno.
 */
int cli_write_new(const char *path, const char *buf, size_t len, char **used);
/*
 * A new profile's default path: .sonde/jobs/ of the store above the current
 * directory (else here), BIN-COLLECTOR[-VALUES]-DATE.json; a rank of a
 * distributed job's BIN-COLLECTOR[-VALUES]-DATE-jobID-rankR-HOST.json.
 * Caller frees.
 */
char *cli_job_path(const char *argv0, const char *collector, char **values);
/*
 * -o PATH of a rank of a distributed job of more than one rank (job.h):
 * PATH with -rankR before its extension, so that the ranks do not write one
 * file; PATH itself (a copy) otherwise. NULL: no memory.
 */
char *cli_rank_path(const char *path);
/*
 * Split s into words as a shell does, without any substitution: blanks
 * separate, 'single' and "double" quotes group (a backslash escapes outside
 * quotes, and ", \\, $ and ` inside double quotes); $VAR, ~ and globs stay as
 * written. *out is NULL-terminated; free with cli_free_words. 0, -EINVAL (a
 * quote left open) or -ENOMEM.
 */
int cli_split_words(const char *s, char ***out, size_t *n);
void cli_free_words(char **v, size_t n);

/*
 * Start argv (found in PATH) in dir (NULL: here), with env ("NAME=VALUE", or
 * NULL) added to its environment and its stdout and stderr appended to out
 * (NULL: inherited). Returns the child, or -1.
 */
pid_t cli_spawn(const char *dir, char *const *argv, const char *out, const char *env);
/* cli_spawn, then wait: its exit status, 128 + the signal that ended it, -1 if it never ran. */
int cli_run(const char *dir, char *const *argv, const char *out, const char *env);
/* The path of program name in PATH (malloc'ed), or NULL when there is none. */
char *cli_which(const char *name);

/* The command table of sonde.c (for `sonde help`). */
const struct cli_command *cli_commands(size_t *n);
int cmd_help(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_postprocess(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_collect(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_add(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_utils(int argc, char **argv);
int cmd_counters(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_collector(int argc, char **argv);
/* The entry of a collector registered by name (sonde collector add), or NULL; *cfg to free. */
json_t *cli_registered_collector(const char *name, json_t **cfg);
int cmd_run(int argc, char **argv);
/* `sonde collect bounds` (cmd-collect-bounds.c): argv[1] is "bounds". */
int collect_bounds(int argc, char **argv);

/* Whether s looks like a run id or its start: 6 to 32 lowercase hex digits. */
bool cli_is_run_id(const char *s);
/*
 * Add to *v (*n of them) the profiles of run (a run id or its first digits)
 * in the current directory and the store's pending profiles, each once.
 * Returns an exit code, after one line on stderr: none found, a prefix of
 * more than one run, no memory.
 */
int cli_load_run(const char *cmd, const char *run, struct sonde_profile ***v, size_t *n);

#endif

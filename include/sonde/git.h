/*
 * git.h - what sonde asks git: the commit a profile was measured on.
 *
 * git is run as a child process (git rev-parse, git status, git log); a directory
 * outside any work tree is not an error for the caller, it means "no origin".
 */
#ifndef SONDE_GIT_H
#define SONDE_GIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sonde/strbuf.h>

/*
 * The full hash of rev (e.g. "HEAD") in the repository containing dir, into out
 * (41 bytes). Returns 0, -ENOENT when dir is not in a git work tree or rev does not
 * resolve (or git is not installed), -errno when git could not be asked or its
 * answer not read (-ENOMEM, say): callers tell that apart from "no such commit".
 */
int sonde_git__resolve(const char *dir, const char *rev, char out[41]);
/* Whether the work tree of dir has uncommitted changes to tracked files. 1, 0 or -errno. */
int sonde_git__dirty(const char *dir);

/*
 * The commit a measurement starts from, asked of git in the background: start
 * runs `git rev-parse HEAD` and `git status` at once and returns; finish waits
 * for both and fills commit and dirty (and may be called again). A session
 * starts it while it prepares and finishes it before the first run, so that
 * git never runs beside the target; its profiles share the answer.
 */
struct sonde_git_origin {
	char commit[41]; /* HEAD's full hash; "" outside a work tree */
	int dirty;	 /* uncommitted changes to tracked files: 1, 0, or -errno */
	int error;	 /* -errno when git could not be asked or its answer read (not
			  * -ENOENT: no git, or no work tree, is "no origin"); else 0 */
	/* private */
	int pid[2], fd[2];
	bool started;
};
int sonde_git__origin_start(struct sonde_git_origin *o, const char *dir);
void sonde_git__origin_finish(struct sonde_git_origin *o);
/*
 * "HASH\tSUBJECT\n" lines of the last max commits reachable from HEAD into out.
 * Returns 0 or -errno.
 */
int sonde_git__log(const char *dir, unsigned max, struct sonde_strbuf *out);
/*
 * The full hashes of commit and its ancestors, nearest first (git rev-list
 * --topo-order: a commit before its parents), one per line, into out; at most
 * max. Returns 0, -ENOENT when commit is not in the repository of dir.
 */
int sonde_git__ancestry(const char *dir, const char *commit, unsigned max,
			struct sonde_strbuf *out);

/*
 * Add the line pattern to the repository's info/exclude (git's own, untracked
 * ignore list) unless it is there. 1 added, 0 already there, -ENOENT when dir
 * is not in a git work tree, -errno otherwise.
 */
int sonde_git__exclude(const char *dir, const char *pattern);

#endif

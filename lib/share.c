/*
 * share.c - sonde push and sonde pull: registered profiles through the git
 * remote of the store's work tree (see share.h).
 *
 * git does the work: ls-remote finds the remote's commit, fetch brings it to
 * refs/sonde/fetched, ls-tree lists its profiles, fast-import writes the new
 * ones as blobs of a commit on top of it (refs/sonde/push), push sends that
 * without force (another clone's push first: refused, fetched and made again),
 * and cat-file --batch reads the blobs a pull registers. Each git runs with
 * its input, output and errors in scratch files: nothing is left behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sonde/file.h>
#include <sonde/share.h>
#include "strmap.h"

extern char **environ;

#define FETCHED	 "refs/sonde/fetched"
#define PUSHED	 "refs/sonde/push"
#define ATTEMPTS 30

/* Everything fd holds, from its start, into out. 0 or -errno. */
static int slurp(int fd, struct sonde_strbuf *out)
{
	char buf[65536];
	ssize_t got;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	while ((got = read(fd, buf, sizeof(buf))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (sonde_strbuf__add(out, buf, (size_t)got))
			return -ENOMEM;
	}
	return 0;
}

/*
 * git -C dir ARGS... with stdin from in (-1: /dev/null), its output into out
 * and its errors into errs (either NULL: dropped). Its exit status or -errno.
 */
static int git(const char *dir, const char *const *args, int in, struct sonde_strbuf *out,
	       struct sonde_strbuf *errs)
{
	const char *argv[24] = { "git", "-C", dir };
	char **env = NULL;
	size_t n = 3, ne = 0;
	posix_spawn_file_actions_t fa;
	int ofd = sonde_file__scratch("git-out"), efd = sonde_file__scratch("git-err");
	int rc, status;
	pid_t pid;

	while (*args && n < 23)
		argv[n++] = *args++;
	argv[n] = NULL;
	while (environ[ne])
		ne++;
	env = calloc(ne + 2, sizeof(*env));
	if (ofd < 0 || efd < 0 || !env) {
		rc = ofd < 0 ? ofd : efd < 0 ? efd : -ENOMEM;
		goto out;
	}
	memcpy(env, environ, ne * sizeof(*env));
	env[ne] = (char *)"GIT_TERMINAL_PROMPT=0"; /* never ask a user for a password */
	rc = posix_spawn_file_actions_init(&fa);
	if (rc) {
		rc = -rc;
		goto out;
	}
	if (in >= 0)
		rc = posix_spawn_file_actions_adddup2(&fa, in, 0);
	else
		rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!rc && !(rc = posix_spawn_file_actions_adddup2(&fa, ofd, 1)) &&
	    !(rc = posix_spawn_file_actions_adddup2(&fa, efd, 2)))
		rc = posix_spawnp(&pid, "git", &fa, NULL, (char *const *)argv, env);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		rc = -rc;
		goto out;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			rc = -errno;
			goto out;
		}
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
	if (out && slurp(ofd, out))
		rc = -ENOMEM;
	if (errs && slurp(efd, errs))
		rc = -ENOMEM;
out:
	free(env);
	if (ofd >= 0)
		close(ofd);
	if (efd >= 0)
		close(efd);
	return rc;
}

/* The last line git wrote on stderr, for a message. */
static const char *last_line(struct sonde_strbuf *e)
{
	char *end, *start;

	if (!e->buf || !e->len)
		return "no message";
	end = e->buf + e->len;
	while (end > e->buf && (end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	start = end;
	while (start > e->buf && start[-1] != '\n')
		start--;
	return *start ? start : "no message";
}

/*
 * The remote's commit of SONDE_SHARE_REF into sha (1), or none there (0);
 * -EIO when the remote cannot be read (why in err).
 */
static int remote_commit(const char *dir, const char *remote, char sha[41],
			 struct sonde_strbuf *err)
{
	const char *args[] = { "ls-remote", "--refs", remote, SONDE_SHARE_REF, NULL };
	struct sonde_strbuf out = SONDE_STRBUF_INIT, e = SONDE_STRBUF_INIT;
	int rc = git(dir, args, -1, &out, &e);

	if (rc == 0 && out.len >= 40) {
		memcpy(sha, out.buf, 40);
		sha[40] = '\0';
		rc = strspn(sha, "0123456789abcdef") == 40 ? 1 : -EIO;
	} else if (rc == 0) {
		rc = 0;
	} else {
		sonde_strbuf__addf(err, "cannot read remote '%s': %s", remote,
				   rc < 0 ? strerror(-rc) : last_line(&e));
		rc = rc < 0 ? rc : -EIO;
	}
	sonde_strbuf__release(&out);
	sonde_strbuf__release(&e);
	return rc;
}

/* Fetch the remote's commit into FETCHED. 0 or -EIO (err). */
static int fetch(const char *dir, const char *remote, struct sonde_strbuf *err)
{
	const char *args[] = { "fetch",	    "--quiet",
			       "--no-tags", "--no-write-fetch-head",
			       remote,	    "+" SONDE_SHARE_REF ":" FETCHED,
			       NULL };
	struct sonde_strbuf e = SONDE_STRBUF_INIT;
	int rc = git(dir, args, -1, NULL, &e);

	if (rc)
		sonde_strbuf__addf(err, "cannot fetch %s from '%s': %s", SONDE_SHARE_REF, remote,
				   rc < 0 ? strerror(-rc) : last_line(&e));
	sonde_strbuf__release(&e);
	return rc ? -EIO : 0;
}

/* FETCHED's tree, "MODE TYPE SHA\tPATH" lines, into out. 0 or -EIO. */
static int list_tree(const char *dir, struct sonde_strbuf *out, struct sonde_strbuf *err)
{
	const char *args[] = { "ls-tree", "-r", "--full-tree", FETCHED, NULL };
	struct sonde_strbuf e = SONDE_STRBUF_INIT;
	int rc = git(dir, args, -1, out, &e);

	if (rc)
		sonde_strbuf__addf(err, "cannot list the fetched profiles: %s",
				   rc < 0 ? strerror(-rc) : last_line(&e));
	sonde_strbuf__release(&e);
	return rc ? -EIO : 0;
}

/* A tree line's sha (41 bytes with its NUL) and path; false when it is not a blob's. */
static bool tree_line(char *line, char sha[41], const char **path)
{
	char *tab = strchr(line, '\t');

	if (!tab || strncmp(line, "100644 blob ", 12) || tab - (line + 12) != 40)
		return false;
	memcpy(sha, line + 12, 40);
	sha[40] = '\0';
	*path = tab + 1;
	return true;
}

/* The digest a tree path ORIGIN/DIGEST.json names (33 bytes), false when it names none. */
static bool path_digest(const char *path, char digest[40])
{
	const char *slash = strrchr(path, '/'), *b = slash ? slash + 1 : path;

	if (strlen(b) != 37 || strcmp(b + 32, ".json") || strspn(b, "0123456789abcdef") != 32)
		return false;
	memcpy(digest, b, 32);
	digest[32] = '\0';
	return true;
}

struct outgoing {
	char *path; /* the object file */
	char name[128];
};

int sonde_share__push(struct sonde_store *s, const char *remote, struct sonde_share_result *r,
		      struct sonde_strbuf *err)
{
	const char *dir = sonde_store__worktree(s);
	struct sonde_store_list list = { 0 };
	int rc = sonde_store__registered(s, NULL, &list);
	size_t i;

	memset(r, 0, sizeof(*r));
	if (rc) {
		sonde_strbuf__addf(err, "cannot list the registered profiles: %s", strerror(-rc));
		return rc;
	}
	for (r->attempts = 1; r->attempts <= ATTEMPTS; r->attempts++) {
		struct sonde_strbuf tree = SONDE_STRBUF_INIT, e = SONDE_STRBUF_INIT;
		struct sonde_strmap have = SONDE_STRMAP_INIT;
		struct outgoing *go = calloc(list.n ? list.n : 1, sizeof(*go));
		size_t ngo = 0, nremote = 0;
		char base[41] = "";
		int fd = -1, has;
		bool retry = false;

		r->sent = r->known = 0;
		has = go ? remote_commit(dir, remote, base, err) : -ENOMEM;
		rc = has < 0 ? has : 0;
		if (!rc && has)
			rc = fetch(dir, remote, err);
		if (!rc && has)
			rc = list_tree(dir, &tree, err);
		for (char *line = tree.buf, *nl; !rc && line && *line; line = nl ? nl + 1 : NULL) {
			char sha[41];
			const char *path;
			bool hit;

			nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			if (!tree_line(line, sha, &path))
				continue;
			nremote++;
			if (!sonde_strmap__upsert(&have, path, strlen(path), &hit))
				rc = -ENOMEM;
		}
		/* what the remote lacks: each registered profile by its JSON's digest */
		for (i = 0; !rc && i < list.n; i++) {
			char *buf = NULL, digest[40];
			size_t len;

			rc = sonde_file__read_data(list.v[i].path, &buf, &len);
			if (rc) {
				sonde_strbuf__addf(err, "cannot read '%s': %s", list.v[i].path,
						   strerror(-rc));
				break;
			}
			sonde_store__digest(buf, len, digest);
			free(buf);
			snprintf(go[ngo].name, sizeof(go[ngo].name), "%s/%s.json",
				 list.v[i].origin ? list.v[i].origin : "none", digest);
			if (sonde_strmap__get(&have, go[ngo].name, strlen(go[ngo].name))) {
				r->known++;
				continue;
			}
			go[ngo++].path = list.v[i].path;
		}
		if (!rc && !ngo) { /* the remote has every one: nothing to push */
			r->remote = (unsigned)nremote;
			goto next;
		}
		/* the commit: the remote's tree and the new profiles, on top of the remote's */
		fd = rc ? -1 : sonde_file__scratch("push");
		if (!rc && fd < 0)
			rc = fd;
		if (!rc) {
			struct sonde_strbuf h = SONDE_STRBUF_INIT;
			char msg[160];
			int m = snprintf(msg, sizeof(msg), "sonde push: %zu profile%s\n", ngo,
					 ngo == 1 ? "" : "s");

			sonde_strbuf__addf(
				&h,
				"commit %s\ncommitter sonde <sonde@localhost> %lld +0000\n"
				"data %d\n%s",
				PUSHED, (long long)time(NULL), m, msg);
			if (has)
				sonde_strbuf__addf(&h, "from %s\n", base);
			rc = sonde_strbuf__error(&h) ? -ENOMEM
						     : sonde_file__write_all(fd, h.buf, h.len);
			sonde_strbuf__release(&h);
		}
		for (i = 0; !rc && i < ngo; i++) {
			char *buf = NULL, head[256];
			size_t len;

			rc = sonde_file__read_data(go[i].path, &buf, &len);
			if (rc) {
				sonde_strbuf__addf(err, "cannot read '%s': %s", go[i].path,
						   strerror(-rc));
				break;
			}
			snprintf(head, sizeof(head), "M 100644 inline %s\ndata %zu\n", go[i].name,
				 len);
			rc = sonde_file__write_all(fd, head, strlen(head));
			if (!rc)
				rc = sonde_file__write_all(fd, buf, len);
			if (!rc)
				rc = sonde_file__write_all(fd, "\n", 1);
			free(buf);
		}
		if (!rc)
			rc = sonde_file__write_all(fd, "\n", 1);
		if (!rc && lseek(fd, 0, SEEK_SET) < 0)
			rc = -errno;
		if (!rc) {
			const char *args[] = { "fast-import", "--quiet", "--force", NULL };
			int g = git(dir, args, fd, NULL, &e);

			if (g) {
				sonde_strbuf__addf(err, "git fast-import failed: %s",
						   g < 0 ? strerror(-g) : last_line(&e));
				rc = -EIO;
			}
		}
		if (!rc) {
			const char *args[] = { "push", "--quiet", remote,
					       PUSHED ":" SONDE_SHARE_REF, NULL };
			int g;

			e.len = 0;
			g = git(dir, args, -1, NULL, &e);
			if (g > 0 && e.buf &&
			    (strstr(e.buf, "rejected") || strstr(e.buf, "fetch first") ||
			     strstr(e.buf, "non-fast-forward") ||
			     strstr(e.buf, "failed to update ref") ||
			     strstr(e.buf, "cannot lock ref"))) {
				retry = true; /* another clone pushed first: on top of theirs */
			} else if (g) {
				sonde_strbuf__addf(err, "cannot push to '%s': %s", remote,
						   g < 0 ? strerror(-g) : last_line(&e));
				rc = -EIO;
			} else {
				r->sent = (unsigned)ngo;
				r->remote = (unsigned)(nremote + ngo);
			}
		}
	next:
		if (fd >= 0)
			close(fd);
		free(go);
		sonde_strmap__release(&have);
		sonde_strbuf__release(&tree);
		sonde_strbuf__release(&e);
		if (rc || !retry)
			break;
		/* a moment, more each time, so that two racing clones fall out of step */
		{
			unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL) ^ r->attempts;

			usleep((useconds_t)(10000 * (r->attempts < 10 ? r->attempts : 10) +
					    rand_r(&seed) % 50000));
		}
	}
	if (!rc && r->attempts > ATTEMPTS) {
		sonde_strbuf__addf(err, "'%s' kept changing: %u pushes were refused", remote,
				   ATTEMPTS);
		rc = -EAGAIN;
		r->attempts = ATTEMPTS;
	}
	sonde_store_list__release(&list);
	return rc;
}

int sonde_share__pull(struct sonde_store *s, const char *remote, struct sonde_share_result *r,
		      struct sonde_strbuf *err)
{
	const char *dir = sonde_store__worktree(s);
	struct sonde_strbuf tree = SONDE_STRBUF_INIT, want = SONDE_STRBUF_INIT,
			    blobs = SONDE_STRBUF_INIT, e = SONDE_STRBUF_INIT;
	char base[41];
	int fd = -1, rc;
	size_t off;

	memset(r, 0, sizeof(*r));
	rc = remote_commit(dir, remote, base, err);
	if (rc <= 0)
		return rc; /* none there: nothing to pull */
	rc = fetch(dir, remote, err);
	if (!rc)
		rc = list_tree(dir, &tree, err);
	/* the blobs of the profiles this store lacks */
	for (char *line = tree.buf, *nl; !rc && line && *line; line = nl ? nl + 1 : NULL) {
		char sha[41], digest[40];
		const char *path;
		int known;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!tree_line(line, sha, &path) || !path_digest(path, digest))
			continue;
		r->remote++;
		known = sonde_store__has_digest(s, digest);
		if (known < 0) {
			sonde_strbuf__addf(err, "cannot read the store's index");
			rc = known;
		} else if (known) {
			r->known++;
		} else {
			sonde_strbuf__addf(&want, "%s\n", sha);
		}
	}
	if (!rc && want.len) {
		const char *args[] = { "cat-file", "--batch", NULL };
		int g;

		fd = sonde_file__scratch("pull");
		rc = fd < 0 ? fd : sonde_file__write_all(fd, want.buf, want.len);
		if (!rc && lseek(fd, 0, SEEK_SET) < 0)
			rc = -errno;
		if (!rc && (g = git(dir, args, fd, &blobs, &e))) {
			sonde_strbuf__addf(err, "git cat-file failed: %s",
					   g < 0 ? strerror(-g) : last_line(&e));
			rc = -EIO;
		}
	}
	/* each "SHA blob SIZE\n" CONTENT "\n": registered as DIGEST.json */
	for (off = 0; !rc && off < blobs.len;) {
		char sha[41], kind[16], name[64], digest[40];
		unsigned long long size;
		char *nl = memchr(blobs.buf + off, '\n', blobs.len - off);
		struct sonde_strbuf why = SONDE_STRBUF_INIT;
		const char *content;
		int a;

		if (!nl || sscanf(blobs.buf + off, "%40s %15s %llu", sha, kind, &size) != 3 ||
		    strcmp(kind, "blob") || size > blobs.len - (size_t)(nl + 1 - blobs.buf)) {
			sonde_strbuf__addf(err, "git cat-file gave what is not a blob");
			rc = -EIO;
			break;
		}
		content = nl + 1;
		off = (size_t)(content - blobs.buf) + size + 1;
		sonde_store__digest(content, size, digest);
		snprintf(name, sizeof(name), "%s.json", digest);
		a = sonde_store__add_data(s, name, name, content, size, &why);
		if (a == 0) {
			r->taken++;
		} else if (a == -EEXIST) {
			r->known++;
		} else {
			r->refused++;
			sonde_strbuf__addf(err, "%s%s", err->len ? "; " : "",
					   why.len ? why.buf : strerror(-a));
		}
		sonde_strbuf__release(&why);
	}
	if (fd >= 0)
		close(fd);
	sonde_strbuf__release(&tree);
	sonde_strbuf__release(&want);
	sonde_strbuf__release(&blobs);
	sonde_strbuf__release(&e);
	return rc;
}

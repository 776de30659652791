/*
 * git.c - ask git (a child process) for commits. Output is read through a pipe;
 * git's stderr is discarded: "not a git repository" is an answer, not an error.
 */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sonde/file.h>
#include <sonde/git.h>

extern char **environ;

/* Start git -C dir ARGS... with its stdout on a pipe (*fd). Returns its pid or -errno. */
static pid_t spawn_git(const char *dir, const char *const *args, int *fd)
{
	const char *argv[16] = { "git", "-C", dir };
	posix_spawn_file_actions_t fa;
	int p[2], rc;
	size_t n = 3;
	pid_t pid;

	while (*args && n < 15)
		argv[n++] = *args++;
	argv[n] = NULL;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	/* each action may fail to allocate: git must never write on sonde's own stdout */
	rc = posix_spawn_file_actions_init(&fa);
	if (!rc) {
		if (!(rc = posix_spawn_file_actions_adddup2(&fa, p[1], 1)) &&
		    !(rc = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)) &&
		    !(rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)))
			rc = posix_spawnp(&pid, "git", &fa, NULL, (char *const *)argv, environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	close(p[1]);
	if (rc) {
		close(p[0]);
		return -rc;
	}
	*fd = p[0];
	return pid;
}

/*
 * Read a started git's stdout into out (NULL: discarded) and reap it. Its exit
 * status, or -ENOMEM when out could not hold all of it (an answer cut short is
 * no answer).
 */
static int finish_git(pid_t pid, int fd, struct sonde_strbuf *out)
{
	int status;

	for (;;) {
		char buf[4096];
		ssize_t got = read(fd, buf, sizeof(buf));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (out)
			sonde_strbuf__add(out, buf, (size_t)got);
	}
	close(fd);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (out && sonde_strbuf__error(out))
		return sonde_strbuf__error(out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Run git -C dir ARGS...; stdout into out. Returns git's exit status or -errno. */
static int run_git(const char *dir, const char *const *args, struct sonde_strbuf *out)
{
	int fd;
	pid_t pid = spawn_git(dir, args, &fd);

	return pid < 0 ? (int)pid : finish_git(pid, fd, out);
}

static const char *const resolve_head[] = { "rev-parse",	"--verify",	 "--quiet",
					    "--end-of-options", "HEAD^{commit}", NULL };
static const char *const status_args[] = { "status", "--porcelain", "--untracked-files=no", NULL };

int sonde_git__origin_start(struct sonde_git_origin *o, const char *dir)
{
	memset(o, 0, sizeof(*o));
	o->dirty = -ENOENT;
	o->pid[0] = spawn_git(dir, resolve_head, &o->fd[0]);
	if (o->pid[0] < 0) {
		/* no git installed: no origin; any other failure: no answer */
		if (o->pid[0] != -ENOENT)
			o->error = (int)o->pid[0];
		return (int)o->pid[0];
	}
	o->pid[1] = spawn_git(dir, status_args, &o->fd[1]);
	o->started = true;
	return 0;
}

void sonde_git__origin_finish(struct sonde_git_origin *o)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	int rc;

	if (!o->started)
		return;
	o->started = false;
	rc = finish_git(o->pid[0], o->fd[0], &sb);
	if (rc == 0 && sb.len >= 40) {
		memcpy(o->commit, sb.buf, 40);
		o->commit[40] = '\0';
	} else if (rc < 0) {
		o->error = rc;
	}
	sb.len = 0;
	if (o->pid[1] > 0) {
		rc = finish_git(o->pid[1], o->fd[1], &sb);
		o->dirty = rc == 0 ? sb.len > 0 : rc > 0 ? -ENOENT : rc;
	} else if (o->commit[0]) {
		o->dirty = o->pid[1]; /* git status could not be started */
	}
	if (o->commit[0] && o->dirty < 0 && o->dirty != -ENOENT)
		o->error = o->dirty;
	sonde_strbuf__release(&sb);
}

int sonde_git__resolve(const char *dir, const char *rev, char out[41])
{
	const char *args[] = { "rev-parse", "--verify", "--quiet", "--end-of-options", NULL, NULL };
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	char spec[256];
	int rc;

	out[0] = '\0';
	if ((size_t)snprintf(spec, sizeof(spec), "%s^{commit}", rev) >= sizeof(spec))
		return -ENOENT; /* no revision is that long */
	args[4] = spec;
	rc = run_git(dir, args, &sb);
	if (rc == 0 && sb.len >= 40) {
		memcpy(out, sb.buf, 40);
		out[40] = '\0';
	} else if (rc >= 0) {
		rc = -ENOENT;
	}
	sonde_strbuf__release(&sb);
	return rc;
}

int sonde_git__dirty(const char *dir)
{
	struct sonde_strbuf sb = SONDE_STRBUF_INIT;
	int rc = run_git(dir, status_args, &sb);

	if (rc == 0)
		rc = sb.len > 0;
	else if (rc > 0)
		rc = -ENOENT;
	sonde_strbuf__release(&sb);
	return rc;
}

int sonde_git__log(const char *dir, unsigned max, struct sonde_strbuf *out)
{
	char n[32];
	const char *args[] = { "log", n, "--format=%H%x09%s", NULL };
	int rc;

	snprintf(n, sizeof(n), "-%u", max);
	rc = run_git(dir, args, out);
	return rc > 0 ? -ENOENT : rc;
}

int sonde_git__ancestry(const char *dir, const char *commit, unsigned max, struct sonde_strbuf *out)
{
	char n[32];
	const char *args[] = { "rev-list", "--topo-order", n, commit, "--", NULL };
	int rc;

	snprintf(n, sizeof(n), "--max-count=%u", max);
	rc = run_git(dir, args, out);
	return rc > 0 ? -ENOENT : rc;
}

int sonde_git__exclude(const char *dir, const char *pattern)
{
	const char *args[] = { "rev-parse", "--path-format=absolute", "--git-path", "info/exclude",
			       NULL };
	struct sonde_strbuf path = SONDE_STRBUF_INIT;
	size_t plen = strlen(pattern), len = 0;
	char *old = NULL, *slash;
	const char *line;
	FILE *f;
	int rc = run_git(dir, args, &path);

	if (rc > 0 || (rc == 0 && !path.len))
		rc = -ENOENT;
	if (rc)
		goto out;
	while (path.len && path.buf[path.len - 1] == '\n')
		path.buf[--path.len] = '\0';
	/* a missing file is an empty list */
	rc = sonde_file__read(path.buf, &old, &len);
	if (rc && rc != -ENOENT)
		goto out;
	rc = 0;
	for (line = old; line && line < old + len;) {
		if (!strncmp(line, pattern, plen) && (line[plen] == '\n' || !line[plen]))
			goto out; /* there already: 0 */
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	slash = strrchr(path.buf, '/');
	if (slash) {
		*slash = '\0';
		mkdir(path.buf, 0755); /* info/ may be missing in a fresh clone */
		*slash = '/';
	}
	f = fopen(path.buf, "a");
	if (!f) {
		rc = -errno;
		goto out;
	}
	fprintf(f, "%s%s\n", len && old[len - 1] != '\n' ? "\n" : "", pattern);
	rc = fclose(f) ? -errno : 1;
out:
	sonde_strbuf__release(&path);
	free(old);
	return rc;
}

/*
 * env.c - the environment sonde gives a runtime, kept out of the target's sight.
 *
 * sonde starts the target with the runtime in LD_PRELOAD and its settings in
 * SONDE_<COLLECTOR>_* variables. A program that reads or copies its environment
 * must not find them there (heaptrack removes its own for the same reason): at
 * load, the runtime keeps a copy of them and takes them out of environ. They
 * go back into the environment of every program this process starts (the exec
 * family, posix_spawn, system, popen), so children are still followed, even
 * those started with an environment of their own.
 *
 * No malloc: the copies live in static buffers and the environments built for
 * children in anonymous mappings (rt_map_anon), so the memory runtime's hooks
 * never see sonde's own work. Not thread-safe against a thread that changes
 * the environment at the same time, like the C library's own functions.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rt.h"

#define MAX_KEPT   8
#define KEPT_BYTES 8192

extern char **environ;

static struct {
	char buf[KEPT_BYTES];
	size_t used;
	const char *vars[MAX_KEPT]; /* "NAME=value" in buf */
	size_t n;
	char preload[PATH_MAX + 12]; /* "LD_PRELOAD=" + this runtime's path */
	const char *self;	     /* this runtime's path, in preload */
	bool taken;		     /* rt_env_take has run */
	/* the real functions */
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			   const posix_spawnattr_t *, char *const[], char *const[]);
	int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const[], char *const[]);
	int (*system)(const char *);
	FILE *(*popen)(const char *, const char *);
} env;

static const char *keep(const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = env.buf + env.used;

	if (env.n == MAX_KEPT || env.used + len > sizeof(env.buf))
		return NULL;
	memcpy(p, s, len);
	env.used += len;
	env.vars[env.n++] = p;
	return p;
}

/* Remove environ[i], keeping the order (as unsetenv does, without allocating). */
static void drop(size_t i)
{
	for (; environ[i]; i++)
		environ[i] = environ[i + 1];
}

/* LD_PRELOAD's value without this runtime, into out (which has room for it). */
static void preload_without_self(const char *value, char *out)
{
	size_t ls = strlen(env.self);
	const char *p = value;

	*out = '\0';
	while (*p) {
		size_t len = strcspn(p, ": ");

		if (len && !(len == ls && !memcmp(p, env.self, ls))) {
			if (*out)
				strcat(out, ":");
			strncat(out, p, len);
		}
		p += len;
		p += strspn(p, ": ");
	}
}

void rt_env_take(const char *prefix)
{
	static char rest[PATH_MAX * 2];
	size_t i, lp = strlen(prefix);
	Dl_info di;

	if (dladdr((void *)rt_env_take, &di) && di.dli_fname) {
		snprintf(env.preload, sizeof(env.preload), "LD_PRELOAD=%s", di.dli_fname);
		env.self = env.preload + 11;
	}
	env.execve = dlsym(RTLD_NEXT, "execve");
	env.execvpe = dlsym(RTLD_NEXT, "execvpe");
	env.fexecve = dlsym(RTLD_NEXT, "fexecve");
	env.posix_spawn = dlsym(RTLD_NEXT, "posix_spawn");
	env.posix_spawnp = dlsym(RTLD_NEXT, "posix_spawnp");
	env.system = dlsym(RTLD_NEXT, "system");
	env.popen = dlsym(RTLD_NEXT, "popen");
	env.taken = true;
	for (i = 0; environ && environ[i];) {
		if (!strncmp(environ[i], prefix, lp) && keep(environ[i])) {
			drop(i);
			continue;
		}
		if (env.self && !strncmp(environ[i], "LD_PRELOAD=", 11) &&
		    strlen(environ[i]) < sizeof(rest) - 12) {
			preload_without_self(environ[i] + 11, rest + 11);
			if (!rest[11]) {
				drop(i);
				continue;
			}
			memcpy(rest, "LD_PRELOAD=", 11);
			environ[i] = rest; /* what else was preloaded stays */
		}
		i++;
	}
}

int rt_env_area(const char *name, struct sonde_ring_area **out)
{
	const char *path = rt_env_get(name);

	if (!path && !env.taken)
		return 0;
	*out = path ? sonde_ring_area__attach(path) : NULL;
	return *out ? 1 : -1;
}

const char *rt_env_get(const char *name)
{
	size_t i, ln = strlen(name);

	if (!env.taken) /* an event before the runtime's constructor ran */
		return getenv(name);
	for (i = 0; i < env.n; i++)
		if (!strncmp(env.vars[i], name, ln) && env.vars[i][ln] == '=')
			return env.vars[i] + ln + 1;
	return NULL;
}

/*
 * envp with this runtime's variables put back: an array (and, for a merged
 * LD_PRELOAD, its string) in one anonymous mapping of *len bytes. NULL: none
 * could be made (the child then gets envp as it is).
 */
static char **with_ours(char *const envp[], size_t *len)
{
	size_t n = 0, i, k = 0, ln = 0;
	char **out, *str;
	const char *old = NULL;

	for (; envp && envp[n]; n++)
		if (!strncmp(envp[n], "LD_PRELOAD=", 11))
			old = envp[n] + 11;
	if (old)
		ln = strlen(old);
	*len = (n + env.n + 2) * sizeof(char *) + sizeof(env.preload) + ln + 2;
	out = rt_map_anon(*len);
	if (!out)
		return NULL;
	str = (char *)(out + n + env.n + 2);
	for (i = 0; i < n; i++) {
		const char *eq = strchr(envp[i], '=');
		size_t j, nl = eq ? (size_t)(eq - envp[i]) : strlen(envp[i]);
		bool ours = false;

		for (j = 0; j < env.n && !ours; j++)
			ours = !strncmp(env.vars[j], envp[i], nl) && env.vars[j][nl] == '=';
		if (!ours && strncmp(envp[i], "LD_PRELOAD=", 11))
			out[k++] = envp[i]; /* ours and LD_PRELOAD are set below */
	}
	for (i = 0; i < env.n; i++)
		out[k++] = (char *)env.vars[i];
	if (env.self) {
		size_t ls = strlen(env.self);
		bool has = false;
		const char *p = old;

		while (p && *p && !has) {
			size_t l = strcspn(p, ": ");

			has = l == ls && !memcmp(p, env.self, ls);
			p += l;
			p += strspn(p, ": ");
		}
		if (has || !old || !*old)
			snprintf(str, sizeof(env.preload) + ln + 2, "LD_PRELOAD=%s",
				 has ? old : env.self);
		else
			snprintf(str, sizeof(env.preload) + ln + 2, "LD_PRELOAD=%s:%s", env.self,
				 old);
		out[k++] = str;
	} else if (old) {
		out[k++] = (char *)old - 11;
	}
	out[k] = NULL;
	return out;
}

/* Run call with envp extended; the mapping is given back after (exec: on failure). */
#define WITH_OURS(envp, expr)                                                                      \
	do {                                                                                       \
		size_t len_;                                                                       \
		char **e_ = with_ours((envp), &len_);                                              \
		int err_, rc_;                                                                     \
                                                                                                   \
		rc_ = (expr);                                                                      \
		err_ = errno;                                                                      \
		rt_unmap(e_, len_);                                                                \
		errno = err_;                                                                      \
		return rc_;                                                                        \
	} while (0)
#define ENV_OR(e_, envp) ((e_) ? (e_) : (char **)(envp))

RT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (!env.execve)
		return errno = ENOSYS, -1;
	WITH_OURS(envp, env.execve(path, argv, ENV_OR(e_, envp)));
}

RT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (!env.execvpe)
		return errno = ENOSYS, -1;
	WITH_OURS(envp, env.execvpe(file, argv, ENV_OR(e_, envp)));
}

RT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (!env.fexecve)
		return errno = ENOSYS, -1;
	WITH_OURS(envp, env.fexecve(fd, argv, ENV_OR(e_, envp)));
}

RT_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

RT_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* execl, execlp, execle: their arguments as an array, in an anonymous mapping. */
static char **arg_array(const char *arg0, va_list ap, size_t *len, char ***envp)
{
	va_list count;
	size_t n = 1, i;
	char **argv;

	va_copy(count, ap);
	while (va_arg(count, char *))
		n++;
	va_end(count);
	*len = (n + 1) * sizeof(char *);
	argv = rt_map_anon(*len);
	if (!argv)
		return NULL;
	argv[0] = (char *)arg0;
	for (i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *); /* the last is the NULL */
	if (envp)
		*envp = va_arg(ap, char **);
	return argv;
}

#define EXECL(name, call, with_env)                                                                \
	RT_EXPORT int name(const char *file, const char *arg, ...)                                 \
	{                                                                                          \
		char **argv, **envp = environ;                                                     \
		size_t len;                                                                        \
		va_list ap;                                                                        \
		int rc, err;                                                                       \
                                                                                                   \
		va_start(ap, arg);                                                                 \
		argv = arg_array(arg, ap, &len, (with_env) ? &envp : NULL);                        \
		va_end(ap);                                                                        \
		if (!argv)                                                                         \
			return errno = ENOMEM, -1;                                                 \
		rc = call(file, argv, envp);                                                       \
		err = errno;                                                                       \
		rt_unmap(argv, len);                                                               \
		errno = err;                                                                       \
		return rc;                                                                         \
	}

EXECL(execl, execve, false)
EXECL(execle, execve, true)
EXECL(execlp, execvpe, false)

RT_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	if (!env.posix_spawn)
		return ENOSYS;
	WITH_OURS(envp, env.posix_spawn(pid, path, fa, attr, argv, ENV_OR(e_, envp)));
}

RT_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	if (!env.posix_spawnp)
		return ENOSYS;
	WITH_OURS(envp, env.posix_spawnp(pid, file, fa, attr, argv, ENV_OR(e_, envp)));
}

/* system and popen start their shell with environ: ours are in it meanwhile. */
RT_EXPORT int system(const char *cmd)
{
	char **saved = environ;

	if (!env.system)
		return -1;
	if (!cmd)
		return env.system(cmd);
	{
		size_t len;
		char **e = with_ours(environ, &len);
		int rc;

		if (e)
			environ = e;
		rc = env.system(cmd);
		environ = saved;
		rt_unmap(e, len);
		return rc;
	}
}

RT_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	char **saved = environ, **e;
	size_t len;
	FILE *f;

	if (!env.popen)
		return NULL;
	e = with_ours(environ, &len);
	if (e)
		environ = e;
	f = env.popen(cmd, mode);
	environ = saved;
	rt_unmap(e, len);
	return f;
}

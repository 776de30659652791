/*
 * t-spawn.c - posix_spawn of itself with an environment of its own (no
 * LD_PRELOAD, no SONDE_*), then system(); each child prints what of sonde's it
 * finds in its environment and calls child_fn.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

static __attribute__((noinline)) void child_fn(void)
{
	__asm__ volatile("");
}

static __attribute__((noinline)) void parent_fn(void)
{
	__asm__ volatile("");
}

static void show_env(const char *who)
{
	char **e;
	int n = 0;

	for (e = environ; *e; e++)
		if (!strncmp(*e, "LD_PRELOAD=", 11) || !strncmp(*e, "SONDE_", 6)) {
			printf("%s sees %s\n", who, *e);
			n++;
		}
	printf("%s sees %d variables of sonde\n", who, n);
}

int main(int argc, char **argv)
{
	char *env[] = { "PATH=/usr/bin:/bin", "T_SPAWN=1", NULL };
	char *args[] = { argv[0], "child", NULL };
	char cmd[4200];
	pid_t pid;
	int st;

	if (argc > 1) {
		child_fn();
		show_env("child");
		return 0;
	}
	parent_fn();
	show_env("parent");
	fflush(stdout);
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, env) ||
	    waitpid(pid, &st, 0) != pid)
		return 1;
	snprintf(cmd, sizeof(cmd), "'%s' child", argv[0]);
	return system(cmd) == 0 ? 0 : 1;
}

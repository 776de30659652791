/*
 * cmd-status.c - `sonde status`: HEAD, then pending (N@p) and registered (N@i)
 * profiles of the store, and the Slurm batches `sonde run --slurm` submitted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>
#include "cli.h"

static const char usage[] = "usage: sonde status";

static void print_list(const char *title, const struct sonde_store_list *l, char kind)
{
	size_t i;

	printf("%s (%zu):\n", title, l->n);
	for (i = 0; i < l->n; i++) {
		const struct sonde_store_entry *e = &l->v[i];
		const char *base = strrchr(e->path, '/');
		char when[32];
		time_t t = (time_t)e->added;
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
		printf("  %zu@%c  %-8s %-10s %s  %s%s%s\n", i, kind,
		       e->collector ? e->collector : "?", e->type ? e->type : "?", when,
		       base ? base + 1 : e->path, e->workload && *e->workload ? "  workload " : "",
		       e->workload && *e->workload ? e->workload : "");
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* squeue's state of each task of job id still queued or running: {"N": "RUNNING"}; NULL: no answer.
 */
static json_t *queued(const char *id, char *why, size_t whylen)
{
	char tmp[] = "/tmp/sonde-squeue-XXXXXX", line[256], *bin = cli_which("squeue");
	char *const argv[] = { bin, "-h", "-r", "-j", (char *)id, "-o", "%K %T", NULL };
	json_t *o = NULL;
	FILE *f;
	int fd, rc;

	if (!bin) {
		snprintf(why, whylen, "squeue is not installed here");
		return NULL;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		free(bin);
		snprintf(why, whylen, "%s", strerror(errno));
		return NULL;
	}
	close(fd);
	rc = cli_run(NULL, argv, tmp, NULL);
	f = fopen(tmp, "re");
	unlink(tmp);
	free(bin);
	if (rc) {
		snprintf(why, whylen, "squeue failed (exit %d)%s%s", rc, f ? ": " : "",
			 f && fgets(line, sizeof(line), f) ? line : "");
		why[strcspn(why, "\n")] = '\0';
	} else if (f && (o = json_object())) {
		while (fgets(line, sizeof(line), f)) {
			char task[32], state[64];

			if (sscanf(line, "%31s %63s", task, state) == 2)
				json_object_set_new(o, task, json_string(state));
		}
	}
	if (f)
		fclose(f);
	return o;
}

/* The batches `sonde run --slurm` submitted: each task finished, failed, running or pending. */
static void slurm_batches(struct sonde_store *s)
{
	char dir[4096], **names = NULL;
	size_t n = 0, i;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/slurm", sonde_store__root(s));
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char **nv;

		if (e->d_name[0] == '.' || !(nv = realloc(names, (n + 1) * sizeof(*names))))
			continue;
		names = nv;
		if ((names[n] = strdup(e->d_name)))
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	printf("\nslurm batches (%zu):\n", n);
	for (i = 0; i < n; i++) {
		char path[8192], why[300] = "";
		json_t *b, *q, *t;
		const char *id;
		size_t k, fin = 0, fail = 0, run = 0, pend = 0, lost = 0, other = 0;
		struct sonde_strbuf lines = SONDE_STRBUF_INIT;

		snprintf(path, sizeof(path), "%s/%s/batch.json", dir, names[i]);
		b = json_load_file(path, 0, NULL);
		id = json_string_value(json_object_get(b, "job_id"));
		if (!id) {
			printf("  %s: no batch.json (a submission that did not finish)\n",
			       names[i]);
			json_decref(b);
			free(names[i]);
			continue;
		}
		q = queued(id, why, sizeof(why));
		json_array_foreach(json_object_get(b, "tasks"), k, t)
		{
			long long task = (long long)json_integer_value(json_object_get(t, "task"));
			char key[32], rcpath[8192];
			const char *st;
			FILE *f;
			int rc = -1;

			snprintf(rcpath, sizeof(rcpath), "%s/%s/task-%lld.rc", dir, names[i], task);
			f = fopen(rcpath, "re");
			if (f) {
				if (fscanf(f, "%d", &rc) != 1)
					rc = -1;
				fclose(f);
			}
			snprintf(key, sizeof(key), "%lld", task);
			st = json_string_value(json_object_get(q, key));
			if (rc == 0) {
				fin++;
				continue;
			}
			if (rc > 0)
				fail++;
			else if (st && !strcmp(st, "PENDING"))
				pend++;
			else if (st)
				run++;
			else if (q)
				lost++;
			else
				other++;
			if (rc > 0 || (!st && q))
				sonde_strbuf__addf(
					&lines,
					"    %s: task %lld (%s %s%s%s%s%s), %s%d, log "
					"%s/%s/task-%lld.log\n",
					rc > 0 ? "failed" : "lost", task,
					json_string_value(json_object_get(t, "collector")),
					json_string_value(json_object_get(t, "cmd")),
					*json_string_value(json_object_get(t, "args")) ? " " : "",
					json_string_value(json_object_get(t, "args")),
					*json_string_value(json_object_get(t, "workload")) ? " "
											   : "",
					json_string_value(json_object_get(t, "workload")),
					rc > 0 ? "exit " : "ended without a result: exit ", rc, dir,
					names[i], task);
		}
		printf("  job %s  %s  %zu task%s: %zu finished, %zu failed, %zu running, %zu "
		       "pending",
		       id, names[i], json_array_size(json_object_get(b, "tasks")),
		       json_array_size(json_object_get(b, "tasks")) == 1 ? "" : "s", fin, fail, run,
		       pend);
		if (lost)
			printf(", %zu lost", lost);
		if (other)
			printf(", %zu not known (%s)", other, why);
		printf("\n%s", lines.buf ? lines.buf : "");
		sonde_strbuf__release(&lines);
		json_decref(q);
		json_decref(b);
		free(names[i]);
	}
	free(names);
}

int cmd_status(int argc, char **argv)
{
	const struct sonde_option opts[] = { { .type = SONDE_OPT_END } };
	struct sonde_store_list pend, reg;
	struct sonde_store *s;
	char head[41];
	int first, code, rc;

	first = cli_parse("status", usage, opts, argc - 1, argv + 1, 0, NULL, &code);
	if (first < 0)
		return code;
	if (first < argc - 1)
		return cli_usage("status", "unexpected argument '%s'", argv[1 + first]);
	s = cli_open_store("status");
	if (!s)
		return EXIT_FAILURE_;
	printf("store: %s\n", sonde_store__root(s));
	rc = sonde_git__resolve(sonde_store__worktree(s), "HEAD", head);
	if (rc && rc != -ENOENT) {
		cli_error("status", "cannot ask git for HEAD: %s", strerror(-rc));
		sonde_store__free(s);
		return EXIT_FAILURE_;
	}
	if (rc) {
		printf("HEAD: none (not a git work tree with commits)\n");
	} else {
		int dirty = sonde_git__dirty(sonde_store__worktree(s));

		if (dirty < 0 && dirty != -ENOENT) {
			cli_error("status", "cannot ask git for changes: %s", strerror(-dirty));
			sonde_store__free(s);
			return EXIT_FAILURE_;
		}
		printf("HEAD: %s%s\n", head, dirty == 1 ? " (uncommitted changes)" : "");
	}
	rc = sonde_store__pending(s, &pend);
	if (rc) {
		cli_error("status", "cannot list pending profiles: %s", strerror(-rc));
		sonde_store__free(s);
		return EXIT_FAILURE_;
	}
	printf("\n");
	print_list("pending profiles", &pend, 'p');
	sonde_store_list__release(&pend);
	if (head[0] && (rc = sonde_store__registered(s, head, &reg))) {
		cli_error("status", "cannot list the registered profiles: %s", strerror(-rc));
		sonde_store__free(s);
		return EXIT_FAILURE_;
	}
	if (head[0]) {
		printf("\n");
		print_list("registered profiles of HEAD", &reg, 'i');
		sonde_store_list__release(&reg);
	}
	slurm_batches(s);
	sonde_store__free(s);
	return EXIT_OK;
}

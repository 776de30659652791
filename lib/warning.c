/*
 * warning.c - the closed list of measurement warnings and their fixes.
 */
#include <stddef.h>
#include <sonde/warning.h>

static const struct sonde_warning_info warnings[SONDE_WARN__COUNT] = {
	[SONDE_WARN_SHORT_RUN] = { "short-run",
				   "runs under 5 ms are dominated by process start-up; give the "
				   "command more work, or time a loop inside it" },
	[SONDE_WARN_COLD_FIRST_RUN] = { "cold-first-run",
					"use --warmup N to run the command before measuring, or "
					"--prepare CMD to reset caches before every run" },
	[SONDE_WARN_OUTLIERS] = { "outliers",
				  "close other programs, pin the command (taskset), and use more "
				  "runs (-r) so the outliers weigh less" },
	[SONDE_WARN_NONZERO_EXIT] = { "nonzero-exit",
				      "check that the command does what you mean; these runs "
				      "were measured because of --ignore-failure" },
	[SONDE_WARN_TIMED_OUT] = { "timed-out", "raise --timeout, or give the command less work" },
	[SONDE_WARN_INTERRUPTED] = { "interrupted",
				     "the profile holds the runs completed before the signal; "
				     "collect again for a full series" },
	[SONDE_WARN_LEFTOVER] = { "leftover-processes",
				  "the command left processes running in its group and sonde "
				  "killed them; make the command wait for its children" },
	[SONDE_WARN_EVENTS_DROPPED] = { "events-dropped",
					"give the rings more room with --ring-mib N (memory, "
					"trace), or leave out "
					"--drop-oldest so that a full ring waits instead" },
	[SONDE_WARN_DIRTY_TREE] = { "dirty-tree", "commit your changes so the profile matches its "
						  "origin commit" },
	[SONDE_WARN_ROWS_SAMPLED] = { "rows-sampled",
				      "raise --max-rows (0: every call) to keep a row per call" },
	[SONDE_WARN_RSS_NOT_MEASURED] = { "max-rss-not-measured",
					  "install sonde's runtime files, or set "
					  "SONDE_RUNTIME_DIR to the directory that holds "
					  "sonde-spawn" },
	[SONDE_WARN_BIMODAL] = { "bimodal",
				 "find what differs between the two kinds of run (caches, CPU "
				 "frequency, which core, the input) and fix it, or measure each "
				 "kind apart" },
	[SONDE_WARN_EVENTS_MISSED] = { "events-missed",
				       "the kernel skips some calls to a tracepoint's programs "
				       "while another tracer attaches to it or detaches from it: "
				       "do not start or stop perf, bpftrace or another sonde "
				       "during the run (some kernels also leave out switches "
				       "with no tracer attaching; perf sees the same gaps there, "
				       "docs/sched.md)" },
};

const struct sonde_warning_info *sonde_warning__info(enum sonde_warning w)
{
	if ((unsigned)w >= SONDE_WARN__COUNT)
		return NULL;
	return &warnings[w];
}

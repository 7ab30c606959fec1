/*
 * `tensorverbs faults`: the fault points this build knows (docs/faults.md),
 * one per line, with what a rule's arg means, whether the runner expects
 * transfers to survive the fault, its workload and whether real verbs can
 * inject it.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <tensorverbs/faults.h>

#include "cli.h"

static const char faults_usage[] =
	"usage: tensorverbs faults\n"
	"\n"
	"Lists every fault point: its name (for plans: scenario \"faults\",\n"
	"run --faults), whether a run must recover from it, the workload it\n"
	"belongs to (or any), whether real verbs can inject it (serve\n"
	"--faults) or only the simulator, what fires, and what a rule's\n"
	"\"arg\" means.  Columns are separated by two spaces or more.\n"
	"See docs/faults.md.\n";

int cli_faults(int argc, char **argv, const char *argv0)
{
	const struct tv_flt_point_info *pts;
	size_t n, width = 0;

	(void)argv0;
	if (argc > 1) {
		bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");

		fputs(faults_usage, help ? stdout : stderr);
		return help ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	pts = tv_flt_points(&n);
	for (size_t i = 0; i < n; i++)
		if (strlen(pts[i].name) > width)
			width = strlen(pts[i].name);
	printf("%-*s  %-8s  %-10s  %-10s  %s\n", (int)width, "POINT",
	       "RUN MUST", "WORKLOAD", "WHERE", "WHAT FIRES");
	for (size_t i = 0; i < n; i++) {
		printf("%-*s  %-8s  %-10s  %-10s  %s", (int)width, pts[i].name,
		       tv_tb_point_may_fail(pts[i].name) ? "may fail" :
							       "recover",
		       pts[i].workload ? pts[i].workload : "any",
		       pts[i].sim_only ? "sim only" : "sim and hw",
		       pts[i].description);
		if (pts[i].arg)
			printf("; arg: %s", pts[i].arg);
		printf("\n");
	}
	printf("\n%zu points.  \"may fail\": a receive may fail once it fired "
	       "(the data or a resource is gone);\n\"recover\": every receive "
	       "must still complete as if nothing happened.\n", n);
	return CLI_EXIT_OK;
}

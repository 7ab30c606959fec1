/*
 * This file is private to the tensorverbs CLI: the subcommands.  The CLI
 * parses arguments, prints, and picks exit statuses; everything else is
 * the testbed's (testbed.h) and the workloads' (workload.h).
 */
#ifndef TV_CLI_CLI_H
#define TV_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <tensorverbs/testbed.h>

/* Exit statuses of every subcommand. */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,   /* the run failed a check */
	CLI_EXIT_USAGE = 2,  /* bad command line or scenario */
	CLI_EXIT_CORRUPT = 3, /* corrupted bytes delivered, undetected */
};

int cli_run(int argc, char **argv, const char *argv0);
int cli_bench(int argc, char **argv, const char *argv0);
int cli_replay(int argc, char **argv, const char *argv0);
int cli_merge(int argc, char **argv, const char *argv0);
int cli_show(int argc, char **argv, const char *argv0);
int cli_faults(int argc, char **argv, const char *argv0);
int cli_swarm(int argc, char **argv, const char *argv0);
int cli_shrink(int argc, char **argv, const char *argv0);
int cli_validate(int argc, char **argv, const char *argv0);

/* w as one shell word: quoted only when the shell would split it. */
void cli_put_shell_word(FILE *out, const char *w);

/*
 * "[TV_BREAK=b ]ARGV0 run [FILE] [--faults F] --seed S", each word quoted
 * for the shell as needed (malloc'd), or NULL.
 */
char *cli_repro_command(const char *breakage, const char *argv0,
			const char *file, const char *faults, uint64_t seed);

/* Strict unsigned parse of a command-line number; -EINVAL if bad. */
int cli_parse_u64(const char *s, uint64_t *v_p);

/*
 * TV_BREAK from the environment (tests of the test tools only): NULL when
 * unset or empty, else a name some workload knows.  -EINVAL: printed as
 * "tensorverbs CMD: bad TV_BREAK 'x' (known: ...)".
 */
int cli_breakage_from_env(const char *cmd, const char **name_p);

/*
 * A --faults option (text) extends the scenario's plan, its rules winning
 * per point; errors are printed as "tensorverbs CMD: ...".  NULL: nothing.
 */
int cli_apply_faults(struct tv_tb_scenario *sc, const char *text,
		     const char *cmd);

#endif /* TV_CLI_CLI_H */

/*
 * This file is private to the tensorverbs CLI: the subcommands.
 */
#ifndef TV_CLI_CLI_H
#define TV_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "runner.h"
#include "scenario.h"

/* Exit statuses of every subcommand. */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,   /* the run failed a check */
	CLI_EXIT_USAGE = 2,  /* bad command line or scenario */
};

int cli_run(int argc, char **argv, const char *argv0);
int cli_bench(int argc, char **argv, const char *argv0);
int cli_replay(int argc, char **argv, const char *argv0);
int cli_show(int argc, char **argv, const char *argv0);
int cli_faults(int argc, char **argv, const char *argv0);

/* The built-in demo scenario, as JSON text. */
extern const char cli_demo_scenario[];

/* w as one shell word: quoted only when the shell would split it. */
void cli_put_shell_word(FILE *out, const char *w);

/* Strict unsigned parse of a command-line number; -EINVAL if bad. */
int cli_parse_u64(const char *s, uint64_t *v_p);
/* Human-readable bytes ("4.0 KiB") and nanoseconds ("12.3 us"). */
void cli_fmt_bytes(double bytes, char *buf, size_t cap);
void cli_fmt_ns(double ns, char *buf, size_t cap);
void cli_fmt_rate(double per_sec, char *buf, size_t cap);

#endif /* TV_CLI_CLI_H */

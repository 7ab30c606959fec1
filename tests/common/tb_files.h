/*
 * Internal test header (tests/ only, not part of the library's API): the
 * testbed suites' files and texts.  One temporary folder per test
 * process (Check runs each test in a process of its own), lines of a
 * trace or recording as strings, and scenario texts that must be refused.
 */
#ifndef TV_TESTS_TB_FILES_H
#define TV_TESTS_TB_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/testbed.h>

/* The folder: made fresh, removed with everything in it, a path inside. */
void mk_tmpdir(void);
void rm_tmpdir(void);
const char *tmpdir_path(void);
void tmp_path(char *buf, size_t cap, const char *name);

void write_file(const char *path, const char *text);
/* The whole file, NUL-terminated (free it). */
char *read_all(const char *path);

/* Line n (0-based) of text, a new string without the newline. */
char *line_of(const char *text, int n);
int count_lines(const char *text);
/* text with line n replaced by repl (NULL: dropped), extra appended. */
char *edit_lines(const char *text, int n, const char *repl,
		 const char *extra);

/* A scenario text and a part of the error that names its culprit. */
struct bad_sc {
	const char *text;
	const char *msg;
};

/* Each text is refused (-EINVAL, no scenario) with its msg in the error. */
void check_bad(const struct bad_sc *t, size_t n, const char *what);

/* Loads text (origin "cov") and runs it with seed and breakage (or NULL). */
struct tv_tb_run *run_scenario_text(const char *text, uint64_t seed,
				    const char *breakage,
				    struct tv_tb_scenario **sc_p);
/* The same through ops (a copy of the scenario's workload, hooked). */
struct tv_tb_run *run_scenario_ops(const char *text, uint64_t seed,
				   const struct tv_tb_workload_ops *ops,
				   struct tv_tb_scenario **sc_p);
/*
 * This process's stdout into path (created) until stdout_back(saved),
 * saved being what stdout_to returned: for what a call prints.
 */
int stdout_to(const char *path);
void stdout_back(int saved);
int stderr_to(const char *path);
void stderr_back(int saved);
/* text run with seed (and breakage) into a trace at tmpdir/name. */
void trace_text(const char *text, const char *name, uint64_t seed,
		const char *breakage, char *path, size_t cap);
/* text run with seed into a recording at tmpdir/name, labelled backend. */
void record_text(const char *text, const char *name, uint64_t seed,
		 const char *backend, char *path, size_t cap);
/*
 * sc run with seed into a recording kept in memory (what a rank hands
 * rank 0 under mpirun): its bytes, *len_p long.  (Its users have
 * testbed/ on their include path: tb_record_finish_mem is internal.)
 */
char *record_mem(struct tv_tb_scenario *sc, uint64_t seed, size_t *len_p);
/* replay of path ends in state, its error holding msg (unless NULL). */
void replay_expect(const char *path, enum tv_tb_replay_state state,
		   const char *msg);

/* How many of the run's kept failure texts hold part. */
size_t run_fails_with(const struct tv_tb_run *run, const char *part);
/* The run's summary (tv_tb_run_print_summary), as a new string. */
char *run_summary_text(const struct tv_tb_run *run);
/*
 * True when this machine has an RDMA device: a refusal for want of one is
 * then not what a test may expect (it says so and skips that case).
 */
bool have_rdma_device(void);

#endif /* TV_TESTS_TB_FILES_H */

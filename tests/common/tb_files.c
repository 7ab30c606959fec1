/* The testbed suites' files and texts (tb_files.h). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorverbs/testbed.h>

#include "tb_files.h"
#include "tb_int.h"

static char tmpdir[64];

void mk_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tv_tb_test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

void rm_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%.60s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

const char *tmpdir_path(void)
{
	return tmpdir;
}

void tmp_path(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%.60s/%.60s", tmpdir, name);
}

void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

char *line_of(const char *text, int n)
{
	const char *p = text, *e;

	for (int i = 0; i < n; i++) {
		p = strchr(p, '\n');
		/* Not ck_assert: Check writes to its pipe at every assertion. */
		if (!p)
			ck_abort_msg("the text has no line %d", n);
		p++;
	}
	e = strchr(p, '\n');
	return strndup(p, e ? (size_t)(e - p) : strlen(p));
}

int count_lines(const char *text)
{
	int n = 0;

	for (const char *p = text; *p; p++)
		n += *p == '\n';
	return n;
}

char *edit_lines(const char *text, int n, const char *repl, const char *extra)
{
	size_t cap = strlen(text) + (repl ? strlen(repl) : 0) +
		     (extra ? strlen(extra) : 0) + 4;
	char *out = calloc(1, cap), *o = out;
	const char *p = text;

	ck_assert_ptr_nonnull(out);
	for (int i = 0; *p; i++) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (i != n) {
			memcpy(o, p, len);
			o += len;
			*o++ = '\n';
		} else if (repl) {
			o += sprintf(o, "%s\n", repl);
		}
		p += len + (e ? 1 : 0);
	}
	if (extra)
		strcpy(o, extra);
	return out;
}

void check_bad(const struct bad_sc *t, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		struct tv_tb_scenario *sc = NULL;
		char err[TV_TB_ERR_MAX];
		int rc = tv_tb_scenario_load_string(t[i].text, what, &sc, err);

		ck_assert_msg(rc == -EINVAL, "%s[%zu]: rc %d (%s)", what, i, rc,
			      rc ? err : "accepted");
		ck_assert_ptr_null(sc);
		ck_assert_msg(strstr(err, t[i].msg) != NULL,
			      "%s[%zu]: err '%s' lacks '%s'", what, i, err,
			      t[i].msg);
	}
}

/* text loaded, run with seed and breakage; through ops when not NULL. */
static struct tv_tb_run *run_text(const char *text, uint64_t seed,
				  const char *breakage,
				  const struct tv_tb_workload_ops *ops,
				  struct tv_tb_scenario **sc_p)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX];

	ck_assert_msg(tv_tb_scenario_load_string(text, "cov", &sc, err) == 0,
		      "%s", err);
	if (ops) {
		/* Its parsed data is the scenario's workload's: the same. */
		ck_assert_ptr_eq(sc->ops, tv_tb_workload_find(ops->name));
		sc->ops = ops;
	}
	tv_tb_run_opts_init(&o, sc);
	o.seed = seed;
	o.breakage = breakage;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	*sc_p = sc;
	return run;
}

struct tv_tb_run *run_scenario_text(const char *text, uint64_t seed,
				    const char *breakage,
				    struct tv_tb_scenario **sc_p)
{
	return run_text(text, seed, breakage, NULL, sc_p);
}

struct tv_tb_run *run_scenario_ops(const char *text, uint64_t seed,
				   const struct tv_tb_workload_ops *ops,
				   struct tv_tb_scenario **sc_p)
{
	return run_text(text, seed, NULL, ops, sc_p);
}

/* Standard output or error (fd 1 or 2) into path; the saved fd back. */
static int fd_to(int which, FILE *stream, const char *path)
{
	int saved, fd;

	fflush(stream);
	saved = dup(which);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(fd, 0);
	dup2(fd, which);
	close(fd);
	return saved;
}

static void fd_back(int which, FILE *stream, int saved)
{
	fflush(stream);
	dup2(saved, which);
	close(saved);
}

int stdout_to(const char *path)
{
	return fd_to(1, stdout, path);
}

void stdout_back(int saved)
{
	fd_back(1, stdout, saved);
}

int stderr_to(const char *path)
{
	return fd_to(2, stderr, path);
}

void stderr_back(int saved)
{
	fd_back(2, stderr, saved);
}

void trace_text(const char *text, const char *name, uint64_t seed,
		const char *breakage, char *path, size_t cap)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_trace *t;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX];

	tmp_path(path, cap, name);
	ck_assert_msg(tv_tb_scenario_load_string(text, name, &sc, err) == 0,
		      "%s", err);
	ck_assert_int_eq(tv_tb_trace_create(path, sc, "test.json", seed,
					    breakage, &t), 0);
	tv_tb_run_opts_init(&o, sc);
	o.seed = seed;
	o.trace = t;
	o.breakage = breakage;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_int_eq(tv_tb_trace_finish(t, run), 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}

void record_text(const char *text, const char *name, uint64_t seed,
		 const char *backend, char *path, size_t cap)
{
	struct tv_tb_scenario *sc;
	struct tv_tb_tap *tap;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char err[TV_TB_ERR_MAX];

	tmp_path(path, cap, name);
	ck_assert_msg(tv_tb_scenario_load_string(text, name, &sc, err) == 0,
		      "%s", err);
	ck_assert_int_eq(tv_tb_record_create(path, sc, "test.json", seed,
					     backend, &tap), 0);
	tv_tb_run_opts_init(&o, sc);
	o.seed = seed;
	o.tap = tap;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_int_eq(tv_tb_record_finish(tap, tv_tb_run_result(run),
					     tv_tb_run_failures(run)), 0);
	tv_tb_run_free(run);
	tv_tb_scenario_free(sc);
}

char *record_mem(struct tv_tb_scenario *sc, uint64_t seed, size_t *len_p)
{
	struct tv_tb_tap *tap;
	struct tv_tb_run_opts o;
	struct tv_tb_run *run;
	char *buf = NULL;

	ck_assert_int_eq(tv_tb_record_create("unused.jsonl", sc, NULL, seed,
					     "ibverbs", &tap), 0);
	tv_tb_run_opts_init(&o, sc);
	o.seed = seed;
	o.tap = tap;
	ck_assert_int_eq(tv_tb_run(sc, &o, &run), 0);
	ck_assert_int_eq(tb_record_finish_mem(tap, tv_tb_run_result(run),
					      tv_tb_run_failures(run), &buf,
					      len_p), 0);
	tv_tb_run_free(run);
	return buf;
}

void replay_expect(const char *path, enum tv_tb_replay_state state,
		   const char *msg)
{
	struct tv_tb_replay_report rep;

	memset(&rep, 0, sizeof(rep));
	ck_assert_int_eq(tv_tb_replay(path, &rep), 0);
	ck_assert_msg(rep.state == state, "%s: state %d, err '%s'", path,
		      rep.state, rep.err);
	if (msg)
		ck_assert_msg(strstr(rep.err, msg) != NULL,
			      "%s: err '%s' lacks '%s'", path, rep.err, msg);
	tv_tb_replay_report_free(&rep);
}

bool have_rdma_device(void)
{
	return access("/sys/class/infiniband", F_OK) == 0;
}

size_t run_fails_with(const struct tv_tb_run *run, const char *part)
{
	const struct tv_tb_failures *f = tv_tb_run_failures(run);
	size_t n = 0;

	for (size_t i = 0; i < f->count && i < TV_TB_FAILURES_KEPT; i++)
		if (f->msgs[i] && strstr(f->msgs[i], part))
			n++;
	return n;
}

char *run_summary_text(const struct tv_tb_run *run)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(out);
	tv_tb_run_print_summary(run, out);
	ck_assert_int_eq(fclose(out), 0);
	return buf;
}

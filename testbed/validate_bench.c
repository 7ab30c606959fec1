/*
 * tensorverbs validate, the benchmarks (docs/validate.md): where perftest
 * is installed and two devices exist, `bench port` beside ib_write_bw per
 * size and `bench gather` beside ib_read_bw's message rate, in the same
 * run.  Short: a check that the figures are sane, not a measurement
 * campaign (ci/rxe/bench-*.sh are that).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tb_int.h"
#include "validate_int.h"

#define SEC 1000000000ull

bool val_in_path(const char *tool)
{
	const char *path = getenv("PATH");
	char buf[4096], *save = NULL, *dir;

	snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/bin:/bin");
	for (dir = strtok_r(buf, ":", &save); dir;
	     dir = strtok_r(NULL, ":", &save)) {
		char f[4200];

		snprintf(f, sizeof(f), "%s/%s", dir, tool);
		if (!access(f, X_OK))
			return true;
	}
	return false;
}

/* Column col (1-based) of the line whose first field is first, or -1. */
static double field(const char *log, const char *first, int col)
{
	FILE *f = fopen(log, "r");
	char line[1024];
	double v = -1;

	if (!f)
		return -1;
	while (v < 0 && fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok = strtok_r(line, " \t\n", &save);

		if (!tok || strcmp(tok, first))
			continue;
		for (int c = 2; (tok = strtok_r(NULL, " \t\n", &save)); c++)
			if (c == col) {
				v = strtod(tok, NULL);
				break;
			}
	}
	fclose(f);
	return v;
}

/* perftest's argv: tool, our device (pair[me]), its GID, port, args. */
static size_t perftest_argv(struct tv_tb_validation *v, const char *tool,
			    int me, char *const *args, char *port, char *gid,
			    char **av)
{
	size_t a = 9;

	snprintf(gid, 8, "%u", v->pair[me].gid_index);
	av[0] = (char *)tool;
	av[1] = "-d";
	av[2] = v->pair[me].name;
	av[3] = "-x";
	av[4] = gid;
	av[5] = "-p";
	av[6] = port;
	av[7] = "-F";
	av[8] = "--report_gbits";
	for (size_t k = 0; args[k] && a < 22; k++)
		av[a++] = args[k];
	av[a] = NULL;
	return a;
}

int val_perftest_server(struct tv_tb_validation *v, const char *tool,
			const char *tag, char *const *args, uint32_t port)
{
	char p[8], gid[8], slog[700];
	char *sv[24];

	snprintf(p, sizeof(p), "%u", port);
	perftest_argv(v, tool, 1, args, p, gid, sv);
	val_path(slog, sizeof(slog), "%s/logs/%s.server.log", v->dir, tag);
	return val_spawn_node(sv, NULL, slog);
}

int val_perftest_client(struct tv_tb_validation *v, const char *tool,
			const char *tag, char *const *args, uint32_t port,
			char *log, size_t cap)
{
	char p[8], gid[8];
	char *cv[24];
	size_t a;
	int rc = -1;

	snprintf(p, sizeof(p), "%u", port);
	a = perftest_argv(v, tool, 0, args, p, gid, cv);
	cv[a] = v->pair[1].ip;
	cv[a + 1] = NULL;
	val_path(log, cap, "%s/logs/%s.log", v->dir, tag);
	/* The client may come before the server listens: a few tries. */
	for (int t = 0; t < 10 && rc && !val_stopped(); t++) {
		usleep(300000);
		rc = val_run(cv, NULL, log, 120 * SEC);
	}
	return rc;
}

/* tool's server on pair[1], its client on pair[0]: 0 or an error. */
static int perftest(struct tv_tb_validation *v, const char *tool,
		    const char *tag, char *const *args, char *log, size_t cap)
{
	uint32_t port = v->next_port++;
	int spid, rc;

	if (v->hosts)
		return val_mpi_perftest(v, tool, tag, args, port, log, cap);
	spid = val_perftest_server(v, tool, tag, args, port);
	if (spid < 0)
		return spid;
	rc = val_perftest_client(v, tool, tag, args, port, log, cap);
	val_reap_nodes(&spid, 1, val_now_ns() + 10 * SEC);
	return rc;
}

int val_bench_run(struct tv_tb_validation *v, char *const *args, int node,
		  uint32_t port, const char *tag, char *log, size_t cap)
{
	char a0[64], a1[64], nd[8];
	char *argv[26] = { (char *)(v->opts->self ? v->opts->self :
				    "/proc/self/exe"), "bench" };
	char env[96];
	size_t a = 2;

	snprintf(a0, sizeof(a0), "%s:%u", v->pair[0].ip, port);
	snprintf(a1, sizeof(a1), "%s:%u", v->pair[1].ip, port + 1);
	for (size_t k = 0; args[k] && a < 19; k++)
		argv[a++] = args[k];
	argv[a++] = "--addr0";
	argv[a++] = a0;
	argv[a++] = "--addr1";
	argv[a++] = a1;
	if (node >= 0) {
		snprintf(nd, sizeof(nd), "%d", node & 1);
		argv[a++] = "--node";
		argv[a++] = nd;
		val_path(log, cap, "%s/logs/%s.%d.log", v->dir, tag, node);
	} else {
		val_path(log, cap, "%s/logs/%s.log", v->dir, tag);
	}
	snprintf(env, sizeof(env), "RDMA_DEVICE=%s",
		 v->pair[node > 0 ? 1 : 0].name);
	return val_run(argv, node >= 0 ? env : NULL, log, 600 * SEC);
}

static int ours(struct tv_tb_validation *v, char *const *args,
		const char *tag, char *log, size_t cap)
{
	uint32_t port = v->next_port;

	v->next_port += 2;
	if (v->hosts)
		return val_mpi_bench(v, args, port, tag, log, cap);
	return val_bench_run(v, args, -1, port, tag, log, cap);
}

static const char *const sizes[] = { "4096", "65536", "1048576" };

/* ib_write_bw at each size, bytes/s (-1: it failed). */
static int write_bw(struct tv_tb_validation *v, double *bw)
{
	char plog[600], tag[64];

	for (size_t i = 0; i < 3; i++) {
		char *pa[] = { "-s", (char *)sizes[i], "-n", "500", NULL };

		snprintf(tag, sizeof(tag), "ib_write_bw_%s", sizes[i]);
		if (perftest(v, "ib_write_bw", tag, pa, plog, sizeof(plog)))
			return -EIO;
		bw[i] = field(plog, sizes[i], 4) * 1e9 / 8;
	}
	return 0;
}

/* Our bandwidth per size from `PREFIX bw SIZE BYTES_PER_S` lines. */
static void our_bw(const char *log, const char *prefix, double *bw)
{
	FILE *f = fopen(log, "r");
	char line[256], want[32];
	uint64_t size;
	double bps;

	snprintf(want, sizeof(want), "%s bw %%" SCNu64 " %%lf", prefix);
	for (size_t i = 0; i < 3; i++)
		bw[i] = -1;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, want, &size, &bps) != 2)
			continue;
		for (size_t i = 0; i < 3; i++)
			if (size == strtoull(sizes[i], NULL, 10))
				bw[i] = bps;
	}
	if (f)
		fclose(f);
}

/* A protocol's bandwidth per size beside ib_write_bw's. */
static void bench_bw(struct tv_tb_validation *v, const char *proto,
		     const char *what, char *const *args, const double *wbw,
		     int wrc)
{
	struct val_series *s = &v->series[v->nseries];
	char log[600], tag[64], name[96];
	uint64_t t0 = val_now_ns();
	double ours_bw[3] = { -1, -1, -1 };
	int rc;

	snprintf(tag, sizeof(tag), "bench_%s", proto);
	rc = wrc ? wrc : ours(v, args, tag, log, sizeof(log));
	snprintf(name, sizeof(name), "bench %s beside ib_write_bw", proto);
	if (!rc) {
		our_bw(log, !strcmp(proto, "port") ? "bench-port" : "bench-rxe",
		       ours_bw);
		snprintf(s->what, sizeof(s->what), "%s vs ib_write_bw", what);
		snprintf(s->unit, sizeof(s->unit), "MB/s");
		for (size_t i = 0; i < 3; i++) {
			snprintf(s->label[i], sizeof(s->label[i]), "%s B",
				 sizes[i]);
			s->ours[i] = ours_bw[i] / 1e6;
			s->perftest[i] = wbw[i] / 1e6;
		}
		s->n = 3;
		v->nseries++;
	}
	if (rc || ours_bw[2] <= 0 || wbw[2] <= 0)
		val_add(v, "benchmark", name, VAL_FAIL, t0, "a tool failed or "
			"reported nothing (logs/%s.log, logs/ib_write_bw_*)",
			tag);
	else
		val_add(v, "benchmark", name, VAL_PASS, t0,
			"1 MiB at %.2fx ib_write_bw", ours_bw[2] / wbw[2]);
}

static void bench_gather(struct tv_tb_validation *v)
{
	static char *args[] = { "gather", "--total", "65536", NULL };
	static char *q8[] = { "-s", "2048", "-q", "8", "-n", "20000", NULL };
	static char *q1[] = { "-s", "2048", "-q", "1", "-n", "20000", NULL };
	struct val_series *s = &v->series[v->nseries];
	char log[600], l8[600], l1[600];
	uint64_t t0 = val_now_ns();
	int rc = ours(v, args, "bench_gather", log, sizeof(log));

	if (!rc)
		rc = perftest(v, "ib_read_bw", "ib_read_bw_q8", q8, l8,
			      sizeof(l8));
	if (!rc)
		rc = perftest(v, "ib_read_bw", "ib_read_bw_q1", q1, l1,
			      sizeof(l1));
	snprintf(s->what, sizeof(s->what), "gather rows/s vs ib_read_bw msg/s");
	snprintf(s->unit, sizeof(s->unit), "rows/s");
	if (!rc) {
		s->n = 2;
		snprintf(s->label[0], sizeof(s->label[0]), "8 QPs x 128");
		snprintf(s->label[1], sizeof(s->label[1]), "1 QP x 128");
		s->ours[0] = field(log, "bench-gather", 3);
		s->perftest[0] = field(l8, "2048", 5) * 1e6;
		s->perftest[1] = field(l1, "2048", 5) * 1e6;
		/* bench-gather lines: the 1-QP configuration is the second. */
		{
			FILE *f = fopen(log, "r");
			char line[256], name[32];
			double r;

			while (f && fgets(line, sizeof(line), f))
				if (sscanf(line, "bench-gather %31s %lf", name,
					   &r) == 2 && !strcmp(name, "1qp-pl128"))
					s->ours[1] = r;
			if (f)
				fclose(f);
		}
		v->nseries++;
	}
	val_add(v, "benchmark", "bench gather beside ib_read_bw",
		rc || s->ours[0] <= 0 ? VAL_FAIL : VAL_PASS, t0,
		rc ? "a tool failed (logs/bench_gather.log, logs/ib_read_bw_*)" :
		"8 QPs x 128: %.2fx ib_read_bw's message rate",
		s->perftest[0] > 0 ? s->ours[0] / s->perftest[0] : 0.0);
}

void val_benchmarks(struct tv_tb_validation *v)
{
	const char *why = NULL;

	if (!v->opts->bench)
		why = "not asked for (--no-bench)";
	else if (!v->have_pair)
		why = v->hosts ? "needs a device with a RoCE IPv4 address on "
			"ranks 0 and 1" : "needs two devices with RoCE IPv4 "
			"addresses";
	else if (!val_mpi_have(v, "ib_write_bw") ||
		 !val_mpi_have(v, "ib_read_bw"))
		why = v->hosts ? "perftest is not installed on every rank "
			"(ib_write_bw, ib_read_bw)" : "perftest is not "
			"installed (ib_write_bw, ib_read_bw)";
	if (why) {
		val_add(v, "benchmark", "benchmarks beside perftest", VAL_SKIP,
			0, "%s", why);
		return;
	}
	static char *port_args[] = { "port", "--sizes", "4096,65536,1048576",
				     "--bytes", "33554432", "--lat-iters",
				     "100", "--allreduce", "1048576", NULL };
	static char *rxe_args[] = { "rxe", "--sizes", "4096,65536,1048576",
				    "--bytes", "33554432", "--lat-iters",
				    "100", NULL };
	double wbw[3] = { -1, -1, -1 };
	int wrc;

	if (val_stopped())
		return;
	wrc = write_bw(v, wbw);
	if (!val_stopped())
		bench_bw(v, "rxe", "rendezvous fetch", rxe_args, wbw, wrc);
	if (!val_stopped())
		bench_bw(v, "port", "port put", port_args, wbw, wrc);
	if (!val_stopped())
		bench_gather(v);
}

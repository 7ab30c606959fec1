/*
 * tensorverbs validate across hosts (docs/validate.md, docs/multihost.md):
 * `mpirun -np N tensorverbs validate`, a rank per host.  Rank 0 drives
 * the same checks as on one host and writes the report; the other ranks
 * check their own devices (their checks join rank 0's list, named by
 * rank and host), then serve rank 0's jobs: each job is broadcast, every
 * rank does its share with its own processes, and the results are
 * combined with a collective, so the ranks meet at every job and none
 * runs ahead.  Scenario node j runs on rank j mod N, on that rank's
 * device (j / N) mod its devices; a benchmark runs node 0 on rank 0 and
 * node 1 on rank 1 (`bench NAME --node`), a perftest pair its server on
 * rank 1.  The scenario's bytes travel with the job: only rank 0 needs
 * the scenario folders.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tb_int.h"
#include "validate_int.h"

#define SEC 1000000000ull
#define JOB_ARGS 16
#define JOB_ARG_BYTES 64
#define JOB_FILE_MAX (1u << 20)

enum job_kind { JOB_DONE = 1, JOB_NODES, JOB_PERFTEST, JOB_BENCH, JOB_HAVE };

struct val_job {
	uint32_t kind;
	uint32_t nodes;
	uint32_t port;
	uint32_t file_len;
	char tag[200];
	char tool[32];
	char args[JOB_ARGS][JOB_ARG_BYTES]; /* "" ends the list */
};

/* A rank's device checks, as they travel to rank 0. */
#define HOST_CHECKS 32
struct host_checks {
	uint32_t n;
	struct val_check c[HOST_CHECKS];
};

/* ---- the hosts ---------------------------------------------------------------- */

static int hosts_gather(struct tv_tb_validation *v, struct host_checks **all_p)
{
	struct val_host mine = { .ndevs = (uint32_t)v->ndevs };
	struct host_checks *hc = calloc(1, sizeof(*hc));
	struct host_checks *all = calloc(v->size, sizeof(*all));

	v->hosts = calloc(v->size, sizeof(*v->hosts));
	/* Every rank or none: a rank that left here alone would leave the
	 * others in the Allgather for ever. */
	if (!tb_mpi_min(hc && all && v->hosts)) {
		free(hc);
		free(all);
		return -ENOMEM;
	}
	gethostname(mine.name, sizeof(mine.name) - 1);
	memcpy(mine.devs, v->devs, v->ndevs * sizeof(v->devs[0]));
	tb_mpi_allgather(&mine, sizeof(mine), v->hosts);
	hc->n = v->nchecks < HOST_CHECKS ? (uint32_t)v->nchecks : HOST_CHECKS;
	memcpy(hc->c, v->checks, hc->n * sizeof(hc->c[0]));
	tb_mpi_allgather(hc, sizeof(*hc), all);
	free(hc);
	*all_p = all;
	return 0;
}

/* Rank 0: the others' checks, each named by its rank and host. */
static void hosts_checks(struct tv_tb_validation *v,
			 const struct host_checks *all)
{
	char name[192]; /* val_add keeps what fits its 128 bytes */

	for (uint32_t r = 1; r < v->size; r++)
		for (uint32_t i = 0; i < all[r].n && i < HOST_CHECKS; i++) {
			const struct val_check *c = &all[r].c[i];

			snprintf(name, sizeof(name), "rank %u (%.24s): %s", r,
				 v->hosts[r].name, c->name);
			val_add(v, c->group, name, c->status, 0, "%s",
				c->detail);
			v->checks[v->nchecks - 1].secs = c->secs;
		}
}

int val_mpi_hosts(struct tv_tb_validation *v)
{
	struct host_checks *all = NULL;
	uint32_t without = 0;
	int ret = hosts_gather(v, &all);

	if (ret)
		return ret;
	if (!v->rank)
		hosts_checks(v, all);
	free(all);
	for (uint32_t r = 0; r < v->size; r++) {
		v->hosts[r].ndevs = v->hosts[r].ndevs > VAL_MAX_DEVS ?
					    VAL_MAX_DEVS : v->hosts[r].ndevs;
		without += !v->hosts[r].ndevs;
	}
	/* A scenario needs a device on every rank, as its nodes go round. */
	if (without)
		v->ndevs = 0;
	v->have_pair = v->size >= 2 && v->hosts[0].ndevs && v->hosts[1].ndevs;
	if (v->have_pair) {
		v->pair[0] = v->hosts[0].devs[0];
		v->pair[1] = v->hosts[1].devs[0];
	}
	return 0;
}

/* ---- jobs ---------------------------------------------------------------------- */

static void job_args(struct val_job *j, char *const *args)
{
	for (size_t k = 0; args && args[k] && k < JOB_ARGS - 1; k++)
		snprintf(j->args[k], JOB_ARG_BYTES, "%s", args[k]);
}

/* The job's arguments as an argv (NULL-terminated). */
static void job_argv(struct val_job *j, char **av)
{
	size_t k = 0;

	for (; k < JOB_ARGS - 1 && j->args[k][0]; k++)
		av[k] = j->args[k];
	av[k] = NULL;
}

/* Every rank: 0 all passed, 77 all skipped, else 1 and the worst code. */
static int combine(int rc, int worst, int *worst_p)
{
	int all77 = tb_mpi_min(rc == 77);
	int bad = tv_tb_mpi_worst(rc != 0 && rc != 77);

	*worst_p = tv_tb_mpi_worst(worst);
	return all77 ? 77 : bad ? 1 : 0;
}

static int nodes_share(struct tv_tb_validation *v, struct val_job *j,
		       const char *bytes, int *worst_p)
{
	char file[800], *av[JOB_ARGS];
	int worst = 0, rc;
	FILE *f;

	job_argv(j, av);
	val_path(file, sizeof(file), "%s/scenarios/%s.json", v->dir, j->tag);
	if (v->rank) {
		f = fopen(file, "w");
		rc = f && fwrite(bytes, 1, j->file_len, f) == j->file_len;
		if (f && fclose(f))
			rc = 0;
		if (!rc) {
			fprintf(stderr, "validate: rank %u: cannot write %s\n",
				v->rank, file);
			return combine(1, 1, worst_p);
		}
	}
	rc = val_nodes_share(v, file, j->nodes, j->tag, av, j->port, &worst);
	return combine(rc, worst, worst_p);
}

static void job_send(struct val_job *j, char *bytes)
{
	tb_mpi_bcast(j, sizeof(*j));
	if (j->file_len)
		tb_mpi_bcast(bytes, j->file_len);
}

int val_mpi_nodes(struct tv_tb_validation *v, const char *file,
		  uint32_t nodes, const char *tag, char *const *extra,
		  int *worst_p)
{
	struct val_job *j = calloc(1, sizeof(*j));
	char *bytes = NULL;
	long len = -1;
	FILE *f = fopen(file, "r");
	int rc = -EIO;

	if (f && !fseek(f, 0, SEEK_END))
		len = ftell(f);
	if (j && f && len > 0 && len <= JOB_FILE_MAX && !fseek(f, 0, SEEK_SET)) {
		bytes = malloc((size_t)len);
		if (bytes && fread(bytes, 1, (size_t)len, f) != (size_t)len) {
			free(bytes);
			bytes = NULL;
		}
	}
	if (f)
		fclose(f);
	if (j && bytes) {
		j->kind = JOB_NODES;
		j->nodes = nodes;
		j->port = v->next_port;
		v->next_port += 16;
		j->file_len = (uint32_t)len;
		snprintf(j->tag, sizeof(j->tag), "%s", tag);
		job_args(j, extra);
		job_send(j, bytes);
		rc = nodes_share(v, j, bytes, worst_p);
	}
	free(bytes);
	free(j);
	return rc;
}

/* Server on rank 1, client on rank 0; the other ranks only meet. */
static int perftest_share(struct tv_tb_validation *v, struct val_job *j,
			  char *log, size_t cap)
{
	char *av[JOB_ARGS];
	int spid = -1, rc = 0;

	job_argv(j, av);
	if (v->rank == 1)
		spid = val_perftest_server(v, j->tool, j->tag, av, j->port);
	tb_mpi_barrier(); /* the server is started (it may still be binding) */
	if (v->rank == 0)
		rc = val_perftest_client(v, j->tool, j->tag, av, j->port, log,
					 cap);
	tb_mpi_barrier();
	if (spid > 0)
		val_reap_nodes(&spid, 1, val_now_ns() + 10 * SEC);
	return tv_tb_mpi_worst(rc);
}

int val_mpi_perftest(struct tv_tb_validation *v, const char *tool,
		     const char *tag, char *const *args, uint32_t port,
		     char *log, size_t cap)
{
	struct val_job j = { .kind = JOB_PERFTEST, .port = port };

	snprintf(j.tool, sizeof(j.tool), "%s", tool);
	snprintf(j.tag, sizeof(j.tag), "%s", tag);
	job_args(&j, args);
	job_send(&j, NULL);
	return perftest_share(v, &j, log, cap);
}

/* Node r of the benchmark on rank r < 2; rank 0 has the figures. */
static int bench_share(struct tv_tb_validation *v, struct val_job *j,
		       char *log, size_t cap)
{
	char *av[JOB_ARGS], own[700];
	int rc = 0;

	job_argv(j, av);
	if (v->rank < 2)
		rc = val_bench_run(v, av, (int)v->rank, j->port, j->tag,
				   v->rank ? own : log, v->rank ? sizeof(own) :
				   cap);
	return tv_tb_mpi_worst(rc);
}

int val_mpi_bench(struct tv_tb_validation *v, char *const *args,
		  uint32_t port, const char *tag, char *log, size_t cap)
{
	struct val_job j = { .kind = JOB_BENCH, .port = port };

	snprintf(j.tag, sizeof(j.tag), "%s", tag);
	job_args(&j, args);
	job_send(&j, NULL);
	return bench_share(v, &j, log, cap);
}

bool val_mpi_have(struct tv_tb_validation *v, const char *tool)
{
	struct val_job j = { .kind = JOB_HAVE };

	if (!v->hosts)
		return val_in_path(tool);
	snprintf(j.tool, sizeof(j.tool), "%s", tool);
	job_send(&j, NULL);
	return tb_mpi_min(val_in_path(tool));
}

void val_mpi_done(struct tv_tb_validation *v)
{
	struct val_job j = { .kind = JOB_DONE };

	if (v->hosts && !v->rank)
		job_send(&j, NULL);
}

/* The other ranks: rank 0's jobs, until it is done. */
void val_mpi_serve(struct tv_tb_validation *v)
{
	struct val_job job, *j = &job; /* on the stack: nothing can fail */
	char log[700], *bytes;
	int worst;

	for (;;) {
		tb_mpi_bcast(j, sizeof(*j));
		j->tag[sizeof(j->tag) - 1] = 0;
		j->tool[sizeof(j->tool) - 1] = 0;
		for (size_t k = 0; k < JOB_ARGS; k++)
			j->args[k][JOB_ARG_BYTES - 1] = 0;
		if (j->kind == JOB_DONE)
			break;
		if (j->kind == JOB_NODES) {
			bytes = malloc(j->file_len ? j->file_len : 1);
			if (!bytes) /* rank 0 sends them all at once: a rank */
				abort(); /* that cannot take them cannot meet */
			tb_mpi_bcast(bytes, j->file_len);
			nodes_share(v, j, bytes, &worst);
			free(bytes);
		} else if (j->kind == JOB_PERFTEST) {
			perftest_share(v, j, log, sizeof(log));
		} else if (j->kind == JOB_BENCH) {
			bench_share(v, j, log, sizeof(log));
		} else if (j->kind == JOB_HAVE) {
			tb_mpi_min(val_in_path(j->tool));
		}
	}
}

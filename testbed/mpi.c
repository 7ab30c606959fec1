/*
 * MPI for runs across hosts (docs/multihost.md): the world, and the swarm
 * split over its ranks.  Each rank runs its contiguous share of the seeds
 * with its own forked workers, as a single process does; the counters are
 * summed and the failures gathered so that every rank holds the report
 * of the whole range, the smallest failing seeds first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "tb_int.h"

static bool mpi_on;
static int mpi_rank, mpi_size;

/* Open MPI's, MPICH's and PMIx's launchers say so in the environment. */
static bool launched_by_mpirun(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
	       getenv("PMIX_RANK");
}

int tv_tb_mpi_init(int *argc, char ***argv)
{
	if (mpi_on || !launched_by_mpirun())
		return 0;
	/* The swarm forks its workers (they never call MPI): no warning. */
	setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
	if (MPI_Init(argc, argv) != MPI_SUCCESS) {
		fprintf(stderr, "tensorverbs: MPI_Init failed\n");
		return -EIO;
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
	mpi_on = true;
	return 0;
}

void tv_tb_mpi_finalize(void)
{
	if (mpi_on)
		MPI_Finalize();
	mpi_on = false;
}

bool tv_tb_mpi_world(uint32_t *rank_p, uint32_t *size_p)
{
	if (!mpi_on)
		return false;
	*rank_p = (uint32_t)mpi_rank;
	*size_p = (uint32_t)mpi_size;
	return true;
}

/* The counters of a report, in one array (summed across the ranks). */
#define SUMS (6 + 3 * TV_TB_MAX_POINTS + 2 * TV_TB_CORRUPT_N)
#define CORRUPT_AT (6 + 3 * TV_TB_MAX_POINTS)

static void sums_of(const struct tv_tb_swarm_report *r, uint64_t *v)
{
	v[0] = r->done;
	v[1] = r->ops;
	v[2] = r->events;
	v[3] = r->no_faults;
	v[4] = r->bad_no_faults;
	v[5] = r->violations;
	memcpy(v + 6, r->on, sizeof(r->on));
	memcpy(v + 6 + TV_TB_MAX_POINTS, r->fires, sizeof(r->fires));
	memcpy(v + 6 + 2 * TV_TB_MAX_POINTS, r->bad, sizeof(r->bad));
	memcpy(v + CORRUPT_AT, r->corrupt, sizeof(r->corrupt));
}

static void sums_to(const uint64_t *v, struct tv_tb_swarm_report *r)
{
	r->done = v[0];
	r->ops = v[1];
	r->events = v[2];
	r->no_faults = v[3];
	r->bad_no_faults = v[4];
	r->violations = v[5];
	memcpy(r->on, v + 6, sizeof(r->on));
	memcpy(r->fires, v + 6 + TV_TB_MAX_POINTS, sizeof(r->fires));
	memcpy(r->bad, v + 6 + 2 * TV_TB_MAX_POINTS, sizeof(r->bad));
	memcpy(r->corrupt, v + CORRUPT_AT, sizeof(r->corrupt));
}

static int by_seed(const void *a, const void *b)
{
	const struct tv_tb_swarm_failure *x = a, *y = b;

	return x->seed < y->seed ? -1 : x->seed > y->seed;
}

/*
 * Every rank's kept failures (the same binary on every rank: the records
 * travel as bytes), the smallest seeds first, as many as one swarm keeps.
 */
static int merge_failures(struct tv_tb_swarm_report *r, uint32_t size)
{
	size_t one = sizeof(r->fail);
	struct tv_tb_swarm_failure *all = calloc(size, one);
	uint64_t *counts = calloc(size, sizeof(*counts));
	uint64_t mine = r->nfail;
	size_t n = 0;

	/* A rank without memory still meets the others (or they would wait
	 * in the Allgather for ever): all agree first. */
	if (!tb_mpi_min(all && counts)) {
		free(all);
		free(counts);
		return -ENOMEM;
	}
	MPI_Allgather(r->fail, (int)one, MPI_BYTE, all, (int)one, MPI_BYTE,
		      MPI_COMM_WORLD);
	MPI_Allgather(&mine, 1, MPI_UINT64_T, counts, 1, MPI_UINT64_T,
		      MPI_COMM_WORLD);
	for (uint32_t k = 0; k < size; k++)
		for (uint64_t i = 0; i < counts[k]; i++)
			all[n++] = all[(size_t)k * TV_TB_SWARM_KEEP + i];
	qsort(all, n, sizeof(*all), by_seed);
	r->nfail = n < TV_TB_SWARM_KEEP ? n : TV_TB_SWARM_KEEP;
	memcpy(r->fail, all, r->nfail * sizeof(*all));
	free(all);
	free(counts);
	return 0;
}

int tb_swarm_mpi(const struct tv_tb_swarm_opts *opts, uint32_t rank,
		 uint32_t size, struct tv_tb_swarm_report *rep_p)
{
	struct tv_tb_swarm_opts mine = *opts;
	struct tv_tb_swarm_report *r = calloc(1, sizeof(*r));
	uint64_t lo = opts->seeds * rank / size;
	uint64_t hi = opts->seeds * (rank + 1) / size;
	uint64_t v[SUMS], total[SUMS];
	int rc = 0, any;

	if (!tb_mpi_min(r != NULL)) { /* the same: every rank or none */
		free(r);
		return -ENOMEM;
	}
	mine.first = opts->first + lo;
	mine.seeds = hi - lo;
	if (rank)
		mine.progress = NULL; /* rank 0's line stands for all */
	if (mine.seeds && mine.jobs > mine.seeds)
		mine.jobs = (unsigned)mine.seeds;
	if (mine.seeds)
		rc = tb_swarm_local(&mine, r);
	/* Every rank takes part in the collectives, failed or not. */
	MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	sums_of(r, v);
	MPI_Allreduce(v, total, SUMS, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
	sums_to(total, r);
	MPI_Allreduce(MPI_IN_PLACE, &r->secs, 1, MPI_DOUBLE, MPI_MAX,
		      MPI_COMM_WORLD);
	if (!any)
		any = merge_failures(r, size);
	if (!any)
		*rep_p = *r;
	free(r);
	return any;
}

int tv_tb_mpi_allgather_addr(const struct sockaddr_storage *mine,
			     struct sockaddr_storage *all)
{
	if (!mpi_on)
		return -ENOTSUP;
	MPI_Allgather(mine, (int)sizeof(*mine), MPI_BYTE, all,
		      (int)sizeof(*mine), MPI_BYTE, MPI_COMM_WORLD);
	return 0;
}

int tv_tb_mpi_worst(int status)
{
	int worst = status;

	if (mpi_on)
		MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX,
			      MPI_COMM_WORLD);
	return worst;
}

/* ---- for validate across hosts (validate_mpi.c) ------------------------------ */

void tb_mpi_bcast(void *buf, size_t len)
{
	MPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
}

void tb_mpi_allgather(const void *mine, size_t len, void *all)
{
	MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE,
		      MPI_COMM_WORLD);
}

int tb_mpi_min(int v)
{
	int m = v;

	MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	return m;
}

void tb_mpi_barrier(void)
{
	MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- rank 0 gathers every rank's bytes (serve --record) ---------------------- */

/* Pieces of at most 1 GiB: MPI counts are ints. */
#define GATHER_PIECE_BYTES (1u << 30)

static void send_pieces(const char *buf, uint64_t len)
{
	for (uint64_t off = 0; off < len; off += GATHER_PIECE_BYTES) {
		uint64_t n = len - off < GATHER_PIECE_BYTES ?
			     len - off : GATHER_PIECE_BYTES;

		MPI_Send(buf + off, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
	}
}

static void recv_pieces(char *buf, uint64_t len, int from)
{
	for (uint64_t off = 0; off < len; off += GATHER_PIECE_BYTES) {
		uint64_t n = len - off < GATHER_PIECE_BYTES ?
			     len - off : GATHER_PIECE_BYTES;

		MPI_Recv(buf + off, (int)n, MPI_BYTE, from, 0, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
	}
}

static void free_gathered(char **bufs, uint64_t *lens, uint32_t n)
{
	for (uint32_t r = 0; bufs && r < n; r++)
		free(bufs[r]);
	free(bufs);
	free(lens);
}

/*
 * Every rank's len bytes (0: none) to rank 0, whose *bufs_p / *lens_p get
 * one buffer per rank (its own copied).  Every rank must call it once.
 * Rank 0 allocates all before anyone sends, and says whether it could:
 * a rank never blocks on a send rank 0 will not receive.
 */
int tb_mpi_gather_bytes(const char *mine, uint64_t len, char ***bufs_p,
			uint64_t **lens_p)
{
	uint64_t *lens;
	char **bufs = NULL;
	int ok, all_ok = 0;

	if (!mpi_on)
		return -ENOTSUP;
	lens = calloc((size_t)mpi_size, sizeof(*lens));
	ok = lens != NULL;
	/* Every rank must join the collectives, even without memory. */
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all_ok) {
		free(lens);
		return -ENOMEM;
	}
	MPI_Allgather(&len, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T,
		      MPI_COMM_WORLD);
	if (mpi_rank == 0) {
		bufs = calloc((size_t)mpi_size, sizeof(*bufs));
		for (int r = 0; ok && r < mpi_size; r++) {
			bufs[r] = bufs ? malloc(lens[r] ? lens[r] : 1) : NULL;
			ok = bufs && bufs[r];
		}
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (!ok) {
		free_gathered(bufs, lens, (uint32_t)mpi_size);
		return -ENOMEM;
	}
	if (mpi_rank != 0) {
		send_pieces(mine, len);
		free(lens);
		return 0;
	}
	if (len)
		memcpy(bufs[0], mine, len);
	for (int r = 1; r < mpi_size; r++)
		recv_pieces(bufs[r], lens[r], r);
	*bufs_p = bufs;
	*lens_p = lens;
	return 0;
}


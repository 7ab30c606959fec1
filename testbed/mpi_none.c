/*
 * A build without MPI (docs/multihost.md): started by mpirun, it refuses
 * instead of running the whole job once per rank.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_int.h"

int tv_tb_mpi_init(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") &&
	    !getenv("PMIX_RANK"))
		return 0;
	fprintf(stderr, "tensorverbs: started by mpirun, but built without "
		"MPI (install libopenmpi-dev, configure with -DTV_MPI=ON)\n");
	return -ENOTSUP;
}

void tv_tb_mpi_finalize(void)
{
}

bool tv_tb_mpi_world(uint32_t *rank_p, uint32_t *size_p)
{
	(void)rank_p;
	(void)size_p;
	return false;
}

int tb_swarm_mpi(const struct tv_tb_swarm_opts *opts, uint32_t rank,
		 uint32_t size, struct tv_tb_swarm_report *rep_p)
{
	(void)opts;
	(void)rank;
	(void)size;
	(void)rep_p;
	return -ENOTSUP;
}

int tv_tb_mpi_allgather_addr(const struct sockaddr_storage *mine,
			     struct sockaddr_storage *all)
{
	(void)mine;
	(void)all;
	return -ENOTSUP;
}

int tv_tb_mpi_worst(int status)
{
	return status;
}

/* One process is the whole world: nothing to exchange. */
void tb_mpi_bcast(void *buf, size_t len)
{
	(void)buf;
	(void)len;
}

void tb_mpi_allgather(const void *mine, size_t len, void *all)
{
	memcpy(all, mine, len);
}

int tb_mpi_min(int v)
{
	return v;
}

void tb_mpi_barrier(void)
{
}

int tb_mpi_gather_bytes(const char *mine, uint64_t len, char ***bufs_p,
			uint64_t **lens_p)
{
	(void)mine;
	(void)len;
	(void)bufs_p;
	(void)lens_p;
	return -ENOTSUP;
}

/*
 * This file is private to the tensorverbs CLI: the subcommands that run on
 * real RDMA devices over rdma_cm (serve.c, bench_rxe.c).
 */
#ifndef TV_CLI_SERVE_H
#define TV_CLI_SERVE_H

int cli_serve(int argc, char **argv, const char *argv0);
/* `tensorverbs bench rxe ...`: argv[0] is "rxe". */
int cli_bench_rxe(int argc, char **argv, const char *argv0);

#endif /* TV_CLI_SERVE_H */

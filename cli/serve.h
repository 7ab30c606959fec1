/*
 * This file is private to the tensorverbs CLI: `tensorverbs serve`, one
 * scenario node on a real RDMA device (serve.c).
 */
#ifndef TV_CLI_SERVE_H
#define TV_CLI_SERVE_H

int cli_serve(int argc, char **argv, const char *argv0);

#endif /* TV_CLI_SERVE_H */

/*
 * This file is private to the tensorverbs CLI: `tensorverbs devices`.
 */
#ifndef TV_CLI_DEVICES_H
#define TV_CLI_DEVICES_H

/* List the RDMA devices, ports, GIDs and limits.  Exit 1: no device. */
int cli_devices(int argc, char **argv, const char *argv0);

#endif /* TV_CLI_DEVICES_H */

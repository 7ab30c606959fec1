/*
 * Fuzz target: trace files (testbed/trace.c's reader, the header with its
 * scenario, every event line, and the drawings made of them: docs/trace.md).
 * The input is written to a memory file and read by tv_tb_show() with an
 * SVG and a Chrome trace to /dev/null: it draws or fails with a message,
 * never crashes, leaks or hangs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tensorverbs/testbed.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tv_tb_show_opts o = {
		.svg_path = "/dev/null", .chrome_path = "/dev/null",
		.max_rows = 200,
	};
	char path[64], err[512];
	int fd = memfd_create("fuzz-trace", MFD_CLOEXEC), ret;

	FZ_CHECK(fd >= 0);
	FZ_CHECK(write(fd, data, size) == (ssize_t)size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err[0] = 0;
	ret = tv_tb_show(path, &o, err, sizeof(err));
	FZ_CHECK(ret <= 0);
	FZ_CHECK(!ret || err[0]);
	close(fd);
	return 0;
}

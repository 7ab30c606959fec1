/* Small helpers: strict numbers, human-readable figures. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "tb_int.h"

#ifdef TV_COVERAGE
/* libgcov's: write this process's counters now. */
void __gcov_dump(void);
#endif

void tv_tb_child_exit(int status)
{
#ifdef TV_COVERAGE
	__gcov_dump();
#endif
	_exit(status);
}

void tv_tb_child_exec(char *const argv[], char *const envp[])
{
#ifdef TV_COVERAGE
	/* exec replaces the image without writing the child's counters. */
	__gcov_dump();
#endif
	execvpe(argv[0], argv, envp);
	_exit(127);
}

int tv_tb_parse_u64(const char *s, uint64_t *v_p)
{
	unsigned long long v;
	char *end;

	/* strtoull would skip blanks and take " -1" as UINT64_MAX. */
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end != '\0')
		return -EINVAL;
	*v_p = v;
	return 0;
}

void tv_tb_fmt_bytes(double bytes, char *buf, size_t cap)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	size_t u = 0;

	while (bytes >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

void tv_tb_fmt_ns(double ns, char *buf, size_t cap)
{
	if (ns >= 1e9)
		snprintf(buf, cap, "%.3f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, cap, "%.3f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, cap, "%.3f us", ns / 1e3);
	else
		snprintf(buf, cap, "%.0f ns", ns);
}

void tv_tb_fmt_rate(double per_sec, char *buf, size_t cap)
{
	if (per_sec >= 1e6)
		snprintf(buf, cap, "%.2f M", per_sec / 1e6);
	else if (per_sec >= 1e3)
		snprintf(buf, cap, "%.1f k", per_sec / 1e3);
	else
		snprintf(buf, cap, "%.1f ", per_sec);
}

void tv_tb_serve_opts_init(struct tv_tb_serve_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout_s = 120;
	o->reconnect = true;
	o->faults_node = -1;
}

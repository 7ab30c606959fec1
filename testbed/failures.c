/* Failures of a run: their kinds, their texts, and how they print. */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_int.h"

static const char *const fail_kind_names[TV_TB_FK_COUNT] = {
	[TV_TB_FK_RUNNER] = "runner", [TV_TB_FK_EXPECT] = "expect",
	[TV_TB_FK_DATA] = "data", [TV_TB_FK_CALLBACK] = "callback",
	[TV_TB_FK_HANG] = "hang", [TV_TB_FK_IN_FLIGHT] = "in-flight",
	[TV_TB_FK_WRITE] = "write", [TV_TB_FK_ERROR] = "error",
	[TV_TB_FK_LEAK] = "leak", [TV_TB_FK_OUTCOME] = "outcome",
	[TV_TB_FK_CRASH] = "crash",
};

const char *tv_tb_fail_kind_name(enum tv_tb_fail_kind kind)
{
	assert((unsigned)kind < TV_TB_FK_COUNT);
	return fail_kind_names[kind];
}

int tv_tb_fail_kind_from_name(const char *name, enum tv_tb_fail_kind *kind_p)
{
	for (unsigned k = 0; k < TV_TB_FK_COUNT; k++) {
		if (!strcmp(name, fail_kind_names[k])) {
			*kind_p = (enum tv_tb_fail_kind)k;
			return 0;
		}
	}
	return -EINVAL;
}

void tb_failures_vadd(struct tv_tb_failures *f, enum tv_tb_fail_kind kind,
		      const char *fmt, va_list ap)
{
	char *msg;

	assert((unsigned)kind < TV_TB_FK_COUNT);
	if (f->count < TV_TB_FAILURES_KEPT) {
		if (vasprintf(&msg, fmt, ap) >= 0)
			f->msgs[f->count] = msg;
		f->msg_kinds[f->count] = kind;
	}
	if (f->count == 0)
		f->first = kind;
	f->kinds |= 1u << kind;
	f->count++;
}

void tb_failures_add(struct tv_tb_failures *f, enum tv_tb_fail_kind kind,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tb_failures_vadd(f, kind, fmt, ap);
	va_end(ap);
}

void tv_tb_failures_print(const struct tv_tb_failures *f, FILE *out)
{
	for (size_t i = 0; i < f->count && i < TV_TB_FAILURES_KEPT; i++)
		fprintf(out, "FAIL: %s\n", f->msgs[i] ? f->msgs[i] : "?");
	if (f->count > TV_TB_FAILURES_KEPT)
		fprintf(out, "FAIL: ... and %zu more\n",
			f->count - TV_TB_FAILURES_KEPT);
}

void tb_failures_free(struct tv_tb_failures *f)
{
	for (size_t i = 0; i < TV_TB_FAILURES_KEPT; i++)
		free(f->msgs[i]);
	memset(f, 0, sizeof(*f));
}

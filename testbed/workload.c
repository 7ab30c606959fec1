/*
 * The workloads a build knows: the built-in ones (workloads/registry.c, a
 * list, not a switch: a new protocol adds a line there and nothing here),
 * and those a program registers at run time.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tb_int.h"

#define TB_MAX_WORKLOADS 16

/* workloads/registry.c: the built-in workloads, NULL-terminated. */
extern const struct tv_tb_workload_ops *const tb_builtin_workloads[];

static const struct tv_tb_workload_ops *all[TB_MAX_WORKLOADS];
static size_t nall;

static void load_builtins(void)
{
	if (nall)
		return;
	for (size_t i = 0; tb_builtin_workloads[i] && nall < TB_MAX_WORKLOADS;
	     i++)
		all[nall++] = tb_builtin_workloads[i];
}

const struct tv_tb_workload_ops *const *tv_tb_workloads(size_t *n_p)
{
	load_builtins();
	*n_p = nall;
	return all;
}

const struct tv_tb_workload_ops *tv_tb_workload_find(const char *name)
{
	load_builtins();
	for (size_t i = 0; i < nall; i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

const char *tv_tb_workload_name(const struct tv_tb_workload_ops *ops)
{
	return ops->name;
}

const struct tv_tb_workload_ops *tv_tb_workload_default(void)
{
	load_builtins();
	return all[0];
}

int tv_tb_workload_register(const struct tv_tb_workload_ops *ops)
{
	if (!ops || !ops->name || !ops->parse || !ops->setup ||
	    !ops->progress)
		return -EINVAL;
	if (tv_tb_workload_find(ops->name))
		return -EEXIST;
	if (nall == TB_MAX_WORKLOADS)
		return -ENOSPC;
	all[nall++] = ops;
	return 0;
}

int tv_tb_breakage_check(const char *name)
{
	size_t n;
	const struct tv_tb_workload_ops *const *w = tv_tb_workloads(&n);

	for (size_t i = 0; i < n; i++)
		for (const char *const *b = w[i]->breakages; b && *b; b++)
			if (!strcmp(*b, name))
				return 0;
	return -EINVAL;
}

void tv_tb_breakage_names(char *buf, size_t cap)
{
	size_t n, used = 0;
	const struct tv_tb_workload_ops *const *w = tv_tb_workloads(&n);

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		for (const char *const *b = w[i]->breakages; b && *b; b++)
			if (used < cap)
				used += (size_t)snprintf(buf + used, cap - used,
							 "%s%s", used ? ", " : "",
							 *b);
}

bool tv_tb_workload_has_point(const struct tv_tb_workload_ops *wl,
			      const char *point)
{
	const struct tv_flt_point_info *info = tv_flt_point_find(point);

	return info && (!info->workload || !strcmp(info->workload, wl->name));
}

bool tv_tb_workload_may_fail(const struct tv_tb_workload_ops *wl,
			     const char *point)
{
	if (tv_tb_point_may_fail(point))
		return true;
	for (const char *const *p = wl->unrecoverable_points; p && *p; p++)
		if (!strcmp(*p, point))
			return true;
	return false;
}

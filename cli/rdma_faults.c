/* Fault injection in a node process on real hardware: rdma_faults.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fiu.h>
#include <fiu-control.h>

#include <tensorverbs/engine.h>

#include "plan.h"
#include "rdma_faults.h"

bool rr_fault_point_on_hw(const char *point)
{
	const struct tv_flt_point_info *pt = tv_flt_point_find(point);

	return pt && !pt->sim_only; /* the catalogue knows (faults/flt.c) */
}

/* fiu-ctrl(1)'s default prefix: $TMPDIR/fiu-ctrl, else /tmp/fiu-ctrl. */
static int start_remote_control(char *msg, size_t cap)
{
	const char *tmp = getenv("TMPDIR");
	char base[512];

	snprintf(base, sizeof(base), "%s/fiu-ctrl",
		 tmp && tmp[0] ? tmp : "/tmp");
	/* fiu-ctrl may enable any point from now on. */
	tv_engine_fault_points_live();
	if (fiu_init(0) || fiu_rc_fifo(base)) {
		snprintf(msg, cap, "libfiu remote control on %s-PID failed",
			 base);
		return -EIO;
	}
	return 0;
}

int rr_faults_init(struct rr_faults *f, json_t *plan, uint64_t seed,
		   bool fiu_ctrl, char *msg, size_t cap)
{
	char err[PLAN_ERR_MAX];
	json_t *none = NULL;
	int ret;

	memset(f, 0, sizeof(*f));
	if (!fiu_ctrl && !json_array_size(plan))
		return 0;
	if (!plan)
		plan = none = json_array();
	ret = plan ? plan_injector(plan, seed, &f->flt, err, sizeof(err)) :
		     -ENOMEM;
	json_decref(none);
	if (ret) {
		snprintf(msg, cap, "fault plan: %s",
			 ret == -EINVAL ? err : strerror(-ret));
		return ret;
	}
	if (fiu_ctrl) {
		ret = start_remote_control(msg, cap);
		if (ret) {
			tv_flt_destroy(f->flt);
			f->flt = NULL;
		}
	}
	return ret;
}

int rr_faults_start(struct rr_faults *f, char *msg, size_t cap)
{
	int ret;

	if (!f->flt || f->active)
		return 0;
	ret = tv_flt_activate(f->flt);
	if (ret) {
		snprintf(msg, cap, "tv_flt_activate: %s", strerror(-ret));
		return ret;
	}
	f->active = true;
	return 0;
}

void rr_faults_stop(struct rr_faults *f)
{
	if (f->active)
		tv_flt_deactivate(f->flt);
	f->active = false;
}

void rr_faults_fires(const struct rr_faults *f,
		     uint64_t fires[RR_FAULT_SLOTS])
{
	const struct tv_flt_point_info *pts;
	size_t n;

	memset(fires, 0, RR_FAULT_SLOTS * sizeof(fires[0]));
	if (!f->flt)
		return;
	pts = tv_flt_points(&n);
	for (size_t i = 0; i < n && i < RR_FAULT_SLOTS; i++) {
		struct tv_flt_point_stats st = { 0 };

		tv_flt_stats(f->flt, pts[i].name, &st);
		fires[i] = st.fires;
	}
}

void rr_faults_free(struct rr_faults *f)
{
	rr_faults_stop(f);
	tv_flt_destroy(f->flt);
	f->flt = NULL;
}

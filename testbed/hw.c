/*
 * One scenario node as its own process on a real RDMA device
 * (`tensorverbs serve`, workload.h "real verbs").  The testbed's part:
 * the scenario and what of it real verbs can run, the RDMA_* variables
 * checked against the machine, the fault injector (and libfiu's remote
 * control), the step coordinator (coord.c), the loop, the time-point
 * barriers, the deadline, every node's statistics on node 0, the fault
 * expectations, and the verdict.  The workload's hw ops do the rest.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <fiu.h>
#include <fiu-control.h>
#include <xxhash.h>

#include <tensorverbs/cm.h>
#include <tensorverbs/engine.h>
#include <tensorverbs/ibverbs.h>

#include "coord.h"
#include "le.h"   /* engine/: little-endian bytes */
#include "tb_int.h"

#define HW_FAULT_SLOTS TV_TB_MAX_POINTS

struct tv_tb_hw {
	const struct tv_tb_serve_opts *o;
	const struct tv_tb_scenario *sc;
	const struct tv_tb_hw_ops *ops;
	void *st;                  /* the workload's */
	uint64_t seed;
	uint64_t fingerprint;      /* of the scenario file and seed */
	struct tv_flt *flt;        /* NULL: no plan and no remote control */
	bool flt_active;
	struct coord co;
	bool co_ready;
	struct tv_tb_failures fails;
	uint64_t *times;           /* distinct operation times, sorted */
	size_t ntimes;
	uint64_t bar_seq;
	uint64_t t0_ns;
	uint64_t deadline_ns;
	bool ending;
	uint64_t fault_fires;
	char dev_name[64];
	struct tv_tb_tap *tap;     /* --record, or NULL */
	/* Under mpirun, the recording for rank 0 to gather (record_gather). */
	bool rec_gather;
	char *rec_buf;
	size_t rec_len;
};

/* ---- what workloads see --------------------------------------------------- */

const struct tv_tb_serve_opts *tv_tb_hw_opts(const struct tv_tb_hw *hw)
{
	return hw->o;
}

const struct tv_tb_scenario *tv_tb_hw_scenario(const struct tv_tb_hw *hw)
{
	return hw->sc;
}

uint32_t tv_tb_hw_node(const struct tv_tb_hw *hw)
{
	return hw->o->node;
}

uint64_t tv_tb_hw_seed(const struct tv_tb_hw *hw)
{
	return hw->seed;
}

struct tv_flt *tv_tb_hw_flt(const struct tv_tb_hw *hw)
{
	return hw->flt;
}

bool tv_tb_hw_recovering(const struct tv_tb_hw *hw)
{
	return hw->o->inject_disconnect_step || hw->o->fiu_ctrl ||
	       tv_tb_scenario_has_faults(hw->sc);
}

bool tv_tb_hw_ending(const struct tv_tb_hw *hw)
{
	return hw->ending;
}

/*
 * The device behind this node's address (rdma_cm finds it and its GID),
 * wrapped by the fault injector when the run has one: what every
 * workload's open does first.  The connection manager stays for the
 * workload (some connect through it, the others only keep it).
 */
int tv_tb_open_device_at(const struct sockaddr_storage *addr, uint32_t node,
			 uint32_t nodes, struct tv_tb_hw_device *d,
			 char *msg, size_t cap)
{
	struct tv_ibv_config env, cfg;
	struct tv_cm_config cc;
	int ret;

	memset(d, 0, sizeof(*d));
	msg[0] = '\0';
	ret = tv_ibv_config_check_env(msg, cap, &env);
	if (ret)
		return ret;
	tv_cm_config_default(&cc);
	cc.node_id = node;
	cc.num_nodes = nodes;
	cc.addr = *addr;
	ret = tv_cm_create(&cc, msg, cap, &d->cm);
	if (!ret)
		ret = tv_cm_ibv_config(d->cm, &env, msg, cap, &cfg);
	if (!ret)
		ret = tv_ibv_open(&cfg, msg, cap, &d->base);
	if (ret) {
		/* The backends say what they refused; a call that failed, errno. */
		if (!msg[0])
			snprintf(msg, cap, "%s", strerror(-ret));
		tv_tb_hw_close_device(d, true);
		return ret;
	}
	d->dev = d->base;
	snprintf(d->name, sizeof(d->name), "%s", cfg.device);
	return 0;
}

int tv_tb_hw_open_device(struct tv_tb_hw *hw, struct tv_tb_hw_device *d,
			 char *msg, size_t cap)
{
	struct tv_flt *flt = tv_tb_hw_flt(hw);
	int ret;

	ret = tv_tb_open_device_at(&hw->o->addrs[hw->o->node], hw->o->node,
				   hw->sc->nodes, d, msg, cap);
	if (ret)
		return ret;
	tv_tb_hw_set_device_name(hw, d->name);
	if (flt) {
		ret = tv_flt_wrap(flt, d->base, &d->dev);
		if (ret) {
			d->dev = d->base;
			snprintf(msg, cap, "tv_flt_wrap: %s", strerror(-ret));
			goto fail;
		}
		tv_flt_wrap_set_node(d->dev, hw->o->node);
	}
	if (hw->tap) {
		ret = tv_tb_hw_tap_device(hw, d->dev);
		if (ret) {
			snprintf(msg, cap, "recording: %s", strerror(-ret));
			goto fail;
		}
	}
	return 0;
fail:
	tv_tb_hw_close_device(d, true);
	return ret;
}

int tv_tb_hw_tap_device(struct tv_tb_hw *hw, struct tv_vf_device *wrapped)
{
	if (!hw->tap)
		return 0;
	return tb_tap_attach(hw->tap, hw->o->node, wrapped);
}

void tv_tb_hw_close_device(struct tv_tb_hw_device *d, bool close_base)
{
	if (d->dev && d->dev != d->base)
		tv_flt_unwrap(d->dev);
	if (d->base && close_base)
		tv_ibv_close(d->base);
	d->dev = d->base = NULL;
	tv_cm_destroy(d->cm);
	d->cm = NULL;
}

void tv_tb_hw_stats_sum(const uint64_t *const *all, uint32_t nodes,
			size_t nstats, uint64_t *sum)
{
	memset(sum, 0, nstats * sizeof(*sum));
	for (uint32_t n = 0; n < nodes; n++)
		for (size_t i = 0; all[n] && i < nstats; i++)
			sum[i] += all[n][i];
}

size_t tv_tb_times_add(uint64_t *times, size_t n, uint64_t t)
{
	size_t k = 0;

	while (k < n && times[k] < t)
		k++;
	if (k < n && times[k] == t)
		return n;
	memmove(times + k + 1, times + k, (n - k) * sizeof(*times));
	times[k] = t;
	return n + 1;
}

void tv_tb_hw_sleep_device(struct tv_vf_device *dev, uint64_t until_ns,
			   struct pollfd *extra, unsigned nextra)
{
	struct timespec ts = { 0, 20000 };

	/* A device without a completion channel: a short nap. */
	if (tv_vf_wait_fds(dev, until_ns, extra, nextra) == -EOPNOTSUPP)
		nanosleep(&ts, NULL);
}

/* The first IPv4-mapped GID of a device's ports: its RoCE address. */
static bool device_ipv4(const struct tv_ibv_device_info *d,
			struct sockaddr_in *sin)
{
	for (uint32_t p = 0; p < d->num_ports; p++)
		for (uint32_t g = 0; g < d->ports[p].num_gids; g++) {
			const uint8_t *raw = d->ports[p].gids[g].raw;

			if (!tv_ibv_gid_is_ipv4(raw))
				continue;
			memset(sin, 0, sizeof(*sin));
			sin->sin_family = AF_INET;
			memcpy(&sin->sin_addr, raw + 12, 4);
			return true;
		}
	return false;
}

int tv_tb_hw_device_addr(uint16_t port, struct sockaddr_storage *ss_p,
			 char *msg, size_t cap)
{
	struct tv_ibv_device_info *infos = NULL;
	struct tv_ibv_config env;
	struct sockaddr_in sin;
	size_t n = 0;
	int ret = tv_ibv_config_check_env(msg, cap, &env);

	if (!ret)
		ret = tv_ibv_query_all(&infos, &n);
	for (size_t i = 0; !ret && i < n; i++) {
		if (env.device[0] && strcmp(env.device, infos[i].attr.name))
			continue;
		if (!device_ipv4(&infos[i], &sin))
			continue;
		sin.sin_port = htons(port);
		memset(ss_p, 0, sizeof(*ss_p));
		memcpy(ss_p, &sin, sizeof(sin));
		tv_ibv_free_all(infos, n);
		return 0;
	}
	if (!ret) {
		snprintf(msg, cap, "no RoCE device with an IPv4 address%s%s "
			 "(%zu device(s) found): set RDMA_DEVICE", env.device[0]
			 ? " named " : "", env.device, n);
		ret = -ENODEV;
	}
	tv_ibv_free_all(infos, n);
	return ret;
}

void tv_tb_ep_put(uint8_t *p, const struct tv_vf_qp_endpoint *ep)
{
	tv_le_put(p, ep->qp_num, 4);
	tv_le_put(p + 4, ep->psn, 4);
	tv_le_put(p + 8, ep->lid, 2);
	tv_le_put(p + 10, 0, 2);
	memcpy(p + 12, ep->gid, 16);
}

int tv_tb_ep_get(const uint8_t *p, struct tv_vf_qp_endpoint *ep_p)
{
	struct tv_vf_qp_endpoint ep;

	ep.qp_num = (uint32_t)tv_le_get(p, 4);
	ep.psn = (uint32_t)tv_le_get(p + 4, 4);
	ep.lid = (uint16_t)tv_le_get(p + 8, 2);
	memcpy(ep.gid, p + 12, 16);
	/* 24-bit QPN and PSN, the padding zero. */
	if (ep.qp_num > 0xffffff || ep.psn > 0xffffff || tv_le_get(p + 10, 2))
		return -EPROTO;
	*ep_p = ep;
	return 0;
}

int tv_tb_mpi_addrs(const char *who, uint16_t port_base,
		    struct sockaddr_storage *all)
{
	struct sockaddr_storage mine;
	uint32_t rank, size;
	char msg[300] = "";
	int ret;

	if (!tv_tb_mpi_world(&rank, &size))
		return -ENOTSUP;
	if ((uint32_t)port_base + size > 65535)
		return -ERANGE;
	ret = tv_tb_hw_device_addr((uint16_t)(port_base + rank), &mine, msg,
				   sizeof(msg));
	if (ret)
		fprintf(stderr, "%s: rank %u: %s\n", who, rank, msg);
	/* Every rank joins the exchange, even one without an address. */
	if (tv_tb_mpi_worst(ret ? 1 : 0))
		return ret ? ret : -ENODEV;
	return tv_tb_mpi_allgather_addr(&mine, all);
}

int tv_tb_mpi_bench_pair(const char *who, uint16_t port_base,
			 struct sockaddr_storage addr[2], uint32_t *node_p)
{
	uint32_t rank, size;
	int ret;

	if (!tv_tb_mpi_world(&rank, &size))
		return 1;
	if (size != 2) {
		if (!rank)
			fprintf(stderr, "%s: under mpirun a benchmark runs on "
				"2 ranks (one node each), not %u\n", who, size);
		return -EINVAL;
	}
	ret = tv_tb_mpi_addrs(who, port_base, addr);
	if (!ret)
		*node_p = rank;
	return ret;
}

void tv_tb_hw_set_device_name(struct tv_tb_hw *hw, const char *name)
{
	snprintf(hw->dev_name, sizeof(hw->dev_name), "%s", name);
}

void tv_tb_hw_fail(struct tv_tb_hw *hw, enum tv_tb_fail_kind kind,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tb_failures_vadd(&hw->fails, kind, fmt, ap);
	va_end(ap);
}

void tv_tb_hw_log(struct tv_tb_hw *hw, const char *fmt, ...)
{
	va_list ap;

	if (!hw->o->verbose)
		return;
	printf("[node %u %9.3f s] ", hw->o->node,
	       (double)(tb_wall_ns() - hw->t0_ns) / 1e9);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

bool tv_tb_hw_expired(const struct tv_tb_hw *hw)
{
	return tb_wall_ns() > hw->deadline_ns;
}

const char *tv_tb_hw_aborted(const struct tv_tb_hw *hw)
{
	return hw->co_ready && hw->co.aborted ? hw->co.abort_msg : NULL;
}

/* ---- the loop -------------------------------------------------------------- */

/*
 * Nothing to do: the workload sleeps until a completion, a timer of its
 * own, or an event on the coordinator's sockets (or 100 ms: the run's own
 * timeout is all the loop checks by the clock).
 */
static void hw_sleep(struct tv_tb_hw *hw)
{
	struct pollfd pfd[16];
	uint64_t until = tb_wall_ns() + 100000000ull, co_wake = UINT64_MAX;
	int c = 0;

	if (hw->co_ready)
		c = coord_pollfds(&hw->co, pfd, TB_ARRAY_SIZE(pfd), &co_wake);
	if (c < 0)
		c = 0;
	hw->ops->sleep(hw, hw->st, co_wake < until ? co_wake : until, pfd,
		       (unsigned)c);
}

int tv_tb_hw_step(struct tv_tb_hw *hw)
{
	int n, got;

	n = hw->ops->progress(hw, hw->st);
	if (n < 0) {
		tv_tb_hw_fail(hw, TV_TB_FK_RUNNER, "progress: %s", strerror(-n));
		return -EIO;
	}
	got = n;
	if (hw->co_ready) {
		n = coord_poll(&hw->co, tb_wall_ns());
		if (n < 0) {
			tv_tb_hw_fail(hw, TV_TB_FK_RUNNER, "coordinator: %s",
				      strerror(-n));
			return -EIO;
		}
		got += n;
	}
	if (!got)
		hw_sleep(hw);
	return 0;
}

int tv_tb_hw_wait(struct tv_tb_hw *hw, bool (*cond)(void *ctx, uint64_t arg),
		  void *ctx, uint64_t arg, const char *what)
{
	for (;;) {
		if (cond(ctx, arg))
			return 0;
		if (tv_tb_hw_aborted(hw)) {
			tv_tb_hw_fail(hw, TV_TB_FK_HANG,
				      "stopped while waiting for %s: %s", what,
				      hw->co.abort_msg);
			return -ECANCELED;
		}
		if (tv_tb_hw_expired(hw)) {
			tv_tb_hw_fail(hw, TV_TB_FK_HANG,
				      "timed out after %u s waiting for %s",
				      hw->o->timeout_s, what);
			return -ETIMEDOUT;
		}
		if (tv_tb_hw_step(hw))
			return -EIO;
	}
}

static bool cond_barrier(void *ctx, uint64_t seq)
{
	struct tv_tb_hw *hw = ctx;

	return coord_barrier_done(&hw->co, seq);
}

static bool cond_joined(void *ctx, uint64_t arg)
{
	struct tv_tb_hw *hw = ctx;

	(void)arg;
	return hw->co.joined;
}

int tv_tb_hw_barrier(struct tv_tb_hw *hw, const char *what)
{
	uint64_t seq = ++hw->bar_seq;
	int ret = coord_barrier_enter(&hw->co, seq);

	if (ret) {
		tv_tb_hw_fail(hw, TV_TB_FK_RUNNER, "coordinator: %s",
			      strerror(-ret));
		return ret;
	}
	return tv_tb_hw_wait(hw, cond_barrier, hw, seq, what);
}

static bool cond_ag(void *ctx, uint64_t arg)
{
	struct tv_tb_hw *hw = ctx;

	(void)arg;
	return coord_ag_done(&hw->co);
}

int tv_tb_hw_allgather(struct tv_tb_hw *hw, const void *mine, size_t len,
		       uint8_t ***blobs_p, size_t **lens_p)
{
	int ret = tv_tb_hw_wait(hw, cond_joined, hw, 0, "every node to join");

	if (!ret)
		ret = coord_ag_start(&hw->co, mine, len);
	if (!ret)
		ret = tv_tb_hw_wait(hw, cond_ag, hw, 0,
				    "every node's set-up data (all-gather)");
	if (!ret)
		ret = coord_ag_take(&hw->co, blobs_p, lens_p);
	return ret;
}

/* ---- faults on real verbs ---------------------------------------------------- */

/* fiu-ctrl(1)'s default prefix: $TMPDIR/fiu-ctrl, else /tmp/fiu-ctrl. */
static int start_remote_control(char *msg, size_t cap)
{
	const char *tmp = getenv("TMPDIR");
	char base[256];
	int n;

	n = snprintf(base, sizeof(base), "%s/fiu-ctrl",
		     tmp && tmp[0] ? tmp : "/tmp");
	if (n < 0 || (size_t)n >= sizeof(base)) {
		snprintf(msg, cap, "TMPDIR is longer than %zu bytes: no room for libfiu's remote control FIFOs",
			 sizeof(base) - 16);
		return -EINVAL;
	}
	/* fiu-ctrl may enable any point from now on. */
	tv_engine_fault_points_live();
	if (fiu_init(0) || fiu_rc_fifo(base)) {
		snprintf(msg, cap, "libfiu remote control on %.255s-PID failed",
			 base);
		return -EIO;
	}
	return 0;
}

/* An injector for this node's plan (or for fiu-ctrl alone), or none. */
static int faults_init(struct tv_tb_hw *hw, char *msg, size_t cap)
{
	const struct tv_tb_serve_opts *o = hw->o;
	json_t *plan = o->faults_node < 0 || o->faults_node == o->node ?
		       tv_tb_scenario_faults(hw->sc) : NULL;
	char err[TV_TB_PLAN_ERR_MAX];
	json_t *none = NULL;
	int ret;

	/* A recording needs the wrapper: its tap is what records. */
	if (!o->fiu_ctrl && !json_array_size(plan) && !o->record_path)
		return 0;
	if (!plan)
		plan = none = json_array();
	ret = plan ? tb_plan_injector(plan, hw->seed, &hw->flt, err,
				      sizeof(err)) : -ENOMEM;
	json_decref(none);
	if (ret) {
		snprintf(msg, cap, "fault plan: %s",
			 ret == -EINVAL ? err : strerror(-ret));
		return ret;
	}
	if (o->fiu_ctrl) {
		ret = start_remote_control(msg, cap);
		if (ret) {
			tv_flt_destroy(hw->flt);
			hw->flt = NULL;
		}
	}
	return ret;
}

static int faults_start(struct tv_tb_hw *hw)
{
	int ret;

	if (!hw->flt || hw->flt_active)
		return 0;
	ret = tv_flt_activate(hw->flt);
	if (ret) {
		tv_tb_hw_fail(hw, TV_TB_FK_RUNNER, "tv_flt_activate: %s",
			      strerror(-ret));
		return ret;
	}
	hw->flt_active = true;
	return 0;
}

static void faults_stop(struct tv_tb_hw *hw)
{
	if (hw->flt_active)
		tv_flt_deactivate(hw->flt);
	hw->flt_active = false;
}

static void faults_fires(const struct tv_tb_hw *hw, uint64_t *fires)
{
	const struct tv_flt_point_info *pts;
	size_t n;

	memset(fires, 0, HW_FAULT_SLOTS * sizeof(fires[0]));
	if (!hw->flt)
		return;
	pts = tv_flt_points(&n);
	for (size_t i = 0; i < n && i < HW_FAULT_SLOTS; i++) {
		struct tv_flt_point_stats st = { 0 };

		tv_flt_stats(hw->flt, pts[i].name, &st);
		fires[i] = st.fires;
	}
}

/* ---- the end ----------------------------------------------------------------- */

/* expect_faults against every process's firings together. */
static void check_fires(struct tv_tb_hw *hw, const uint64_t *fires)
{
	const struct tv_flt_point_info *pts;
	size_t npts;

	pts = tv_flt_points(&npts);
	for (size_t i = 0; i < hw->sc->nfault_expects; i++) {
		const struct tb_fault_expect *fe = &hw->sc->fault_expects[i];
		uint64_t n = 0;

		for (size_t p = 0; p < npts && p < HW_FAULT_SLOTS; p++)
			if (!strcmp(pts[p].name, fe->point))
				n = fires[p];
		if (n < fe->min || n > fe->max)
			tv_tb_hw_fail(hw, TV_TB_FK_EXPECT,
				      "expect_faults %s: fired %" PRIu64 " times on all nodes, expected %" PRIu64 "..%" PRIu64,
				      fe->point, n, fe->min, fe->max);
	}
}

/* Node 0: every node's report; the workload's checks; the faults. */
static void check_end(struct tv_tb_hw *hw)
{
	uint32_t nodes = hw->sc->nodes;
	size_t nwl = hw->ops->nstats;
	const uint64_t **all = NULL;
	uint64_t fires[HW_FAULT_SLOTS] = { 0 };

	if (hw->o->node == 0) {
		/* Without it node 0 would pass a run nothing checked. */
		all = calloc(nodes, sizeof(*all));
		if (!all) {
			tv_tb_hw_fail(hw, TV_TB_FK_RUNNER,
				      "every node's statistics: %s",
				      strerror(ENOMEM));
			return;
		}
		for (uint32_t n = 0; n < nodes; n++) {
			all[n] = coord_stats(&hw->co, n);
			if (!all[n]) {
				tv_tb_hw_fail(hw, TV_TB_FK_RUNNER,
					      "node %u sent no statistics", n);
				free(all);
				return;
			}
			for (size_t i = 0; i < HW_FAULT_SLOTS; i++)
				fires[i] += all[n][nwl + i];
		}
	}
	hw->ops->check_end(hw, hw->st, all);
	/* A dropped connection changes what is counted: no expectations. */
	if (all && !hw->o->inject_disconnect_step)
		check_fires(hw, fires);
	free(all);
}

static int finish(struct tv_tb_hw *hw)
{
	size_t n = hw->ops->nstats + HW_FAULT_SLOTS;
	uint64_t *report = calloc(n, sizeof(*report));
	int ret;

	if (!report)
		return -ENOMEM;
	ret = hw->ops->finish(hw, hw->st);
	if (ret)
		goto out;
	/* Everything of ours is done: a peer's disconnect no longer hurts. */
	hw->ending = true;
	faults_stop(hw);
	if (hw->ops->quiesce)
		hw->ops->quiesce(hw, hw->st);
	hw->ops->stats(hw, hw->st, report);
	faults_fires(hw, report + hw->ops->nstats);
	ret = coord_send_stats(&hw->co, report);
	if (!ret)
		ret = tv_tb_hw_barrier(hw, "the other nodes to finish");
	if (!ret)
		check_end(hw);
out:
	free(report);
	return ret;
}

/* ---- the run ------------------------------------------------------------------ */

static int hw_steps(struct tv_tb_hw *hw)
{
	int ret = hw->ops->connect(hw, hw->st);

	if (!ret)
		ret = tv_tb_hw_wait(hw, cond_joined, hw, 0,
				    "every node to join");
	if (!ret)
		ret = tv_tb_hw_barrier(hw, "the other nodes to start");
	/* Faults hit the workload, not the connecting (as on the simulator). */
	if (!ret)
		ret = faults_start(hw);
	tv_tb_hw_log(hw, "start: %zu time points", hw->ntimes);
	for (size_t i = 0; !ret && i < hw->ntimes; i++) {
		/* Where the operations start among the verbs events: replay
		 * --sim starts them at the same place (docs/recording.md). */
		if (hw->tap)
			tb_tap_step(hw->tap, hw->o->node, hw->times[i],
				    tb_wall_ns());
		ret = hw->ops->time_point(hw, hw->st, hw->times[i]);
		if (!ret)
			ret = tv_tb_hw_barrier(hw,
					       "the other nodes (time point barrier)");
	}
	if (!ret)
		ret = finish(hw);
	return ret;
}

static void record_fired(void *ctx, const char *point, uint64_t hit)
{
	struct tv_tb_hw *hw = ctx;

	tb_tap_fire(hw->tap, hw->o->node, point, hit, tb_wall_ns());
}

/*
 * --ack-timeout-ms overrides the rendezvous scenario's engine timeout: the
 * recording's scenario says what ran, so that replay --sim runs the same.
 */
static void record_overrides(struct tv_tb_hw *hw)
{
	json_t *sc, *engine;

	if (!hw->o->ack_timeout_ms || strcmp(hw->sc->ops->name, "rendezvous"))
		return;
	sc = json_deep_copy(json_object_get(hw->tap->hdr, "scenario"));
	engine = sc ? json_object_get(sc, "engine") : NULL;
	if (sc && !engine) {
		engine = json_object();
		json_object_set_new(sc, "engine", engine);
	}
	if (engine)
		json_object_set_new(engine, "ack_timeout_ns", tv_tb_json_u64(
			hw->o->ack_timeout_ms * 1000000ull));
	if (sc)
		json_object_set_new(hw->tap->hdr, "scenario", sc);
}

/*
 * The recording is written at the end: a FILE that cannot be written
 * there fails now, not after the whole run.  Under mpirun rank 0 writes
 * it, on its own host: not checked here.
 */
static int record_path_check(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];

	if (!access(path, F_OK))
		return access(path, W_OK) ? -errno : 0;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s",
			 slash == path ? 1 : (int)(slash - path), path);
	return access(dir, W_OK | X_OK) ? -errno : 0;
}

/* --record: the tap, started now (monotonic, as the device's clock). */
static int record_init(struct tv_tb_hw *hw, char *msg, size_t cap)
{
	struct timespec rt;
	char host[256] = "";
	json_t *rec;
	int ret;

	ret = hw->rec_gather ? 0 : record_path_check(hw->o->record_path);
	if (!ret)
		ret = tv_tb_record_create(hw->o->record_path, hw->sc,
				  hw->o->scenario_path, hw->seed, "ibverbs",
				  &hw->tap);
	if (ret) {
		snprintf(msg, cap, "--record %s: %s", hw->o->record_path,
			 strerror(-ret));
		return ret;
	}
	clock_gettime(CLOCK_REALTIME, &rt);
	hw->tap->t0_ns = tb_wall_ns();
	rec = json_object_get(hw->tap->hdr, "recording");
	json_object_set_new(rec, "node", json_integer(hw->o->node));
	json_object_set_new(rec, "t0_monotonic_ns", tv_tb_json_u64(hw->tap->t0_ns));
	json_object_set_new(rec, "t0_realtime_ns", tv_tb_json_u64(
		(uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec));
	gethostname(host, sizeof(host) - 1);
	json_object_set_new(rec, "host", tv_tb_json_str(host));
	hw->tap->no_ops = true;
	record_overrides(hw);
	if (hw->flt)
		tv_flt_set_observer(hw->flt, record_fired, hw);
	return 0;
}

/* The node's verdict; the workload's operation counts are not known here. */
static int record_finish(struct tv_tb_hw *hw)
{
	struct tv_tb_result res = { .failures = hw->fails.count };
	int ret = hw->rec_gather ?
		  tb_record_finish_mem(hw->tap, &res, &hw->fails, &hw->rec_buf,
				       &hw->rec_len) :
		  tv_tb_record_finish(hw->tap, &res, &hw->fails);

	hw->tap = NULL;
	if (ret)
		fprintf(stderr, "tensorverbs serve: node %u: --record %s: %s\n",
			hw->o->node, hw->o->record_path, strerror(-ret));
	return ret;
}

static int hw_open(struct tv_tb_hw *hw, char *msg, size_t cap)
{
	struct tv_ibv_config env;
	/* RDMA_* syntax, then against the machine: unknown device, bad MTU. */
	int ret = tv_ibv_config_check_env(msg, cap, &env);

	if (!ret)
		ret = faults_init(hw, msg, cap);
	if (!ret && hw->o->record_path)
		ret = record_init(hw, msg, cap);
	if (!ret)
		ret = hw->ops->open(hw, &hw->st, msg, cap);
	if (!ret)
		ret = hw->ops->times(hw, hw->st, &hw->times, &hw->ntimes);
	if (ret)
		return ret;
	ret = coord_init(&hw->co, hw->o->node, hw->sc->nodes,
			 (const struct sockaddr *)&hw->o->addrs[0],
			 hw->fingerprint, hw->ops->nstats + HW_FAULT_SLOTS,
			 msg, cap);
	if (!ret)
		hw->co_ready = true;
	return ret;
}

static void hw_summary(struct tv_tb_hw *hw, int rc, double secs)
{
	tv_tb_failures_print(&hw->fails, stdout);
	printf("serve: %s node %u on %s: %s", hw->sc->name, hw->o->node,
	       hw->dev_name[0] ? hw->dev_name : "?",
	       rc == TV_TB_SERVE_PASS ? "PASS" : "FAIL");
	/* A node that failed before its workload opened has nothing to say. */
	if (hw->st && hw->ops->summary) {
		fputs(": ", stdout);
		hw->ops->summary(hw, hw->st, stdout);
	}
	printf(", %zu time points, %" PRIu64 " faults fired here, %.2f s\n",
	       hw->ntimes, hw->fault_fires, secs);
	fflush(stdout);
}

static int hw_close(struct tv_tb_hw *hw, int rc)
{
	int ret = 0;

	if (hw->co_ready)
		coord_fini(&hw->co);
	hw->fault_fires = hw->flt ? tv_flt_total_fires(hw->flt) : 0;
	if (hw->st)
		ret = hw->ops->close(hw, hw->st);
	/* After the workload unwrapped its device. */
	faults_stop(hw);
	tv_flt_destroy(hw->flt);
	hw->flt = NULL;
	if (ret) {
		tv_tb_hw_fail(hw, TV_TB_FK_LEAK, "closing node %u: %s",
			      hw->o->node, strerror(-ret));
		rc = TV_TB_SERVE_FAIL;
	}
	return rc;
}

static int hw_run(struct tv_tb_hw *hw)
{
	char msg[512] = "";
	int ret, rc = TV_TB_SERVE_FAIL;

	hw->t0_ns = tb_wall_ns();
	hw->deadline_ns = hw->t0_ns + (uint64_t)hw->o->timeout_s * 1000000000ull;
	ret = hw_open(hw, msg, sizeof(msg));
	if (ret) {
		fprintf(stderr, "tensorverbs serve: node %u: %s\n", hw->o->node,
			msg[0] ? msg : strerror(-ret));
		rc = ret == -EINVAL || ret == -ENODEV ? TV_TB_SERVE_USAGE :
							TV_TB_SERVE_FAIL;
		tv_tb_hw_fail(hw, TV_TB_FK_RUNNER, "%s", msg);
		goto close;
	}
	ret = hw_steps(hw);
	/* A step that failed without saying so (an allocation): say it. */
	if (ret && !hw->fails.count)
		tv_tb_hw_fail(hw, TV_TB_FK_RUNNER, "%s", strerror(-ret));
	if (ret && hw->co_ready)
		coord_abort(&hw->co, "node %u: %s", hw->o->node,
			    hw->fails.count && hw->fails.msgs[0] ?
			    hw->fails.msgs[0] : strerror(-ret));
	rc = hw->fails.count ? TV_TB_SERVE_FAIL : TV_TB_SERVE_PASS;
close:
	rc = hw_close(hw, rc);
	/* A recording asked for and not written fails the run (the reason
	 * printed before the verdict). */
	if (hw->tap && record_finish(hw) && rc == TV_TB_SERVE_PASS)
		rc = TV_TB_SERVE_FAIL;
	if (rc != TV_TB_SERVE_USAGE)
		hw_summary(hw, rc, (double)(tb_wall_ns() - hw->t0_ns) / 1e9);
	if (hw->st && hw->ops->state_free)
		hw->ops->state_free(hw->st);
	free(hw->times);
	tb_failures_free(&hw->fails);
	return rc;
}

/* ---- the command ---------------------------------------------------------------- */

/* Faults: only points with a hardware equivalent (faults/flt.c knows). */
static bool hw_faults_ok(json_t *plan, char *why, size_t cap)
{
	json_t *rule;
	size_t i;

	json_array_foreach(plan, i, rule) {
		const char *point = json_string_value(json_object_get(rule,
								       "point"));
		const struct tv_flt_point_info *pt =
			point ? tv_flt_point_find(point) : NULL;

		if (point && (!pt || pt->sim_only)) {
			snprintf(why, cap,
				 "fault point '%s' exists only in the simulator",
				 point);
			return false;
		}
	}
	return true;
}

static bool key_in(const char *key, const char *const *list)
{
	for (; list && *list; list++)
		if (!strcmp(*list, key))
			return true;
	return false;
}

/*
 * What a scenario may use on hardware.  Timing models, jitter, late nodes,
 * simulator fault points: the simulator's alone, so such a scenario is
 * skipped, saying why.
 */
static bool hw_applicable(const struct tv_tb_scenario *sc, char *why,
			  size_t cap)
{
	const char *key;
	json_t *v;

	if (!sc->ops->hw) {
		snprintf(why, cap, "workload %s runs on the simulator only",
			 sc->ops->name);
		return false;
	}
	json_object_foreach(sc->json, key, v) {
		if (key_in(key, tb_core_hw_keys) || key_in(key, sc->ops->hw_keys))
			continue;
		snprintf(why, cap, "key '%s' is simulator-only (no hardware equivalent)",
			 key);
		return false;
	}
	if (sc->link.latency_ns != 2000 ||
	    sc->link.bytes_per_sec != (uint64_t)12.5e9) {
		snprintf(why, cap, "it models link latency/bandwidth (link: simulator-only timing)");
		return false;
	}
	if (sc->jitter_ns_max) {
		snprintf(why, cap, "sim.jitter_ns_max is simulator-only");
		return false;
	}
	/* sim.placement is the simulator's model of what devices do; a
	 * device does what it does, so it stays allowed. */
	if (sc->no_atomics) {
		snprintf(why, cap, "sim.atomics is simulator-only (a device "
			 "has atomics or not)");
		return false;
	}
	if (sc->ops->hw->applicable &&
	    !sc->ops->hw->applicable(sc, why, cap))
		return false;
	return hw_faults_ok(sc->faults, why, cap);
}

/* Every node's address known; node ids inside the scenario. */
static int check_addrs(const struct tv_tb_serve_opts *o,
		       const struct tv_tb_scenario *sc)
{
	if (o->node >= sc->nodes) {
		fprintf(stderr, "tensorverbs serve: --node %u, but the scenario has %u nodes\n",
			o->node, sc->nodes);
		return -EINVAL;
	}
	for (uint32_t j = 0; j < sc->nodes; j++) {
		if (o->have_addr[j])
			continue;
		fprintf(stderr, "tensorverbs serve: no address for node %u (%s)\n",
			j, j == o->node ? "--addr ADDR:PORT" :
			"--peer J=ADDR:PORT or --cluster");
		return -EINVAL;
	}
	return 0;
}

/*
 * Same scenario file and seed everywhere: the coordinator checks it.  A
 * fingerprint that cannot be made fails the node: a stand-in would make
 * node 0 blame a peer for running another scenario.
 */
static int fingerprint(const char *path, uint64_t seed, uint64_t *fp_p,
		       char *msg, size_t cap)
{
	json_error_t e = { .text = "" };
	json_t *root;
	char *text;

	errno = 0;
	root = json_load_file(path, JSON_ALLOW_NUL, &e);
	if (!root) {
		/* jansson leaves errno from the allocation that failed. */
		bool nomem = errno == ENOMEM || !e.text[0];

		snprintf(msg, cap, "%s", nomem ? strerror(ENOMEM) : e.text);
		return nomem ? -ENOMEM : -EINVAL;
	}
	text = json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(root);
	if (!text) {
		snprintf(msg, cap, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	*fp_p = XXH64(text, strlen(text), seed);
	free(text);
	return 0;
}

/* The scenario with --faults: 0 to go on, else an exit status. */
static int serve_load(const struct tv_tb_serve_opts *o,
		      struct tv_tb_scenario **sc_p)
{
	char err[TV_TB_ERR_MAX], why[256];
	json_t *plan;
	int rc;

	rc = tv_tb_scenario_load_file(o->scenario_path, sc_p, err);
	if (rc) {
		/* Out of memory is not the file's fault (nor a usage error). */
		fprintf(stderr, "tensorverbs serve: %s %s: %s\n",
			rc == -ENOMEM ? "loading scenario" : "invalid scenario",
			o->scenario_path, err);
		return rc == -ENOMEM ? TV_TB_SERVE_FAIL : TV_TB_SERVE_USAGE;
	}
	if (o->faults) {
		rc = tv_tb_plan_from_text(o->faults, &plan, why, sizeof(why));
		if (!rc) {
			rc = tv_tb_scenario_set_faults(*sc_p, plan, false);
			json_decref(plan);
		}
		if (rc) {
			fprintf(stderr, "tensorverbs serve: bad --faults: %s\n",
				rc == -EINVAL ? why : strerror(-rc));
			return TV_TB_SERVE_USAGE;
		}
	}
	if (!hw_applicable(*sc_p, why, sizeof(why))) {
		printf("SKIP: %s: %s\n", (*sc_p)->name, why);
		return TV_TB_SERVE_SKIP;
	}
	return check_addrs(o, *sc_p) ? TV_TB_SERVE_USAGE : 0;
}

/*
 * Under mpirun every rank's recording goes to rank 0, which merges them
 * into record_path: one file for the run, written by one process (each
 * rank writing the same path on a shared folder would leave one node's).
 * Every rank comes here once, with or without a recording (len 0), so
 * that no rank waits on a collective another one skipped.
 */
static int record_gather(const struct tv_tb_serve_opts *o, uint32_t rank,
			 const char *buf, size_t len)
{
	char err[1024] = "", **bufs = NULL;
	uint64_t *lens = NULL;
	uint32_t size = 1, got = 0;
	int ret = tb_mpi_gather_bytes(buf, len, &bufs, &lens);

	if (ret || rank != 0) {
		if (ret)
			fprintf(stderr, "tensorverbs serve: rank %u: --record %s: "
				"gathering the recordings: %s\n", rank,
				o->record_path, strerror(-ret));
		return ret;
	}
	(void)tv_tb_mpi_world(&rank, &size);
	/* The ranks that made one, in rank order; the others are named. */
	for (uint32_t r = 0; r < size; r++) {
		if (!lens[r]) {
			fprintf(stderr, "tensorverbs serve: --record %s: rank %u "
				"made no recording (its messages say why)\n",
				o->record_path, r);
			free(bufs[r]);
			continue;
		}
		bufs[got] = bufs[r];
		lens[got++] = lens[r];
	}
	ret = got ? tb_record_merge_mem(o->record_path, bufs, lens, got, err,
					sizeof(err)) : -ENODATA;
	if (ret)
		fprintf(stderr, "tensorverbs serve: --record %s: %s\n",
			o->record_path, err[0] ? err : strerror(-ret));
	else
		printf("serve: recording of %u rank(s) gathered by rank 0 into "
		       "%s\n", got, o->record_path);
	for (uint32_t r = 0; r < got; r++)
		free(bufs[r]);
	free(bufs);
	free(lens);
	return ret;
}

static int serve_node(const struct tv_tb_serve_opts *o, bool gather,
		      char **rec_p, size_t *rec_len_p)
{
	struct tv_tb_scenario *sc = NULL;
	struct tv_tb_hw *hw;
	char why[256];
	int rc = serve_load(o, &sc);

	if (rc) {
		tv_tb_scenario_free(sc);
		return rc;
	}
	hw = calloc(1, sizeof(*hw));
	if (!hw) {
		fprintf(stderr, "tensorverbs serve: node %u: %s\n", o->node,
			strerror(ENOMEM));
		tv_tb_scenario_free(sc);
		return TV_TB_SERVE_FAIL;
	}
	hw->o = o;
	hw->sc = sc;
	hw->ops = sc->ops->hw;
	hw->seed = o->has_seed ? o->seed : sc->seed;
	rc = fingerprint(o->scenario_path, hw->seed, &hw->fingerprint, why,
			 sizeof(why));
	if (rc) {
		fprintf(stderr, "tensorverbs serve: node %u: fingerprint of %s: %s\n",
			o->node, o->scenario_path, why);
		free(hw);
		tv_tb_scenario_free(sc);
		return TV_TB_SERVE_FAIL;
	}
	hw->rec_gather = gather;
	rc = hw_run(hw);
	*rec_p = hw->rec_buf;
	*rec_len_p = hw->rec_len;
	free(hw);
	tv_tb_scenario_free(sc);
	return rc;
}

int tv_tb_serve(const struct tv_tb_serve_opts *o)
{
	uint32_t rank = 0, size = 1;
	bool gather = o->record_path && tv_tb_mpi_world(&rank, &size);
	char *rec = NULL;
	size_t len = 0;
	int rc = serve_node(o, gather, &rec, &len);

	/* A recording asked for and not written fails the run (as a path
	 * that cannot be written does before it starts): a script would
	 * otherwise go on to replay a file that is not there. */
	if (gather && record_gather(o, rank, rec, len) && !rc)
		rc = TV_TB_SERVE_FAIL;
	free(rec);
	return rc;
}

int tv_tb_parse_peer(const char *text, uint32_t *node_p,
		     struct sockaddr_storage *addr_p)
{
	char *end;
	unsigned long v;

	if (!text || text[0] < '0' || text[0] > '9')
		return -EINVAL;
	v = strtoul(text, &end, 10);
	if (*end != '=' || v >= TV_TB_MAX_NODES)
		return -EINVAL;
	if (tv_cm_parse_addr(end + 1, addr_p))
		return -EINVAL;
	*node_p = (uint32_t)v;
	return 0;
}

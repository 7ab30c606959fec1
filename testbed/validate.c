/*
 * tensorverbs validate (docs/validate.md): does RDMA work on this host,
 * for every protocol we test?  In order: the devices and what each
 * protocol needs of them, the RDMA_* configuration, every workload's
 * scenarios as one process per node on the devices, the fault scenarios
 * real verbs can run, and (with perftest) each protocol's benchmark
 * beside its perftest counterpart.  Every check is recorded with its
 * reason; the report is written by validate_report.c.
 *
 * Safe on a shared machine: only the devices given (RDMA_DEVICE, or all),
 * every child in a process group of its own that is killed on a timeout,
 * on Ctrl-C and on failure, so no process (and so no QP) is left behind.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <tensorverbs/ibverbs.h>
#include <tensorverbs/workload.h>

#include "tb_int.h"
#include "validate_int.h"

/* ---- children: one process group each, killed on any way out ----------- */

static volatile sig_atomic_t stop_requested;
static pid_t live[VAL_MAX_PROCS];
static size_t nlive;

static void kill_live(void)
{
	for (size_t i = 0; i < nlive; i++)
		if (live[i] > 0)
			kill(-live[i], SIGKILL);
}

static void on_signal(int sig)
{
	stop_requested = 1;
	kill_live();
	signal(sig, SIG_DFL);
	raise(sig);
}

void val_signals(void)
{
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
}

int val_path(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

uint64_t val_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool val_stopped(void)
{
	return stop_requested;
}

/*
 * A child's environment: ours with env (NAME=VALUE) set, without
 * mpirun's variables: the children are not ranks of our job, and a
 * serve or bench that saw them would call MPI_Init and fail.
 */
#define VAL_ENV_MAX 1024
extern char **environ;

static void child_env(const char *env, char **envp)
{
	size_t n = 0, klen = env ? strcspn(env, "=") + 1 : 0;

	for (char **e = environ; *e && n + 2 < VAL_ENV_MAX; e++) {
		if (!strncmp(*e, "OMPI_", 5) || !strncmp(*e, "PMIX_", 5) ||
		    !strncmp(*e, "PMI_", 4) || !strncmp(*e, "OPAL_", 5))
			continue;
		if (env && !strncmp(*e, env, klen))
			continue; /* replaced */
		envp[n++] = *e;
	}
	if (env)
		envp[n++] = (char *)env;
	envp[n] = NULL;
}

/* argv with env (NAME=VALUE or NULL) set, output to log: its pid. */
int val_spawn_node(char *const argv[], const char *env, const char *log)
{
	static char *envp[VAL_ENV_MAX];
	pid_t pid;

	child_env(env, envp);
	pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		/* A group of its own: a kill reaches what it starts too. */
		setpgid(0, 0);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		tv_tb_child_exec(argv, envp);
	}
	setpgid(pid, pid);
	if (nlive < VAL_MAX_PROCS)
		live[nlive++] = pid;
	return pid;
}

/*
 * pc[i] (n <= VAL_MAX_PROCS): a pid in (a negative errno: it never
 * started), its exit code out (128 + signal when killed).  Whatever runs
 * past deadline_ns, or after a Ctrl-C, is killed with its group.
 */
void val_reap_nodes(int *pc, size_t n, uint64_t deadline_ns)
{
	bool done[VAL_MAX_PROCS] = { false };
	size_t left = 0;

	assert(n <= VAL_MAX_PROCS);
	for (size_t i = 0; i < n; i++) {
		done[i] = pc[i] <= 0;
		if (pc[i] <= 0)
			pc[i] = 1;
		left += !done[i];
	}
	while (left) {
		for (size_t i = 0; i < n; i++) {
			int st;

			if (done[i] || waitpid(pc[i], &st, WNOHANG) <= 0)
				continue;
			pc[i] = WIFEXITED(st) ? WEXITSTATUS(st) :
						128 + WTERMSIG(st);
			done[i] = true;
			left--;
		}
		if (left && (val_now_ns() > deadline_ns || stop_requested))
			for (size_t i = 0; i < n; i++)
				if (!done[i])
					kill(-pc[i], SIGKILL);
		if (left)
			usleep(20000);
	}
	nlive = 0;
}

int val_run(char *const argv[], const char *env, const char *log,
	    uint64_t timeout_ns)
{
	int pc = val_spawn_node(argv, env, log);

	if (pc < 0)
		return pc;
	val_reap_nodes(&pc, 1, val_now_ns() + timeout_ns);
	return pc;
}

/* ---- the devices ------------------------------------------------------------ */

void val_add(struct tv_tb_validation *v, const char *group, const char *name,
	     enum val_status st, uint64_t t0, const char *fmt, ...)
{
	struct val_check *c;
	va_list ap;

	if (v->nchecks == VAL_MAX_CHECKS)
		return;
	c = &v->checks[v->nchecks++];
	snprintf(c->group, sizeof(c->group), "%s", group);
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->status = st;
	c->secs = t0 ? (double)(val_now_ns() - t0) / 1e9 : 0;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
	if (v->opts->progress && !v->quiet)
		fprintf(v->opts->progress, "[%3zu %6.1f s] %-10s %-44s %s%s%s\n",
			v->nchecks, (double)(val_now_ns() - v->t0) / 1e9, group,
			name, val_status_name(st), c->detail[0] ? ": " : "",
			c->detail);
}

const char *val_status_name(enum val_status st)
{
	return st == VAL_PASS ? "PASS" : st == VAL_FAIL ? "FAIL" : "SKIP";
}

static const struct tv_ibv_gid *ipv4_gid(const struct tv_ibv_device_info *d)
{
	for (uint32_t p = 0; p < d->num_ports; p++)
		for (uint32_t g = 0; g < d->ports[p].num_gids; g++)
			if (tv_ibv_gid_is_ipv4(d->ports[p].gids[g].raw))
				return &d->ports[p].gids[g];
	return NULL;
}

static bool port_active(const struct tv_ibv_device_info *d,
			enum tv_vf_mtu *mtu_p)
{
	for (uint32_t p = 0; p < d->num_ports; p++)
		if (d->ports[p].attr.state == TV_PORT_ACTIVE) {
			*mtu_p = d->ports[p].attr.active_mtu;
			return true;
		}
	return false;
}

/* What each protocol needs of one device (validate_int.h). */
void val_device_checks(struct tv_tb_validation *v,
		       const struct tv_ibv_device_info *d)
{
	const struct tv_vf_device_attr *a = &d->attr;
	const struct tv_ibv_gid *g = ipv4_gid(d);
	enum tv_vf_mtu mtu = 0;
	char n[96], ip[INET_ADDRSTRLEN] = "";
	uint64_t t0 = val_now_ns();

	bool active = port_active(d, &mtu);

	snprintf(n, sizeof(n), "%s: an active port", a->name);
	val_add(v, "device", n, active ? VAL_PASS : VAL_FAIL, t0,
		"active MTU %d", active ? tv_vf_mtu_bytes(mtu) : 0);
	if (g)
		inet_ntop(AF_INET, g->raw + 12, ip, sizeof(ip));
	snprintf(n, sizeof(n), "%s: RoCE IPv4 GID (rdma_cm)", a->name);
	val_add(v, "device", n, g ? VAL_PASS : VAL_FAIL, t0, "%s%s%s (GID %u, %s)",
	    g ? ip : "none", g && g->netdev[0] ? " on " : "",
	    g ? g->netdev : "", g ? g->index : 0,
	    g ? tv_ibv_gid_type_str(g->type) : "-");
	snprintf(n, sizeof(n), "%s: atomics (port channels)", a->name);
	val_add(v, "device", n, VAL_PASS, t0, "%s",
	    a->atomic_cap == TV_ATOMIC_NONE ? "none: signals go as "
	    "write-with-immediate" : "fetch-and-add signals");
	snprintf(n, sizeof(n), "%s: READ depth (gather)", a->name);
	val_add(v, "device", n, a->max_qp_rd_atom ? VAL_PASS : VAL_FAIL, t0,
	    "max_qp_rd_atom %u, max_qp_init_rd_atom %u", a->max_qp_rd_atom,
	    a->max_qp_init_rd_atom);
	snprintf(n, sizeof(n), "%s: queue depth (gather: 256)", a->name);
	val_add(v, "device", n, a->max_qp_wr >= 256 ? VAL_PASS : VAL_FAIL, t0,
	    "max_qp_wr %u, max_cqe %u", a->max_qp_wr, a->max_cqe);
	if (g && v->ndevs < VAL_MAX_DEVS) {
		struct val_dev *vd = &v->devs[v->ndevs++];

		snprintf(vd->name, sizeof(vd->name), "%s", a->name);
		snprintf(vd->ip, sizeof(vd->ip), "%s", ip);
		vd->gid_index = g->index;
		vd->atomics = a->atomic_cap != TV_ATOMIC_NONE;
	}
}

/* The inline bytes a QP of the device grants (the rendezvous engine
 * posts small payloads inline): asked 256, granted what it says. */
static void inline_check(struct tv_tb_validation *v, const char *devname)
{
	struct tv_ibv_config cfg;
	struct tv_vf_device *dev = NULL;
	struct tv_vf_pd *pd = NULL;
	struct tv_vf_cq *cq = NULL;
	struct tv_vf_qp *qp = NULL;
	char msg[256] = "", n[96];
	uint64_t t0 = val_now_ns();
	uint32_t got = 0;
	int ret;

	tv_ibv_config_default(&cfg);
	snprintf(cfg.device, sizeof(cfg.device), "%s", devname);
	ret = tv_ibv_open(&cfg, msg, sizeof(msg), &dev);
	if (!ret)
		ret = tv_vf_alloc_pd(dev, &pd);
	if (!ret)
		ret = tv_vf_create_cq(dev, 16, &cq);
	if (!ret) {
		struct tv_vf_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .max_send_wr = 16,
			.max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1,
			.max_inline_data = 256,
		};

		ret = tv_vf_create_qp(pd, &ia, &qp);
	}
	if (!ret)
		got = qp->max_inline_data;
	snprintf(n, sizeof(n), "%s: inline data (rendezvous)", devname);
	if (ret)
		val_add(v, "device", n, VAL_FAIL, t0, "a QP to ask: %s",
			msg[0] ? msg : strerror(-ret));
	else
		val_add(v, "device", n, VAL_PASS, t0, "%u bytes granted of 256 "
			"asked%s", got, got ? "" : ": small payloads are posted "
			"from registered memory instead");
	if (qp)
		tv_vf_destroy_qp(qp);
	if (cq)
		tv_vf_destroy_cq(cq);
	if (pd)
		tv_vf_dealloc_pd(pd);
	if (dev)
		tv_ibv_close(dev);
}

static void devices(struct tv_tb_validation *v)
{
	struct tv_ibv_device_info *infos = NULL;
	const char *only = getenv("RDMA_DEVICE");
	uint64_t t0 = val_now_ns();
	size_t n = 0, used = 0;
	int ret = tv_ibv_query_all(&infos, &n);

	if (ret) {
		val_add(v, "device", "list the RDMA devices", VAL_FAIL, t0, "%s",
		    strerror(-ret));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (only && *only && strcmp(only, infos[i].attr.name))
			continue;
		used++;
		val_device_checks(v, &infos[i]);
		inline_check(v, infos[i].attr.name);
	}
	val_add(v, "device", "at least one RDMA device", used ? VAL_PASS : VAL_FAIL,
	    t0, "%zu found%s%s", used, only && *only ? ", RDMA_DEVICE=" : "",
	    only && *only ? only : "");
	tv_ibv_free_all(infos, n);
}

static void config(struct tv_tb_validation *v)
{
	struct tv_ibv_config env;
	char msg[512] = "";
	uint64_t t0 = val_now_ns();
	int ret = tv_ibv_config_check_env(msg, sizeof(msg), &env);

	val_add(v, "config", "RDMA_* variables", ret ? VAL_FAIL : VAL_PASS, t0,
	    "%s", ret ? msg : "valid (docs/ibverbs.md)");
}

/* A folder this rank cannot make, named (its rank: under mpirun, whose). */
static int val_dir_error(const struct tv_tb_validation *v, const char *path,
			 int ret)
{
	fprintf(stderr, "tensorverbs validate: rank %u: %s: %s\n", v->rank,
		path, strerror(-ret));
	return ret;
}

/* This rank's folder (out_dir; under mpirun, out_dir/rankR for R > 0). */
static int make_dirs(struct tv_tb_validation *v)
{
	static const char *const sub[] = { "", "/logs", "/scenarios" };
	char path[700];

	if (mkdir(v->opts->out_dir, 0755) && errno != EEXIST)
		return val_dir_error(v, v->opts->out_dir, -errno);
	if (v->rank ? val_path(v->dir, sizeof(v->dir), "%s/rank%u",
			       v->opts->out_dir, v->rank) :
		      val_path(v->dir, sizeof(v->dir), "%s", v->opts->out_dir))
		return val_dir_error(v, v->opts->out_dir, -ENAMETOOLONG);
	for (size_t i = 0; i < 3; i++) {
		val_path(path, sizeof(path), "%s%s", v->dir, sub[i]);
		if (mkdir(path, 0755) && errno != EEXIST)
			return val_dir_error(v, path, -errno);
	}
	return 0;
}

/*
 * Under mpirun every rank goes on or none: a rank that stopped alone
 * (no memory, a folder it cannot make on its host) would leave the
 * others in val_mpi_hosts' exchange for ever.  The ranks that could
 * start say which could not; it said why.
 */
static int val_all_started(uint32_t rank, uint32_t size, int ret)
{
	if (size < 2 || tb_mpi_min(ret == 0))
		return ret;
	if (!ret)
		fprintf(stderr, "tensorverbs validate: rank %u: another rank "
			"could not start (its message says why)\n", rank);
	return ret ? ret : -ECANCELED;
}

int tv_tb_validate(const struct tv_tb_validate_opts *o, struct tv_tb_validation **v_p)
{
	struct tv_tb_validation *v = calloc(1, sizeof(*v));
	uint32_t rank = 0, size = 1;
	int ret;

	if (!tv_tb_mpi_world(&rank, &size) || size < 2)
		size = 1;
	if (v) {
		v->opts = o;
		v->t0 = val_now_ns();
		v->next_port = 21000; /* rdma_cm and perftest ports from here */
		v->rank = rank;
		v->size = size;
		v->quiet = rank != 0;
	}
	ret = val_all_started(rank, size, v ? make_dirs(v) : -ENOMEM);
	if (ret) {
		free(v);
		return ret;
	}
	val_signals();
	devices(v);
	config(v);
	ret = v->size > 1 ? val_mpi_hosts(v) : 0;
	if (v->size == 1 && v->ndevs >= 2) {
		v->have_pair = true;
		v->pair[0] = v->devs[0];
		v->pair[1] = v->devs[1];
	}
	if (!ret && v->rank) {
		val_mpi_serve(v);
	} else if (!ret) {
		val_scenarios(v);
		val_faults(v);
		val_benchmarks(v);
		val_mpi_done(v);
	}
	v->secs = (double)(val_now_ns() - v->t0) / 1e9;
	if (ret) {
		tv_tb_validation_free(v);
		return ret;
	}
	*v_p = v;
	return 0;
}

/*
 * tensorverbs validate, the runs: every workload's scenarios as one
 * `serve` process per node (node j on device j mod the devices, as the
 * rxe suite does), the fault scenarios real verbs can run, and the
 * benchmarks beside perftest (docs/validate.md).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "tb_int.h"
#include "validate_int.h"

#define SEC 1000000000ull

static const char *self_of(const struct tv_tb_validation *v)
{
	return v->opts->self ? v->opts->self : "/proc/self/exe";
}

/* The first line of log that starts with prefix, after it (or ""). */
static void log_line(const char *log, const char *prefix, char *out,
		     size_t cap)
{
	FILE *f = fopen(log, "r");
	char line[1024];

	out[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, prefix);

		if (!p)
			continue;
		p += strlen(prefix);
		p[strcspn(p, "\n")] = 0;
		snprintf(out, cap, "%s", p);
		break;
	}
	fclose(f);
}

const struct val_dev *val_place(const struct tv_tb_validation *v,
				uint32_t j, uint32_t *rank_p)
{
	const struct val_host *h;

	if (!v->hosts) {
		*rank_p = 0;
		return &v->devs[j % v->ndevs];
	}
	*rank_p = j % v->size;
	h = &v->hosts[*rank_p];
	return &h->devs[(j / v->size) % h->ndevs];
}

/* "0=ip:port,1=ip:port,...": every node's address, wherever it runs. */
static void cluster_list(const struct tv_tb_validation *v, uint32_t nodes,
			 uint32_t base, char *cl, size_t cap)
{
	size_t used = 0;
	uint32_t r;

	cl[0] = 0;
	for (uint32_t j = 0; j < nodes && used < cap; j++)
		used += (size_t)snprintf(cl + used, cap - used, "%s%u=%s:%u",
					 j ? "," : "", j,
					 val_place(v, j, &r)->ip, base + j);
}

int val_nodes_share(struct tv_tb_validation *v, const char *file,
		    uint32_t nodes, const char *tag, char *const *extra,
		    uint32_t base, int *worst_p)
{
	char cl[1024], logs[VAL_MAX_PROCS][700], envs[VAL_MAX_PROCS][96];
	char node[VAL_MAX_PROCS][12], tmo[16];
	int codes[VAL_MAX_PROCS], worst = 0, all77 = 1;
	uint32_t n = 0, r;

	cluster_list(v, nodes, base, cl, sizeof(cl));
	snprintf(tmo, sizeof(tmo), "%u", v->opts->timeout_s);
	for (uint32_t j = 0; j < nodes; j++) {
		const struct val_dev *d = val_place(v, j, &r);
		char *argv[24] = { (char *)self_of(v), "serve", (char *)file,
				   "--node", node[n], "--cluster", cl,
				   "--timeout", tmo, "--ack-timeout-ms",
				   "10000" };
		size_t a = 11;

		if (r != v->rank)
			continue;
		snprintf(node[n], sizeof(node[n]), "%u", j);
		for (size_t k = 0; extra && extra[k] && a < 23; k++)
			argv[a++] = extra[k];
		val_path(logs[n], sizeof(logs[n]), "%s/logs/%s.%u.log", v->dir,
			 tag, j);
		snprintf(envs[n], sizeof(envs[n]), "RDMA_DEVICE=%s", d->name);
		codes[n] = val_spawn_node(argv, envs[n], logs[n]);
		n++;
	}
	val_reap_nodes(codes, n,
		       val_now_ns() + (v->opts->timeout_s + 20) * SEC);
	for (uint32_t i = 0; i < n; i++) {
		all77 &= codes[i] == 77;
		if (codes[i] != 0 && codes[i] != 77 && codes[i] > worst)
			worst = codes[i];
		if (codes[i] < 0)
			worst = 1;
	}
	*worst_p = worst;
	return all77 ? 77 : worst ? 1 : 0;
}

/* One process per node: 0 all passed, 77 all skipped, else the worst. */
int val_run_nodes(struct tv_tb_validation *v, const char *file,
		  uint32_t nodes, const char *tag, char *const *extra,
		  int *worst_p)
{
	uint32_t base = v->next_port;

	if (!v->ndevs || nodes > VAL_MAX_PROCS || !nodes)
		return -EINVAL;
	if (v->hosts)
		return val_mpi_nodes(v, file, nodes, tag, extra, worst_p);
	v->next_port += 16;
	return val_nodes_share(v, file, nodes, tag, extra, base, worst_p);
}

/* The scenario with deadlines TCG and real devices can meet, saved. */
static int tweaked(struct tv_tb_validation *v, const char *path,
		   const char *tag, char *out, size_t cap, uint32_t *nodes_p,
		   char *wl, size_t wl_cap)
{
	json_error_t err;
	json_t *sc = json_load_file(path, JSON_ALLOW_NUL, &err), *o;
	const char *w;
	int rc;

	if (!sc)
		return -EINVAL;
	w = json_string_value(json_object_get(sc, "workload"));
	snprintf(wl, wl_cap, "%s", w ? w : "rendezvous");
	*nodes_p = (uint32_t)json_integer_value(json_object_get(sc, "nodes"));
	/* A READ or write rxe drops is resent after the QP's ACK timeout:
	 * the simulator's 100 ms defaults would fail it under TCG. */
	if (!strcmp(wl, "port") || !strcmp(wl, "gather")) {
		o = json_object_get(sc, wl);
		if (!o) {
			o = json_object();
			json_object_set_new(sc, wl, o);
		}
		json_object_set_new(o, "timeout_ns", json_integer(20 * SEC));
	}
	val_path(out, cap, "%s/scenarios/%s.json", v->dir, tag);
	rc = json_dump_file(sc, out, JSON_INDENT(2)) ? -EIO : 0;
	json_decref(sc);
	return rc;
}

static void one_scenario(struct tv_tb_validation *v, const char *path,
			 const char *tag, char *const *extra,
			 const char *label)
{
	char file[600], wl[32], name[128], why[256], log[600];
	uint64_t t0 = val_now_ns();
	uint32_t nodes = 0;
	int worst = 0, rc;

	rc = tweaked(v, path, tag, file, sizeof(file), &nodes, wl, sizeof(wl));
	if (rc) {
		/* Ours (the copy could not be saved) or the file's. */
		val_add(v, "scenario", tag, VAL_FAIL, t0, "%s: %s%s", path,
			rc == -EINVAL ? "not a scenario" : "cannot save it as ",
			rc == -EINVAL ? "" : file);
		return;
	}
	snprintf(name, sizeof(name), "%s: %s", wl, label ? label : tag);
	if (nodes < 1 || nodes > VAL_MAX_PROCS) {
		val_add(v, label ? "fault" : "scenario", name, VAL_SKIP, t0,
			"%u nodes", nodes);
		return;
	}
	rc = val_run_nodes(v, file, nodes, tag, extra, &worst);
	val_path(log, sizeof(log), "%s/logs/%s.0.log", v->dir, tag);
	if (rc == 77) {
		log_line(log, "SKIP: ", why, sizeof(why));
		val_add(v, label ? "fault" : "scenario", name, VAL_SKIP, t0,
			"%s", why[0] ? why : "not for real verbs");
		return;
	}
	log_line(log, rc ? "FAIL: " : ": PASS: ", why, sizeof(why));
	val_add(v, label ? "fault" : "scenario", name,
		rc ? VAL_FAIL : VAL_PASS, t0, "%u processes%s%s%s", nodes,
		why[0] ? "; " : "", why,
		rc ? " (logs: logs/)" : "");
}

static int json_name(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 5 && !strcmp(d->d_name + n - 5, ".json");
}

void val_scenarios(struct tv_tb_validation *v)
{
	char tag[200], path[900];

	if (!v->ndevs) {
		val_add(v, "scenario", "every workload's scenarios", VAL_SKIP,
			0, "no RDMA device with a RoCE IPv4 address%s",
			v->hosts ? " on every rank" : "");
		return;
	}
	for (size_t d = 0; v->opts->scenario_dirs[d]; d++) {
		const char *sd = v->opts->scenario_dirs[d];
		struct dirent **list = NULL;
		int n = scandir(sd, &list, json_name, alphasort);

		if (n < 0) {
			val_add(v, "scenario", sd, VAL_SKIP, 0,
				"no such folder");
			continue;
		}
		for (int i = 0; i < n; i++) {
			const char *base = strrchr(sd, '/');

			snprintf(path, sizeof(path), "%s/%s", sd, list[i]->d_name);
			snprintf(tag, sizeof(tag), "%s_%.*s",
				 base ? base + 1 : sd,
				 (int)(strlen(list[i]->d_name) - 5),
				 list[i]->d_name);
			if (!val_stopped())
				one_scenario(v, path, tag, NULL, NULL);
			free(list[i]);
		}
		free(list);
	}
}

/* The faults real verbs can inject: recovered from, every row right. */
void val_faults(struct tv_tb_validation *v)
{
	static char *qp_error[] = { "--faults", "vf/qp/error:nth=3,count=1",
				    "--faults-node", "0", NULL };
	static char *read_error[] = { "--faults",
				      "gather/read/error:nth=2,count=1",
				      "--faults-node", "0", NULL };
	char path[600];

	if (!v->ndevs || val_stopped())
		return;
	snprintf(path, sizeof(path), "%s/basic_transfer.json",
		 v->opts->scenario_dirs[0]);
	if (!access(path, R_OK))
		one_scenario(v, path, "fault_qp_error", qp_error,
			     "basic_transfer, a QP moved to ERR mid-run");
	snprintf(path, sizeof(path), "%s/gather/quiver_reddit.json",
		 v->opts->scenario_dirs[0]);
	if (!access(path, R_OK))
		one_scenario(v, path, "fault_read_error", read_error,
			     "quiver_reddit, a READ failing mid-list");
}

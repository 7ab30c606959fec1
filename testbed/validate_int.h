/*
 * This file is private to tensorverbs' testbed: tensorverbs validate
 * (validate.c: devices, configuration, process control; validate_run.c:
 * scenarios, faults, benchmarks; validate_report.c: JSON, HTML, JUnit).
 */
#ifndef TV_VALIDATE_INT_H
#define TV_VALIDATE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/testbed.h>

#define VAL_MAX_CHECKS 256
#define VAL_MAX_DEVS 8
#define VAL_MAX_PROCS 16
#define VAL_MAX_POINTS 8

enum val_status { VAL_PASS = 0, VAL_FAIL, VAL_SKIP };

struct val_check {
	char group[16];
	char name[128];
	enum val_status status;
	double secs;
	char detail[512];
};

struct val_dev {
	char name[64];
	char ip[16];
	uint32_t gid_index;
	bool atomics;
};

/* A rank's host under mpirun: its name and devices. */
struct val_host {
	char name[64];
	uint32_t ndevs;
	struct val_dev devs[VAL_MAX_DEVS];
};

/* A benchmark's figures beside perftest's, per size or per configuration. */
struct val_series {
	char what[64];
	char unit[16];
	size_t n;
	char label[VAL_MAX_POINTS][24];
	double ours[VAL_MAX_POINTS];
	double perftest[VAL_MAX_POINTS];
};

struct tv_tb_validation {
	const struct tv_tb_validate_opts *opts;
	uint64_t t0;
	double secs;
	struct val_check checks[VAL_MAX_CHECKS];
	size_t nchecks;
	struct val_dev devs[VAL_MAX_DEVS];
	size_t ndevs;
	struct val_series series[4];
	size_t nseries;
	uint32_t next_port;
	/* Across hosts (validate_mpi.c): rank 0 drives, the others serve. */
	uint32_t rank, size;         /* 0 and 1 on one host */
	struct val_host *hosts;      /* [size] under mpirun, else NULL */
	struct val_dev pair[2];      /* the benchmarks' two devices */
	bool have_pair;
	char dir[600];               /* this rank's logs/ and scenarios/ */
	bool quiet;                  /* ranks other than 0: no progress */
};

void val_signals(void);
/* A path under this rank's folder (printf-like); -ENAMETOOLONG when it
 * does not fit (the caller's log or file then cannot be written). */
int val_path(char *out, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
uint64_t val_now_ns(void);
const char *val_status_name(enum val_status st);
void val_add(struct tv_tb_validation *v, const char *group,
	     const char *name, enum val_status st, uint64_t t0,
	     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
bool val_stopped(void);
int val_spawn_node(char *const argv[], const char *env, const char *log);
void val_reap_nodes(int *pc, size_t n, uint64_t deadline_ns);
/* argv with env (NAME=VALUE or NULL), output to log: its exit code, or
 * 128 + signal, or -errno; killed (group and all) at the timeout. */
int val_run(char *const argv[], const char *env, const char *log,
	    uint64_t timeout_ns);
int val_run_nodes(struct tv_tb_validation *v, const char *file,
		  uint32_t nodes, const char *tag, char *const *extra,
		  int *worst_p);

/* Node j's device, and which rank starts it (0 on one host). */
const struct val_dev *val_place(const struct tv_tb_validation *v,
				uint32_t j, uint32_t *rank_p);
/*
 * validate_mpi.c.  val_mpi_hosts(): every rank's devices to every rank,
 * the other ranks' device checks to rank 0's list.  The jobs rank 0
 * hands out (each rank does its share, the results combined): nodes of
 * a scenario, a perftest pair (server on rank 1), a benchmark split in
 * two (--node = rank), a tool on every rank's PATH.  val_mpi_serve(): the
 * other ranks' loop, until rank 0's val_mpi_done().
 */
int val_mpi_hosts(struct tv_tb_validation *v);
int val_mpi_nodes(struct tv_tb_validation *v, const char *file,
		  uint32_t nodes, const char *tag, char *const *extra,
		  int *worst_p);
int val_mpi_perftest(struct tv_tb_validation *v, const char *tool,
		     const char *tag, char *const *args, uint32_t port,
		     char *log, size_t cap);
int val_mpi_bench(struct tv_tb_validation *v, char *const *args,
		  uint32_t port, const char *tag, char *log, size_t cap);
bool val_mpi_have(struct tv_tb_validation *v, const char *tool);
void val_mpi_serve(struct tv_tb_validation *v);
void val_mpi_done(struct tv_tb_validation *v);
/* validate_bench.c: the tool is on PATH. */
bool val_in_path(const char *tool);
/* validate_run.c: one process per node of ours (all of them on one host):
 * 0 all passed, 77 all skipped, else 1 with the worst code out. */
int val_nodes_share(struct tv_tb_validation *v, const char *file,
		    uint32_t nodes, const char *tag, char *const *extra,
		    uint32_t base, int *worst_p);
/* validate_bench.c: a perftest tool's server here (its pid), its client. */
int val_perftest_server(struct tv_tb_validation *v, const char *tool,
			const char *tag, char *const *args, uint32_t port);
int val_perftest_client(struct tv_tb_validation *v, const char *tool,
			const char *tag, char *const *args, uint32_t port,
			char *log, size_t cap);
/* validate_bench.c: `bench ARGS... [--node N] --addr0 A0 --addr1 A1`. */
int val_bench_run(struct tv_tb_validation *v, char *const *args, int node,
		  uint32_t port, const char *tag, char *log, size_t cap);

/*
 * One device's checks: an active port, a RoCE IPv4 GID, atomics, READ
 * depth, queue depth; a device with such a GID is kept for the scenarios
 * and benchmarks (v->devs, up to VAL_MAX_DEVS).
 */
struct tv_ibv_device_info;
void val_device_checks(struct tv_tb_validation *v,
		       const struct tv_ibv_device_info *d);
void val_scenarios(struct tv_tb_validation *v);
void val_faults(struct tv_tb_validation *v);
void val_benchmarks(struct tv_tb_validation *v);

#endif /* TV_VALIDATE_INT_H */

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
};

void val_signals(void);
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

void val_scenarios(struct tv_tb_validation *v);
void val_faults(struct tv_tb_validation *v);
void val_benchmarks(struct tv_tb_validation *v);

#endif /* TV_VALIDATE_INT_H */

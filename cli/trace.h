/*
 * This file is private to the tensorverbs CLI: run traces as JSON Lines
 * (docs/trace.md).
 *
 * A trace is a header line (seed, the scenario as parsed, the fault plan,
 * the build), one line per simulator, engine or fault event in execution
 * order, and a summary line.  Event lines hold no pointer and no wall
 * clock, so two runs of the same scenario and seed give identical lines:
 * `replay` re-runs the header and compares, `show` draws the events.
 *
 * One recorder turns observer events into JSON objects and hands each to
 * an emit function: the writer prints it, replay compares it.  Both use the
 * very same encoding, so what is compared is exactly what was written.
 */
#ifndef TV_CLI_TRACE_H
#define TV_CLI_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/sim.h>

#include "check.h"

#define TRACE_FORMAT 1
#define TRACE_ERR_MAX 1024

struct run_result;

/* Gets each event line; ev is borrowed.  Returns 0 or a negative errno. */
typedef int (*trace_emit_fn)(void *ctx, json_t *ev);

/* Where an rkey's addresses are measured from (see trace_rec_addr). */
struct trace_anchor {
	uint64_t key;            /* (node + 1) << 32 | rkey; 0 = empty slot */
	uint64_t base;           /* first raw address seen under the key */
};

struct trace_rec {
	/* set by the owner */
	trace_emit_fn emit;
	void *emit_ctx;
	struct tv_sim *sim;      /* virtual time of engine events; may be NULL */
	/* read-only for the owner */
	uint64_t count;          /* event lines emitted */
	int err;                 /* first error (sticky); lines stop after it */
	/* private */
	struct trace_anchor *anchors;
	size_t anchors_cap;
	size_t anchors_used;
};

void trace_rec_init(struct trace_rec *t, trace_emit_fn emit, void *ctx);
void trace_rec_fini(struct trace_rec *t);
void trace_rec_sim_event(struct trace_rec *t, const struct tv_sim_event *ev);
void trace_rec_engine_event(struct trace_rec *t,
			    const struct tv_engine_event *ev);
/* A fault fired: hit is the point's hit number, node who ran (or none). */
void trace_rec_fault_event(struct trace_rec *t, const char *point,
			   uint64_t hit, uint32_t node);
/*
 * A node's life under node/crash: kind CRASH, RESTART, RESTART_FAILED, or
 * SKIP for an operation (op "send" or "recv", its step and tensor name)
 * not run because the node was down.  op and name may be NULL.
 */
void trace_rec_node_event(struct trace_rec *t, const char *kind,
			  uint32_t node, const char *op, uint64_t step_id,
			  const char *name);

/* "0.1.0+v0.1-12-gabcdef-dirty": version and git describe at configure. */
const char *trace_build_id(void);

/*
 * The header line; scenario and plan (NULL: none) are borrowed (references
 * are taken).  breakage: the TV_BREAK name, or NULL (then no key).
 */
int trace_header_new(uint64_t seed, json_t *scenario,
		     const char *scenario_file, json_t *plan,
		     const char *breakage, json_t **hdr_p);
/* The summary line of a finished run. */
int trace_summary_new(const struct trace_rec *t, const struct run_result *res,
		      const struct failures *fails, json_t **sum_p);

/* One compact line, newline-terminated. */
int trace_write_line(FILE *f, json_t *obj);

/* What a header says, validated; json fields are borrowed from hdr. */
struct trace_header {
	uint64_t seed;
	json_t *scenario;
	const char *scenario_file;  /* NULL for the built-in demo */
	json_t *plan;               /* a JSON array, or JSON null: no faults */
	const char *build_id;
	uint32_t test_breakage;     /* TV_BREAK_* the run had (tests only) */
};

int trace_header_parse(json_t *hdr, struct trace_header *h_p,
		       char err[TRACE_ERR_MAX]);

/*
 * Reads one line of a trace and parses it as a JSON object.  Returns 0,
 * -ENODATA at the end of the file, -EINVAL (err says why) or -errno.
 */
struct trace_reader {
	FILE *f;
	const char *path;
	char *buf;
	size_t cap;
	uint64_t line;           /* 1-based number of the last line read */
};

int trace_reader_open(const char *path, struct trace_reader *r_p);
void trace_reader_close(struct trace_reader *r);
int trace_reader_next(struct trace_reader *r, json_t **obj_p,
		      char err[TRACE_ERR_MAX]);

/* The line kinds of a trace. */
bool trace_is_event(json_t *obj);
bool trace_is_summary(json_t *obj);

#endif /* TV_CLI_TRACE_H */

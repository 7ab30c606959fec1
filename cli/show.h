/*
 * This file is private to the tensorverbs CLI: `tensorverbs show`, the
 * drawing of a trace (docs/trace.md).
 *
 * The trace is read once into a flat array of parsed events; the SVG and
 * Chrome writers each walk it.  Only the fields the drawings need are kept.
 */
#ifndef TV_CLI_SHOW_H
#define TV_CLI_SHOW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SHOW_NAME_MAX 64
#define SHOW_NONE UINT32_MAX

enum show_src {
	SHOW_SIM,
	SHOW_ENGINE,
	SHOW_OTHER,              /* a source this build does not know (faults) */
};

struct show_event {
	uint64_t i;              /* index in the trace */
	uint64_t t;              /* virtual time, ns */
	enum show_src src;
	char kind[24];
	uint32_t node;
	uint32_t peer;           /* SHOW_NONE if none */
	uint32_t qpn;
	char op[24];             /* sim: opcode name */
	char status[24];         /* sim: WC status; engine: code name */
	char state[8];           /* sim QP_STATE: the new state */
	char msg[24];            /* engine: message type */
	bool has_imm;
	uint32_t imm;
	uint64_t wr_id;
	bool has_idx;
	uint32_t idx;
	uint64_t step;
	uint64_t len;
	char name[SHOW_NAME_MAX]; /* truncated with "..." */
};

struct show_trace {
	const char *path;
	char scenario_name[SHOW_NAME_MAX];
	uint64_t seed;
	uint32_t nodes;
	struct show_event *ev;
	size_t nev;
	char result[8];          /* from the summary, "" if absent */
};

/* Select [first, last] of the trace's events (by index). */
struct show_range {
	uint64_t first;
	uint64_t last;
	size_t max_rows;         /* SVG: stop after this many rows */
};

bool show_is_error_status(const char *status);

int show_svg(const struct show_trace *tr, const struct show_range *rg,
	     FILE *out);
int show_chrome(const struct show_trace *tr, const struct show_range *rg,
		FILE *out);

#endif /* TV_CLI_SHOW_H */

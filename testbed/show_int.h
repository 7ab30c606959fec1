/*
 * This file is private to tensorverbs' testbed: the drawings of a trace
 * (docs/trace.md).
 *
 * The trace is read once into a flat array of parsed events (show.c); the
 * SVG (show_svg.c) and Chrome (show_chrome.c) writers each walk it.  Only
 * the fields the drawings need are kept.  The simulator's events, fault
 * firings and node lives are drawn here; the workload's own events (the
 * trace's workload, from its header) are drawn as its draw ops say.
 */
#ifndef TV_TESTBED_SHOW_INT_H
#define TV_TESTBED_SHOW_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tb_int.h"

struct show_trace {
	const char *path;
	const struct tv_tb_workload_ops *ops;  /* whose events these are */
	char scenario_name[TV_TB_SHOW_NAME_MAX];
	uint64_t seed;
	uint32_t nodes;
	struct tv_tb_show_event *ev;
	size_t nev;
	char result[8];          /* from the summary, "" if absent */
};

/* Select [first, last] of the trace's events (by index). */
struct show_range {
	uint64_t first;
	uint64_t last;
	size_t max_rows;         /* SVG: stop after this many rows */
};

/* Colours every drawing has, whatever the workload. */
extern const char show_col_error[];

int show_svg(const struct show_trace *tr, const struct show_range *rg,
	     FILE *out);
int show_chrome(const struct show_trace *tr, const struct show_range *rg,
		FILE *out);

#endif /* TV_TESTBED_SHOW_INT_H */

/*
 * This file is private to the tensorverbs CLI: fault plans as the CLI
 * handles them (docs/faults.md).
 *
 * The CLI keeps every plan as a JSON array of rule objects, whichever way
 * it was written: that is what a scenario file holds, what a trace header
 * records and what shrinking edits.  The fault layer's own parser
 * (tv_flt_plan_parse) is the one judge of validity; the command-line form
 * is converted to JSON only after it accepted it.
 */
#ifndef TV_CLI_PLAN_H
#define TV_CLI_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <tensorverbs/faults.h>

#define PLAN_ERR_MAX 256

/*
 * text: a JSON array or the form "point[:key=value,...][;point...]".
 * On success *plan_p is a new JSON array, validated, one rule per point.
 */
int plan_from_text(const char *text, json_t **plan_p, char *err,
		   size_t err_bytes);
/* A JSON plan: an array the fault layer accepts, one rule per point. */
int plan_validate(json_t *plan, char *err, size_t err_bytes);
/* Rules of over replace base's rules for the same point; others append. */
int plan_merge(json_t *base, json_t *over);
/* An injector seeded with seed, every rule of plan armed. */
int plan_injector(json_t *plan, uint64_t seed, struct tv_flt **flt_p,
		  char *err, size_t err_bytes);
struct scenario;

/*
 * A --faults option (text) extends the scenario's plan, its rules winning
 * per point; errors are printed as "tensorverbs CMD: ...".  NULL: nothing.
 */
int plan_apply_option(struct scenario *sc, const char *text, const char *cmd);

/* The rule for point, or NULL. */
json_t *plan_rule(json_t *plan, const char *point);

/*
 * Points whose firing a run cannot be expected to survive: the data is
 * gone (a lost write, a missing receive), or a resource the transfer
 * needs could not be had.  Any other fault must be recovered from.
 */
bool plan_point_unrecoverable(const char *point);

#endif /* TV_CLI_PLAN_H */

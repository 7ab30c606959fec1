/*
 * Results for CI systems (docs/results.md): a run's and a swarm's result
 * as versioned JSON, and JUnit XML, the format Jenkins, GitLab and
 * GitHub already show (one test case per scenario, per failing seed).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/faults.h>

#include "tb_int.h"

#define RESULT_VERSION 1

/* As `run --print-hash` shows it: "0x" and 16 hex digits. */
static json_t *hex64(uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%016" PRIx64, v);
	return json_string(b);
}

static json_t *faults_json(const uint64_t *fires, const uint64_t *on,
			   const uint64_t *bad)
{
	const struct tv_flt_point_info *pts;
	json_t *o = json_object();
	int err = 0;
	size_t n;

	pts = tv_flt_points(&n);
	for (size_t i = 0; o && i < n && i < TV_TB_MAX_POINTS; i++) {
		json_t *p;

		if (!on && !fires[i])
			continue;
		if (!on) {
			tv_ju_set(o, pts[i].name, tv_tb_json_u64(fires[i]), &err);
			continue;
		}
		p = json_pack("{s:o,s:o,s:o}", "seeds_on", tv_tb_json_u64(on[i]),
			      "fires", tv_tb_json_u64(fires[i]), "violations",
			      tv_tb_json_u64(bad[i]));
		tv_ju_set(o, pts[i].name, p, &err);
	}
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *failures_json(const struct tv_tb_failures *f)
{
	json_t *a = json_array();
	int err = 0;

	for (size_t i = 0; a && i < f->count && i < TV_TB_FAILURES_KEPT; i++)
		tv_ju_push(a, json_pack(
			"{s:s,s:o}", "kind", tv_tb_fail_kind_name(f->msg_kinds[i]),
			"message", tv_tb_json_str(f->msgs[i])), &err);
	if (err) {
		json_decref(a);
		return NULL;
	}
	return a;
}

json_t *tv_tb_run_result_json(const struct tv_tb_run *run,
			      const char *reproduce)
{
	const struct tv_tb_result *r = tv_tb_run_result(run);
	const struct tv_tb_scenario *sc = tv_tb_run_scenario(run);
	json_t *o;
	int err = 0;

	o = json_pack("{s:i,s:s,s:o,s:o,s:s,s:o,s:b,s:o,s:o,s:o}",
		      "tensorverbs_result", RESULT_VERSION, "kind", "run",
		      "scenario", tv_tb_json_str(tv_tb_scenario_name(sc)),
		      "file", tv_tb_json_str(tv_tb_scenario_origin(sc)),
		      "workload", tv_tb_workload_name(tv_tb_scenario_workload(sc)),
		      "seed", tv_tb_json_u64(r->seed), "passed", !r->failures,
		      "failure_count", tv_tb_json_u64(r->failures),
		      "event_hash", hex64(r->event_hash),
		      "build", tv_tb_json_str(tv_tb_build_id()));
	if (!o)
		return NULL;
	tv_ju_set(o, "sim_events", tv_tb_json_u64(r->sim_events), &err);
	tv_ju_set(o, "virtual_ns", tv_tb_json_u64(r->virtual_ns), &err);
	tv_ju_set(o, "ops", json_pack(
		"{s:o,s:o,s:o,s:o,s:o}", "total", tv_tb_json_u64(r->ops),
		"ok", tv_tb_json_u64(r->ops_ok),
		"failed", tv_tb_json_u64(r->ops_failed),
		"refused", tv_tb_json_u64(r->refused),
		"skipped", tv_tb_json_u64(r->skipped_ops)), &err);
	tv_ju_set(o, "bytes", tv_tb_json_u64(r->bytes), &err);
	tv_ju_set(o, "faults", faults_json(r->point_fires, NULL, NULL), &err);
	tv_ju_set(o, "crashes", json_pack(
		"{s:o,s:o,s:o}", "crashes", tv_tb_json_u64(r->crashes),
		"restarts", tv_tb_json_u64(r->restarts),
		"restart_failures", tv_tb_json_u64(r->restart_failures)), &err);
	tv_ju_set(o, "outcome", json_string(tv_tb_run_outcome(run)), &err);
	tv_ju_set(o, "corruption", json_pack(
		"{s:b,s:o,s:o,s:o}", "validated", r->validated,
		"fired", tv_tb_json_u64(r->corrupt_fires),
		"detected", tv_tb_json_u64(r->corrupt_detected),
		"undetected", tv_tb_json_u64(r->corrupt_undetected)), &err);
	tv_ju_set(o, "failures", failures_json(tv_tb_run_failures(run)), &err);
	tv_ju_set(o, "reproduce", tv_tb_json_str(reproduce), &err);
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A configuration's corruption counts (docs/results.md). */
static json_t *corrupt_json(const uint64_t *c)
{
	return json_pack("{s:o,s:o,s:o,s:o}",
			 "seeds", tv_tb_json_u64(c[TV_TB_CORRUPT_SEEDS]),
			 "injected", tv_tb_json_u64(c[TV_TB_CORRUPT_FIRED]),
			 "detected", tv_tb_json_u64(c[TV_TB_CORRUPT_DETECTED]),
			 "undetected",
			 tv_tb_json_u64(c[TV_TB_CORRUPT_UNDETECTED]));
}

json_t *tv_tb_swarm_result_json(const struct tv_tb_swarm_opts *opts,
				const struct tv_tb_swarm_report *rep)
{
	json_t *o, *fails = json_array();
	int err = 0;

	for (size_t i = 0; fails && i < rep->nfail; i++) {
		const struct tv_tb_swarm_failure *f = &rep->fail[i];

		tv_ju_push(fails, json_pack(
			"{s:o,s:s,s:o,s:o,s:o,s:o,s:b}", "seed",
			tv_tb_json_u64(f->seed), "kind",
			tv_tb_fail_kind_name(f->first), "message",
			tv_tb_json_str(f->msg), "failures",
			tv_tb_json_u64(f->failures), "scenario_file",
			f->written ? tv_tb_json_str(f->file) : json_null(),
			"trace", f->written ? tv_tb_json_str(f->trace) :
					      json_null(),
			"reproduced", f->rerun_status == 1), &err);
	}
	if (err) {
		json_decref(fails);
		return NULL;
	}
	o = json_pack("{s:i,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:f,s:o}",
		      "tensorverbs_result", RESULT_VERSION, "kind", "swarm",
		      "workload", tv_tb_json_str(opts->workload),
		      "first_seed", tv_tb_json_u64(opts->first),
		      "seeds", tv_tb_json_u64(opts->seeds),
		      "done", tv_tb_json_u64(rep->done),
		      "violations", tv_tb_json_u64(rep->violations),
		      "operations", tv_tb_json_u64(rep->ops),
		      "sim_events", tv_tb_json_u64(rep->events),
		      "jobs", json_integer(opts->jobs), "seconds", rep->secs,
		      "failures", fails);
	if (!o)
		return NULL;
	tv_ju_set(o, "build", tv_tb_json_str(tv_tb_build_id()), &err);
	tv_ju_set(o, "breakage", tv_tb_json_str(opts->breakage), &err);
	tv_ju_set(o, "faults", faults_json(rep->fires, rep->on, rep->bad),
		&err);
	tv_ju_set(o, "no_faults", json_pack(
		"{s:o,s:o}", "seeds", tv_tb_json_u64(rep->no_faults),
		"violations", tv_tb_json_u64(rep->bad_no_faults)), &err);
	tv_ju_set(o, "corruption", json_pack(
		"{s:o,s:o}", "validation_off", corrupt_json(rep->corrupt[0]),
		"validation_on", corrupt_json(rep->corrupt[1])), &err);
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int tv_tb_json_write(const char *path, json_t *o)
{
	if (!o)
		return -ENOMEM;
	/* A failed allocation (errno ENOMEM) or a failed write. */
	errno = 0;
	if (json_dump_file(o, path, JSON_INDENT(2) | JSON_SORT_KEYS))
		return errno == ENOMEM ? -ENOMEM : -EIO;
	return 0;
}

/* ---- JUnit XML ------------------------------------------------------------- */

/* s as XML character data or attribute text; control bytes dropped. */
static void xml_put(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* XML 1.0 allows no C0 control but tab, LF, CR. */
			if (c >= 0x20 || c == '\t' || c == '\n' || c == '\r')
				fputc(c, f);
		}
	}
}

static void junit_case(FILE *f, const struct tv_tb_junit_case *c)
{
	fputs("    <testcase classname=\"", f);
	xml_put(f, c->classname);
	fputs("\" name=\"", f);
	xml_put(f, c->name);
	fprintf(f, "\" time=\"%.3f\"", c->time_s);
	if (!c->failure && !c->skipped) {
		fputs("/>\n", f);
		return;
	}
	fputs(">\n", f);
	fputs(c->skipped ? "      <skipped message=\"" :
			   "      <failure message=\"", f);
	xml_put(f, c->failure ? c->failure : c->skipped);
	fputs(c->skipped ? "\"/>\n" : "\" type=\"", f);
	if (!c->skipped) {
		xml_put(f, c->type ? c->type : "failure");
		fputs("\">", f);
		xml_put(f, c->text ? c->text : c->failure);
		fputs("</failure>\n", f);
	}
	fputs("    </testcase>\n", f);
}

int tv_tb_junit_write(const char *path, const char *suite,
		      const struct tv_tb_junit_case *cases, size_t n)
{
	size_t failures = 0, skipped = 0;
	double secs = 0;
	FILE *f = fopen(path, "w");
	int rc = 0;

	if (!f)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		failures += cases[i].failure != NULL;
		skipped += !cases[i].failure && cases[i].skipped;
		secs += cases[i].time_s;
	}
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
	      "  <testsuite name=\"", f);
	xml_put(f, suite);
	fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
		"skipped=\"%zu\" time=\"%.3f\">\n", n, failures, skipped, secs);
	for (size_t i = 0; i < n; i++)
		junit_case(f, &cases[i]);
	fputs("  </testsuite>\n</testsuites>\n", f);
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

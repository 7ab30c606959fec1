/*
 * tensorverbs validate, the report (docs/validate.md): report.json
 * (versioned), report.html (self-contained: the summary, every check with
 * its reason, the benchmarks as inline SVG charts) and JUnit XML.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tb_int.h"
#include "validate_int.h"

#define VALIDATE_VERSION 1

static void counts(const struct tv_tb_validation *v, size_t *c)
{
	c[VAL_PASS] = c[VAL_FAIL] = c[VAL_SKIP] = 0;
	for (size_t i = 0; i < v->nchecks; i++)
		c[v->checks[i].status]++;
}

size_t tv_tb_validation_failed(const struct tv_tb_validation *v)
{
	size_t c[3];

	counts(v, c);
	return c[VAL_FAIL];
}

static json_t *series_json(const struct val_series *s)
{
	json_t *pts = json_array();

	for (size_t i = 0; i < s->n; i++)
		json_array_append_new(pts, json_pack(
			"{s:s,s:f,s:f}", "label", s->label[i], "tensorverbs",
			s->ours[i], "perftest", s->perftest[i]));
	return json_pack("{s:s,s:s,s:o}", "what", s->what, "unit", s->unit,
			 "points", pts);
}

/* Every rank's host and devices (one entry on one host). */
static json_t *ranks_json(const struct tv_tb_validation *v, const char *host)
{
	json_t *ranks = json_array();

	for (uint32_t r = 0; r < (v->hosts ? v->size : 1); r++) {
		const struct val_dev *d = v->hosts ? v->hosts[r].devs : v->devs;
		size_t n = v->hosts ? v->hosts[r].ndevs : v->ndevs;
		json_t *names = json_array();

		for (size_t i = 0; i < n; i++)
			json_array_append_new(names, json_string(d[i].name));
		json_array_append_new(ranks, json_pack("{s:i,s:s,s:o}", "rank",
			(int)r, "host", v->hosts ? v->hosts[r].name : host,
			"devices", names));
	}
	return ranks;
}

static json_t *report_json(const struct tv_tb_validation *v)
{
	json_t *checks = json_array(), *devs = json_array(), *bench = json_array();
	struct utsname u;
	char host[256] = "?";
	size_t c[3];

	counts(v, c);
	uname(&u);
	gethostname(host, sizeof(host) - 1);
	for (size_t i = 0; i < v->nchecks; i++) {
		const struct val_check *k = &v->checks[i];

		json_array_append_new(checks, json_pack(
			"{s:s,s:s,s:s,s:f,s:s}", "group", k->group, "name",
			k->name, "status", val_status_name(k->status), "seconds",
			k->secs, "detail", k->detail));
	}
	for (size_t i = 0; i < v->ndevs; i++)
		json_array_append_new(devs, json_pack(
			"{s:s,s:s,s:i,s:b}", "name", v->devs[i].name, "ip",
			v->devs[i].ip, "gid_index", (int)v->devs[i].gid_index,
			"atomics", v->devs[i].atomics));
	for (size_t i = 0; i < v->nseries; i++)
		json_array_append_new(bench, series_json(&v->series[i]));
	return json_pack("{s:i,s:s,s:s,s:s,s:f,s:b,s:{s:I,s:I,s:I},s:o,s:o,"
			 "s:o,s:o}", "tensorverbs_validate", VALIDATE_VERSION,
			 "build", tv_tb_build_id(), "host", host, "kernel",
			 u.release, "seconds", v->secs, "passed", !c[VAL_FAIL],
			 "counts", "pass", (json_int_t)c[VAL_PASS], "fail",
			 (json_int_t)c[VAL_FAIL], "skip",
			 (json_int_t)c[VAL_SKIP], "devices", devs, "checks",
			 checks, "benchmarks", bench, "ranks",
			 ranks_json(v, host));
}

/* ---- HTML ----------------------------------------------------------------- */

static void html_put(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* Grouped bars: ours and perftest's per point, a scale from 0 to max. */
static void svg_chart(FILE *f, const struct val_series *s)
{
	const int w = 560, h = 280, left = 70, bottom = 40, top = 48;
	double max = 0;
	int slot;

	for (size_t i = 0; i < s->n; i++) {
		if (s->ours[i] > max)
			max = s->ours[i];
		if (s->perftest[i] > max)
			max = s->perftest[i];
	}
	max = max > 0 ? max * 1.15 : 1;
	slot = s->n ? (w - left - 20) / (int)s->n : 1;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" role=\"img\"><title>", w, h);
	html_put(f, s->what);
	fprintf(f, "</title><text x=\"%d\" y=\"18\" font-size=\"14\" "
		"font-weight=\"bold\">", left);
	html_put(f, s->what);
	fprintf(f, " (%s)</text>", s->unit);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		"stroke=\"#333\"/>", left, h - bottom, w - 10, h - bottom);
	for (int t = 0; t <= 4; t++) {
		int y = h - bottom - (h - bottom - top) * t / 4;

		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			"stroke=\"#ddd\"/><text x=\"%d\" y=\"%d\" "
			"font-size=\"11\" text-anchor=\"end\">%.3g</text>",
			left, y, w - 10, y, left - 6, y + 4, max * t / 4);
	}
	for (size_t i = 0; i < s->n; i++) {
		double vals[2] = { s->ours[i], s->perftest[i] };
		const char *col[2] = { "#1f77b4", "#ff7f0e" };

		for (int b = 0; b < 2; b++) {
			int bh = vals[b] > 0 ? (int)((h - bottom - top) *
						    vals[b] / max) : 0;
			int x = left + (int)i * slot + 10 + b * (slot / 2 - 8);

			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" "
				"height=\"%d\" fill=\"%s\"><title>%.4g</title>"
				"</rect>", x, h - bottom - bh, slot / 2 - 12,
				bh, col[b], vals[b]);
		}
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" "
			"text-anchor=\"middle\">", left + (int)i * slot +
			slot / 2, h - bottom + 16);
		html_put(f, s->label[i]);
		fputs("</text>", f);
	}
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" "
		"fill=\"#1f77b4\"/><text x=\"%d\" y=\"%d\" font-size=\"12\">"
		"tensorverbs</text><rect x=\"%d\" y=\"%d\" width=\"12\" "
		"height=\"12\" fill=\"#ff7f0e\"/><text x=\"%d\" y=\"%d\" "
		"font-size=\"12\">perftest</text></svg>\n", left, 26,
		left + 16, 36, left + 110, 26, left + 126, 36);
}

static void html_checks(FILE *f, const struct tv_tb_validation *v)
{
	fputs("<table><tr><th>group</th><th>check</th><th>result</th>"
	      "<th>seconds</th><th>detail</th></tr>\n", f);
	for (size_t i = 0; i < v->nchecks; i++) {
		const struct val_check *k = &v->checks[i];

		fprintf(f, "<tr class=\"%s\"><td>", val_status_name(k->status));
		html_put(f, k->group);
		fputs("</td><td>", f);
		html_put(f, k->name);
		fprintf(f, "</td><td class=\"st\">%s</td><td>%.1f</td><td>",
			val_status_name(k->status), k->secs);
		html_put(f, k->detail);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static int write_html(const struct tv_tb_validation *v, const char *path)
{
	FILE *f = fopen(path, "w");
	struct utsname u;
	size_t c[3];

	if (!f)
		return -errno;
	counts(v, c);
	uname(&u);
	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
	      "<title>tensorverbs validate</title><style>"
	      "body{font-family:sans-serif;margin:2em;color:#222}"
	      "table{border-collapse:collapse;margin:1em 0}"
	      "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;"
	      "font-size:13px}th{background:#eee}"
	      "tr.PASS .st{color:#080;font-weight:bold}"
	      "tr.FAIL .st{color:#c00;font-weight:bold}tr.FAIL{background:#fee}"
	      "tr.SKIP .st{color:#888}.big{font-size:20px;font-weight:bold}"
	      "</style></head><body>\n<h1>tensorverbs validate</h1>\n", f);
	fprintf(f, "<p class=\"big\" style=\"color:%s\">%s: %zu passed, %zu "
		"failed, %zu skipped</p>\n", c[VAL_FAIL] ? "#c00" : "#080",
		c[VAL_FAIL] ? "FAIL" : "PASS", c[VAL_PASS], c[VAL_FAIL],
		c[VAL_SKIP]);
	fprintf(f, "<p>build ");
	html_put(f, tv_tb_build_id());
	fprintf(f, ", kernel ");
	html_put(f, u.release);
	if (v->hosts) {
		/* Under mpirun: every rank's host and devices. */
		fprintf(f, ", %u MPI ranks:", v->size);
		for (uint32_t r = 0; r < v->size; r++) {
			fprintf(f, "%s rank %u on ", r ? ";" : "", r);
			html_put(f, v->hosts[r].name);
			fprintf(f, " (%u device(s))", v->hosts[r].ndevs);
		}
	} else {
		fprintf(f, ", %zu device(s)", v->ndevs);
	}
	fprintf(f, ", %.1f s</p>\n<h2>Checks</h2>\n", v->secs);
	html_checks(f, v);
	fputs("<h2>Benchmarks beside perftest</h2>\n", f);
	if (!v->nseries)
		fputs("<p>None ran (see the benchmark checks above).</p>\n", f);
	for (size_t i = 0; i < v->nseries; i++)
		svg_chart(f, &v->series[i]);
	fputs("<p>docs/validate.md says what each check means.</p>"
	      "</body></html>\n", f);
	return fclose(f) ? -errno : 0;
}

int tv_tb_validation_write(const struct tv_tb_validation *v,
			   const char *json_copy)
{
	char path[600];
	json_t *o = report_json(v);
	int rc;

	snprintf(path, sizeof(path), "%s/report.json", v->opts->out_dir);
	rc = tv_tb_json_write(path, o);
	if (!rc && json_copy)
		rc = tv_tb_json_write(json_copy, o);
	json_decref(o);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/report.html", v->opts->out_dir);
	return write_html(v, path);
}

int tv_tb_validation_junit(const struct tv_tb_validation *v,
			   const char *path)
{
	struct tv_tb_junit_case *c = calloc(v->nchecks + 1, sizeof(*c));
	char (*names)[160] = calloc(v->nchecks + 1, sizeof(*names));
	int rc;

	if (!c || !names) {
		free(c);
		free(names);
		return -ENOMEM;
	}
	for (size_t i = 0; i < v->nchecks; i++) {
		const struct val_check *k = &v->checks[i];

		snprintf(names[i], sizeof(names[i]), "%s: %s", k->group,
			 k->name);
		c[i] = (struct tv_tb_junit_case){
			.classname = "tensorverbs.validate", .name = names[i],
			.time_s = k->secs,
			.failure = k->status == VAL_FAIL ? k->detail : NULL,
			.type = k->group,
			.skipped = k->status == VAL_SKIP ? k->detail : NULL,
		};
	}
	rc = tv_tb_junit_write(path, "tensorverbs validate", c, v->nchecks);
	free(c);
	free(names);
	return rc;
}

void tv_tb_validation_free(struct tv_tb_validation *v)
{
	if (v)
		free(v->hosts);
	free(v);
}

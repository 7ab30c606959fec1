/*
 * Fault plans (docs/faults.md) as the testbed keeps them: a JSON array of
 * rule objects, whichever way they were written, because that is what a
 * scenario file holds, what a trace header records and what shrinking
 * edits.  The fault layer's own parser (tv_flt_plan_parse) is the one
 * judge of validity; the command-line form becomes JSON only after it
 * accepted it.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/faults.h>

#include "tb_int.h"

bool tv_tb_point_may_fail(const char *point)
{
	const struct tv_flt_point_info *info = tv_flt_point_find(point);

	/* The catalogue says; an unknown point is never armed anyway. */
	return info ? info->may_fail : true;
}

json_t *tb_plan_rule(json_t *plan, const char *point)
{
	size_t i;
	json_t *r;

	json_array_foreach(plan, i, r) {
		const char *p = json_string_value(json_object_get(r, "point"));

		if (p && !strcmp(p, point))
			return r;
	}
	return NULL;
}

/*
 * Would q and r (whose point is p) be one rule?  A point has one rule for
 * every node, and node rules (replays of recordings, docs/faults.md)
 * told apart by their node and nth.
 */
static bool same_rule_key(json_t *q, json_t *r, const char *p)
{
	const char *qp = json_string_value(json_object_get(q, "point"));
	json_t *qn = json_object_get(q, "node"), *rn = json_object_get(r, "node");
	json_t *qk = json_object_get(q, "nth"), *rk = json_object_get(r, "nth");

	if (strcmp(qp, p) || !qn != !rn)
		return false;
	return !qn || (json_equal(qn, rn) &&
		       ((!qk && !rk) || json_equal(qk, rk)));
}

/* The fault layer would silently keep the last of two rules: refuse. */
static int plan_check_shape(json_t *plan, char *err, size_t n)
{
	size_t i, j;
	json_t *r;

	if (!json_is_array(plan)) {
		snprintf(err, n, "fault plan: expected an array of rules");
		return -EINVAL;
	}
	json_array_foreach(plan, i, r) {
		const char *p = json_string_value(json_object_get(r, "point"));

		if (!json_is_object(r) || !p) {
			snprintf(err, n, "fault plan: rule %zu needs a \"point\"",
				 i);
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			if (!same_rule_key(json_array_get(plan, j), r, p))
				continue;
			snprintf(err, n,
				 "fault plan: point '%s' has two rules (one rule per point, and per node and nth for rules with \"node\")",
				 p);
			return -EINVAL;
		}
	}
	return 0;
}

int tb_plan_injector(json_t *plan, uint64_t seed, struct tv_flt **flt_p,
		  char *err, size_t err_bytes)
{
	struct tv_flt *flt;
	char *text;
	int rc;

	text = json_dumps(plan, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	rc = tv_flt_create(seed, &flt);
	if (rc)
		goto out;
	rc = tv_flt_plan_parse(flt, text, err, err_bytes);
	if (rc) {
		tv_flt_destroy(flt);
		goto out;
	}
	*flt_p = flt;
out:
	free(text);
	return rc;
}

int tv_tb_plan_validate(json_t *plan, char *err, size_t err_bytes)
{
	struct tv_flt *flt;
	int rc;

	rc = plan_check_shape(plan, err, err_bytes);
	if (rc)
		return rc;
	rc = tb_plan_injector(plan, 0, &flt, err, err_bytes);
	if (!rc)
		tv_flt_destroy(flt);
	return rc;
}

/* "key=value" of the command-line form, already validated, into JSON. */
static int kv_to_json(json_t *rule, char *kv)
{
	static const char *const names[][2] = {
		{ "nth", "nth" }, { "count", "count" },
		{ "after", "after_ns" }, { "before", "before_ns" },
		{ "node", "node" },
	};
	char *eq = strchr(kv, '=');
	unsigned long long u;

	if (!eq)
		return -EINVAL;
	*eq++ = '\0';
	if (!strcmp(kv, "p"))
		return json_object_set_new(rule, "probability",
					   json_real(strtod(eq, NULL))) ?
		       -ENOMEM : 0;
	u = strtoull(eq, NULL, 0);
	if (!strcmp(kv, "arg"))
		/* As the fault layer reads it: the bits of a 64-bit value. */
		return json_object_set_new(rule, "arg",
					   json_integer((json_int_t)(int64_t)u)) ?
		       -ENOMEM : 0;
	if (u > INT64_MAX)
		return -ERANGE;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(kv, names[i][0]))
			return json_object_set_new(rule, names[i][1],
						   json_integer((json_int_t)u)) ?
			       -ENOMEM : 0;
	return -EINVAL;
}

static int text_item_to_json(char *item, json_t *plan)
{
	char *colon = strchr(item, ':'), *kv, *save = NULL;
	json_t *rule;
	int rc;

	if (colon)
		*colon++ = '\0';
	rule = json_pack("{s:s}", "point", item);
	if (!rule || json_array_append_new(plan, rule))
		return -ENOMEM;
	if (!colon)
		return 0;
	for (kv = strtok_r(colon, ",", &save); kv;
	     kv = strtok_r(NULL, ",", &save)) {
		rc = kv_to_json(rule, kv);
		if (rc)
			return rc == -ENOMEM ? rc : -EINVAL;
	}
	return 0;
}

/* The same splitting as the fault layer's parser (faults/plan.c). */
static int text_form_to_json(const char *text, json_t **plan_p)
{
	json_t *plan = json_array();
	char *copy = strdup(text), *item, *save = NULL;
	int rc = 0;

	if (!plan || !copy) {
		rc = -ENOMEM;
		goto out;
	}
	for (item = strtok_r(copy, ";", &save); item && !rc;
	     item = strtok_r(NULL, ";", &save))
		rc = text_item_to_json(item, plan);
	if (!rc) {
		*plan_p = json_incref(plan);
	}
out:
	json_decref(plan);
	free(copy);
	return rc;
}

int tv_tb_plan_from_text(const char *text, json_t **plan_p, char *err,
		   size_t err_bytes)
{
	json_error_t jerr;
	struct tv_flt *flt;
	json_t *plan;
	int rc;

	err[0] = '\0';
	while (*text == ' ' || *text == '\n' || *text == '\t')
		text++;
	if (*text == '[') {
		plan = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
		if (!plan) {
			snprintf(err, err_bytes, "fault plan: invalid JSON: %s",
				 jerr.text[0] ? jerr.text : strerror(ENOMEM));
			return tb_json_load_errno(&jerr);
		}
	} else {
		/* The fault layer judges the text and names the culprit. */
		rc = tv_flt_create(0, &flt);
		if (rc)
			return rc;
		rc = tv_flt_plan_parse(flt, text, err, err_bytes);
		tv_flt_destroy(flt);
		if (!rc)
			rc = text_form_to_json(text, &plan);
		if (rc == -EINVAL && !err[0])
			snprintf(err, err_bytes, "fault plan: bad value in '%s'",
				 text);
		if (rc)
			return rc;
	}
	rc = tv_tb_plan_validate(plan, err, err_bytes);
	if (rc) {
		json_decref(plan);
		return rc;
	}
	*plan_p = plan;
	return 0;
}

int tb_plan_merge(json_t *base, json_t *over)
{
	size_t i, j;
	json_t *r;

	assert(json_is_array(base) && json_is_array(over));
	json_array_foreach(over, i, r) {
		const char *p = json_string_value(json_object_get(r, "point"));
		json_t *copy = json_deep_copy(r);
		bool replaced = false;
		json_t *b;

		if (!copy)
			return -ENOMEM;
		json_array_foreach(base, j, b) {
			const char *q = json_string_value(json_object_get(b, "point"));

			if (p && q && !strcmp(p, q)) {
				json_array_set(base, j, copy);
				replaced = true;
				break;
			}
		}
		if (!replaced && json_array_append(base, copy)) {
			json_decref(copy);
			return -ENOMEM;
		}
		json_decref(copy);
	}
	return 0;
}

uint32_t tb_plan_mask(json_t *plan)
{
	const struct tv_flt_point_info *pts;
	uint32_t mask = 0;
	size_t n;

	pts = tv_flt_points(&n);
	for (size_t i = 0; i < n && i < 32; i++)
		if (plan && tb_plan_rule(plan, pts[i].name))
			mask |= 1u << i;
	return mask;
}

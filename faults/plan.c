/*
 * Fault plans: JSON (in scenario files) or a compact command-line form.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <tensorverbs/faults.h>

static int plan_err(char *err, size_t n, const char *fmt, const char *a,
		    const char *b)
{
	if (err && n)
		snprintf(err, n, fmt, a, b ? b : "");
	return -EINVAL;
}

static int json_u64(json_t *v, uint64_t *out_p)
{
	double d;

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out_p = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_real(v))
		return -EINVAL;
	d = json_real_value(v);
	if (d < 0 || d > 1.8e19 || d != (double)(uint64_t)d)
		return -EINVAL;
	*out_p = (uint64_t)d;
	return 0;
}

/* "node": a node rule (include/tensorverbs/faults.h); UINT32_MAX is none. */
static int rule_node(struct tv_flt_rule *r, uint64_t u)
{
	if (u >= UINT32_MAX)
		return -EINVAL;
	r->has_node = true;
	r->node = (uint32_t)u;
	return 0;
}

/* One key of a JSON rule object. */
static int rule_key(struct tv_flt_rule *r, const char *key, json_t *v)
{
	uint64_t u;

	if (!strcmp(key, "point"))
		return json_is_string(v) ? 0 : -EINVAL;
	if (!strcmp(key, "probability")) {
		if (!json_is_number(v))
			return -EINVAL;
		r->probability = json_number_value(v);
		return 0;
	}
	if (!strcmp(key, "arg")) {
		if (!json_is_integer(v))
			return -EINVAL;
		r->arg = json_integer_value(v);
		return 0;
	}
	if (json_u64(v, &u))
		return -EINVAL;
	if (!strcmp(key, "node"))
		return rule_node(r, u);
	if (!strcmp(key, "nth"))
		r->nth = u;
	else if (!strcmp(key, "count"))
		r->count = u;
	else if (!strcmp(key, "after_ns"))
		r->after_ns = u;
	else if (!strcmp(key, "before_ns"))
		r->before_ns = u;
	else
		return -ENOENT;
	return 0;
}

/* Why tv_flt_arm() refused a rule of a known point. */
static const char *arm_hint(int ret, const struct tv_flt_rule *r)
{
	if (ret == -ENOSPC)
		return " (more node rules than the injector keeps for one point)";
	if (r->has_node)
		return " (a node rule is for vf/ points only; probability 0..1, "
		       "before_ns > after_ns)";
	return " (probability 0..1, before_ns > after_ns)";
}

static int plan_json_one(struct tv_flt *flt, json_t *o, char *err, size_t n)
{
	struct tv_flt_rule r;
	const char *key, *point;
	json_t *v;
	int ret;

	if (!json_is_object(o) || !json_is_string(json_object_get(o, "point")))
		return plan_err(err, n, "a fault needs a \"point\"%s%s", "",
				NULL);
	point = json_string_value(json_object_get(o, "point"));
	tv_flt_rule_default(&r);
	json_object_foreach(o, key, v) {
		ret = rule_key(&r, key, v);
		if (ret == -ENOENT)
			return plan_err(err, n, "fault %s: unknown key '%s'",
					point, key);
		if (ret)
			return plan_err(err, n, "fault %s: bad value for '%s'",
					point, key);
	}
	ret = tv_flt_arm(flt, point, &r);
	if (ret == -ENOENT)
		return plan_err(err, n, "unknown fault point '%s'%s", point,
				" (see: tensorverbs faults)");
	if (ret)
		return plan_err(err, n, "fault %s: inconsistent rule%s", point,
				arm_hint(ret, &r));
	return 0;
}

static int plan_json(struct tv_flt *flt, const char *text, char *err,
		     size_t n)
{
	json_error_t jerr;
	json_t *root = json_loads(text, 0, &jerr);
	size_t i;
	json_t *o;
	int ret = 0;

	if (!root && !jerr.text[0]) {
		/* jansson says nothing only when an allocation failed. */
		if (err && n)
			snprintf(err, n, "fault plan: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	if (!root)
		return plan_err(err, n, "fault plan: invalid JSON: %s%s",
				jerr.text, NULL);
	if (!json_is_array(root)) {
		ret = plan_err(err, n, "fault plan: expected an array%s%s", "",
			       NULL);
		goto out;
	}
	json_array_foreach(root, i, o) {
		ret = plan_json_one(flt, o, err, n);
		if (ret)
			break;
	}
out:
	json_decref(root);
	return ret;
}

/* "key=value" of the command-line form into the rule. */
static int cli_kv(struct tv_flt_rule *r, char *kv)
{
	char *eq = strchr(kv, '='), *end;
	unsigned long long u;

	if (!eq)
		return -EINVAL;
	*eq++ = '\0';
	if (!strcmp(kv, "p")) {
		r->probability = strtod(eq, &end);
		return *end || end == eq ? -EINVAL : 0;
	}
	errno = 0;
	u = strtoull(eq, &end, 0);
	if (errno || *end || end == eq || *eq == '-')
		return -EINVAL;
	if (!strcmp(kv, "node"))
		return rule_node(r, u);
	if (!strcmp(kv, "nth"))
		r->nth = u;
	else if (!strcmp(kv, "count"))
		r->count = u;
	else if (!strcmp(kv, "after"))
		r->after_ns = u;
	else if (!strcmp(kv, "before"))
		r->before_ns = u;
	else if (!strcmp(kv, "arg"))
		r->arg = (int64_t)u;
	else
		return -ENOENT;
	return 0;
}

static int plan_cli_one(struct tv_flt *flt, char *item, char *err, size_t n)
{
	struct tv_flt_rule r;
	char *colon = strchr(item, ':'), *kv, *save = NULL;
	int ret;

	tv_flt_rule_default(&r);
	if (colon) {
		*colon++ = '\0';
		for (kv = strtok_r(colon, ",", &save); kv;
		     kv = strtok_r(NULL, ",", &save))
			if (cli_kv(&r, kv))
				return plan_err(err, n,
						"fault %s: bad setting '%s' "
						"(p, nth, count, after, before, "
						"arg, node)", item, kv);
	}
	ret = tv_flt_arm(flt, item, &r);
	if (ret == -ENOENT)
		return plan_err(err, n, "unknown fault point '%s'%s", item,
				" (see: tensorverbs faults)");
	if (ret)
		return plan_err(err, n, "fault %s: inconsistent rule%s", item,
				arm_hint(ret, &r));
	return 0;
}

int tv_flt_plan_parse(struct tv_flt *flt, const char *text, char *err,
		      size_t err_bytes)
{
	char *copy, *item, *save = NULL;
	int ret = 0;

	while (*text == ' ' || *text == '\n' || *text == '\t')
		text++;
	if (*text == '[')
		return plan_json(flt, text, err, err_bytes);
	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	for (item = strtok_r(copy, ";", &save); item && !ret;
	     item = strtok_r(NULL, ";", &save))
		ret = plan_cli_one(flt, item, err, err_bytes);
	free(copy);
	return ret;
}

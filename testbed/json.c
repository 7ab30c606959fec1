/*
 * Strict JSON accessors with JSON-path error messages (workload.h): every
 * scenario key of every workload is read through these.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/workload.h>

#include "tb_int.h"

int tv_ju_fail(struct tv_ju *jc, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	/* Keep the first, innermost error: it is the precise one. */
	if (jc->err[0] != '\0')
		return -EINVAL;
	n = snprintf(jc->err, jc->err_len, "%s: ", path);
	if (n < 0 || (size_t)n >= jc->err_len)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(jc->err + n, jc->err_len - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void tv_ju_path_key(char out[TV_JU_PATH_MAX], const char *path, const char *key)
{
	snprintf(out, TV_JU_PATH_MAX, "%s.%s", path, key);
}

void tv_ju_path_idx(char out[TV_JU_PATH_MAX], const char *path, size_t idx)
{
	snprintf(out, TV_JU_PATH_MAX, "%s[%zu]", path, idx);
}

static bool key_allowed(const char *key, const char *const *allowed)
{
	for (; *allowed; allowed++)
		if (strcmp(key, *allowed) == 0)
			return true;
	return false;
}

int tv_ju_check_keys(struct tv_ju *jc, const char *path, json_t *obj,
		  const char *const *allowed)
{
	const char *key;
	json_t *v;
	char list[256];
	size_t used = 0;

	assert(json_is_object(obj));
	json_object_foreach(obj, key, v) {
		if (key_allowed(key, allowed))
			continue;
		list[0] = '\0';
		for (const char *const *a = allowed; *a; a++) {
			int n = snprintf(list + used, sizeof(list) - used,
					 "%s%s", used ? ", " : "", *a);
			if (n < 0 || (size_t)n >= sizeof(list) - used)
				break;
			used += (size_t)n;
		}
		return tv_ju_fail(jc, path, "unknown key '%s' (allowed: %s)",
			       key, list);
	}
	return 0;
}

int tv_ju_uint(struct tv_ju *jc, const char *path, json_t *v, uint64_t max,
	    uint64_t *v_p)
{
	uint64_t out;

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0)
			return tv_ju_fail(jc, path, "must be >= 0, got %lld",
				       (long long)i);
		out = (uint64_t)i;
	} else if (json_is_real(v)) {
		double d = json_real_value(v);

		/* 1e9 is a convenient way to write big numbers in JSON. */
		if (d < 0 || d != floor(d) || d >= 18446744073709551616.0)
			return tv_ju_fail(jc, path,
				       "must be a whole number >= 0, got %g",
				       d);
		out = (uint64_t)d;
	} else {
		return tv_ju_fail(jc, path, "must be an integer");
	}
	if (out > max)
		return tv_ju_fail(jc, path, "must be <= %llu, got %llu",
			       (unsigned long long)max,
			       (unsigned long long)out);
	*v_p = out;
	return 0;
}

int tv_ju_get_uint(struct tv_ju *jc, const char *path, json_t *obj,
		const char *key, uint64_t def, uint64_t max, uint64_t *v_p)
{
	char sub[TV_JU_PATH_MAX];
	json_t *v = json_object_get(obj, key);

	if (!v) {
		*v_p = def;
		return 0;
	}
	tv_ju_path_key(sub, path, key);
	return tv_ju_uint(jc, sub, v, max, v_p);
}

int tv_ju_need_uint(struct tv_ju *jc, const char *path, json_t *obj,
		 const char *key, uint64_t max, uint64_t *v_p)
{
	if (!json_object_get(obj, key))
		return tv_ju_fail(jc, path, "missing required key '%s'", key);
	return tv_ju_get_uint(jc, path, obj, key, 0, max, v_p);
}

int tv_ju_get_bool(struct tv_ju *jc, const char *path, json_t *obj,
		const char *key, bool def, bool *v_p)
{
	char sub[TV_JU_PATH_MAX];
	json_t *v = json_object_get(obj, key);

	if (!v) {
		*v_p = def;
		return 0;
	}
	if (!json_is_boolean(v)) {
		tv_ju_path_key(sub, path, key);
		return tv_ju_fail(jc, sub, "must be true or false");
	}
	*v_p = json_is_true(v);
	return 0;
}

int tv_ju_get_str(struct tv_ju *jc, const char *path, json_t *obj,
	       const char *key, bool required, char **s_p)
{
	char sub[TV_JU_PATH_MAX];
	json_t *v = json_object_get(obj, key);
	char *s;

	if (!v) {
		if (required)
			return tv_ju_fail(jc, path, "missing required key '%s'",
				       key);
		*s_p = NULL;
		return 0;
	}
	tv_ju_path_key(sub, path, key);
	if (!json_is_string(v))
		return tv_ju_fail(jc, sub, "must be a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return tv_ju_fail(jc, sub, "must not contain NUL characters");
	s = strdup(json_string_value(v));
	if (!s)
		return -ENOMEM;
	*s_p = s;
	return 0;
}

int tv_ju_need_object(struct tv_ju *jc, const char *path, json_t *v)
{
	if (!json_is_object(v))
		return tv_ju_fail(jc, path, "must be an object");
	return 0;
}

int tv_ju_need_array(struct tv_ju *jc, const char *path, json_t *v)
{
	if (!json_is_array(v))
		return tv_ju_fail(jc, path, "must be an array");
	return 0;
}

int tv_ju_range(struct tv_ju *jc, const char *path, json_t *v, uint64_t *min_p,
		uint64_t *max_p)
{
	static const char *const range_keys[] = { "min", "max", NULL };
	uint64_t min, max;

	if (!json_is_object(v)) {
		if (tv_ju_uint(jc, path, v, UINT64_MAX, &min))
			return -EINVAL;
		*min_p = *max_p = min;
		return 0;
	}
	if (tv_ju_check_keys(jc, path, v, range_keys) ||
	    tv_ju_get_uint(jc, path, v, "min", 0, UINT64_MAX, &min) ||
	    tv_ju_get_uint(jc, path, v, "max", UINT64_MAX, UINT64_MAX, &max))
		return -EINVAL;
	if (min > max)
		return tv_ju_fail(jc, path, "'min' is greater than 'max'");
	*min_p = min;
	*max_p = max;
	return 0;
}

int tv_ju_grow(void **arr, size_t n, size_t *cap, size_t elem)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int tb_json_load_errno(const json_error_t *jerr)
{
	return jerr->text[0] ? -EINVAL : -ENOMEM;
}

void tv_ju_set(json_t *o, const char *key, json_t *v, int *err)
{
	if (json_object_set_new(o, key, v))
		*err = -ENOMEM;
}

void tv_ju_push(json_t *a, json_t *v, int *err)
{
	if (json_array_append_new(a, v))
		*err = -ENOMEM;
}

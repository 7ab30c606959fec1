/* Strict JSON accessors with JSON-path error messages. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_util.h"
#include "scenario.h"

int ju_fail(struct ju_ctx *jc, const char *path, const char *fmt, ...)
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

void ju_path_key(char out[JU_PATH_MAX], const char *path, const char *key)
{
	snprintf(out, JU_PATH_MAX, "%s.%s", path, key);
}

void ju_path_idx(char out[JU_PATH_MAX], const char *path, size_t idx)
{
	snprintf(out, JU_PATH_MAX, "%s[%zu]", path, idx);
}

static bool key_allowed(const char *key, const char *const *allowed)
{
	for (; *allowed; allowed++)
		if (strcmp(key, *allowed) == 0)
			return true;
	return false;
}

int ju_check_keys(struct ju_ctx *jc, const char *path, json_t *obj,
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
		return ju_fail(jc, path, "unknown key '%s' (allowed: %s)",
			       key, list);
	}
	return 0;
}

int ju_uint(struct ju_ctx *jc, const char *path, json_t *v, uint64_t max,
	    uint64_t *v_p)
{
	uint64_t out;

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0)
			return ju_fail(jc, path, "must be >= 0, got %lld",
				       (long long)i);
		out = (uint64_t)i;
	} else if (json_is_real(v)) {
		double d = json_real_value(v);

		/* 1e9 is a convenient way to write big numbers in JSON. */
		if (d < 0 || d != floor(d) || d >= 18446744073709551616.0)
			return ju_fail(jc, path,
				       "must be a whole number >= 0, got %g",
				       d);
		out = (uint64_t)d;
	} else {
		return ju_fail(jc, path, "must be an integer");
	}
	if (out > max)
		return ju_fail(jc, path, "must be <= %llu, got %llu",
			       (unsigned long long)max,
			       (unsigned long long)out);
	*v_p = out;
	return 0;
}

int ju_get_uint(struct ju_ctx *jc, const char *path, json_t *obj,
		const char *key, uint64_t def, uint64_t max, uint64_t *v_p)
{
	char sub[JU_PATH_MAX];
	json_t *v = json_object_get(obj, key);

	if (!v) {
		*v_p = def;
		return 0;
	}
	ju_path_key(sub, path, key);
	return ju_uint(jc, sub, v, max, v_p);
}

int ju_need_uint(struct ju_ctx *jc, const char *path, json_t *obj,
		 const char *key, uint64_t max, uint64_t *v_p)
{
	if (!json_object_get(obj, key))
		return ju_fail(jc, path, "missing required key '%s'", key);
	return ju_get_uint(jc, path, obj, key, 0, max, v_p);
}

int ju_get_bool(struct ju_ctx *jc, const char *path, json_t *obj,
		const char *key, bool def, bool *v_p)
{
	char sub[JU_PATH_MAX];
	json_t *v = json_object_get(obj, key);

	if (!v) {
		*v_p = def;
		return 0;
	}
	if (!json_is_boolean(v)) {
		ju_path_key(sub, path, key);
		return ju_fail(jc, sub, "must be true or false");
	}
	*v_p = json_is_true(v);
	return 0;
}

int ju_get_str(struct ju_ctx *jc, const char *path, json_t *obj,
	       const char *key, bool required, char **s_p)
{
	char sub[JU_PATH_MAX];
	json_t *v = json_object_get(obj, key);
	char *s;

	if (!v) {
		if (required)
			return ju_fail(jc, path, "missing required key '%s'",
				       key);
		*s_p = NULL;
		return 0;
	}
	ju_path_key(sub, path, key);
	if (!json_is_string(v))
		return ju_fail(jc, sub, "must be a string");
	if (strlen(json_string_value(v)) != json_string_length(v))
		return ju_fail(jc, sub, "must not contain NUL characters");
	s = strdup(json_string_value(v));
	if (!s)
		return -ENOMEM;
	*s_p = s;
	return 0;
}

int ju_need_object(struct ju_ctx *jc, const char *path, json_t *v)
{
	if (!json_is_object(v))
		return ju_fail(jc, path, "must be an object");
	return 0;
}

int ju_need_array(struct ju_ctx *jc, const char *path, json_t *v)
{
	if (!json_is_array(v))
		return ju_fail(jc, path, "must be an array");
	return 0;
}

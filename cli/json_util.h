/*
 * This file is private to the tensorverbs CLI: strict JSON accessors.
 *
 * Every accessor names the JSON path of what it rejects, so a scenario
 * author sees "$.steps[2].sends[0].shape[1]: must be an integer >= 0"
 * rather than a generic parse error.
 */
#ifndef TV_CLI_JSON_UTIL_H
#define TV_CLI_JSON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define JU_PATH_MAX 256

struct ju_ctx {
	char *err;      /* SC_ERR_MAX bytes, the first error wins */
	size_t err_len;
};

int ju_fail(struct ju_ctx *jc, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Child paths: "$.a" + "b" -> "$.a.b"; "$.a" + 3 -> "$.a[3]". */
void ju_path_key(char out[JU_PATH_MAX], const char *path, const char *key);
void ju_path_idx(char out[JU_PATH_MAX], const char *path, size_t idx);

/* Rejects keys of obj not in the NULL-terminated list allowed. */
int ju_check_keys(struct ju_ctx *jc, const char *path, json_t *obj,
		  const char *const *allowed);

/* An integer in [0, max]; integral reals (1e9) are accepted too. */
int ju_uint(struct ju_ctx *jc, const char *path, json_t *v, uint64_t max,
	    uint64_t *v_p);
/* Optional member: *v_p = def when absent. */
int ju_get_uint(struct ju_ctx *jc, const char *path, json_t *obj,
		const char *key, uint64_t def, uint64_t max, uint64_t *v_p);
int ju_need_uint(struct ju_ctx *jc, const char *path, json_t *obj,
		 const char *key, uint64_t max, uint64_t *v_p);
int ju_get_bool(struct ju_ctx *jc, const char *path, json_t *obj,
		const char *key, bool def, bool *v_p);
/* A string without NUL bytes; *s_p is a new copy, or NULL when absent. */
int ju_get_str(struct ju_ctx *jc, const char *path, json_t *obj,
	       const char *key, bool required, char **s_p);
int ju_need_object(struct ju_ctx *jc, const char *path, json_t *v);
int ju_need_array(struct ju_ctx *jc, const char *path, json_t *v);

#endif /* TV_CLI_JSON_UTIL_H */

/*
 * This file is private to the rendezvous workload: deterministic tensor
 * contents and content digests.
 *
 * The runner fills every sent tensor from (run seed, step, name) so a run
 * is reproducible from its seed, and digests what was published and what
 * arrived with its own hash, independent of the engine's checksum option.
 */
#ifndef TV_RV_FILL_H
#define TV_RV_FILL_H

#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/tensor.h>

#include "rv_scenario.h"

#define FILL_STRING_MAX 32 /* generated string elements are 0..32 bytes */

uint64_t fill_seed(uint64_t run_seed, const struct sc_fill *fill,
		   uint64_t step_id, const char *name);
/* len bytes of elements of dtype (len a multiple of the element size). */
void fill_bytes(void *buf, size_t len, enum tv_dtype dtype,
		enum sc_fill_pattern pattern, uint64_t seed);
/* Generated string element index; buf has FILL_STRING_MAX bytes. */
size_t fill_string(uint64_t seed, uint64_t index, char *buf);
/* Set every element of string tensor t: the send's own strings, or filled. */
int fill_tensor_strings(const struct sc_send *s, uint64_t seed,
			struct tv_tensor *t);

/* Digest of a tensor's content: bytes, or every string element. */
int fill_digest_tensor(const struct tv_tensor *t, uint64_t *digest_p);
/* What fill_digest_tensor() gives for a tensor filled by the runner. */
int fill_expected_digest(enum tv_dtype dtype, uint64_t elements,
			 enum sc_fill_pattern pattern, uint64_t seed,
			 uint64_t *digest_p);
/* Data bytes of a live tensor (string: sum of element lengths). */
uint64_t fill_payload_bytes(const struct tv_tensor *t);

#endif /* TV_RV_FILL_H */

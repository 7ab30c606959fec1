/*
 * The runner's receives: start each at its virtual time, check what its
 * done callback got against what the sender published, and after the run
 * the outcome rule: a receive may fail only for a cause that allows it.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "rv_run.h"

#define RECV_FMT "step %" PRIu64 ": node %u recv '%s' from node %u"
#define RECV_ARGS(rv) (rv)->step_id, (rv)->node, (rv)->name, (rv)->from

static void shape_str(const struct tv_shape *s, char *buf, size_t cap)
{
	size_t used = 0;

	used += (size_t)snprintf(buf, cap, "[");
	for (uint32_t i = 0; i < s->rank && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%" PRId64,
					 i ? "," : "", s->dims[i]);
	if (used < cap)
		snprintf(buf + used, cap - used, "]");
}

bool rv_meta_wrong(struct tv_tensor *t, enum tv_dtype dtype,
		   const struct tv_shape *shape, bool dead, const char *what,
		   char *why, size_t cap)
{
	char a[128], b[128];

	if (tv_tensor_dtype(t) != dtype) {
		snprintf(why, cap, "dtype %s, %s %s",
			 tv_dtype_name(tv_tensor_dtype(t)), what,
			 tv_dtype_name(dtype));
		return true;
	}
	if (tv_tensor_is_dead(t) != dead) {
		snprintf(why, cap, "is_dead %d, %s %d", tv_tensor_is_dead(t),
			 what, dead);
		return true;
	}
	if (shape && !dead && !tv_shape_equal(tv_tensor_shape(t), shape)) {
		shape_str(tv_tensor_shape(t), a, sizeof(a));
		shape_str(shape, b, sizeof(b));
		snprintf(why, cap, "shape %s, %s %s", a, what, b);
		return true;
	}
	return false;
}

bool rv_placement_wrong(struct tv_tensor *t, enum tv_dtype dtype, bool dead,
			enum tv_placement place, char *why, size_t cap)
{
	/* Strings live in host memory, as TensorFlow's DT_STRING does. */
	if (dead || dtype == TV_DT_STRING || tv_tensor_placement(t) == place)
		return false;
	snprintf(why, cap, "placement %s, asked for %s",
		 tv_tensor_placement(t) ? "device" : "host",
		 place ? "device" : "host");
	return true;
}

static bool strings_wrong(const struct sc_expect *ex, struct tv_tensor *t,
			  char *why, size_t cap)
{
	if (tv_tensor_num_elements(t) != ex->nstrings) {
		snprintf(why, cap, "%" PRIu64 " strings, expected %zu",
			 tv_tensor_num_elements(t), ex->nstrings);
		return true;
	}
	for (size_t i = 0; i < ex->nstrings; i++) {
		const void *bytes;
		size_t len;

		if (tv_tensor_get_string(t, i, &bytes, &len) ||
		    len != ex->strings[i].len ||
		    memcmp(bytes, ex->strings[i].data, len) != 0) {
			snprintf(why, cap, "string element %zu differs from "
				 "the expected \"%s\"", i,
				 ex->strings[i].data);
			return true;
		}
	}
	return false;
}

bool rv_expect_wrong(const struct sc_recv *rv, struct tv_tensor *t,
		     uint64_t digest, uint64_t run_seed, char *why, size_t cap)
{
	const struct sc_expect *ex = &rv->expect;
	uint64_t want;

	if ((ex->has_dtype || ex->has_dead || ex->has_shape) &&
	    rv_meta_wrong(t, ex->has_dtype ? ex->dtype : tv_tensor_dtype(t),
			  ex->has_shape ? &ex->shape : NULL,
			  ex->has_dead ? ex->dead : tv_tensor_is_dead(t),
			  "expected", why, cap))
		return true;
	if (ex->strings && strings_wrong(ex, t, why, cap))
		return true;
	if (!ex->has_fill ||
	    fill_expected_digest(tv_tensor_dtype(t), tv_tensor_num_elements(t),
				 ex->fill.pattern,
				 fill_seed(run_seed, &ex->fill, rv->step_id,
					   rv->name), &want) || want == digest)
		return false;
	snprintf(why, cap, "data differs from the expected fill (digest "
		 "0x%016" PRIx64 ", expected 0x%016" PRIx64 ")", digest, want);
	return true;
}

/*
 * Delivered as ok, yet not what was published.  After a corruption point
 * fired and without validation that is the outcome "corrupted,
 * undetected" (docs/faults.md), counted, not a broken invariant; with
 * validation on, or with no corruption injected, it is a failure.
 */
static void corrupted(struct runner *r, const struct sc_recv *rv,
		      uint64_t digest, uint64_t published)
{
	struct tv_tb_result *res = tv_tb_run_result_mut(r->run);

	if (!r->sc->validate_checksum && tv_tb_run_corrupt_fires(r->run)) {
		res->corrupt_undetected++;
		return;
	}
	tv_tb_fail(r->run, TV_TB_FK_DATA,
		   RECV_FMT ": data corrupted (digest 0x%016" PRIx64
		   ", published 0x%016" PRIx64 ")%s", RECV_ARGS(rv), digest,
		   published, tv_tb_run_corrupt_fires(r->run) ?
		   ": validation let a corruption through" : "");
}

/* Data intact: the tensor is exactly what this step's send published. */
static void verify_tensor(struct runner *r, const struct sc_recv *rv,
			  struct tv_tensor *t)
{
	const struct pub *pub = &r->sends[rv->send_index].pub;
	char why[320];
	uint64_t digest;

	if (!pub->done || pub->is_error) {
		tv_tb_fail(r->run, TV_TB_FK_DATA,
			     RECV_FMT ": got a tensor, but the sender %s",
			     RECV_ARGS(rv), pub->done ?
			     "published an error" : "has not published yet");
		return;
	}
	if (rv_meta_wrong(t, pub->dtype, &pub->shape, pub->dead,
			  "the sender published", why, sizeof(why))) {
		tv_tb_fail(r->run, TV_TB_FK_DATA, RECV_FMT ": %s",
			   RECV_ARGS(rv), why);
		return;
	}
	if (rv_placement_wrong(t, pub->dtype, pub->dead, rv->place, why,
			       sizeof(why))) {
		tv_tb_fail(r->run, TV_TB_FK_DATA, RECV_FMT ": %s",
			   RECV_ARGS(rv), why);
		return;
	}
	if (fill_digest_tensor(t, &digest)) {
		tv_tb_fail(r->run, TV_TB_FK_DATA, RECV_FMT ": cannot read the data",
			     RECV_ARGS(rv));
		return;
	}
	if (digest != pub->digest) {
		corrupted(r, rv, digest, pub->digest);
		return;
	}
	tv_tb_run_result_mut(r->run)->bytes += fill_payload_bytes(t);
	/* The scenario's own checks, on top of "equal to what was published". */
	if (rv_expect_wrong(rv, t, digest, r->seed, why, sizeof(why)))
		tv_tb_fail(r->run, TV_TB_FK_EXPECT, RECV_FMT ": %s",
			   RECV_ARGS(rv), why);
}

bool rv_error_unexpected(const struct sc_expect *ex, const struct tv_status *st,
			 char *why, size_t cap)
{
	if (ex->kind == SC_EXPECT_ANY)
		return false;
	if (ex->kind != SC_EXPECT_ERROR)
		snprintf(why, cap, "expected ok, got %s: %s",
			 tv_code_name(st->code), st->message);
	else if (st->code != ex->code)
		snprintf(why, cap, "expected %s, got %s: %s",
			 tv_code_name(ex->code), tv_code_name(st->code),
			 st->message);
	else if (ex->message && !strstr(st->message, ex->message))
		snprintf(why, cap, "message \"%s\" does not contain \"%s\"",
			 st->message, ex->message);
	else
		return false;
	return true;
}

static void check_error(struct runner *r, const struct sc_recv *rv,
			const struct tv_status *st)
{
	char why[TV_STATUS_MSG_MAX * 2 + 96];

	if (rv_error_unexpected(&rv->expect, st, why, sizeof(why)))
		tv_tb_fail(r->run, TV_TB_FK_EXPECT, RECV_FMT ": %s",
			   RECV_ARGS(rv), why);
}

static void on_first_call(struct recv_slot *rs, const struct sc_recv *rv,
			  const struct tv_status *st, struct tv_tensor *t)
{
	struct runner *r = rs->r;

	rs->code = st->code;
	rs->errors_at_done =
		r->chk.chan_errors[rv->node * r->sc->nodes + rv->from];
	if (st->code != TV_OK) {
		tv_tb_run_result_mut(r->run)->ops_failed++;
		/* Kept for the outcome rule, checked after the run. */
		rs->message = strdup(st->message);
		if (t)
			tv_tb_fail(r->run, TV_TB_FK_CALLBACK,
				     RECV_FMT ": error status with a tensor",
				     RECV_ARGS(rv));
		check_error(r, rv, st);
	} else if (!t) {
		tv_tb_fail(r->run, TV_TB_FK_CALLBACK,
			     RECV_FMT ": OK status without a tensor",
			     RECV_ARGS(rv));
	} else if (rv->expect.kind == SC_EXPECT_ERROR) {
		tv_tb_fail(r->run, TV_TB_FK_EXPECT,
			     RECV_FMT ": expected %s, got a tensor",
			     RECV_ARGS(rv), tv_code_name(rv->expect.code));
	} else {
		tv_tb_run_result_mut(r->run)->ops_ok++;
		verify_tensor(r, rv, t);
	}
}

static void recv_done(void *arg, const struct tv_status *st,
		      struct tv_tensor *t)
{
	struct recv_slot *rs = arg;
	struct runner *r = rs->r;
	const struct sc_recv *rv = &r->sc->recvs[rs->idx];

	if (++rs->calls == 1 && tv_tb_run_tearing_down(r->run)) {
		/* Reported as "never completed" already; this is the cancel. */
	} else if (rs->calls > 1) {
		tv_tb_fail(r->run, TV_TB_FK_CALLBACK,
			     "invariant: " RECV_FMT ": done callback ran %u times (status %s)",
			     RECV_ARGS(rv), rs->calls, tv_code_name(st->code));
	} else {
		/*
		 * The workload's own end: the clock runs on past it to the
		 * last event queued (an ACK timeout nothing cancels).
		 */
		tv_tb_run_result_mut(r->run)->last_op_ns =
			tv_tb_run_now_ns(r->run);
		on_first_call(rs, rv, st, t);
	}
	if (t)
		tv_tensor_unref(t);
}

void runner_recv_cb(void *arg)
{
	struct recv_slot *rs = arg;
	struct runner *r = rs->r;
	const struct sc_recv *rv = &r->sc->recvs[rs->idx];
	uint32_t prev = tv_tb_run_enter(r->run, rv->node);
	struct tv_channel *ch;
	char what[TV_NAME_MAX + 96];
	int rc;

	/* Its node is down: no receive, no callback to wait for. */
	if (tv_tb_run_gate(r->run, rv->node, "recv", rv->step_id, rv->name)) {
		rs->skipped = true;
		goto out;
	}
	ch = tv_engine_channel(r->nodes[rv->node].engine, rv->from);
	if (!ch) {
		tv_tb_fail(r->run, TV_TB_FK_RUNNER, RECV_FMT ": no channel",
			     RECV_ARGS(rv));
		goto out;
	}
	rs->started = true;
	rs->errors_at_start =
		r->chk.chan_errors[rv->node * r->sc->nodes + rv->from];
	rc = tv_engine_recv_async(r->nodes[rv->node].engine, ch, rv->step_id,
				  rv->name, rv->place, recv_done, rs);
	if (rc) {
		/* Refused: the callback will not run, and must not. */
		rs->refused = true;
		snprintf(what, sizeof(what), RECV_FMT ": tv_engine_recv_async",
			 RECV_ARGS(rv));
		tv_tb_run_refused(r->run, what, rc);
	}
out:
	tv_tb_run_leave(r->run, prev);
}

/*
 * Every failure that caught the request may have used one retry: after
 * max_retries + 1 of them on its channel, the engine may have given up.
 */
static bool retries_exhausted(const struct runner *r,
			      const struct recv_slot *rs)
{
	return r->faulty &&
	       rs->errors_at_done - rs->errors_at_start >=
		       (uint64_t)r->max_retries + 1;
}

/*
 * The tensor could not be had in time: the sender published it, or the
 * channel to it connected (a late node), too close to the receive's
 * deadline for a round trip (the engine's own bound for one: the ACK
 * timeout) or after it.
 */
static bool too_late(const struct runner *r, const struct recv_slot *rs,
		     const struct sc_recv *rv)
{
	const struct sc_send *s = &r->sc->sends[rv->send_index];
	uint64_t avail = s->at_ns;

	if (rs->code != TV_DEADLINE_EXCEEDED || !r->recv_timeout_ns)
		return false;
	if (r->sc->start_ns[rv->node] > avail)
		avail = r->sc->start_ns[rv->node];
	if (r->sc->start_ns[rv->from] > avail)
		avail = r->sc->start_ns[rv->from];
	return avail + r->ack_timeout_ns >= rv->at_ns + r->recv_timeout_ns;
}

/*
 * The receiver's engine refused the tensor as larger than the scenario's
 * max_recv_bytes, and it is.  (A string tensor's size on the wire is its
 * serialization's, not recomputed here: the engine's word is taken.)
 */
static bool over_recv_limit(const struct runner *r, const struct pub *pub,
			    const struct recv_slot *rs, const char *msg)
{
	uint64_t n;

	if (!r->sc->max_recv_bytes || rs->code != TV_RESOURCE_EXHAUSTED ||
	    !strstr(msg, "max_recv_bytes"))
		return false;
	if (!pub->done || pub->is_error || pub->dead)
		return false;
	if (pub->dtype == TV_DT_STRING)
		return true;
	if (tv_shape_num_elements(&pub->shape, &n))
		return false;
	return n > r->sc->max_recv_bytes / tv_dtype_size(pub->dtype);
}

/* May a receive that failed with (code, msg) have failed? */
static void check_outcome(struct runner *r, const struct recv_slot *rs,
			  const struct sc_recv *rv)
{
	const struct sc_send *s = &r->sc->sends[rv->send_index];
	const struct pub *pub = &r->sends[rv->send_index].pub;
	const char *msg = rs->message ? rs->message : "";

	if (tv_tb_run_unrecoverable_fires(r->run) ||
	    retries_exhausted(r, rs) ||
	    pub->refused || too_late(r, rs, rv) ||
	    over_recv_limit(r, pub, rs, msg))
		return;
	if (pub->done && pub->is_error) {
		if (rs->code != s->err_code ||
		    strcmp(msg, s->err_msg ? s->err_msg : ""))
			tv_tb_fail(r->run, TV_TB_FK_OUTCOME,
				     "invariant: " RECV_FMT ": got %s \"%s\", the sender published %s \"%s\"",
				     RECV_ARGS(rv), tv_code_name(rs->code), msg,
				     tv_code_name(s->err_code),
				     s->err_msg ? s->err_msg : "");
		return;
	}
	if (tv_tb_run_fires(r->run))
		tv_tb_fail(r->run, TV_TB_FK_OUTCOME,
			     "invariant: " RECV_FMT ": recoverable fault not recovered: failed with %s \"%s\" (%" PRIu64 " faults fired, none unrecoverable; %" PRIu64 " channel failures during the receive, max_retries %u)",
			     RECV_ARGS(rv), tv_code_name(rs->code), msg,
			     tv_tb_run_fires(r->run),
			     rs->errors_at_done - rs->errors_at_start,
			     r->max_retries);
	else
		tv_tb_fail(r->run, TV_TB_FK_OUTCOME,
			     "invariant: " RECV_FMT ": failed with %s \"%s\" although the sender published a tensor and no fault fired",
			     RECV_ARGS(rv), tv_code_name(rs->code), msg);
}

void runner_check_recvs(struct runner *r)
{
	size_t missing = 0;

	for (size_t i = 0; i < r->sc->nrecvs; i++) {
		const struct sc_recv *rv = &r->sc->recvs[i];
		const struct recv_slot *rs = &r->recvs[i];

		if (rs->refused || rs->skipped)
			continue;
		if (rs->calls == 0) {
			if (missing++ < 10)
				tv_tb_fail(r->run, TV_TB_FK_HANG,
					     "invariant: " RECV_FMT ": never completed (done callback not run at quiescence%s)",
					     RECV_ARGS(rv), rs->crashed ?
					     "; its node crashed and tv_engine_destroy did not cancel it" : "");
			continue;
		}
		if (rs->code != TV_OK)
			check_outcome(r, rs, rv);
	}
	if (missing > 10)
		tv_tb_fail(r->run, TV_TB_FK_HANG,
			     "invariant: %zu recvs never completed", missing);
}

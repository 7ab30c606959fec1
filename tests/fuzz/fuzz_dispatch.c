/*
 * Fuzz target: the engine's message dispatch, with a hostile peer.
 *
 * Every input starts from the same 2-node simulator world (tv_sim, two
 * engines, one connected channel pair) in an interesting state:
 *
 *   node 1 cached the metadata of "c" (one full transfer, step 1);
 *   node 1 waits for "a" step 1 (no cached metadata, nobody sends it) and
 *     for "c" step 2 (cached metadata: destination advertised);
 *   node 0 waits for "b" step 1 from node 1;
 *   node 0 published "p" (float), "s" (strings) and an error "e", step 1,
 *     that nobody requested;
 *   node 0 answered node 1's request for "r" with META_DATA_UPDATE and
 *     waits for the TENSOR_RE_REQUEST (the world is stopped right there,
 *     with that update still on the wire).
 *
 * Byte 0 of the input: bit 0 = validate_checksum on both engines.  Then a
 * program of operations, each an op byte (bit 0: which node misbehaves,
 * bits 1..3: what it does) and its operands:
 *
 *   0, 1  [imm u32][len u16][bytes]: RDMA_WRITE_WITH_IMM of the bytes into
 *         the peer's rx message buffer (len may overrun it by 15 bytes)
 *   2     [sel u8][len u16][bytes]: same, with an immediate chosen among
 *         MESSAGE, ACK, a live request index, index + 1, the largest
 *         index, or a fuzzed one
 *   3, 4  [fz_build_msg bytes]: a well-formed message (passes
 *         tv_wire_encode, so it gets past the checksum) naming known
 *         indexes, steps, names and destinations, written as a message
 *   5     [sel u8][exact u8][len u16][bytes]: tensor bytes written into a
 *         destination a request advertised (sel 0: the newest), immediate
 *         = its index; exact bit 0: len = the advertised size
 *   6     [k u8]: run k simulator events (0: until quiescent)
 *   7     [what u8 ...]: an API call on that node: a receive, a send of a
 *         float, string or dead tensor, a published error
 *
 * The misbehaving node's writes bypass its engine (they complete like
 * ACKs, as raw_write in tests/engine/test_engine_errors.c does); its engine
 * otherwise keeps running.  Then the world runs until quiescent and the
 * invariants are checked: no crash or sanitizer report, each receive's
 * callback ran at most once and, after tv_engine_destroy() (which must
 * return 0), exactly once; engine stats agree with the receives started;
 * ACKs sent <= messages parsed; tv_sim_destroy() reports no leak, and
 * every block the engines and the simulator allocated was freed.
 *
 * The world is built once per validate_checksum value and saved right
 * after its setup; each input gets it put back byte for byte (fz_heap.h:
 * the engines and the simulator allocate from an arena at a fixed
 * address), then tears it down as before.  An input's outcome depends on
 * nothing that ran before it: the same engine events as a world built for
 * it alone (docs/fuzzing.md, "fuzz_dispatch and 10 000 execs/s").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/engine.h>
#include <tensorverbs/sim.h>

#include "engine_int.h"
#include "fuzz.h"
#include "fz_heap.h"

#define FZ_NODES 2
#define FZ_QUEUE_DEPTH 8
#define FZ_POOL_BLOCK_BYTES (16u << 10)
/*
 * What a hostile META_DATA_UPDATE may make a receiver allocate: above a
 * pool block (a tensor of its own block is reached), far below what it
 * costs to clear (docs/fuzzing.md, "fuzz_dispatch and 10 000 execs/s").
 */
#define FZ_MAX_RECV_BYTES (1u << 20)
#define FZ_RECVS 64
#define FZ_OPS_MAX 64
#define FZ_WRITE_MAX 4096 /* > tv_wire_max_bytes(): writes may overrun */
#define FZ_SCRATCH_BYTES (FZ_OPS_MAX * FZ_WRITE_MAX)
#define FZ_EVENTS_MAX 200000u

struct fz_world;

struct fz_recv {
	uint32_t node;
	int calls;
	enum tv_code code;
};

struct fz_world {
	struct tv_sim *sim;
	struct tv_engine *eng[FZ_NODES];
	struct tv_channel *ch[FZ_NODES]; /* node n's channel to the other */
	/*
	 * The misbehaving side writes from here, not from the tx buffer:
	 * each write from its own slice, untouched until the world is
	 * freed (the simulator reads the source when it executes the WR).
	 */
	uint8_t *scratch[FZ_NODES];
	size_t scratch_used[FZ_NODES];
	struct tv_vf_mr *scratch_mr[FZ_NODES];
	struct fz_recv recv[FZ_RECVS];
	uint32_t nrecv;
	/* What the builder may name: advertised indexes and destinations. */
	struct fz_known known;
	uint32_t dest_index[FZ_KNOWN_MAX];
	uint32_t dest_node[FZ_KNOWN_MAX];
	uint32_t next_index, next_dest;
	uint32_t r_index; /* node 1's request for "r" */
	bool r_seen;
};

/*
 * A peer's META_DATA_UPDATE may name any size up to 2^63 bytes (docs/
 * fuzzing.md, "Findings").  The engines refuse above FZ_MAX_RECV_BYTES
 * and allocate from fz_heap's arena, which returns NULL by itself; this
 * stays so that an allocation of the harness's own fails with ENOMEM
 * instead of ASan aborting.  ASAN_OPTIONS from the environment override it.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

static const char *const fz_names[] = { "a", "b", "c", "p", "r", "s", "e" };
static const uint64_t fz_steps[] = { 1, 2, 3 };

/* ---- observing the engines -------------------------------------------- */

static void fz_know_index(struct fz_world *w, uint32_t index)
{
	uint32_t i;

	for (i = 0; i < w->known.nindex; i++)
		if (w->known.index[i] == index)
			return;
	w->known.index[w->next_index] = index;
	w->next_index = (w->next_index + 1) % FZ_KNOWN_MAX;
	if (w->known.nindex < FZ_KNOWN_MAX)
		w->known.nindex++;
}

static void fz_know_dest(struct fz_world *w, const struct tv_engine_event *ev)
{
	uint32_t i = w->next_dest;

	if (!ev->length)
		return;
	w->known.dest[i].addr = ev->addr;
	w->known.dest[i].rkey = ev->rkey;
	w->known.dest[i].bytes = ev->length;
	w->dest_index[i] = ev->request_index;
	w->dest_node[i] = ev->node;
	w->next_dest = (i + 1) % FZ_KNOWN_MAX;
	if (w->known.ndest < FZ_KNOWN_MAX)
		w->known.ndest++;
}

/* TV_FUZZ_VERBOSE=1: every engine event on stderr (debugging an input). */
static int fz_verbose = -1;

static void fz_trace(const struct tv_engine_event *ev)
{
	static const char *const kinds[] = {
		"?", "msg_send", "msg_recv", "ack_send", "ack_recv",
		"advertise", "tensor_write", "recv_done", "channel_error",
	};

	fprintf(stderr, "fz: node %u %-13s peer %u type %u index %u step %llu "
		"name '%s' len %llu code %d\n", ev->node,
		(unsigned int)ev->kind < 9 ? kinds[ev->kind] : "?", ev->peer,
		ev->msg_type, ev->request_index,
		(unsigned long long)ev->step_id, ev->name ? ev->name : "",
		(unsigned long long)ev->length, ev->code);
}

static void fz_observe(void *ctx, const struct tv_engine_event *ev)
{
	struct fz_world *w = ctx;

	if (fz_verbose < 0)
		fz_verbose = getenv("TV_FUZZ_VERBOSE") != NULL;
	if (fz_verbose)
		fz_trace(ev);
	if (ev->kind != TV_EV_REQ_ADVERTISE)
		return;
	fz_know_index(w, ev->request_index);
	fz_know_dest(w, ev);
	if (ev->node == 1 && ev->name && !strcmp(ev->name, "r")) {
		w->r_index = ev->request_index;
		w->r_seen = true;
	}
}

static void fz_done(void *arg, const struct tv_status *st, struct tv_tensor *t)
{
	struct fz_recv *r = arg;

	r->calls++;
	FZ_CHECK(r->calls == 1);
	FZ_CHECK((st->code == TV_OK) == (t != NULL));
	r->code = st->code;
	tv_tensor_unref(t);
}

/* ---- the world ---------------------------------------------------------- */

static void fz_progress(void *arg, uint32_t node)
{
	tv_engine_progress(arg);
}

static void fz_run(struct fz_world *w)
{
	uint32_t i;

	for (i = 0; i < FZ_NODES; i++)
		tv_engine_progress(w->eng[i]);
	FZ_CHECK(tv_sim_run(w->sim, 0, FZ_EVENTS_MAX) == 0);
}

static void fz_steps_run(struct fz_world *w, uint32_t k)
{
	uint32_t i;

	for (i = 0; i < FZ_NODES; i++)
		tv_engine_progress(w->eng[i]);
	while (k-- && tv_sim_step(w->sim) > 0)
		;
}

static uint8_t fz_scratch[FZ_NODES][FZ_SCRATCH_BYTES];

static void fz_engines(struct fz_world *w, bool validate)
{
	struct tv_engine_config ec;
	struct tv_channel_info info[FZ_NODES];
	uint32_t i;

	for (i = 0; i < FZ_NODES; i++) {
		tv_engine_config_default(&ec);
		ec.node_id = i;
		ec.queue_depth = FZ_QUEUE_DEPTH;
		ec.pool_block_bytes = FZ_POOL_BLOCK_BYTES;
		ec.max_recv_bytes = FZ_MAX_RECV_BYTES;
		ec.validate_checksum = validate;
		ec.observe = fz_observe;
		ec.observe_ctx = w;
		FZ_CHECK(tv_engine_create(tv_sim_device(w->sim, i), &ec,
					  &w->eng[i]) == 0);
		tv_sim_set_progress(w->sim, i, fz_progress, w->eng[i]);
		FZ_CHECK(tv_channel_create(w->eng[i], 1 - i, &w->ch[i]) == 0);
		FZ_CHECK(tv_channel_info(w->ch[i], &info[i]) == 0);
		w->scratch[i] = fz_scratch[i];
		FZ_CHECK(tv_vf_reg_mr(w->eng[i]->pd, w->scratch[i],
				      FZ_SCRATCH_BYTES, TV_ACCESS_LOCAL_WRITE,
				      &w->scratch_mr[i]) == 0);
	}
	for (i = 0; i < FZ_NODES; i++)
		FZ_CHECK(tv_channel_connect(w->ch[i], &info[1 - i]) == 0);
}

static void fz_recv(struct fz_world *w, uint32_t node, uint64_t step,
		    const char *name, enum tv_placement place)
{
	struct fz_recv *r;

	if (w->nrecv == FZ_RECVS)
		return;
	r = &w->recv[w->nrecv++];
	r->node = node;
	FZ_CHECK(tv_engine_recv_async(w->eng[node], w->ch[node], step, name,
				      place, fz_done, r) == 0);
}

/* Publish a tensor; 0 or the engine's refusal (e.g. a duplicate). */
static int fz_send(struct fz_world *w, uint32_t node, uint64_t step,
		   const char *name, enum tv_dtype dt, uint32_t elems)
{
	struct tv_shape shape = { .rank = 1, .dims = { elems } };
	struct tv_tensor *t;
	uint32_t i;
	uint8_t *p;
	int ret;

	if (dt == TV_DT_INVALID)
		ret = tv_tensor_create_dead(w->eng[node], TV_DT_FLOAT, &t);
	else
		ret = tv_tensor_create(w->eng[node], dt, &shape,
				       TV_PLACE_HOST, &t);
	if (ret)
		return ret;
	p = tv_tensor_data(t);
	for (i = 0; p && i < tv_tensor_size_bytes(t); i++)
		p[i] = (uint8_t)(i + 1);
	for (i = 0; dt == TV_DT_STRING && i < elems; i++)
		FZ_CHECK(tv_tensor_set_string(t, i, "xyz", i % 4) == 0);
	ret = tv_engine_send(w->eng[node], step, name, t);
	tv_tensor_unref(t);
	return ret;
}

static struct tv_response *fz_r_response(struct fz_world *w)
{
	return w->r_seen ? tv__response_find(w->ch[0], w->r_index) : NULL;
}

/* The state every input starts from (see the top of this file). */
static void fz_setup(struct fz_world *w)
{
	struct tv_response *resp;

	FZ_CHECK(fz_send(w, 0, 1, "c", TV_DT_FLOAT, 32) == 0);
	fz_recv(w, 1, 1, "c", TV_PLACE_HOST);
	fz_run(w);
	FZ_CHECK(w->recv[0].calls == 1 && w->recv[0].code == TV_OK);
	fz_recv(w, 1, 1, "a", TV_PLACE_HOST);
	fz_recv(w, 1, 2, "c", TV_PLACE_HOST);
	fz_recv(w, 0, 1, "b", TV_PLACE_HOST);
	FZ_CHECK(fz_send(w, 0, 1, "p", TV_DT_FLOAT, 4) == 0);
	FZ_CHECK(fz_send(w, 0, 1, "s", TV_DT_STRING, 3) == 0);
	FZ_CHECK(tv_engine_send_error(w->eng[0], 1, "e", TV_NOT_FOUND,
				      "published error") == 0);
	FZ_CHECK(fz_send(w, 0, 1, "r", TV_DT_INT32, 3) == 0);
	fz_run(w);
	fz_recv(w, 1, 1, "r", TV_PLACE_DEVICE);
	fz_steps_run(w, 0);
	for (;;) {
		resp = fz_r_response(w);
		if (resp && resp->state == TV_RESP_WAIT_RE_REQ)
			break;
		FZ_CHECK(tv_sim_step(w->sim) > 0);
	}
}

/* Built into *w, which is zeroed; everything else goes to the arena. */
static void fz_world_build(struct fz_world *w, bool validate)
{
	struct tv_sim_config sc;
	uint32_t i;

	memset(w, 0, sizeof(*w));
	tv_sim_config_default(&sc);
	sc.seed = 1;
	sc.num_nodes = FZ_NODES;
	sc.link.latency_ns = 2000;
	sc.link.bytes_per_sec = 10ull << 30;
	FZ_CHECK(tv_sim_create(&sc, &w->sim) == 0);
	for (i = 0; i < sizeof(fz_names) / sizeof(fz_names[0]); i++)
		w->known.name[w->known.nname++] = fz_names[i];
	for (i = 0; i < sizeof(fz_steps) / sizeof(fz_steps[0]); i++)
		w->known.step[w->known.nstep++] = fz_steps[i];
	fz_engines(w, validate);
	fz_setup(w);
}

/* ---- the invariants ------------------------------------------------------ */

static void fz_check_stats(struct fz_world *w, uint32_t node)
{
	struct tv_engine_stats s;
	uint64_t started = 0, pending = 0, parsed = 0;
	uint32_t i;

	tv_engine_stats(w->eng[node], &s);
	for (i = 0; i < w->nrecv; i++) {
		if (w->recv[i].node != node)
			continue;
		started++;
		pending += w->recv[i].calls == 0;
	}
	for (i = 0; i < TV_MSG_TYPE_COUNT; i++)
		parsed += s.msgs_recv[i];
	FZ_CHECK(s.recvs_started == started);
	FZ_CHECK(s.live_requests == pending);
	FZ_CHECK(s.recvs_ok + s.recvs_failed + s.live_requests == started);
	FZ_CHECK(s.acks_sent <= parsed);
}

static void fz_world_end(struct fz_world *w)
{
	uint32_t i;

	for (i = 0; i < FZ_NODES; i++)
		fz_check_stats(w, i);
	for (i = 0; i < FZ_NODES; i++) {
		FZ_CHECK(tv_vf_dereg_mr(w->scratch_mr[i]) == 0);
	}
	for (i = 0; i < FZ_NODES; i++)
		FZ_CHECK(tv_engine_destroy(w->eng[i]) == 0);
	for (i = 0; i < w->nrecv; i++)
		FZ_CHECK(w->recv[i].calls == 1);
	FZ_CHECK(tv_sim_destroy(w->sim) == 0);
	/* Every block the engines and the simulator took is back. */
	FZ_CHECK(fz_heap_live() == 0);
}

/* ---- the misbehaving peer ------------------------------------------------- */

/*
 * A write-with-imm of len bytes from the input (zero-padded), bypassing the
 * engine: from a fresh slice of the scratch buffer, to addr/rkey.
 */
static void fz_post(struct fz_world *w, uint32_t from, struct fz_cur *c,
		    uint64_t addr, uint32_t rkey, uint32_t len, uint32_t imm)
{
	struct tv_channel *ch = w->ch[from];
	uint8_t *src = w->scratch[from] + w->scratch_used[from];
	struct tv_vf_sge sge = {
		.addr = (uint64_t)(uintptr_t)src,
		.length = len,
		.lkey = w->scratch_mr[from]->lkey,
	};
	struct tv_vf_send_wr wr = {
		.wr_id = TV_WRID_ACK, /* completes like an ACK: no state */
		.opcode = TV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = TV_SEND_SIGNALED,
		.imm_data = imm,
		.remote_addr = addr,
		.rkey = rkey,
		.sg_list = len ? &sge : NULL,
		.num_sge = len ? 1 : 0,
	};
	struct tv_vf_send_wr *bad;

	FZ_CHECK(len <= FZ_WRITE_MAX);
	FZ_CHECK(w->scratch_used[from] + FZ_WRITE_MAX <= FZ_SCRATCH_BYTES);
	fz_bytes(c, src, len);
	/* The engine counts on a free slot whenever it posts. */
	if (ch->sq_outstanding >= ch->sq_depth)
		return;
	if (tv_vf_post_send(ch->qp, &wr, &bad))
		return;
	w->scratch_used[from] += (len + 63) & ~(size_t)63;
	ch->sq_outstanding++;
}

static uint32_t fz_pick_index(struct fz_world *w, struct fz_cur *c)
{
	uint8_t sel = fz_u8(c);

	if (!w->known.nindex)
		return sel;
	return w->known.index[sel % w->known.nindex];
}

static uint32_t fz_imm(struct fz_world *w, struct fz_cur *c)
{
	switch (fz_u8(c) % 7) {
	case 0:
		return TV_IMM_MESSAGE;
	case 1:
		return TV_IMM_ACK;
	case 2:
		return fz_pick_index(w, c);
	case 3:
		return fz_pick_index(w, c) + 1;
	case 4:
		return TV_IMM_MAX_REQUEST;
	case 5: /* a write carrying an ACK nobody is owed */
		return fz_pick_index(w, c) | TV_IMM_ACK_FLAG;
	default:
		return fz_u32(c);
	}
}

static void fz_op_raw(struct fz_world *w, uint32_t from, struct fz_cur *c,
		      bool pick_imm)
{
	struct tv_channel *ch = w->ch[from];
	uint32_t imm = pick_imm ? fz_imm(w, c) : fz_u32(c);
	uint32_t len = fz_u16(c) % (ch->remote_rx_bytes + (pick_imm ? 1 : 16));

	fz_post(w, from, c, ch->remote_rx_addr, ch->remote_rx_rkey, len, imm);
}

static void fz_op_msg(struct fz_world *w, uint32_t from, struct fz_cur *c)
{
	struct tv_channel *ch = w->ch[from];
	static struct tv_msg msg;
	static uint8_t buf[FZ_WRITE_MAX];
	struct fz_cur bytes = { buf, 0 };
	size_t len;

	fz_build_msg(c, &w->known, &msg);
	if (tv_wire_encode(&msg, buf, sizeof(buf), &len))
		return;
	bytes.left = len;
	fz_post(w, from, &bytes, ch->remote_rx_addr, ch->remote_rx_rkey,
		(uint32_t)len, TV_IMM_MESSAGE);
}

/* Tensor content for an advertised destination, from the other node. */
static void fz_op_tensor(struct fz_world *w, struct fz_cur *c)
{
	uint8_t sel = fz_u8(c), exact = fz_u8(c);
	const struct fz_dest *d;
	uint64_t len;

	if (!w->known.ndest)
		return;
	/* 0 is the newest. */
	sel = (uint8_t)((w->next_dest + FZ_KNOWN_MAX - 1 - sel % w->known.ndest) %
			FZ_KNOWN_MAX);
	d = &w->known.dest[sel];
	len = fz_u16(c);
	len = (exact & 1) ? d->bytes : len % (d->bytes + 2);
	if (len > FZ_WRITE_MAX)
		len = FZ_WRITE_MAX;
	fz_post(w, 1 - w->dest_node[sel], c, d->addr, d->rkey, (uint32_t)len,
		w->dest_index[sel]);
}

static const char *fz_pick_name(struct fz_cur *c, char *buf, size_t cap)
{
	uint8_t sel = fz_u8(c);

	if (sel < 0xE0)
		return fz_names[sel % (sizeof(fz_names) / sizeof(fz_names[0]))];
	snprintf(buf, cap, "f%u", sel);
	return buf;
}

/* Legitimate API traffic from either node, interleaved with the rest. */
static void fz_op_api(struct fz_world *w, uint32_t node, struct fz_cur *c)
{
	uint8_t what = fz_u8(c);
	uint64_t step = fz_steps[fz_u8(c) % 3];
	char buf[8];
	const char *name = fz_pick_name(c, buf, sizeof(buf));
	uint32_t elems = fz_u8(c) % 17;

	switch (what % 5) {
	case 0:
		fz_recv(w, node, step, name,
			(what & 8) ? TV_PLACE_DEVICE : TV_PLACE_HOST);
		break;
	case 1:
		fz_send(w, node, step, name, TV_DT_FLOAT, elems);
		break;
	case 2:
		fz_send(w, node, step, name, TV_DT_STRING, elems);
		break;
	case 3:
		fz_send(w, node, step, name, TV_DT_INVALID, 0);
		break;
	default:
		tv_engine_send_error(w->eng[node], step, name, TV_ABORTED,
				     "fuzz");
		break;
	}
}

static void fz_op(struct fz_world *w, struct fz_cur *c)
{
	uint8_t op = fz_u8(c);
	uint32_t from = op & 1;

	switch ((op >> 1) & 7) {
	case 0:
	case 1:
		fz_op_raw(w, from, c, false);
		break;
	case 2:
		fz_op_raw(w, from, c, true);
		break;
	case 3:
	case 4:
		fz_op_msg(w, from, c);
		break;
	case 5:
		fz_op_tensor(w, c);
		break;
	case 6: {
		uint8_t k = fz_u8(c);

		if (k)
			fz_steps_run(w, k);
		else
			fz_run(w);
		break;
	}
	default:
		fz_op_api(w, from, c);
		break;
	}
}

/*
 * The world after fz_setup(), one per validate_checksum value: built the
 * first time it is needed, saved (the arena's bytes and this struct), and
 * put back before every input that asks for it.  An input therefore
 * starts from exactly the state a freshly built world has, at the same
 * addresses: what it does depends on nothing run before it.
 */
struct fz_saved {
	bool taken;
	struct fz_heap_snap heap;
	struct fz_world w;
};

static struct fz_world fz_w;
static struct fz_saved fz_saved[2];

static struct fz_world *fz_world_get(bool validate)
{
	struct fz_saved *sv = &fz_saved[validate];

	if (!sv->taken) {
		fz_heap_reset();
		fz_world_build(&fz_w, validate);
		FZ_CHECK(fz_heap_snap_take(&sv->heap) == 0);
		if (getenv("TV_FUZZ_VERBOSE"))
			fprintf(stderr, "fz: world saved: %zu arena bytes, "
				"%llu blocks\n", sv->heap.top,
				(unsigned long long)sv->heap.live);
		sv->w = fz_w;
		sv->taken = true;
		return &fz_w;
	}
	fz_heap_snap_restore(&sv->heap);
	fz_w = sv->w;
	return &fz_w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_cur c = { data, size };
	struct fz_world *w;
	uint32_t ops = 0;

	w = fz_world_get(fz_u8(&c) & 1);
	while (fz_more(&c) && ops++ < FZ_OPS_MAX)
		fz_op(w, &c);
	fz_run(w);
	fz_world_end(w);
	return 0;
}

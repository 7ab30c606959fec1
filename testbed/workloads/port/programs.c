/*
 * Programs (docs/port.md) compiled into one task per node: a list of
 * operations each node's producer runs in order.  Every program lays out
 * its own region of each node's buffer, uses its own connection per pair
 * of nodes, and says what its regions hold at the end.
 *
 * Sources are refilled only once the peer has shown (its answer, its
 * signal) that the last write from them landed, and every destination
 * byte has one writer: the programs are race-free by construction, so
 * their final buffers are known exactly.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pt.h"

#define ALIGN 64u

static const char *const op_names[PT_NOPS] = {
	[PT_OP_FILL] = "fill", [PT_OP_FILL_F32] = "fill_f32",
	[PT_OP_PUT] = "put", [PT_OP_SIGNAL] = "signal",
	[PT_OP_FLUSH] = "flush", [PT_OP_WAIT] = "wait",
	[PT_OP_REDUCE] = "reduce", [PT_OP_COPY] = "copy",
	[PT_OP_PACK] = "pack", [PT_OP_POLL] = "poll",
	[PT_OP_RECYCLE] = "recycle",
};

const char *pt_op_name(enum pt_op_kind kind)
{
	return (unsigned)kind < PT_NOPS ? op_names[kind] : "?";
}

/* ---- data patterns ------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t pat_key(uint64_t seed, uint32_t prog, uint32_t node,
			uint32_t iter)
{
	return mix64(seed ^ mix64((uint64_t)prog << 48 ^ (uint64_t)node << 32 ^
				  iter));
}

void pt_pattern(uint64_t seed, uint32_t prog, uint32_t node, uint32_t iter,
		uint64_t pos, uint8_t *out, uint64_t len)
{
	uint64_t key = pat_key(seed, prog, node, iter);

	for (uint64_t i = 0; i < len; i++) {
		uint64_t p = pos + i;

		out[i] = (uint8_t)(mix64(key + p / 8) >> (8 * (p % 8)));
	}
}

/*
 * Floats k / 64 with |k| <= 1000: any sum of up to 64 of them is exact
 * in single precision, so the reduction's order cannot change a bit and
 * the reference needs no particular order.
 */
static float pat_f32(uint64_t key, uint64_t idx)
{
	int k = (int)(mix64(key + idx) % 2001) - 1000;

	return (float)k / 64.0f;
}

void pt_pattern_f32(uint64_t seed, uint32_t prog, uint32_t node,
		    uint64_t first, uint8_t *out, uint64_t len)
{
	uint64_t key = pat_key(seed, prog, node, 0);

	for (uint64_t i = 0; i + 4 <= len; i += 4) {
		float f = pat_f32(key, first + i / 4);

		memcpy(out + i, &f, 4);
	}
}

/* ---- building tasks ----------------------------------------------------- */

static struct pt_task *task_of(struct pt_scenario *sc, size_t prog,
			       uint32_t node)
{
	for (size_t i = 0; i < sc->ntasks; i++)
		if (sc->tasks[i].prog == prog && sc->tasks[i].node == node)
			return &sc->tasks[i];
	return NULL;
}

static int add_task(struct pt_scenario *sc, size_t prog, uint32_t node)
{
	void *p = realloc(sc->tasks, (sc->ntasks + 1) * sizeof(*sc->tasks));

	if (!p)
		return -ENOMEM;
	sc->tasks = p;
	memset(&sc->tasks[sc->ntasks], 0, sizeof(sc->tasks[0]));
	sc->tasks[sc->ntasks].prog = (uint32_t)prog;
	sc->tasks[sc->ntasks].node = node;
	sc->ntasks++;
	return 0;
}

static int emit(struct pt_scenario *sc, size_t prog, uint32_t node,
		const struct pt_op *op)
{
	struct pt_task *t = task_of(sc, prog, node);

	if (!t)
		return -EINVAL;
	if (sc->nops >= PT_MAX_OPS)
		return -E2BIG;
	if (t->nops == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		void *p = realloc(t->ops, cap * sizeof(*t->ops));

		if (!p)
			return -ENOMEM;
		t->ops = p;
		t->cap = cap;
	}
	t->ops[t->nops++] = *op;
	sc->nops++;
	return 0;
}

static int add_pair(struct pt_scenario *sc, size_t prog, uint32_t a,
		    uint32_t b)
{
	void *p;

	for (size_t i = 0; i < sc->npairs; i++)
		if (sc->pairs[i].prog == prog &&
		    ((sc->pairs[i].a == a && sc->pairs[i].b == b) ||
		     (sc->pairs[i].a == b && sc->pairs[i].b == a)))
			return 0;
	p = realloc(sc->pairs, (sc->npairs + 1) * sizeof(*sc->pairs));
	if (!p)
		return -ENOMEM;
	sc->pairs = p;
	sc->pairs[sc->npairs++] = (struct pt_pair){ (uint32_t)prog, a, b };
	sc->node_sems[a]++;
	sc->node_sems[b]++;
	return 0;
}

/* Offsets inside a program's region become offsets in the buffer. */
struct ctx {
	struct pt_scenario *sc;
	size_t prog;
	const struct pt_program *p;
};

static uint64_t at(const struct ctx *c, uint32_t node, uint64_t off)
{
	return c->p->region_off[node] + off;
}

static int op_put(const struct ctx *c, uint32_t node, uint32_t peer,
		  uint64_t dst, uint64_t src, uint64_t len, uint32_t flags)
{
	struct pt_op op = {
		.kind = PT_OP_PUT, .peer = peer, .flags = flags,
		.a = at(c, peer, dst), .b = at(c, node, src), .len = len,
	};

	return emit(c->sc, c->prog, node, &op);
}

static int op_wait(const struct ctx *c, uint32_t node, uint32_t peer)
{
	struct pt_op op = { .kind = PT_OP_WAIT, .peer = peer };

	return emit(c->sc, c->prog, node, &op);
}

static int op_fill(const struct ctx *c, uint32_t node, uint64_t off,
		   uint64_t len, uint32_t owner, uint32_t iter)
{
	/* The pattern's position is the offset in the region: a chunk
	 * reads the same wherever it travels. */
	struct pt_op op = {
		.kind = PT_OP_FILL, .a = at(c, node, off), .len = len,
		.src_node = owner, .iter = iter, .pat_off = off,
	};

	return emit(c->sc, c->prog, node, &op);
}

static uint32_t flush_flag(const struct pt_program *p, uint32_t i)
{
	return p->flush_every && (i + 1) % p->flush_every == 0 ?
		       PT_PUT_FLUSH : 0;
}

/* ---- the programs ------------------------------------------------------------ */

/* Region [source B][destination B]: a -> b, b answers, N times. */
static int compile_ping_pong(const struct ctx *c)
{
	const struct pt_program *p = c->p;
	uint32_t a = p->nodes[0], b = p->nodes[1];
	uint64_t B = p->bytes;
	int rc = 0;

	for (uint32_t i = 0; !rc && i < p->iters; i++) {
		uint32_t f = PT_PUT_SIGNAL | flush_flag(p, i);

		rc = op_fill(c, a, 0, B, a, i) ||
		     op_put(c, a, b, B, 0, B, f) ||
		     op_wait(c, b, a) ||
		     op_fill(c, b, 0, B, b, i) ||
		     op_put(c, b, a, B, 0, B, f) ||
		     op_wait(c, a, b) ? -ENOMEM : 0;
	}
	return rc;
}

static uint64_t up8(uint64_t v)
{
	return (v + 7) & ~7ull;
}

/* Plain (the broken design): the data, then its flag in an 8-byte word. */
static uint64_t packet_bytes(enum pt_format f, uint64_t data)
{
	return f == PT_PLAIN ? up8(data) + 8 : 2 * data;
}

/*
 * Room for either format (TV_BREAK=ll-last-byte swaps it at run time),
 * in 8-byte words: a packet's words must be aligned to be read whole.
 */
static uint64_t packet_slot(uint64_t data)
{
	uint64_t ll = 2 * up8(data), plain = up8(data) + 8;

	return ll > plain ? ll : plain;
}

/*
 * Region [data B][staging P][inbox P][unpacked B], P the packet bytes:
 * the sender packs, puts the packets into the peer's inbox (no signal:
 * the flags are the signal), the peer polls them and answers.
 */
static int packet_leg(const struct ctx *c, uint32_t from, uint32_t to,
		      uint32_t i)
{
	const struct pt_program *p = c->p;
	uint64_t B = p->bytes, B8 = up8(B), P = packet_slot(B);
	struct pt_op pack = {
		.kind = PT_OP_PACK, .a = at(c, from, B8), .b = at(c, from, 0),
		.len = B, .iter = i, .format = p->format,
	};
	struct pt_op poll = {
		.kind = PT_OP_POLL, .a = at(c, to, B8 + P),
		.b = at(c, to, B8 + 2 * P), .len = B, .iter = i,
		.src_node = from, .format = p->format,
	};

	struct pt_op put = {
		.kind = PT_OP_PUT, .peer = to,
		.flags = PT_PUT_PACKETS | flush_flag(p, i),
		.a = at(c, to, B8 + P), .b = at(c, from, B8),
		.len = packet_bytes(p->format, B),
		.plain_len = packet_bytes(PT_PLAIN, B),
	};

	if (op_fill(c, from, 0, B, from, i) ||
	    emit(c->sc, c->prog, from, &pack) ||
	    emit(c->sc, c->prog, from, &put))
		return -ENOMEM;
	return emit(c->sc, c->prog, to, &poll);
}

static int compile_packets(const struct ctx *c)
{
	const struct pt_program *p = c->p;
	int rc = 0;

	for (uint32_t i = 0; !rc && i < p->iters; i++) {
		rc = packet_leg(c, p->nodes[0], p->nodes[1], i);
		if (!rc)
			rc = packet_leg(c, p->nodes[1], p->nodes[0], i);
	}
	return rc;
}

/* Ring: chunk k starts on nodes[k] and travels n - 1 hops. */
static int compile_allgather(const struct ctx *c)
{
	const struct pt_program *p = c->p;
	uint32_t n = p->nnodes;
	uint64_t B = p->bytes;

	for (uint32_t j = 0; j < n; j++) {
		uint32_t me = p->nodes[j], next = p->nodes[(j + 1) % n];
		uint32_t prev = p->nodes[(j + n - 1) % n];

		if (op_fill(c, me, j * B, B, me, 0))
			return -ENOMEM;
		for (uint32_t s = 0; s + 1 < n; s++) {
			uint64_t k = (j + n - s) % n;

			if (op_put(c, me, next, k * B, k * B, B,
				   PT_PUT_SIGNAL) ||
			    op_wait(c, me, prev))
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Ring allreduce: reduce-scatter (each step sends a partial sum into the
 * next node's scratch slot for that step, which adds it to its own
 * chunk), then allgather of the reduced chunks.  Region [A: count
 * floats][T: n - 1 scratch chunks].
 */
static int rs_step(const struct ctx *c, uint32_t j, uint32_t s)
{
	const struct pt_program *p = c->p;
	uint32_t n = p->nnodes, me = p->nodes[j];
	uint64_t m = p->count / n * 4, A = p->count * 4;
	uint64_t k = (j + n - s) % n, k2 = (j + 2 * n - s - 1) % n;
	struct pt_op red = {
		.kind = PT_OP_REDUCE, .a = at(c, me, k2 * m),
		.b = at(c, me, A + s * m), .len = m,
	};

	if (op_put(c, me, p->nodes[(j + 1) % n], A + s * m, k * m, m,
		   PT_PUT_SIGNAL) ||
	    op_wait(c, me, p->nodes[(j + n - 1) % n]))
		return -ENOMEM;
	return emit(c->sc, c->prog, me, &red);
}

static int compile_allreduce(const struct ctx *c)
{
	const struct pt_program *p = c->p;
	uint32_t n = p->nnodes;
	uint64_t m = p->count / n * 4;

	for (uint32_t j = 0; j < n; j++) {
		uint32_t me = p->nodes[j];
		struct pt_op fill = {
			.kind = PT_OP_FILL_F32, .a = at(c, me, 0),
			.len = p->count * 4, .src_node = me,
		};

		if (emit(c->sc, c->prog, me, &fill))
			return -ENOMEM;
		for (uint32_t s = 0; s + 1 < n; s++)
			if (rs_step(c, j, s))
				return -ENOMEM;
		for (uint32_t s = 0; s + 1 < n; s++) {
			uint64_t k = (j + 1 + n - s) % n;

			if (op_put(c, me, p->nodes[(j + 1) % n], k * m, k * m,
				   m, PT_PUT_SIGNAL) ||
			    op_wait(c, me, p->nodes[(j + n - 1) % n]))
				return -ENOMEM;
		}
	}
	return 0;
}

/* Region [send: n chunks][receive: n chunks]; chunk k goes to nodes[k]. */
static int compile_all_to_all(const struct ctx *c)
{
	const struct pt_program *p = c->p;
	uint32_t n = p->nnodes;
	uint64_t B = p->bytes, R = n * B;

	for (uint32_t j = 0; j < n; j++) {
		uint32_t me = p->nodes[j];
		struct pt_op copy = {
			.kind = PT_OP_COPY, .a = at(c, me, R + j * B),
			.b = at(c, me, j * B), .len = B,
		};

		for (uint32_t k = 0; k < n; k++)
			if (op_fill(c, me, k * B, B, me, k))
				return -ENOMEM;
		if (emit(c->sc, c->prog, me, &copy))
			return -ENOMEM;
		for (uint32_t d = 1; d < n; d++) {
			uint32_t k = (j + d) % n;

			if (op_put(c, me, p->nodes[k], R + j * B, k * B, B,
				   PT_PUT_SIGNAL))
				return -ENOMEM;
		}
		for (uint32_t d = 1; d < n; d++)
			if (op_wait(c, me, p->nodes[(j + n - d) % n]))
				return -ENOMEM;
	}
	return 0;
}

/* ---- free sequences ------------------------------------------------------ */

static const char *const seq_keys[] = {
	"op", "dst_off", "src_off", "bytes", NULL
};

static int seq_op_kind(struct tv_ju *jc, const char *path, json_t *o,
		       uint32_t *flags_p, enum pt_op_kind *kind_p)
{
	static const struct {
		const char *name;
		enum pt_op_kind kind;
		uint32_t flags;
	} names[] = {
		{ "put", PT_OP_PUT, 0 },
		{ "put_with_signal", PT_OP_PUT, PT_PUT_SIGNAL },
		{ "put_with_signal_and_flush", PT_OP_PUT,
		  PT_PUT_SIGNAL | PT_PUT_FLUSH },
		{ "signal", PT_OP_SIGNAL, 0 },
		{ "flush", PT_OP_FLUSH, 0 },
		{ "recycle", PT_OP_RECYCLE, 0 },
	};
	const char *s = json_string_value(json_object_get(o, "op"));

	for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].name)) {
			*kind_p = names[i].kind;
			*flags_p = names[i].flags;
			return 0;
		}
	}
	return tv_ju_fail(jc, path, "op: must be put, put_with_signal, "
			  "put_with_signal_and_flush, signal, flush or "
			  "recycle");
}

/*
 * recycle: both ends start their semaphores from zero, as a new pair on
 * the same token memory would (MSCCL++ #795: a token reused without
 * zeroing).  The sender flushes first (no signal in flight) and the
 * receiver has taken every signal (its waits come first); the runner
 * meets the two ends (task.c) and resets both at once, as MSCCL++'s
 * out-of-band set-up of a new semaphore pair does.
 */
static int seq_recycle(const struct ctx *c)
{
	const struct pt_program *p = c->p;
	struct pt_op flush = { .kind = PT_OP_FLUSH, .peer = p->to };
	struct pt_op rs = { .kind = PT_OP_RECYCLE, .peer = p->to };
	struct pt_op rr = { .kind = PT_OP_RECYCLE, .peer = p->from };

	if (emit(c->sc, c->prog, p->from, &flush) ||
	    emit(c->sc, c->prog, p->from, &rs))
		return -ENOMEM;
	return emit(c->sc, c->prog, p->to, &rr);
}

static int seq_op(struct tv_ju *jc, const char *path, json_t *o,
		  const struct ctx *c)
{
	const struct pt_program *p = c->p;
	enum pt_op_kind kind;
	uint32_t flags;
	uint64_t dst, src, len;

	if (tv_ju_need_object(jc, path, o) ||
	    tv_ju_check_keys(jc, path, o, seq_keys) ||
	    seq_op_kind(jc, path, o, &flags, &kind))
		return -EINVAL;
	if (kind == PT_OP_RECYCLE)
		return seq_recycle(c);
	if (kind != PT_OP_PUT) {
		struct pt_op op = { .kind = kind, .peer = p->to };

		if (json_object_get(o, "bytes") || json_object_get(o, "dst_off"))
			return tv_ju_fail(jc, path, "a %s moves no data",
					  pt_op_name(kind));
		if (emit(c->sc, c->prog, p->from, &op))
			return -ENOMEM;
		return kind == PT_OP_SIGNAL ? op_wait(c, p->to, p->from) : 0;
	}
	if (tv_ju_get_uint(jc, path, o, "dst_off", 0, p->bytes, &dst) ||
	    tv_ju_get_uint(jc, path, o, "src_off", 0, p->bytes, &src) ||
	    tv_ju_get_uint(jc, path, o, "bytes", 0, p->bytes, &len))
		return -EINVAL;
	if (dst + len > p->bytes || src + len > p->bytes)
		return tv_ju_fail(jc, path, "[%llu, +%llu) or [%llu, +%llu) "
				  "is outside the program's %llu bytes",
				  (unsigned long long)dst,
				  (unsigned long long)len,
				  (unsigned long long)src,
				  (unsigned long long)len,
				  (unsigned long long)p->bytes);
	if (op_put(c, p->from, p->to, dst, src, len, flags))
		return -ENOMEM;
	return (flags & PT_PUT_SIGNAL) ? op_wait(c, p->to, p->from) : 0;
}

static int compile_sequence(struct tv_ju *jc, const struct ctx *c,
			    const char *path, json_t *ops)
{
	char sub[TV_JU_PATH_MAX];
	json_t *o;
	size_t i;

	tv_ju_path_key(sub, path, "ops");
	if (!ops)
		return tv_ju_fail(jc, path, "a sequence needs \"ops\"");
	if (tv_ju_need_array(jc, sub, ops))
		return -EINVAL;
	if (json_array_size(ops) > PT_MAX_SEQ_OPS)
		return tv_ju_fail(jc, sub, "at most %u operations",
				  PT_MAX_SEQ_OPS);
	/* The source is filled once; puts take from it. */
	if (op_fill(c, c->p->from, 0, c->p->bytes, c->p->from, 0))
		return -ENOMEM;
	json_array_foreach(ops, i, o) {
		char el[TV_JU_PATH_MAX];
		int rc;

		tv_ju_path_idx(el, sub, i);
		rc = seq_op(jc, el, o, c);
		if (rc)
			return rc == -ENOMEM ? tv_ju_fail(jc, el, "too many "
							  "operations") : rc;
	}
	return 0;
}

/* ---- layout ------------------------------------------------------------------ */

static uint64_t region_bytes(const struct pt_program *p)
{
	uint32_t n = p->nnodes;

	switch (p->kind) {
	case PT_PING_PONG:
		return 2 * p->bytes;
	case PT_PACKET_PING_PONG:
		return 2 * up8(p->bytes) + 2 * packet_slot(p->bytes);
	case PT_ALLGATHER:
		return n * p->bytes;
	case PT_ALLREDUCE:
		return p->count * 4 + (n - 1) * (p->count / n) * 4;
	case PT_ALL_TO_ALL:
		return 2 * n * p->bytes;
	case PT_SEQUENCE:
		return p->bytes;
	case PT_NKINDS:
		break;
	}
	return 0;
}

static int layout(struct tv_ju *jc, struct pt_scenario *sc,
		  struct pt_program *p, const char *path)
{
	uint64_t need = region_bytes(p);

	for (uint32_t i = 0; i < p->nnodes; i++) {
		uint32_t n = p->nodes[i];

		if (sc->node_bytes[n] + need > PT_MAX_NODE_BYTES)
			return tv_ju_fail(jc, path, "node %u would need more "
					  "than %u MiB of buffers", n,
					  PT_MAX_NODE_BYTES >> 20);
		p->region_off[n] = sc->node_bytes[n];
		p->region_bytes[n] = need;
		sc->node_bytes[n] += (need + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
	}
	return 0;
}

static int pairs_of(struct pt_scenario *sc, size_t prog)
{
	const struct pt_program *p = &sc->progs[prog];

	for (size_t t = 0; t < sc->ntasks; t++) {
		const struct pt_task *task = &sc->tasks[t];

		if (task->prog != prog)
			continue;
		for (size_t i = 0; i < task->nops; i++) {
			const struct pt_op *op = &task->ops[i];

			if (op->kind != PT_OP_PUT && op->kind != PT_OP_WAIT &&
			    op->kind != PT_OP_SIGNAL &&
			    op->kind != PT_OP_FLUSH &&
			    op->kind != PT_OP_RECYCLE)
				continue;
			if (add_pair(sc, prog, task->node, op->peer))
				return -ENOMEM;
		}
	}
	(void)p;
	return 0;
}

int pt_compile(struct tv_ju *jc, struct pt_scenario *sc, size_t prog,
	       const char *path, json_t *ops)
{
	struct pt_program *p = &sc->progs[prog];
	struct ctx c = { sc, prog, p };
	int rc;

	rc = layout(jc, sc, p, path);
	for (uint32_t i = 0; !rc && i < p->nnodes; i++)
		rc = add_task(sc, prog, p->nodes[i]);
	if (rc)
		return rc;
	switch (p->kind) {
	case PT_PING_PONG: rc = compile_ping_pong(&c); break;
	case PT_PACKET_PING_PONG: rc = compile_packets(&c); break;
	case PT_ALLGATHER: rc = compile_allgather(&c); break;
	case PT_ALLREDUCE: rc = compile_allreduce(&c); break;
	case PT_ALL_TO_ALL: rc = compile_all_to_all(&c); break;
	case PT_SEQUENCE: rc = compile_sequence(jc, &c, path, ops); break;
	case PT_NKINDS: rc = -EINVAL; break;
	}
	/* The compilers say -ENOMEM for both; only emit() says -E2BIG. */
	if ((rc == -ENOMEM || rc == -E2BIG) && sc->nops >= PT_MAX_OPS)
		return tv_ju_fail(jc, path, "more than %u operations in all",
				  PT_MAX_OPS);
	return rc ? rc : pairs_of(sc, prog);
}

/* ---- what the regions hold at the end ---------------------------------------- */

/* -ENOMEM when the source cannot be made (the region is then not it). */
static int final_sequence(const struct pt_scenario *sc, uint64_t seed,
			  size_t prog, uint32_t node, uint8_t *out)
{
	const struct pt_program *p = &sc->progs[prog];
	const struct pt_task *t;
	uint8_t *src = out;

	if (node == p->from) {
		pt_pattern(seed, (uint32_t)prog, node, 0, 0, out, p->bytes);
		return 0;
	}
	/* Every put applied in order from the sender's source. */
	memset(out, 0, p->bytes);
	t = task_of((struct pt_scenario *)sc, prog, p->from);
	assert(t); /* the compiler gave the sender its task */
	src = malloc(p->bytes ? p->bytes : 1);
	if (!src)
		return -ENOMEM;
	pt_pattern(seed, (uint32_t)prog, p->from, 0, 0, src, p->bytes);
	for (size_t i = 0; i < t->nops; i++) {
		const struct pt_op *op = &t->ops[i];

		if (op->kind == PT_OP_PUT)
			memcpy(out + (op->a - p->region_off[node]),
			       src + (op->b - p->region_off[p->from]), op->len);
	}
	free(src);
	return 0;
}

int pt_final_region(const struct pt_scenario *sc, uint64_t seed, size_t prog,
		    uint32_t node, uint8_t *out, uint64_t *off_p,
		    uint64_t *len_p)
{
	const struct pt_program *p = &sc->progs[prog];
	uint32_t n = p->nnodes, pg = (uint32_t)prog, j = 0;
	uint64_t B = p->bytes, m;

	while (j < n && p->nodes[j] != node)
		j++;
	*off_p = 0;
	*len_p = p->region_bytes[node];
	switch (p->kind) {
	case PT_PING_PONG: {
		uint32_t peer = p->nodes[!j], last = p->iters - 1;

		/* The peer's last message in the destination half. */
		memset(out, 0, 2 * B);
		if (!p->iters)
			return 0;
		pt_pattern(seed, pg, node, last, 0, out, B);
		pt_pattern(seed, pg, peer, last, 0, out + B, B);
		return 0;
	}
	case PT_ALLGATHER:
		for (uint32_t k = 0; k < n; k++)
			pt_pattern(seed, pg, p->nodes[k], 0, k * B, out + k * B,
				   B);
		return 0;
	case PT_ALLREDUCE: {
		uint8_t *tmp = malloc(p->count * 4);

		if (!tmp)
			return -ENOMEM;
		memset(out, 0, p->count * 4);
		for (uint32_t k = 0; k < n; k++) {
			pt_pattern_f32(seed, pg, p->nodes[k], 0, tmp,
				       p->count * 4);
			for (uint64_t i = 0; i < p->count; i++) {
				float a, b;

				memcpy(&a, out + 4 * i, 4);
				memcpy(&b, tmp + 4 * i, 4);
				a += b;
				memcpy(out + 4 * i, &a, 4);
			}
		}
		free(tmp);
		*len_p = p->count * 4; /* the scratch holds partial sums */
		return 0;
	}
	case PT_ALL_TO_ALL:
		for (uint32_t k = 0; k < n; k++) {
			pt_pattern(seed, pg, node, k, k * B, out + k * B, B);
			pt_pattern(seed, pg, p->nodes[k], j, j * B,
				   out + n * B + k * B, B);
		}
		return 0;
	case PT_SEQUENCE:
		return final_sequence(sc, seed, prog, node, out);
	case PT_PACKET_PING_PONG:
		m = p->iters ? p->iters - 1 : 0;
		/* Only the unpacked data is compared (packets hold flags). */
		*off_p = up8(B) + 2 * packet_slot(B);
		*len_p = p->iters ? B : 0;
		pt_pattern(seed, pg, p->nodes[!j], (uint32_t)m, 0, out + *off_p,
			   B);
		return 0;
	case PT_NKINDS:
		break;
	}
	return -EINVAL;
}

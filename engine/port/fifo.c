/*
 * The proxy FIFO: many producers, one consumer, a power-of-two ring of
 * 16-byte triggers (MSCCL++ era C, PR #864).
 *
 * A slot is committed by bit 63 of snd: lap 0 writes 1, lap 1 writes 0,
 * and so on, so a zeroed ring reads as empty, the consumer never writes
 * into the ring, and every trigger, the all-zero one included, is legal.
 * The era A/B design (TV_PORT_BREAK_SENTINEL) called a slot empty when
 * fst == 0 and had the consumer clear it: a zero-byte put at offset 0 was
 * never seen.
 *
 * Departure from MSCCL++: a producer takes its position with a
 * compare-and-swap only when the slot is free, instead of fetch-and-add
 * then spin, so a push that finds the FIFO full can give up (-EAGAIN)
 * without leaving a hole in the ring.
 *
 * Memory orders, and why:
 *  - head: relaxed.  It only hands out distinct positions; the slot's
 *    contents are published by snd's release store.
 *  - prod_tail: the consumer's release store after it read a slot, the
 *    producers' acquire load before they write it again: the read
 *    happens-before the overwrite (a slot is never overwritten before it
 *    was consumed).
 *  - snd: the producer's release store after fst, the consumer's acquire
 *    load before fst: a committed slot's fst is the one written with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <fiu-local.h>

#include "port_int.h"

#define BIT63 (1ull << 63)

/* ---- triggers: MSCCL++'s ProxyTrigger, with shifts and masks ------------- */

#define FST_SIZE_MASK 0xffffffffull
#define FST_SRC_OFF_SHIFT 32
#define SND_DST_OFF_MASK 0xffffffffull
#define SND_SRC_ID_SHIFT 32
#define SND_DST_ID_SHIFT 41
#define SND_TYPE_SHIFT 50
#define SND_SEM_SHIFT 53
#define ID_MASK 0x1ffull   /* 9 bits */
#define TYPE_MASK 0x7ull   /* 3 bits */
#define SEM_MASK 0x3ffull  /* 10 bits */

int tv_port_trigger_pack(uint32_t type, uint32_t dst_id, uint64_t dst_off,
			 uint32_t src_id, uint64_t src_off, uint64_t size_bytes,
			 uint32_t sem_id, struct tv_port_trigger *t_p)
{
	if (type > TYPE_MASK || dst_id > ID_MASK || src_id > ID_MASK ||
	    sem_id > SEM_MASK || dst_off > TV_PORT_TRIGGER_MAX_VALUE ||
	    src_off > TV_PORT_TRIGGER_MAX_VALUE ||
	    size_bytes > TV_PORT_TRIGGER_MAX_VALUE)
		return -EINVAL;
	t_p->fst = src_off << FST_SRC_OFF_SHIFT | size_bytes;
	t_p->snd = (uint64_t)sem_id << SND_SEM_SHIFT |
		   (uint64_t)type << SND_TYPE_SHIFT |
		   (uint64_t)dst_id << SND_DST_ID_SHIFT |
		   (uint64_t)src_id << SND_SRC_ID_SHIFT | dst_off;
	return 0;
}

void tv_port_trigger_unpack(const struct tv_port_trigger *t,
			    struct tv_port_trigger_fields *f_p)
{
	f_p->size_bytes = t->fst & FST_SIZE_MASK;
	f_p->src_off = t->fst >> FST_SRC_OFF_SHIFT;
	f_p->dst_off = t->snd & SND_DST_OFF_MASK;
	f_p->src_id = (uint32_t)((t->snd >> SND_SRC_ID_SHIFT) & ID_MASK);
	f_p->dst_id = (uint32_t)((t->snd >> SND_DST_ID_SHIFT) & ID_MASK);
	f_p->type = (uint32_t)((t->snd >> SND_TYPE_SHIFT) & TYPE_MASK);
	f_p->sem_id = (uint32_t)((t->snd >> SND_SEM_SHIFT) & SEM_MASK);
}

/* ---- the ring ------------------------------------------------------------ */

int tv_port_fifo_create(uint32_t size, uint32_t test_breakage,
			const struct tv_port_fifo_vis *vis, void *vis_ctx,
			struct tv_port_fifo **fifo_p)
{
	struct tv_port_fifo *f;
	size_t bytes;

	/* MSCCL++: "FIFO size must be a positive power of two". */
	if (!size || (size & (size - 1)) || size > (1u << 20) || !fifo_p)
		return -EINVAL;
	f = aligned_alloc(64, sizeof(*f));
	if (!f)
		return -ENOMEM;
	memset(f, 0, sizeof(*f));
	/* aligned_alloc wants a multiple of the alignment (C11). */
	bytes = ((size_t)size * sizeof(*f->ring) + 63) & ~(size_t)63;
	f->ring = aligned_alloc(64, bytes);
	if (!f->ring) {
		free(f);
		return -ENOMEM;
	}
	memset(f->ring, 0, bytes);
	f->size = size;
	while ((1u << f->shift) < size)
		f->shift++;
	f->breakage = test_breakage;
	f->vis = vis;
	f->vis_ctx = vis_ctx;
	*fifo_p = f;
	return 0;
}

void tv_port_fifo_destroy(struct tv_port_fifo *fifo)
{
	if (!fifo)
		return;
	free(fifo->ring);
	free(fifo);
}

uint32_t tv_port_fifo_size(const struct tv_port_fifo *fifo)
{
	return fifo->size;
}

static bool sentinel(const struct tv_port_fifo *f)
{
	return f->breakage & TV_PORT_BREAK_SENTINEL;
}

/* The commit bit of lap (pos / size): 1, 0, 1, ... */
static uint64_t parity(const struct tv_port_fifo *f, uint64_t pos)
{
	return ((pos >> f->shift) & 1) ^ 1;
}

static void emit(const struct tv_port_fifo *f, enum tv_port_event_kind kind,
		 uint64_t pos, const struct tv_port_trigger *t)
{
	struct tv_port_event ev;

	if (!f->observe)
		return;
	port_event_init(&ev, kind, f->node);
	ev.pos = pos;
	if (t)
		ev.trig = *t;
	f->observe(f->observe_ctx, &ev);
}

void tv_port_fifo_apply_slot(struct tv_port_fifo *fifo, uint64_t pos,
			     const struct tv_port_trigger *t)
{
	struct port_slot *s = &fifo->ring[pos & (fifo->size - 1)];

	emit(fifo, TV_PORT_EV_SLOT_STORE, pos, t);
	if (sentinel(fifo)) {
		/* Eras A/B: snd never 0 (bit 63 flipped), fst published. */
		atomic_store_explicit(&s->snd, t->snd ^ BIT63,
				      memory_order_relaxed);
		atomic_store_explicit(&s->fst, t->fst, memory_order_release);
		return;
	}
	atomic_store_explicit(&s->fst, t->fst, memory_order_relaxed);
	atomic_store_explicit(&s->snd, (t->snd & ~BIT63) |
				       parity(fifo, pos) << 63,
			      memory_order_release);
}

void tv_port_fifo_apply_tail(struct tv_port_fifo *fifo, uint64_t tail)
{
	atomic_store_explicit(&fifo->prod_tail, tail, memory_order_release);
}

int tv_port_fifo_try_push(struct tv_port_fifo *fifo,
			  const struct tv_port_trigger *t, uint64_t *pos_p)
{
	uint64_t h = atomic_load_explicit(&fifo->head, memory_order_relaxed);
	bool full = false;

	/* Bit 63 belongs to the FIFO. */
	if (t->snd & BIT63)
		return -EINVAL;
	fiu_do_on("port/fifo/full", full = true);
	if (full)
		return -EAGAIN;
	do {
		uint64_t tail = atomic_load_explicit(&fifo->prod_tail,
						     memory_order_acquire);

		if (h - tail >= fifo->size)
			return -EAGAIN;
	} while (!atomic_compare_exchange_weak_explicit(
		&fifo->head, &h, h + 1, memory_order_relaxed,
		memory_order_relaxed));
	emit(fifo, TV_PORT_EV_PUSH, h, t);
	if (fifo->vis && fifo->vis->slot_store)
		fifo->vis->slot_store(fifo->vis_ctx, fifo, h, t);
	else
		tv_port_fifo_apply_slot(fifo, h, t);
	if (pos_p)
		*pos_p = h;
	return 0;
}

bool tv_port_fifo_popped(const struct tv_port_fifo *fifo, uint64_t pos)
{
	return atomic_load_explicit(&fifo->prod_tail, memory_order_acquire) >
	       pos;
}

bool tv_port_fifo_poll(struct tv_port_fifo *fifo, struct tv_port_trigger *t_p,
		       uint64_t *pos_p)
{
	struct port_slot *s = &fifo->ring[fifo->tail & (fifo->size - 1)];
	uint64_t fst, snd;

	if (sentinel(fifo)) {
		fst = atomic_load_explicit(&s->fst, memory_order_acquire);
		snd = atomic_load_explicit(&s->snd, memory_order_relaxed);
		if (!fst || !snd)
			return false; /* the hazard of #864 */
		t_p->fst = fst;
		t_p->snd = snd ^ BIT63;
	} else {
		snd = atomic_load_explicit(&s->snd, memory_order_acquire);
		if ((snd >> 63) != parity(fifo, fifo->tail))
			return false;
		t_p->fst = atomic_load_explicit(&s->fst, memory_order_relaxed);
		t_p->snd = snd & ~BIT63;
	}
	*pos_p = fifo->tail;
	return true;
}

void tv_port_fifo_pop(struct tv_port_fifo *fifo)
{
	struct port_slot *s = &fifo->ring[fifo->tail & (fifo->size - 1)];

	if (sentinel(fifo))
		atomic_store_explicit(&s->fst, 0, memory_order_relaxed);
	fifo->tail++;
	if (fifo->vis && fifo->vis->tail_store)
		fifo->vis->tail_store(fifo->vis_ctx, fifo, fifo->tail);
	else
		tv_port_fifo_apply_tail(fifo, fifo->tail);
}

uint64_t tv_port_fifo_head(const struct tv_port_fifo *fifo)
{
	return atomic_load_explicit(&fifo->head, memory_order_relaxed);
}

uint64_t tv_port_fifo_tail(const struct tv_port_fifo *fifo)
{
	return fifo->tail;
}

/*
 * The port engine's shared memory under real threads (and, in CI, under
 * ThreadSanitizer: ci/tsan.sh):
 *  - the FIFO with four producer threads and one consumer thread: every
 *    trigger taken exactly once, each producer's in its order, none
 *    overwritten before it was taken;
 *  - a ping-pong between two producer threads (one per node) through
 *    port channels, while a third thread is the network and both proxies
 *    (it alone touches the simulator): semaphores, flush positions and
 *    the FIFO are the only things the threads share.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/check_main.h"
#include "port_fix.h"

#define PRODUCERS 4
#define PUSHES 20000u

struct mpsc {
	struct tv_port_fifo *fifo;
	unsigned id;
	atomic_uint fulls;
};

static void *producer(void *arg)
{
	struct mpsc *m = arg;

	for (uint64_t seq = 0; seq < PUSHES; seq++) {
		/* Who and which, in the trigger's two words. */
		struct tv_port_trigger t = { seq, m->id };

		while (tv_port_fifo_try_push(m->fifo, &t, NULL) == -EAGAIN) {
			atomic_fetch_add_explicit(&m->fulls, 1,
						  memory_order_relaxed);
			sched_yield();
		}
	}
	return NULL;
}

START_TEST(test_fifo_threads)
{
	struct mpsc m[PRODUCERS];
	pthread_t th[PRODUCERS];
	struct tv_port_fifo *fifo;
	uint64_t next[PRODUCERS] = { 0 }, taken = 0, pos;
	struct tv_port_trigger t;

	ck_assert_int_eq(tv_port_fifo_create(64, 0, NULL, NULL, &fifo), 0);
	for (unsigned i = 0; i < PRODUCERS; i++) {
		m[i].fifo = fifo;
		m[i].id = i;
		atomic_init(&m[i].fulls, 0);
		ck_assert_int_eq(pthread_create(&th[i], NULL, producer, &m[i]),
				 0);
	}
	while (taken < PRODUCERS * (uint64_t)PUSHES) {
		if (!tv_port_fifo_poll(fifo, &t, &pos)) {
			sched_yield();
			continue;
		}
		ck_assert_uint_eq(pos, taken);
		ck_assert_uint_lt(t.snd, PRODUCERS);
		ck_assert_uint_eq(t.fst, next[t.snd]);
		next[t.snd]++;
		tv_port_fifo_pop(fifo);
		taken++;
	}
	for (unsigned i = 0; i < PRODUCERS; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_uint_eq(next[i], PUSHES);
	}
	ck_assert(!tv_port_fifo_poll(fifo, &t, &pos));
	tv_port_fifo_destroy(fifo);
}
END_TEST

/* ---- ping-pong across threads ------------------------------------------------ */

#define ROUNDS 300u
#define BYTES 2048u

struct pp {
	struct pworld *w;
	atomic_bool stop;
	atomic_int failures;
};

/* The network: the simulator and both proxies, nothing else. */
static void *network(void *arg)
{
	struct pp *pp = arg;

	while (!atomic_load_explicit(&pp->stop, memory_order_acquire))
		if (!pfix_step(pp->w))
			sched_yield();
	return NULL;
}

static uint8_t pattern(unsigned node, unsigned round, unsigned i)
{
	return (uint8_t)(node * 101 + round * 7 + i * 13 + 1);
}

struct side_arg {
	struct pp *pp;
	unsigned node;
};

/* Our second half (the source) to the peer's first half. */
static int push_retry(struct tv_port_chan *ch, uint64_t *pos)
{
	int ret;

	while ((ret = tv_port_chan_put_with_signal_and_flush(ch, 0, BYTES,
							     BYTES, pos)) ==
	       -EAGAIN)
		sched_yield();
	return ret;
}

static bool check_round(struct pnode *n, unsigned peer, unsigned round)
{
	for (unsigned i = 0; i < BYTES; i++)
		if (n->data[i] != pattern(peer, round, i))
			return false;
	return true;
}

/*
 * Node 0 sends round r, node 1 checks it and answers with its own round
 * r, node 0 checks that.  Each reads what the other wrote only after its
 * semaphore said so, and writes its source again only after the answer
 * (which needed its last write to land) came back.
 */
static void *side(void *arg)
{
	struct side_arg *sa = arg;
	struct pnode *n = &sa->pp->w->n[sa->node];
	unsigned peer = !sa->node;
	uint64_t pos = 0;

	for (unsigned r = 0; r < ROUNDS; r++) {
		if (sa->node == 1 || r > 0) {
			if (tv_port_chan_wait(n->chan, UINT64_MAX) ||
			    !check_round(n, peer, sa->node ? r : r - 1))
				goto fail;
		}
		for (unsigned i = 0; i < BYTES; i++)
			n->data[BYTES + i] = pattern(sa->node, r, i);
		if (push_retry(n->chan, &pos))
			goto fail;
		if (tv_port_chan_flush_wait(n->chan, pos, UINT64_MAX))
			goto fail;
	}
	if (sa->node == 0 && (tv_port_chan_wait(n->chan, UINT64_MAX) ||
			      !check_round(n, peer, ROUNDS - 1)))
		goto fail;
	return NULL;
fail:
	atomic_fetch_add(&sa->pp->failures, 1);
	return NULL;
}

START_TEST(test_pingpong_threads)
{
	struct pworld w;
	struct pp pp = { .w = &w };
	struct side_arg sa[2] = { { &pp, 0 }, { &pp, 1 } };
	pthread_t net, th[2];

	pfix_init(&w, TV_PORT_SIGNAL_ATOMIC, true);
	atomic_init(&pp.stop, false);
	atomic_init(&pp.failures, 0);
	ck_assert_int_eq(pthread_create(&net, NULL, network, &pp), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, side, &sa[i]), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	atomic_store_explicit(&pp.stop, true, memory_order_release);
	ck_assert_int_eq(pthread_join(net, NULL), 0);
	ck_assert_int_eq(atomic_load(&pp.failures), 0);
	pfix_run_all(&w);
	pfix_fini(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("port_threads");
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_fifo_threads);
	tcase_add_test(tc, test_pingpong_threads);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}

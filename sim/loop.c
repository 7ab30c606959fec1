/*
 * The event loop: executing events, progress callbacks, wait() and wake_at().
 */
#include <errno.h>
#include <string.h>

#include "sim_priv.h"

static bool sim_exec_timer(struct tv_sim *sim, const struct sim_ev *ev)
{
	struct sim_node *node = &sim->nodes[ev->node];
	struct tv_sim_event out;

	if (ev->gen != node->timer_gen)
		return false; /* replaced by an earlier deadline */
	node->timer_at_ns = UINT64_MAX;
	sim_event_init(&out, TV_SIM_EV_TIMER, node->id);
	sim_emit(sim, &out, 0);
	sim_mark_runnable(sim, node);
	return true;
}

static bool sim_exec_user(struct tv_sim *sim, const struct sim_ev *ev)
{
	struct tv_sim_event out;

	sim_event_init(&out, TV_SIM_EV_USER, ev->node);
	sim_emit(sim, &out, 0);
	sim->in_callback = true;
	ev->fn(ev->arg);
	sim->in_callback = false;
	return true;
}

static bool sim_exec(struct tv_sim *sim, const struct sim_ev *ev)
{
	assert(ev->node < sim->cfg.num_nodes);
	switch (ev->kind) {
	case SIM_EV_DELIVER:
		return sim_xfer_deliver(sim, ev);
	case SIM_EV_ACK:
		return sim_xfer_ack(sim, ev);
	case SIM_EV_RETX:
		return sim_xfer_retx(sim, ev);
	case SIM_EV_TIMER:
		return sim_exec_timer(sim, ev);
	case SIM_EV_USER:
		return sim_exec_user(sim, ev);
	case SIM_EV_PLACE:
		return sim_xfer_place(sim, ev);
	case SIM_EV_TX:
		return sim_xfer_tx(sim, ev);
	}
	assert(0 && "unknown event kind");
	return false;
}

/*
 * Pop and run exactly one queued event.  1: it ran, 2: it was stale (no
 * effect, time not advanced), 0: the queue is empty.
 */
static int sim_step_one(struct tv_sim *sim)
{
	struct sim_ev ev;
	uint64_t t;
	uint64_t saved;

	if (!sim_evq_pop(&sim->evq, &t, &ev))
		return 0;
	assert(t >= sim->now_ns);
	/* Handlers read now_ns; a stale event puts it back. */
	saved = sim->now_ns;
	sim->now_ns = t;
	if (!sim_exec(sim, &ev)) {
		sim->now_ns = saved;
		return 2;
	}
	sim->stats.events++;
	return 1;
}

static void sort_u32(uint32_t *a, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		uint32_t v = a[i];
		uint32_t j = i;

		for (; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

/*
 * Call the progress callback of every runnable node, in node order.  The
 * queue is taken as a snapshot: nodes that callbacks make runnable again
 * wait for the next pass, so a callback cannot starve the clock.
 */
static void sim_progress_pass(struct tv_sim *sim)
{
	uint32_t *ids = sim->runq_snap;
	uint32_t n = sim->runq_len;

	if (!n)
		return;
	memcpy(ids, sim->runq, n * sizeof(*ids));
	sim->runq_len = 0;
	sort_u32(ids, n);
	for (uint32_t i = 0; i < n; i++) {
		struct sim_node *node = &sim->nodes[ids[i]];

		node->runnable_cb = false;
		if (!node->progress)
			continue;
		/*
		 * runnable_wait stays set: a wait() on this node returns once
		 * the callback ran, so its caller re-checks what it waits for
		 * (a spurious wake-up, never a missed one).
		 */
		sim->in_callback = true;
		node->progress(node->progress_arg, node->id);
		sim->in_callback = false;
	}
}

int tv_sim_step(struct tv_sim *sim)
{
	int ret;

	if (sim->in_callback)
		return -EBUSY;
	do {
		ret = sim_step_one(sim);
	} while (ret == 2);
	if (ret == 0 && !sim->runq_len)
		return 0;
	sim_progress_pass(sim);
	return 1;
}

/*
 * Passes in a row without an event before the clock may move on although
 * nodes are still runnable: a node that keeps making itself runnable
 * cannot stop time for good (it then runs after each event, as before).
 */
#define SIM_MAX_PASSES_AT_ONCE 1000

int tv_sim_run(struct tv_sim *sim, uint64_t until_ns, uint64_t max_events)
{
	uint64_t ran = 0;
	uint32_t passes = 0;
	uint64_t t;
	int ret;

	if (sim->in_callback)
		return -EBUSY;
	for (;;) {
		/*
		 * A node made runnable by a callback (a completion a post
		 * queued at once, e.g. a flush on a QP in ERR) runs before
		 * the clock moves on: the next event may be far away.
		 */
		if (sim->runq_len && passes < SIM_MAX_PASSES_AT_ONCE) {
			passes++;
			sim_progress_pass(sim);
			continue;
		}
		passes = 0;
		if (!sim_evq_peek(&sim->evq, &t)) {
			if (!sim->runq_len)
				return 0;
			sim_progress_pass(sim);
			continue;
		}
		if (until_ns && t > until_ns) {
			if (until_ns > sim->now_ns)
				sim->now_ns = until_ns;
			return -ETIMEDOUT;
		}
		if (max_events && ran >= max_events)
			return -EAGAIN;
		ret = sim_step_one(sim);
		if (ret == 1) {
			ran++;
			sim_progress_pass(sim);
		}
	}
}

int sim_wait(struct sim_node *node, uint64_t deadline_ns)
{
	struct tv_sim *sim = node->sim;
	uint64_t t;

	if (sim->in_callback)
		return -EBUSY;
	for (;;) {
		if (node->runnable_wait) {
			node->runnable_wait = false;
			return 0;
		}
		if (!sim_evq_peek(&sim->evq, &t)) {
			if (!sim->runq_len)
				return -EDEADLK;
			sim_progress_pass(sim);
			continue;
		}
		if (t > deadline_ns) {
			if (deadline_ns > sim->now_ns)
				sim->now_ns = deadline_ns;
			return -ETIMEDOUT;
		}
		if (sim_step_one(sim) == 1)
			sim_progress_pass(sim);
	}
}

/*
 * One deadline per node, like a timerfd: an earlier deadline replaces a
 * later one, a later or equal one is already covered (the node progresses
 * at the earlier time and can re-arm).
 */
int sim_wake_at(struct sim_node *node, uint64_t deadline_ns)
{
	struct tv_sim *sim = node->sim;
	struct sim_ev ev = { .kind = SIM_EV_TIMER, .node = node->id };
	int ret;

	if (deadline_ns < sim->now_ns)
		deadline_ns = sim->now_ns;
	if (node->timer_at_ns <= deadline_ns)
		return 0;
	ev.gen = node->timer_gen + 1;
	ret = sim_schedule(sim, deadline_ns, &ev);
	if (ret)
		return ret;
	node->timer_gen++;
	node->timer_at_ns = deadline_ns;
	return 0;
}

/*
 * A workload with no engine (toy_wl.h): parse, ticks, setup, free.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "common/toy_wl.h"

const char *const toy_keys[] = { "ticks", "die", "kill", "refuse", "fail",
				 "err", NULL };

int toy_parse(struct tv_ju *jc, json_t *root, struct tv_tb_scenario *sc,
	      void **wl_p)
{
	struct toy_sc *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (tv_ju_need_uint(jc, "$", root, "ticks", 1000, &t->ticks) ||
	    tv_ju_get_uint(jc, "$", root, "die", 0, 255, &t->die) ||
	    tv_ju_get_uint(jc, "$", root, "err", 0, 255, &t->err) ||
	    tv_ju_get_bool(jc, "$", root, "kill", false, &t->kill) ||
	    tv_ju_get_bool(jc, "$", root, "refuse", false, &t->refuse) ||
	    tv_ju_get_bool(jc, "$", root, "fail", false, &t->fail)) {
		free(t);
		return -EINVAL;
	}
	t->nodes = tv_tb_scenario_nodes(sc);
	tv_tb_scenario_set_ops(sc, t->ticks * t->nodes);
	tv_tb_scenario_note_time(sc, t->ticks * 1000);
	*wl_p = t;
	return 0;
}

static void toy_tick(void *arg)
{
	struct toy_tick *k = arg;
	const struct toy_sc *s = tv_tb_scenario_wl(tv_tb_run_scenario(k->run));
	uint32_t prev = tv_tb_run_enter(k->run, k->node);
	json_t *line;

	k->t->actor_seen = tv_tb_run_actor(k->run);
	if (tv_tb_run_gate(k->run, k->node, "tick", k->i, "t")) {
		k->t->skipped++;
	} else if (s->refuse && k->i == 0 && k->node == 0) {
		tv_tb_run_refused(k->run, "tick 0", -ENOBUFS);
		k->t->skipped++;
	} else {
		k->t->done++;
		tv_tb_run_result_mut(k->run)->ops_ok++;
		tv_tb_run_result_mut(k->run)->last_op_ns =
			tv_tb_run_now_ns(k->run);
		line = tv_tb_trace_line_new(k->run, "TICK");
		if (line) {
			json_object_set_new(line, "node", json_integer(k->node));
			json_object_set_new(line, "n", json_integer((json_int_t)k->i));
			tv_tb_trace_emit(k->run, line);
		}
	}
	tv_tb_run_leave(k->run, prev);
}

int toy_setup(struct tv_tb_run *run, void **st_p)
{
	const struct toy_sc *s = tv_tb_scenario_wl(tv_tb_run_scenario(run));
	struct toy_run *t;
	int rc = 0;

	if (s->die)
		_exit((int)s->die);
	if (s->kill)
		raise(SIGKILL);
	if (s->err)
		return -(int)s->err;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*st_p = t;
	t->n = s->ticks * s->nodes;
	t->ticks = calloc(t->n + 1, sizeof(*t->ticks));
	if (!t->ticks)
		return -ENOMEM;
	for (uint64_t i = 0; i < t->n && !rc; i++) {
		t->ticks[i] = (struct toy_tick){ run, t, (uint32_t)(i % s->nodes),
						 i / s->nodes };
		rc = tv_tb_run_schedule(run, (i / s->nodes + 1) * 1000,
					(uint32_t)(i % s->nodes), toy_tick,
					&t->ticks[i]);
	}
	return rc;
}

void toy_progress(struct tv_tb_run *run, void *st, uint32_t node)
{
	(void)run;
	(void)st;
	(void)node;
}

void toy_free(void *st)
{
	struct toy_run *t = st;

	free(t->ticks);
	free(t);
}

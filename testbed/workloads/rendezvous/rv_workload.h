/*
 * This file is private to the rendezvous workload: its ops, for the table
 * in workload.c.
 */
#ifndef TV_RV_WORKLOAD_H
#define TV_RV_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <tensorverbs/workload.h>

extern const struct tv_tb_workload_ops tv_rendezvous_workload;

/* swarm_gen.c */
int rv_generate(uint64_t seed, uint32_t without, json_t **sc_p);
/* shrink.c */
#define RV_NEDITS 15
extern const struct tv_tb_shrink_edit *const rv_edits[RV_NEDITS];
void rv_describe(json_t *sc, uint64_t ops, char *buf, size_t cap);
/* draw.c */
extern const struct tv_tb_draw rv_draw;
void rv_show_parse(json_t *line, struct tv_tb_show_event *e);
/* demo.c: the built-in demo; a scenario for `bench sim` */
extern const char rv_demo_scenario[];
int rv_bench_scenario(json_t **sc_p);

#endif /* TV_RV_WORKLOAD_H */

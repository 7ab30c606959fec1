/*
 * The port engine tests' world: two simulated nodes, each with a context,
 * a 64 KiB data buffer and a token page registered, one connection to the
 * other, a semaphore on it, a proxy and one channel (node i's channel
 * writes node i's data into the peer's).  Test code only.
 */
#ifndef TV_TESTS_PORT_FIX_H
#define TV_TESTS_PORT_FIX_H

#include <stdbool.h>
#include <stdint.h>

#include <tensorverbs/port.h>
#include <tensorverbs/sim.h>

#define FIX_DATA 65536u
#define FIX_TOKEN 4096u

struct pnode {
	struct tv_vf_device *dev;
	struct tv_port_ctx *ctx;
	uint8_t *data;
	uint8_t *token;
	struct tv_port_mem *mdata;
	struct tv_port_mem *mtoken;
	struct tv_port_conn *conn;
	struct tv_port_sem *sem;
	struct tv_port_proxy *proxy;
	struct tv_port_chan *chan;
};

struct pworld {
	struct tv_sim *sim;
	struct pnode n[2];
};

/* The engine's configuration the fixture starts from. */
void pfix_config(struct tv_port_config *cfg, enum tv_port_signal_mode mode);
/* Everything up to connected semaphores; proxies and channels too. */
void pfix_init_cfg(struct pworld *w, const struct tv_sim_config *sc,
		   const struct tv_port_config *pc, bool proxies);
void pfix_init(struct pworld *w, enum tv_port_signal_mode mode,
	       bool proxies);
void pfix_fini(struct pworld *w);
/* One simulator event, then both sides' proxies (or connections). */
bool pfix_step(struct pworld *w);
/* Steps until cond(arg) or nothing is left to do; cond's last value. */
bool pfix_run_until(struct pworld *w, bool (*cond)(void *arg), void *arg);
void pfix_run_all(struct pworld *w);

#endif

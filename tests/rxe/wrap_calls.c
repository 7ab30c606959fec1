/*
 * tensorverbs-oom's call failures: the verbs, rdma_cm and system calls a
 * real-verbs run makes to set itself up, wrapped (-Wl,--wrap, cli/
 * CMakeLists.txt) so that the allocation sweep's sites include them
 * (tests/rxe/oom_ctl.c arms a site; tests/common/wrap_alloc.c keeps the
 * set).  An armed call fails the way its manual says it does when the
 * device, the kernel or the C library is out of resources: NULL or -1
 * with errno ENOMEM, or ENOMEM returned (ibv_modify_qp, ibv_query_device),
 * and pthread_create's EAGAIN.  A device out of QPs, CQs, memory
 * registrations or kernel memory is what a hardware run meets; every
 * caller must end the run saying so, never hang or crash.
 *
 * The calls on the data path (ibv_post_send, ibv_poll_cq ...) are inline
 * functions of <infiniband/verbs.h> that jump through the provider's
 * table: the linker cannot wrap them (faults/wrap.c's points cover them).
 * The prototypes are written here without the headers: <infiniband/
 * verbs.h> defines ibv_reg_mr as a macro, and only pointers and integers
 * cross these calls.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "common/wrap_alloc.h"

#define SITE __builtin_return_address(0)
#define NOINLINE __attribute__((noinline))

/*
 * __wrap_NAME: when its site is armed, FAIL (a statement), else the real
 * call.  The __real_ functions are weak, as in wrap_alloc.c.
 */
#define WRAP(ret, name, fail, params, args)                                   \
	ret __real_##name params __attribute__((weak));                       \
	NOINLINE ret __wrap_##name params;                                    \
	ret __wrap_##name params                                              \
	{                                                                     \
		if (oom_site_fails(SITE)) {                                   \
			fail;                                                 \
		}                                                             \
		return __real_##name args;                                    \
	}
/* NULL with errno ENOMEM, -1 with errno ENOMEM, or the error number. */
#define NULL_ENOMEM errno = ENOMEM; return NULL
#define NEG_ENOMEM errno = ENOMEM; return -1
#define WRAP_PTR(ret, name, params, args) WRAP(ret, name, NULL_ENOMEM, params, args)
#define WRAP_NEG(name, params, args) WRAP(int, name, NEG_ENOMEM, params, args)
#define WRAP_ERRNO(name, err, params, args) WRAP(int, name, return err, params, args)

struct ibv_device;
struct ibv_context;
struct ibv_pd;
struct ibv_mr;
struct ibv_cq;
struct ibv_comp_channel;
struct ibv_qp;
struct ibv_qp_init_attr;
struct ibv_qp_attr;
struct ibv_device_attr;
struct rdma_event_channel;
struct rdma_cm_id;
struct rdma_conn_param;
struct rdma_addrinfo;

/* ---- libibverbs ------------------------------------------------------------- */

WRAP_PTR(struct ibv_device **, ibv_get_device_list, (int *n), (n))
WRAP_PTR(struct ibv_context *, ibv_open_device, (struct ibv_device *d), (d))
WRAP_PTR(struct ibv_pd *, ibv_alloc_pd, (struct ibv_context *c), (c))
WRAP_PTR(struct ibv_mr *, ibv_reg_mr,
	 (struct ibv_pd *pd, void *addr, size_t len, int access),
	 (pd, addr, len, access))
WRAP_PTR(struct ibv_mr *, ibv_reg_mr_iova2,
	 (struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
	  unsigned int access),
	 (pd, addr, len, iova, access))
WRAP_PTR(struct ibv_comp_channel *, ibv_create_comp_channel,
	 (struct ibv_context *c), (c))
WRAP_PTR(struct ibv_cq *, ibv_create_cq,
	 (struct ibv_context *c, int cqe, void *ctx,
	  struct ibv_comp_channel *ch, int vector),
	 (c, cqe, ctx, ch, vector))
WRAP_PTR(struct ibv_qp *, ibv_create_qp,
	 (struct ibv_pd *pd, struct ibv_qp_init_attr *a), (pd, a))
WRAP_ERRNO(ibv_modify_qp, ENOMEM,
	   (struct ibv_qp *qp, struct ibv_qp_attr *a, int mask),
	   (qp, a, mask))
WRAP_ERRNO(ibv_query_device, ENOMEM,
	   (struct ibv_context *c, struct ibv_device_attr *a), (c, a))

/* ---- librdmacm ---------------------------------------------------------------- */

WRAP_PTR(struct rdma_event_channel *, rdma_create_event_channel, (void), ())
WRAP_NEG(rdma_create_id,
	 (struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx,
	  int ps),
	 (ch, id, ctx, ps))
WRAP_NEG(rdma_bind_addr, (struct rdma_cm_id *id, struct sockaddr *a), (id, a))
WRAP_NEG(rdma_resolve_addr,
	 (struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
	  int timeout_ms),
	 (id, src, dst, timeout_ms))
WRAP_NEG(rdma_resolve_route, (struct rdma_cm_id *id, int timeout_ms),
	 (id, timeout_ms))
WRAP_NEG(rdma_create_qp,
	 (struct rdma_cm_id *id, struct ibv_pd *pd,
	  struct ibv_qp_init_attr *a),
	 (id, pd, a))
WRAP_NEG(rdma_connect, (struct rdma_cm_id *id, struct rdma_conn_param *p),
	 (id, p))
WRAP_NEG(rdma_accept, (struct rdma_cm_id *id, struct rdma_conn_param *p),
	 (id, p))
WRAP_NEG(rdma_create_ep,
	 (struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
	  struct ibv_qp_init_attr *a),
	 (id, res, pd, a))

/* ---- the C library ------------------------------------------------------------ */

WRAP_NEG(socket, (int domain, int type, int proto), (domain, type, proto))
WRAP_ERRNO(pthread_create, EAGAIN,
	   (pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
	    void *arg),
	   (t, a, fn, arg))
WRAP_PTR(FILE *, fopen, (const char *path, const char *mode), (path, mode))

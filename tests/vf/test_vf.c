/*
 * The verbs facade itself: the stub table, filling a partial table, the
 * names of statuses and states, and the connect step's sequence.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/vf.h>

#include "common/check_main.h"

START_TEST(stub_table_refuses_everything)
{
	struct tv_vf_device dev = { .ops = &tv_vf_stub_ops };
	struct tv_vf_pd pd = { .dev = &dev };
	struct tv_vf_cq cq = { .dev = &dev };
	struct tv_vf_qp qp = { .dev = &dev, .pd = &pd };
	struct tv_vf_mr mr = { .pd = &pd };
	struct tv_vf_device_attr da;
	struct tv_vf_port_attr pa;
	struct tv_vf_qp_attr qa;
	struct tv_vf_qp_init_attr init = { 0 };
	struct tv_vf_qp_endpoint ep;
	struct tv_vf_send_wr swr = { 0 }, *bad_s = NULL;
	struct tv_vf_recv_wr rwr = { 0 }, *bad_r = NULL;
	struct tv_vf_pd *pd_p = NULL;
	struct tv_vf_mr *mr_p = NULL;
	struct tv_vf_cq *cq_p = NULL;
	struct tv_vf_qp *qp_p = NULL;
	struct tv_vf_wc wc;
	uint8_t gid[16];

	ck_assert_int_eq(tv_vf_query_device(&dev, &da), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_query_port(&dev, 1, &pa), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_query_gid(&dev, 1, 0, gid), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_alloc_pd(&dev, &pd_p), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_dealloc_pd(&pd), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_reg_mr(&pd, gid, 16, 0, &mr_p), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_dereg_mr(&mr), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_create_cq(&dev, 4, &cq_p), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_destroy_cq(&cq), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_poll_cq(&cq, 1, &wc), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_create_qp(&pd, &init, &qp_p), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_modify_qp(&qp, &qa, TV_QP_STATE), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_query_qp(&qp, &qa), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_destroy_qp(&qp), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_qp_endpoint(&qp, &ep), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_post_send(&qp, &swr, &bad_s), -EOPNOTSUPP);
	ck_assert_ptr_eq(bad_s, &swr);
	ck_assert_int_eq(tv_vf_post_recv(&qp, &rwr, &bad_r), -EOPNOTSUPP);
	ck_assert_ptr_eq(bad_r, &rwr);
	ck_assert_uint_eq(tv_vf_now_ns(&dev), 0);
	ck_assert_int_eq(tv_vf_wake_at(&dev, 5), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_wait(&dev, 5), -EOPNOTSUPP);
	ck_assert_int_eq(tv_vf_wait_fds(&dev, 5, NULL, 0), -EOPNOTSUPP);
	/* Outputs are written only on success. */
	ck_assert_ptr_null(pd_p);
	ck_assert_ptr_null(mr_p);
	ck_assert_ptr_null(cq_p);
	ck_assert_ptr_null(qp_p);
}
END_TEST

/* A backend that only knows how to modify QPs and report the device. */
static int calls;
static enum tv_vf_qp_state seen[8];
static uint32_t seen_mask[8];

static int rec_modify(struct tv_vf_qp *qp, const struct tv_vf_qp_attr *attr,
		      uint32_t mask)
{
	ck_assert_int_lt(calls, 8);
	seen[calls] = attr->qp_state;
	seen_mask[calls] = mask;
	calls++;
	if (attr->qp_state == TV_QPS_RTR) {
		ck_assert_uint_eq(attr->dest_qp_num, 77);
		ck_assert_uint_eq(attr->rq_psn, 1234);
		ck_assert_int_eq(attr->path_mtu, TV_MTU_1024);
		ck_assert_uint_eq(attr->max_dest_rd_atomic, 4);
		ck_assert_uint_eq(attr->dgid[15], 0x42);
	}
	if (attr->qp_state == TV_QPS_RTS) {
		ck_assert_uint_eq(attr->sq_psn, 99);
		ck_assert_uint_eq(attr->timeout, 14);
		ck_assert_uint_eq(attr->retry_cnt, 7);
		ck_assert_uint_eq(attr->rnr_retry, 7);
	}
	qp->state = attr->qp_state;
	return 0;
}

static int rec_query_device(struct tv_vf_device *dev,
			    struct tv_vf_device_attr *attr_p)
{
	memset(attr_p, 0, sizeof(*attr_p));
	attr_p->max_qp_rd_atom = 4;
	return 0;
}

static int rec_query_port(struct tv_vf_device *dev, uint8_t port,
			  struct tv_vf_port_attr *attr_p)
{
	memset(attr_p, 0, sizeof(*attr_p));
	attr_p->state = TV_PORT_ACTIVE;
	attr_p->active_mtu = TV_MTU_1024;
	return 0;
}

START_TEST(fill_stubs_and_connect_sequence)
{
	struct tv_vf_ops ops = {
		.name = "recorder",
		.modify_qp = rec_modify,
		.query_device = rec_query_device,
		.query_port = rec_query_port,
	};
	struct tv_vf_device dev = { .ops = &ops };
	struct tv_vf_qp qp = { .dev = &dev };
	struct tv_vf_qp_endpoint local = { .qp_num = 5, .psn = 99 };
	struct tv_vf_qp_endpoint remote = { .qp_num = 77, .psn = 1234 };
	struct tv_vf_connect_cfg cfg;
	struct tv_vf_pd *pd_p;

	/* A table without wait_fds (older than it): the dispatcher says so. */
	ck_assert_int_eq(tv_vf_wait_fds(&dev, 5, NULL, 0), -EOPNOTSUPP);
	tv_vf_ops_fill_stubs(&ops);
	ck_assert_ptr_eq(ops.modify_qp, rec_modify);
	ck_assert_ptr_eq(ops.wait_fds, tv_vf_stub_ops.wait_fds);
	ck_assert_int_eq(tv_vf_alloc_pd(&dev, &pd_p), -EOPNOTSUPP);
	remote.gid[15] = 0x42;
	tv_vf_connect_cfg_default(&cfg);
	calls = 0;
	ck_assert_int_eq(tv_vf_connect_qp(&qp, &cfg, &local, &remote), 0);
	ck_assert_int_eq(calls, 3);
	ck_assert_int_eq(seen[0], TV_QPS_INIT);
	ck_assert_int_eq(seen[1], TV_QPS_RTR);
	ck_assert_int_eq(seen[2], TV_QPS_RTS);
	ck_assert(seen_mask[1] & TV_QP_DEST_QPN);
	ck_assert(seen_mask[2] & TV_QP_SQ_PSN);
	ck_assert_int_eq(qp.state, TV_QPS_RTS);
	/* A QP already in INIT (receives posted): INIT -> INIT is legal. */
	qp.state = TV_QPS_INIT;
	calls = 0;
	cfg.path_mtu = TV_MTU_1024;
	cfg.max_rd_atomic = 4;
	ck_assert_int_eq(tv_vf_connect_qp(&qp, &cfg, &local, &remote), 0);
	ck_assert_int_eq(seen[0], TV_QPS_INIT);
	/* Without query ops the connect step fails cleanly. */
	ops.query_port = tv_vf_stub_ops.query_port;
	cfg.path_mtu = 0;
	ck_assert_int_eq(tv_vf_connect_qp(&qp, &cfg, &local, &remote),
			 -EOPNOTSUPP);
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(tv_vf_wc_status_str(TV_WC_SUCCESS), "success");
	ck_assert_str_eq(tv_vf_wc_status_str(TV_WC_RETRY_EXC_ERR),
			 "transport retry counter exceeded");
	ck_assert_str_eq(tv_vf_wc_status_str(TV_WC_STATUS_COUNT), "unknown");
	ck_assert_str_eq(tv_vf_qp_state_str(TV_QPS_RTS), "RTS");
	ck_assert_str_eq(tv_vf_qp_state_str((enum tv_vf_qp_state)42),
			 "unknown");
	ck_assert_int_eq(tv_vf_mtu_bytes(TV_MTU_256), 256);
	ck_assert_int_eq(tv_vf_mtu_bytes(TV_MTU_4096), 4096);
	ck_assert_int_eq(tv_vf_mtu_bytes((enum tv_vf_mtu)6), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vf");
	TCase *tc = tcase_create("facade");

	tcase_add_test(tc, stub_table_refuses_everything);
	tcase_add_test(tc, fill_stubs_and_connect_sequence);
	tcase_add_test(tc, names);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}

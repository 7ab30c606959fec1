/*
 * The mapping tables between libibverbs and the facade: every completion
 * status and opcode, and the enums the facade promises to mirror.
 */
#include <check.h>
#include <errno.h>

#include <infiniband/verbs.h>

#include <tensorverbs/ibverbs.h>

#include "common/check_main.h"

START_TEST(every_wc_status_maps_to_same_value)
{
	for (int s = IBV_WC_SUCCESS; s <= IBV_WC_GENERAL_ERR; s++) {
		enum tv_vf_wc_status st = TV_WC_STATUS_COUNT;

		ck_assert_int_eq(tv_ibv_map_wc_status(s, &st), 0);
		ck_assert_int_eq((int)st, s);
		/* Same names as libibverbs, so logs read the same. */
		ck_assert_str_eq(tv_vf_wc_status_str(st), ibv_wc_status_str(s));
	}
	ck_assert_int_eq(TV_WC_STATUS_COUNT, IBV_WC_GENERAL_ERR + 1);
}
END_TEST

START_TEST(wc_status_outside_facade_refused)
{
	enum tv_vf_wc_status st = TV_WC_SUCCESS;

	/* Tag-matching statuses: only from TM SRQs, which we never create. */
	ck_assert_int_eq(tv_ibv_map_wc_status(IBV_WC_TM_ERR, &st), -EPROTO);
	ck_assert_int_eq(tv_ibv_map_wc_status(IBV_WC_TM_RNDV_INCOMPLETE, &st),
			 -EPROTO);
	ck_assert_int_eq(tv_ibv_map_wc_status(-1, &st), -EPROTO);
	ck_assert_int_eq(st, TV_WC_SUCCESS); /* untouched */
}
END_TEST

START_TEST(every_wc_opcode)
{
	static const struct {
		int ibv;
		int tv;
	} ok[] = {
		{ IBV_WC_SEND, TV_WC_SEND },
		{ IBV_WC_RDMA_WRITE, TV_WC_RDMA_WRITE },
		{ IBV_WC_RDMA_READ, TV_WC_RDMA_READ },
		{ IBV_WC_COMP_SWAP, TV_WC_COMP_SWAP },
		{ IBV_WC_FETCH_ADD, TV_WC_FETCH_ADD },
		{ IBV_WC_RECV, TV_WC_RECV },
		{ IBV_WC_RECV_RDMA_WITH_IMM, TV_WC_RECV_RDMA_WITH_IMM },
	};
	static const int refused[] = {
		IBV_WC_BIND_MW,
		IBV_WC_LOCAL_INV, IBV_WC_TSO, IBV_WC_TM_ADD, IBV_WC_TM_DEL,
		IBV_WC_TM_SYNC, IBV_WC_TM_RECV, IBV_WC_TM_NO_TAG,
		IBV_WC_DRIVER1, IBV_WC_DRIVER2, IBV_WC_DRIVER3,
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		enum tv_vf_wc_opcode op;

		ck_assert_int_eq(tv_ibv_map_wc_opcode(ok[i].ibv, &op), 0);
		ck_assert_int_eq(op, ok[i].tv);
		ck_assert_int_eq(ok[i].ibv, ok[i].tv); /* same values, 1:1 */
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		enum tv_vf_wc_opcode op;

		ck_assert_int_eq(tv_ibv_map_wc_opcode(refused[i], &op),
				 -EPROTO);
	}
}
END_TEST

START_TEST(facade_enums_mirror_verbs)
{
	ck_assert_int_eq(TV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE);
	ck_assert_int_eq(TV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
	ck_assert_int_eq(TV_WR_SEND, IBV_WR_SEND);
	ck_assert_int_eq(TV_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
	ck_assert_int_eq(TV_WR_RDMA_READ, IBV_WR_RDMA_READ);
	ck_assert_int_eq(TV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
	ck_assert_int_eq(TV_WR_ATOMIC_FETCH_AND_ADD,
			 IBV_WR_ATOMIC_FETCH_AND_ADD);
	ck_assert_int_eq(TV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
	ck_assert_int_eq(TV_ATOMIC_NONE, IBV_ATOMIC_NONE);
	ck_assert_int_eq(TV_ATOMIC_HCA, IBV_ATOMIC_HCA);
	ck_assert_int_eq(TV_ATOMIC_GLOB, IBV_ATOMIC_GLOB);
	ck_assert_int_eq(TV_SEND_SIGNALED, IBV_SEND_SIGNALED);
	ck_assert_int_eq(TV_WC_WITH_IMM, IBV_WC_WITH_IMM);
	ck_assert_int_eq(TV_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_int_eq(TV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(TV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
	ck_assert_int_eq(TV_QPS_RESET, IBV_QPS_RESET);
	ck_assert_int_eq(TV_QPS_ERR, IBV_QPS_ERR);
	ck_assert_int_eq(TV_MTU_256, IBV_MTU_256);
	ck_assert_int_eq(TV_MTU_4096, IBV_MTU_4096);
	ck_assert_int_eq(TV_PORT_ACTIVE, IBV_PORT_ACTIVE);
	ck_assert_int_eq(TV_QP_STATE, IBV_QP_STATE);
	ck_assert_int_eq(TV_QP_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
	ck_assert_int_eq(TV_QP_PKEY_INDEX, IBV_QP_PKEY_INDEX);
	ck_assert_int_eq(TV_QP_PORT, IBV_QP_PORT);
	ck_assert_int_eq(TV_QP_AV, IBV_QP_AV);
	ck_assert_int_eq(TV_QP_PATH_MTU, IBV_QP_PATH_MTU);
	ck_assert_int_eq(TV_QP_TIMEOUT, IBV_QP_TIMEOUT);
	ck_assert_int_eq(TV_QP_RETRY_CNT, IBV_QP_RETRY_CNT);
	ck_assert_int_eq(TV_QP_RNR_RETRY, IBV_QP_RNR_RETRY);
	ck_assert_int_eq(TV_QP_RQ_PSN, IBV_QP_RQ_PSN);
	ck_assert_int_eq(TV_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
	ck_assert_int_eq(TV_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER);
	ck_assert_int_eq(TV_QP_SQ_PSN, IBV_QP_SQ_PSN);
	ck_assert_int_eq(TV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
	ck_assert_int_eq(TV_QP_DEST_QPN, IBV_QP_DEST_QPN);
}
END_TEST

START_TEST(open_without_device_refused_cleanly)
{
	struct tv_vf_device *dev = NULL;
	struct tv_ibv_device_info *infos = NULL;
	size_t count = 99;
	char msg[256] = "";
	int ret;

	ck_assert_int_eq(tv_ibv_query_all(&infos, &count), 0);
	if (count) {
		tv_ibv_free_all(infos, count);
		return; /* the device suite covers machines with RDMA */
	}
	ck_assert_ptr_null(infos);
	ret = tv_ibv_open(NULL, msg, sizeof(msg), &dev);
	ck_assert_int_eq(ret, -ENODEV);
	ck_assert_ptr_null(dev);
	ck_assert_str_eq(msg, "no RDMA device with an active port (0 "
			      "device(s) found); set RDMA_DEVICE and "
			      "RDMA_DEVICE_PORT or bring a port up");
	ck_assert_int_eq(tv_ibv_close(NULL), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ibverbs_map");
	TCase *tc = tcase_create("map");

	tcase_add_test(tc, every_wc_status_maps_to_same_value);
	tcase_add_test(tc, wc_status_outside_facade_refused);
	tcase_add_test(tc, every_wc_opcode);
	tcase_add_test(tc, facade_enums_mirror_verbs);
	tcase_add_test(tc, open_without_device_refused_cleanly);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}

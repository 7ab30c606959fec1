/* The rdma_cm private data: layout, bounds, refusals; tv_channel_fail. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <string.h>

#include <tensorverbs/cm.h>
#include <tensorverbs/engine.h>
#include <tensorverbs/sim.h>

#include "common/check_main.h"
#include "wire.h"

static struct tv_cm_hello sample(void)
{
	struct tv_cm_hello h = { .kind = TV_CM_KIND_CONNECT };

	h.from_node = 3;
	h.to_node = 0x01020304;
	h.info.ep.qp_num = 0xabcdef;
	h.info.ep.psn = 0x123456;
	h.info.ep.lid = 0xbeef;
	for (int i = 0; i < 16; i++)
		h.info.ep.gid[i] = (uint8_t)(0xf0 + i);
	h.info.rx_addr = 0x1122334455667788ull;
	h.info.rx_rkey = 0xcafef00d;
	h.info.rx_bytes = (uint32_t)tv_wire_max_bytes();
	return h;
}

START_TEST(layout_is_little_endian_field_by_field)
{
	struct tv_cm_hello h = sample();
	uint8_t buf[TV_CM_PRIV_BYTES];

	ck_assert_int_eq(tv_cm_encode_hello(&h, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(buf[0], 0x76); /* magic "tv" */
	ck_assert_uint_eq(buf[1], 0x74);
	ck_assert_uint_eq(buf[2], TV_CM_VERSION);
	ck_assert_uint_eq(buf[3], TV_CM_KIND_CONNECT);
	ck_assert_uint_eq(buf[4], 3);
	ck_assert_uint_eq(buf[8], 0x04);
	ck_assert_uint_eq(buf[11], 0x01);
	ck_assert_uint_eq(buf[12], 0xef);
	ck_assert_uint_eq(buf[14], 0xab);
	ck_assert_uint_eq(buf[15], 0);
	ck_assert_uint_eq(buf[20], 0xef);
	ck_assert_uint_eq(buf[22], 0);
	ck_assert_uint_eq(buf[24], 0xf0);
	ck_assert_uint_eq(buf[39], 0xff);
	ck_assert_uint_eq(buf[40], 0x88);
	ck_assert_uint_eq(buf[47], 0x11);
	ck_assert_uint_eq(buf[48], 0x0d);
}
END_TEST

START_TEST(round_trip_and_padding)
{
	struct tv_cm_hello h = sample(), out;
	uint8_t buf[196] = { 0 }; /* an accept reply is padded to 196 */
	uint8_t version = 0;

	h.kind = TV_CM_KIND_ACCEPT;
	ck_assert_int_eq(tv_cm_encode_hello(&h, buf, sizeof(buf)), 0);
	ck_assert_int_eq(tv_cm_decode_hello(buf, sizeof(buf), &version, &out),
			 0);
	ck_assert_uint_eq(version, TV_CM_VERSION);
	ck_assert_int_eq(out.kind, TV_CM_KIND_ACCEPT);
	ck_assert_uint_eq(out.from_node, 3);
	ck_assert_uint_eq(out.to_node, 0x01020304);
	ck_assert_mem_eq(&out.info.ep, &h.info.ep, sizeof(h.info.ep));
	ck_assert_uint_eq(out.info.rx_addr, h.info.rx_addr);
	ck_assert_uint_eq(out.info.rx_rkey, h.info.rx_rkey);
	ck_assert_uint_eq(out.info.rx_bytes, h.info.rx_bytes);
}
END_TEST

START_TEST(refusals)
{
	struct tv_cm_hello h = sample(), out;
	uint8_t buf[TV_CM_PRIV_BYTES], bad[TV_CM_PRIV_BYTES];
	uint8_t version = 0;

	ck_assert_int_eq(tv_cm_encode_hello(&h, buf, sizeof(buf) - 1),
			 -ENOSPC);
	ck_assert_int_eq(tv_cm_encode_hello(&h, buf, sizeof(buf)), 0);
	/* Short, foreign, another version, reserved bits, 24-bit fields. */
	ck_assert_int_eq(tv_cm_decode_hello(buf, 55, NULL, &out), -EPROTO);
	ck_assert_int_eq(tv_cm_decode_hello(buf, 3, NULL, &out), -EPROTO);
	memcpy(bad, buf, sizeof(bad));
	bad[0] ^= 1;
	ck_assert_int_eq(tv_cm_decode_hello(bad, sizeof(bad), NULL, &out),
			 -EPROTO);
	memcpy(bad, buf, sizeof(bad));
	bad[2] = 9;
	ck_assert_int_eq(tv_cm_decode_hello(bad, sizeof(bad), &version, &out),
			 -EPROTONOSUPPORT);
	ck_assert_uint_eq(version, 9);
	memcpy(bad, buf, sizeof(bad));
	bad[3] = TV_CM_KIND_REJECT;
	ck_assert_int_eq(tv_cm_decode_hello(bad, sizeof(bad), NULL, &out),
			 -EPROTO);
	memcpy(bad, buf, sizeof(bad));
	bad[23] = 1;
	ck_assert_int_eq(tv_cm_decode_hello(bad, sizeof(bad), NULL, &out),
			 -EPROTO);
	memcpy(bad, buf, sizeof(bad));
	bad[15] = 1; /* QPN over 24 bits */
	ck_assert_int_eq(tv_cm_decode_hello(bad, sizeof(bad), NULL, &out),
			 -EPROTO);
	memcpy(bad, buf, sizeof(bad));
	memset(bad + 52, 0, 4); /* a buffer too small for a message */
	ck_assert_int_eq(tv_cm_decode_hello(bad, sizeof(bad), NULL, &out),
			 -EPROTO);
}
END_TEST

START_TEST(reject_carries_errno_and_text)
{
	uint8_t buf[148] = { 0 };
	char msg[TV_CM_REJECT_MSG_MAX + 1];
	char longmsg[300];
	int err = 0;

	ck_assert_int_eq(tv_cm_encode_reject(EPROTONOSUPPORT, "version 2",
					     buf, sizeof(buf)), 0);
	ck_assert_int_eq(tv_cm_decode_reject(buf, sizeof(buf), &err, msg), 0);
	ck_assert_int_eq(err, EPROTONOSUPPORT);
	ck_assert_str_eq(msg, "version 2");
	memset(longmsg, 'x', sizeof(longmsg) - 1);
	longmsg[sizeof(longmsg) - 1] = '\0';
	ck_assert_int_eq(tv_cm_encode_reject(1, longmsg, buf, sizeof(buf)), 0);
	ck_assert_int_eq(tv_cm_decode_reject(buf, TV_CM_REJECT_BYTES, &err,
					     msg), 0);
	ck_assert_uint_eq(strlen(msg), TV_CM_REJECT_MSG_MAX);
	buf[3] = TV_CM_KIND_CONNECT;
	ck_assert_int_eq(tv_cm_decode_reject(buf, sizeof(buf), &err, msg),
			 -EPROTO);
}
END_TEST

START_TEST(addresses)
{
	struct sockaddr_storage ss;
	char text[64];

	ck_assert_int_eq(tv_cm_parse_addr("10.77.0.2:7471", &ss), 0);
	tv_cm_format_addr((struct sockaddr *)&ss, text, sizeof(text));
	ck_assert_str_eq(text, "10.77.0.2:7471");
	ck_assert_int_eq(tv_cm_parse_addr("[::1]:80", &ss), 0);
	tv_cm_format_addr((struct sockaddr *)&ss, text, sizeof(text));
	ck_assert_str_eq(text, "[::1]:80");
	ck_assert_int_eq(tv_cm_parse_addr("10.77.0.2", &ss), -EINVAL);
	ck_assert_int_eq(tv_cm_parse_addr("10.77.0.2:0", &ss), -EINVAL);
	ck_assert_int_eq(tv_cm_parse_addr("10.77.0.2:65536", &ss), -EINVAL);
	ck_assert_int_eq(tv_cm_parse_addr("10.77.0.2:7x", &ss), -EINVAL);
	ck_assert_int_eq(tv_cm_parse_addr(":7471", &ss), -EINVAL);
	ck_assert_int_eq(tv_cm_parse_addr("[::1:80", &ss), -EINVAL);
}
END_TEST

/* What tv_cm does on RDMA_CM_EVENT_DISCONNECTED, on the simulator. */
START_TEST(channel_fail_from_outside)
{
	struct tv_sim_config sc;
	struct tv_engine_config ec;
	struct tv_sim *sim;
	struct tv_engine *e[2];
	struct tv_channel *ch[2];
	struct tv_channel_info info[2];

	tv_sim_config_default(&sc);
	sc.num_nodes = 2;
	ck_assert_int_eq(tv_sim_create(&sc, &sim), 0);
	for (int i = 0; i < 2; i++) {
		tv_engine_config_default(&ec);
		ec.node_id = (uint32_t)i;
		ck_assert_int_eq(tv_engine_create(tv_sim_device(sim, (uint32_t)i),
						  &ec, &e[i]), 0);
		ck_assert_int_eq(tv_channel_create(e[i], (uint32_t)!i, &ch[i]),
				 0);
		ck_assert_int_eq(tv_channel_info(ch[i], &info[i]), 0);
	}
	ck_assert_int_eq(tv_channel_connect(ch[0], &info[1]), 0);
	ck_assert_int_eq(tv_channel_connect(ch[1], &info[0]), 0);
	ck_assert_int_eq(tv_channel_fail(NULL, TV_UNAVAILABLE, "x"), -EINVAL);
	ck_assert_int_eq(tv_channel_fail(ch[0], TV_OK, "x"), -EINVAL);
	ck_assert(!tv_channel_failed(ch[0]));
	ck_assert_int_eq(tv_channel_fail(ch[0], TV_UNAVAILABLE, "gone"), 0);
	ck_assert(tv_channel_failed(ch[0]));
	/* Again: a no-op on a failed channel. */
	ck_assert_int_eq(tv_channel_fail(ch[0], TV_UNAVAILABLE, "gone"), 0);
	ck_assert_int_eq(tv_channel_reset(ch[0]), 0);
	ck_assert(!tv_channel_failed(ch[0]));
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(tv_engine_destroy(e[i]), 0);
	ck_assert_int_eq(tv_sim_destroy(sim), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cm_wire");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, layout_is_little_endian_field_by_field);
	tcase_add_test(tc, round_trip_and_padding);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, reject_carries_errno_and_text);
	tcase_add_test(tc, addresses);
	tcase_add_test(tc, channel_fail_from_outside);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}

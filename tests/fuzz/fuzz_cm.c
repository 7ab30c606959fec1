/*
 * Fuzz target: the rdma_cm private data a peer sends in its connect,
 * accept and reject (backends/cm_wire.c).
 *
 * A hello that decodes must satisfy what the decoder promises (24-bit QPN
 * and PSN, a message buffer that holds one message) and re-encode to the
 * same 56 bytes; a reject that decodes gives a NUL-terminated message of
 * at most TV_CM_REJECT_MSG_MAX bytes and a non-negative errno.
 * (tv_cm_parse_addr() is left to tests/cm: a host name goes to the
 * resolver, whose answer and time are the network's, not ours.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/cm.h>

#include "fuzz.h"

static void hello(const uint8_t *data, size_t size)
{
	struct tv_cm_hello h;
	uint8_t out[TV_CM_PRIV_BYTES], version = 0;
	int ret = tv_cm_decode_hello(data, size, &version, &h);

	FZ_CHECK(ret == 0 || ret == -EPROTO || ret == -EPROTONOSUPPORT);
	if (ret)
		return;
	FZ_CHECK(size >= TV_CM_PRIV_BYTES && version == TV_CM_VERSION);
	FZ_CHECK(h.info.ep.qp_num && h.info.ep.qp_num <= 0xffffff);
	FZ_CHECK(h.info.ep.psn <= 0xffffff && h.info.rx_addr);
	FZ_CHECK(h.info.rx_bytes >= tv_wire_max_bytes());
	FZ_CHECK(tv_cm_encode_hello(&h, out, sizeof(out)) == 0);
	FZ_CHECK(!memcmp(out, data, TV_CM_PRIV_BYTES));
}

static void reject(const uint8_t *data, size_t size)
{
	char msg[TV_CM_REJECT_MSG_MAX + 1];
	int err = -1, ret;

	memset(msg, 'x', sizeof(msg));
	ret = tv_cm_decode_reject(data, size, &err, msg);
	FZ_CHECK(ret == 0 || ret == -EPROTO || ret == -EPROTONOSUPPORT);
	if (ret)
		return;
	FZ_CHECK(err >= 0 && memchr(msg, 0, sizeof(msg)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hello(data, size);
	reject(data, size);
	return 0;
}

/*
 * `tensorverbs serve` in a build without libibverbs and librdmacm: it says
 * so, and fails (testbed.h; hw.c is the real one).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tensorverbs/testbed.h>

int tv_tb_serve(const struct tv_tb_serve_opts *o)
{
	(void)o;
	fprintf(stderr, "tensorverbs serve: built without librdmacm/libibverbs "
		"(install librdmacm-dev and libibverbs-dev, then rebuild)\n");
	return TV_TB_SERVE_FAIL;
}

int tv_tb_parse_peer(const char *text, uint32_t *node_p,
		     struct sockaddr_storage *addr_p)
{
	char *end;
	unsigned long v;

	(void)addr_p;
	if (!text || text[0] < '0' || text[0] > '9')
		return -EINVAL;
	v = strtoul(text, &end, 10);
	if (*end != '=' || v >= TV_TB_MAX_NODES)
		return -EINVAL;
	*node_p = (uint32_t)v;
	return 0;
}

int tv_tb_hw_device_addr(uint16_t port, struct sockaddr_storage *ss_p,
			 char *msg, size_t cap)
{
	(void)port;
	(void)ss_p;
	snprintf(msg, cap, "built without libibverbs");
	return -ENOTSUP;
}

int tv_tb_validate(const struct tv_tb_validate_opts *o,
		   struct tv_tb_validation **v_p)
{
	(void)o;
	(void)v_p;
	fprintf(stderr, "tensorverbs validate: built without libibverbs\n");
	return -ENOTSUP;
}

int tv_tb_validation_write(const struct tv_tb_validation *v,
			   const char *json_copy)
{
	(void)v;
	(void)json_copy;
	return -ENOTSUP;
}

int tv_tb_validation_junit(const struct tv_tb_validation *v, const char *path)
{
	(void)v;
	(void)path;
	return -ENOTSUP;
}

size_t tv_tb_validation_failed(const struct tv_tb_validation *v)
{
	(void)v;
	return 0;
}

void tv_tb_validation_free(struct tv_tb_validation *v)
{
	(void)v;
}

int tv_tb_mpi_addrs(const char *who, uint16_t port_base,
		    struct sockaddr_storage *all)
{
	(void)who;
	(void)port_base;
	(void)all;
	return -ENOTSUP;
}

int tv_tb_mpi_bench_pair(const char *who, uint16_t port_base,
			 struct sockaddr_storage addr[2], uint32_t *node_p)
{
	(void)who;
	(void)port_base;
	(void)addr;
	(void)node_p;
	return 1;
}

/* bench rxe --floor: bare verbs, the engine's pattern (bench_floor.c). */
#ifndef TV_RV_BENCH_FLOOR_H
#define TV_RV_BENCH_FLOOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * The server (at srv) answers iters + warm-up round trips; the client
 * (from src) prints "bench-rxe floor BYTES MEDIAN_US P99_US".  Writes of
 * up to max_inline_bytes go inline, as the engine's do (if the device
 * takes that much).  0 or a negative errno; -EOPNOTSUPP without librdmacm.
 */
int bench_floor(const struct sockaddr *srv, const struct sockaddr *src,
		bool server, uint32_t iters, uint32_t bytes,
		uint32_t max_inline_bytes);

#endif

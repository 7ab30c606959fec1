#!/usr/bin/env bash
# 64-byte fetch latency of one or more tensorverbs binaries, interleaved with
# ib_write_lat, in one boot: the way to compare builds on a noisy host (the
# host's load moves ib_write_lat between 18 and 50 us from boot to boot).
#
#   bash ci/rxe/lat-ab.sh BIN [BIN...]     # boots ci/rxe/vm.sh --devices 2
#
# Knobs: LAT_ROUNDS (default 3), BENCH_LAT_ITERS (default 3000), LAT_FLOOR=1
# (also the bare-verbs floor, bench rxe --floor, each round).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN...]" >&2; exit 2; }
if [ -z "${RXE_DEV1:-}" ]; then
	exec bash "$here/vm.sh" --devices 2 --mem 2048 --pin --env LAT_ROUNDS \
		--env BENCH_LAT_ITERS --env LAT_FLOOR -- bash "$here/lat-ab.sh" "$@"
fi
iters=${BENCH_LAT_ITERS:-3000}
listening() { [ -n "$(ss -Hltn "sport = :$1")" ]; }
perftest_lat() { # perftest_lat PORT
	local spid i
	ib_write_lat -d "$RXE_DEV1" -x "$RXE_GID1" -p "$1" -F -s 64 -n "$iters" >/tmp/lat.s 2>&1 &
	spid=$!
	for ((i = 0; i < 100; i++)); do listening "$1" && break; sleep 0.1; done
	ib_write_lat -d "$RXE_DEV0" -x "$RXE_GID0" -p "$1" -F -s 64 -n "$iters" "$RXE_IP1" >/tmp/lat.c 2>&1
	wait "$spid"
	awk '$1 == 64 && NF >= 6 { printf "ib_write_lat 64: typical %s us, average %s us\n", $5, $6 }' /tmp/lat.c
}
for ((r = 1; r <= ${LAT_ROUNDS:-3}; r++)); do
	echo "---- round $r"
	perftest_lat $((18900 + r))
	for b in "$@"; do
		printf '%s: %s\n' "$b" "$("$b" bench rxe --sizes 4096 --bytes 65536 \
			--lat-iters "$iters" 2>&1 | grep 'bench-rxe lat' || echo failed)"
	done
	# The protocol's floor (bare verbs), with the first binary.
	if [ -n "${LAT_FLOOR:-}" ]; then
		"$1" bench rxe --sizes 4096 --bytes 65536 --lat-iters "$iters" \
			--floor 2>&1 | grep 'bench-rxe floor' || echo "floor: failed"
	fi
done

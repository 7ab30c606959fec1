#!/usr/bin/env bash
# The port engine (`tensorverbs bench port`) next to perftest on the same
# two rxe devices, in the same boot (docs/port.md, "Benchmarks"):
#  - latency, in rounds: ib_write_lat 8 B (half a round trip), ib_atomic_lat
#    (a whole one: the fetch-and-add and its answer), the port engine's
#    8-byte put_with_signal + wait ping-pong (half a round trip) in both
#    signal modes;
#  - put bandwidth per size against ib_write_bw;
#  - a 2-rank ring allreduce's bus bandwidth at 1 MiB and 64 MiB.
# Then one table with the ratios.  A benchmark, not a test: it fails only
# if a tool fails.
#
# Verdict rule (TCG moves a ratio ~10% from boot to boot, and a single
# bandwidth run by 20%): every figure is the best of its rounds (the boot's
# fast mode), latencies the best median; ratios are of those; a target
# within 10% of its line is "within noise", neither met nor missed.
#
#   bash ci/rxe/bench-port.sh     # anywhere: boots ci/rxe/vm.sh --devices 2
#
# Knobs: TV_BIN (default build-bench/cli/tensorverbs, Release, built here),
# BENCH_SIZES, BENCH_BYTES (per size, default 256 MiB), BENCH_LAT_ITERS
# (default 2000), BENCH_LAT_ROUNDS (default 5), BENCH_BW_ROUNDS (default 3),
# RXE_BENCH_VM_TIMEOUT.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=ci/rxe/bench-lib.sh
. "$here/bench-lib.sh"
bench_in_vm "$here/bench-port.sh" 1200 BENCH_SIZES BENCH_BYTES \
	BENCH_LAT_ITERS BENCH_LAT_ROUNDS BENCH_BW_ROUNDS -- "$@"

tv=${TV_BIN:-$repo/build-bench/cli/tensorverbs}
[ -x "$tv" ] || { echo "bench: no $tv (build it, or set TV_BIN)" >&2; exit 2; }
sizes=${BENCH_SIZES:-4096,65536,1048576,4194304,16777216,67108864}
bytes=${BENCH_BYTES:-134217728}
bw_rounds=${BENCH_BW_ROUNDS:-3}
lat_iters=${BENCH_LAT_ITERS:-2000}
rounds=${BENCH_LAT_ROUNDS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in ib_write_bw ib_write_lat ib_atomic_lat ss; do
	command -v "$t" >/dev/null || { echo "bench: $t not found (perftest, iproute2)" >&2; exit 2; }
done

port=18890
for ((r = 0; r < rounds; r++)); do
	perf ib_write_lat "$port" "$work/wlat.$r" -s 8 -n "$lat_iters"
	perf ib_atomic_lat "$((port + 1))" "$work/alat.$r" -n "$lat_iters"
	port=$((port + 2))
	echo "round $r: ib_write_lat 8 B typical $(field "$work/wlat.$r" 8 5) us;" \
		"ib_atomic_lat typical $(field "$work/alat.$r" 8 5) us"
	for mode in atomic write_imm; do
		"$tv" bench port --signal "$mode" --sizes 4096 --bytes 65536 \
			--lat-iters "$lat_iters" --allreduce 65536 --floor \
			>"$work/plat.$mode.$r"
		echo "round $r: port $mode: $(grep '^bench-port lat' "$work/plat.$mode.$r")"
	done
done

# Bandwidth in rounds too, the two tools taking turns.
port=18990
for ((r = 0; r < bw_rounds; r++)); do
	echo "---- round $r: tensorverbs bench port, bandwidth and allreduce"
	"$tv" bench port --sizes "$sizes" --bytes "$bytes" --lat-iters 200 \
		--allreduce 1048576,67108864 | tee "$work/port.$r"
	echo "---- round $r: perftest"
	for s in ${sizes//,/ }; do
		n=$((bytes / s))
		[ "$n" -ge 5 ] || n=5
		[ "$n" -le 20000 ] || n=20000
		port=$((port + 1))
		perf ib_write_bw "$port" "$work/bw.$s.$r" -s "$s" -n "$n" --report_gbits
		echo "ib_write_bw $s: $(field "$work/bw.$s.$r" "$s" 4) Gb/s average ($n iterations)"
	done
done

best() { sort -g | head -1; }   # the fastest latency of a set
most() { sort -g | tail -1; }   # the highest bandwidth
verdict() { # verdict RATIO LIMIT le|ge
	awk -v r="$1" -v l="$2" -v how="$3" 'BEGIN {
		ok = how == "le" ? r <= l : r >= l
		near = how == "le" ? r <= l * 1.1 : r >= l * 0.9
		print ok ? "met" : near ? "within noise" : "MISSED" }'
}

echo
echo "---- port engine vs perftest (same boot, $RXE_DEV0 -> $RXE_DEV1, $(uname -r))"
printf '%-10s %18s %18s %8s\n' "size" "port put" "ib_write_bw" "ratio"
for s in ${sizes//,/ }; do
	t=$(cat "$work"/port.* | awk -v s="$s" '$1 == "bench-port" && $2 == "bw" && $3 == s { print $4 }' | most)
	g=$(for ((r = 0; r < bw_rounds; r++)); do field "$work/bw.$s.$r" "$s" 4; done | most)
	ratio=$(awk -v t="$t" -v g="$g" 'BEGIN { printf "%.2f", t / (g * 1e9 / 8) }')
	mark=""
	[ "$s" = 1048576 ] && mark="  (target >= 0.9: $(verdict "$ratio" 0.9 ge))"
	awk -v s="$(human "$s")" -v t="$t" -v g="$g" -v r="$ratio" -v m="$mark" 'BEGIN {
		printf "%-10s %13.1f MB/s %13.1f MB/s %8s%s\n", s, t / 1e6, g * 1e9 / 8 / 1e6, r, m }'
done
wl=$(for ((r = 0; r < rounds; r++)); do field "$work/wlat.$r" 8 5; done | best)
al=$(for ((r = 0; r < rounds; r++)); do field "$work/alat.$r" 8 5; done | best)
floor() { # floor KIND: the bare-verbs ping-pong's best median
	cat "$work"/plat.* | awk -v k="floor-$1" '$1 == "bench-port" && $2 == k { print $5 }' | best
}
for mode in atomic write_imm; do
	pl=$(cat "$work"/plat."$mode".* | awk '$1 == "bench-port" && $2 == "lat" { print $5 }' | best)
	rw=$(awk -v p="$pl" -v w="$wl" 'BEGIN { printf "%.2f", p / w }')
	ra=$(awk -v p="$pl" -v a="$al" 'BEGIN { printf "%.2f", 2 * p / a }')
	printf '%-10s %11.1f us half %11.1f us half %8s  (vs ib_write_lat; target <= 2: %s)\n' \
		"8 B $mode" "$pl" "$wl" "$rw" "$(verdict "$rw" 2 le)"
	[ "$mode" = atomic ] && printf '%-10s %11.1f us whole %10.1f us whole %7s  (the round trip vs ib_atomic_lat; target <= 2: %s)\n' \
		"" "$(awk -v p="$pl" 'BEGIN { print 2 * p }')" "$al" "$ra" "$(verdict "$ra" 2 le)"
done
printf '%-10s %11.1f us half  (bare verbs, no engine: an inline 8-byte write polled in memory, as ib_write_lat)\n' \
	"floor" "$(floor write)"
printf '%-10s %11.1f us half  (bare verbs, no engine: the write and a fetch-and-add in one post, the counter polled: what the atomic mode puts on the wire)\n' \
	"" "$(floor signal)"
printf '%-10s %11.1f us half  (bare verbs, no engine: the fetch-and-add alone, the counter polled: ib_atomic_lat'"'"'s traffic, one way)\n' \
	"" "$(floor faa)"
for s in 1048576 67108864; do
	cat "$work"/port.* | awk -v s="$s" '$1 == "bench-port" && $2 == "allreduce" && $3 == s { print $5 }' | most |
		awk -v s="$(human "$s")" '{ printf "allreduce  %s: bus bandwidth %.1f MB/s (2 ranks: the algorithm bandwidth)\n", s, $1 / 1e6 }'
done
echo "(MB = 10^6 bytes.  ib_write_lat, the port ping-pong and the floors report half a round trip; ib_atomic_lat a whole one.  Latencies: the best median of $rounds rounds; bandwidths: the best of $bw_rounds.)"

#!/usr/bin/env bash
# tensorverbs' engine next to perftest on the same two rxe devices, in the
# same boot: first, in rounds, ib_write_lat 64 B, `tensorverbs bench rxe`'s
# 64-byte fetch latency (cached metadata, busy polling) and the same
# exchange with bare verbs (--floor); then the fetch bandwidth per size and
# ib_write_bw per size (server rxe1, client rxe0); then one table with the
# ratios, latency as the best round of each.  A benchmark, not a test: it fails only if a tool fails.
#
#   bash ci/rxe/bench.sh          # anywhere: boots ci/rxe/vm.sh --devices 2
#
# What it measures is the README's build: Release (assertions off), built
# here into build-bench/ unless TV_BIN names another binary.  The test
# builds (RelWithDebInfo) keep their assertions, ~6% more instructions on
# the fetch path (docs/rxe-runs.md, session 14).
#
# Knobs: TV_BIN (default build-bench/cli/tensorverbs), BENCH_SIZES
# (bytes, comma-separated), BENCH_BYTES (per size, default 256 MiB),
# BENCH_LAT_ITERS (default 2000), BENCH_LAT_ROUNDS (at least this many
# latency rounds, default 10), BENCH_LAT_ROUNDS_MAX (at most, default 24),
# BENCH_ARGS (more `bench rxe` options, e.g. "--publisher-poll busy"),
# RXE_BENCH_VM_TIMEOUT (default 900 s).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
if [ -z "${RXE_DEV1:-}" ]; then
	if [ -z "${TV_BIN:-}" ]; then
		bash "$repo/ci/build-cli.sh" "$repo/build-bench" Release
	fi
	exec bash "$here/vm.sh" --devices 2 --mem 2048 --pin --env BENCH_SIZES \
		--env BENCH_BYTES --env BENCH_LAT_ITERS --env BENCH_LAT_ROUNDS \
		--env BENCH_LAT_ROUNDS_MAX --env BENCH_ARGS --env TV_BIN \
		--timeout "${RXE_BENCH_VM_TIMEOUT:-900}" -- bash "$here/bench.sh" "$@"
fi

tv=${TV_BIN:-$repo/build-bench/cli/tensorverbs}
[ -x "$tv" ] || { echo "bench: no $tv (build it, or set TV_BIN)" >&2; exit 2; }
sizes=${BENCH_SIZES:-4096,65536,1048576,4194304,16777216,67108864}
bytes=${BENCH_BYTES:-268435456}
lat_iters=${BENCH_LAT_ITERS:-2000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in ib_write_bw ib_write_lat ss; do
	command -v "$t" >/dev/null || { echo "bench: $t not found (perftest, iproute2)" >&2; exit 2; }
done

# shellcheck source=ci/rxe/bench-lib.sh
. "$here/bench-lib.sh"

# Latency first, each side next to the other, in rounds: ib_write_lat,
# then the engine's fetch and the bare-verbs floor; ib_write_lat once more
# at the end.  Minutes of bandwidth runs before it used to slow the fetch
# and the floor (not ib_write_lat) for reasons unknown, and the host's
# load moves all three between a fast and a slow mode within a boot: each
# figure is the best of its rounds (the fast mode of each), and the spread
# of ib_write_lat says how far the boot can be trusted.  A busy phase can
# hide one side's fast mode for ten rounds and not the other's, so after
# BENCH_LAT_ROUNDS the rounds go on (up to BENCH_LAT_ROUNDS_MAX) until each
# side has been within 5% of its best in at least three of them.
rounds=${BENCH_LAT_ROUNDS:-10}
max_rounds=${BENCH_LAT_ROUNDS_MAX:-24}
[ "$max_rounds" -ge "$rounds" ] || max_rounds=$rounds
fetch_med() { # fetch_med R: the median of round R's fetches
	awk '$1 == "bench-rxe" && $2 == "lat" && $3 == 64 { print $5; exit }' "$work/tvlat.$1"
}
near_best() { # stdin: one figure a line; prints how many are within 5% of the least
	sort -g | awk 'NR == 1 { lo = $1 } $1 <= lo * 1.05 { n++ } END { print n + 0 }'
}
# Fast-mode rounds of each side once R fetch rounds ran: ib_write_lat runs
# 0..R, which bracket fetch rounds 0..R-1.
ib_fast() { local i; for ((i = 0; i <= $1; i++)); do field "$work/lat.$i" 64 5; done | near_best; }
tv_fast() { local i; for ((i = 0; i < $1; i++)); do fetch_med "$i"; done | near_best; }
settled() { [ "$(ib_fast "$1")" -ge 3 ] && [ "$(tv_fast "$1")" -ge 3 ]; }
port=18590
for ((r = 0; ; r++)); do
	perf ib_write_lat "$port" "$work/lat.$r" -s 64 -n "$lat_iters"
	port=$((port + 1))
	echo "ib_write_lat 64 (round $r): typical $(field "$work/lat.$r" 64 5) us, average $(field "$work/lat.$r" 64 6) us"
	if [ "$r" -ge "$rounds" ]; then
		if settled "$r" || [ "$r" -ge "$max_rounds" ]; then
			rounds=$r
			break
		fi
	fi
	echo "---- tensorverbs bench rxe, latency, round $r ($RXE_DEV0 -> $RXE_DEV1)"
	# shellcheck disable=SC2086
	"$tv" bench rxe --sizes 4096 --bytes 65536 --lat-iters "$lat_iters" --floor \
		${BENCH_ARGS:-} | tee "$work/tvlat.$r"
done

echo "---- tensorverbs bench rxe, bandwidth ($RXE_DEV0 -> $RXE_DEV1)"
# Its own latency line comes after the bandwidth runs: shown, not used.
# shellcheck disable=SC2086
"$tv" bench rxe --sizes "$sizes" --bytes "$bytes" --lat-iters 200 ${BENCH_ARGS:-} |
	tee "$work/tv.out"

port=18700
echo "---- perftest"
for s in ${sizes//,/ }; do
	n=$((bytes / s))
	[ "$n" -ge 5 ] || n=5
	[ "$n" -le 20000 ] || n=20000
	port=$((port + 1))
	perf ib_write_bw "$port" "$work/bw.$s" -s "$s" -n "$n" --report_gbits
	echo "ib_write_bw $s: $(field "$work/bw.$s" "$s" 4) Gb/s average ($n iterations)"
done

echo
echo "---- tensorverbs engine vs perftest (same boot, $RXE_DEV0 -> $RXE_DEV1, $(uname -r))"
printf '%-10s %20s %20s %8s\n' "size" "tensorverbs fetch" "ib_write_bw" "ratio"
for s in ${sizes//,/ }; do
	tvbw=$(awk -v s="$s" '$1 == "bench-rxe" && $2 == "bw" && $3 == s { print $4 }' "$work/tv.out")
	pgb=$(field "$work/bw.$s" "$s" 4)
	awk -v s="$(human "$s")" -v t="$tvbw" -v g="$pgb" -v big="$s" 'BEGIN {
		p = g * 1e9 / 8
		mark = big == 4194304 ? (t / p >= 0.8 ? "  (target >= 0.8: met)" : "  (target >= 0.8: MISSED)") : ""
		printf "%-10s %15.1f MB/s %15.1f MB/s %8.2f%s\n", s, t / 1e6, p / 1e6, t / p, mark }'
done
# Best of the rounds: the fetch run with the lowest median, the lowest
# floor, the ib_write_lat run with the lowest typical (the harder ratio).
read -r _ _ _ tavg tmed tp99 _ <<<"$(cat "$work"/tvlat.* | grep '^bench-rxe lat 64 ' | sort -g -k5 | head -1)"
lat_runs() { # the client's output of each ib_write_lat round
	local r
	for ((r = 0; r <= rounds; r++)); do echo "$work/lat.$r"; done
}
read -r ptyp pavg <<<"$(for f in $(lat_runs); do echo "$(field "$f" 64 5) $(field "$f" 64 6)"; done | sort -g | head -1)"
awk -v tm="$tmed" -v ta="$tavg" -v t99="$tp99" -v pt="$ptyp" -v pa="$pavg" 'BEGIN {
	printf "%-10s %14.1f us med %14.1f us typ %7.2fx  (target <= 2.5x: %s)\n", "64 B lat", tm, pt, tm / pt, tm / pt <= 2.5 ? "met" : "MISSED"
	printf "%-10s %14.1f us avg %14.1f us avg %7.2fx\n", "", ta, pa, ta / pa
	printf "%-10s %14.1f us p99\n", "", t99 }'
# Paired, the other view: each round's fetch median against the mean of
# the two ib_write_lat runs around it, so a lucky or unlucky perftest run
# moves one ratio, not the figure.  The median of those, and their range.
for ((r = 0; r < rounds; r++)); do
	t=$(fetch_med "$r")
	a=$(field "$work/lat.$r" 64 5)
	b=$(field "$work/lat.$((r + 1))" 64 5)
	[ -n "$t" ] && [ -n "$a" ] && [ -n "$b" ] && awk -v t="$t" -v a="$a" -v b="$b" 'BEGIN { printf "%.4f\n", 2 * t / (a + b) }'
done | sort -g | awk '{ v[NR] = $1 } END {
	if (NR) printf "%-10s %14s per round: median %.2fx, range %.2fx-%.2fx over %d rounds (each fetch run against the ib_write_lat runs around it)\n",
		"", "", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR], NR }'
read -r _ _ _ fmed _ <<<"$(cat "$work"/tvlat.* | grep '^bench-rxe floor 64 ' | sort -g -k4 | head -1)"
awk -v fm="$fmed" -v tm="$tmed" -v pt="$ptyp" 'BEGIN {
	printf "%-10s %14.1f us med %14.1f us typ %7.2fx  (bare verbs, the same two writes with immediate, no engine: the engine adds %.1f us)\n", "64 B floor", fm, pt, fm / pt, tm - fm }'
# The floor is the fetch without the engine: a fetch faster than it means
# the boot's timing moved under the runs, whatever the ratios say.
awk -v fm="$fmed" -v tm="$tmed" 'BEGIN {
	if (tm < fm)
		printf "NOTE: the fetch (%s us) beat the bare-verbs floor (%s us): the boot is too noisy for the latency figures; compare in one boot with ci/rxe/lat-ab.sh\n", tm, fm }'
read -r _ _ _ _ bmed _ <<<"$(grep '^bench-rxe lat 64 ' "$work/tv.out")"
printf '%-10s %14.1f us med  (the same fetch after the bandwidth runs: not used)\n' "" "$bmed"
fast_tv=$(tv_fast "$rounds")
fast_ib=$(ib_fast "$rounds")
printf '%-10s %14s rounds within 5%% of the best: fetch %s of %s, ib_write_lat %s of %s\n' "" "" \
	"$fast_tv" "$rounds" "$fast_ib" "$((rounds + 1))"
if [ "$fast_tv" -lt 3 ] || [ "$fast_ib" -lt 3 ]; then
	echo "NOTE: a side's best latency came up in fewer than 3 of its rounds (too few rounds, or a busy host): the latency verdict is weak; run again"
fi
for f in $(lat_runs); do field "$f" 64 5; done | sort -g | awk '
	NR == 1 { lo = $1 } { hi = $1 }
	END { if (lo > 0 && hi / lo > 1.25)
		printf "NOTE: ib_write_lat ranged from %s to %s us typical across the rounds (the host is busy): the best of each is compared; for builds, compare in one boot with ci/rxe/lat-ab.sh\n", lo, hi }'
echo "(MB = 10^6 bytes.  ib_write_lat reports half a round trip; a fetch is a whole one: request, then the data.)"

#!/usr/bin/env bash
# The rxe suite: every scenario that can run on hardware, as one process per
# node over rdma_cm on two Soft-RoCE devices, plus negative tests (bad
# RDMA_* configuration, a peer that is not there) and recovery tests (a
# late peer, a dropped connection).  Runs INSIDE the rxe VM
# (ci/rxe/vm.sh --devices 2): node j uses rxe(j%2) at 10.77.0.(j%2+1).
#
#   tests/rxe/run.sh [--only GLOB] [--skip GLOB]   (globs: "gather_*", "@(a|b)")
#
# Environment: TV_BIN (default build-rxe-tests/cli/tensorverbs),
# TV_RXE_TIMEOUT (seconds per process, default 180), TV_RXE_ACK_TIMEOUT_MS
# (default 10000), TV_RXE_OUT (keep logs there: a --share'd folder).
# Prints "rxe: N passed, M failed, K skipped"; exits 1 on any failure.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
tv=${TV_BIN:-$repo/build-rxe-tests/cli/tensorverbs}
tmo=${TV_RXE_TIMEOUT:-180}
# The engine's 1 s ACK timeout is for real fabrics; under TCG a busy host
# can stall the VM for longer (a spurious "ACK lost").
ack=${TV_RXE_ACK_TIMEOUT_MS:-10000}
# --only takes a glob, extended: @(a|b) names several.
shopt -s extglob
only= skip=
while [ $# -gt 0 ]; do
	case "$1" in
	--only) only=$2; shift 2 ;;
	--skip) skip=$2; shift 2 ;;
	*) echo "usage: $0 [--only GLOB] [--skip GLOB]" >&2; exit 2 ;;
	esac
done
# picked NAME: the test runs (no --only, or --only's glob matches it; and
# no --skip, or --skip's glob does not match it).
picked() {
	{ [ -z "$only" ] || [[ "$1" == $only ]]; } &&
		{ [ -z "$skip" ] || [[ "$1" != $skip ]]; }
}

for v in RXE_DEV0 RXE_DEV1 RXE_IP0 RXE_IP1; do
	[ -n "${!v:-}" ] || { echo "rxe: $v is not set: run inside ci/rxe/vm.sh --devices 2" >&2; exit 2; }
done
[ -x "$tv" ] || { echo "rxe: $tv not built" >&2; exit 2; }
command -v jq >/dev/null || { echo "rxe: jq not found" >&2; exit 2; }

# rdma_cm checks the reverse path of an incoming connect with a route lookup
# that has an output interface and no input one (validate_ipv4_net_dev);
# ci/rxe/net.sh only routes "iif lo", so without these two rules every
# connect between rxe0 and rxe1 is rejected (REJ reason 28).
ip rule show | grep -q 'oif veth1 lookup 7702' ||
	ip rule add pref 102 to "$RXE_IP0/32" oif veth1 lookup 7702
ip rule show | grep -q 'oif veth0 lookup 7701' ||
	ip rule add pref 103 to "$RXE_IP1/32" oif veth0 lookup 7701

work=${TV_RXE_OUT:-$(mktemp -d)}
mkdir -p "$work"
passed=0 failed=0 skipped=0
port=20000
failures=()

dev_of() { echo "rxe$(($1 % 2))"; }
ip_of() { echo "10.77.0.$(($1 % 2 + 1))"; }

# cluster N BASEPORT: "0=ip:port,1=ip:port,..."
cluster() {
	local n=$1 base=$2 j out=
	for ((j = 0; j < n; j++)); do
		out+="${out:+,}$j=$(ip_of "$j"):$((base + j))"
	done
	echo "$out"
}

port_ran=0 port_passed=0 gather_ran=0 gather_passed=0
junit_rows=()
result() { # result NAME pass|fail|skip [DETAIL]
	junit_rows+=("$1"$'\t'"$2"$'\t'"${3:-}")
	case "$1" in
	port_*) [ "$2" = skip ] || port_ran=$((port_ran + 1))
		[ "$2" = pass ] && port_passed=$((port_passed + 1)) ;;
	gather_*) [ "$2" = skip ] || gather_ran=$((gather_ran + 1))
		[ "$2" = pass ] && gather_passed=$((gather_passed + 1)) ;;
	esac
	case "$2" in
	pass) passed=$((passed + 1)); printf 'PASS  %s %s\n' "$1" "${3:-}" ;;
	skip) skipped=$((skipped + 1)); printf 'SKIP  %s: %s\n' "$1" "${3:-}" ;;
	*) failed=$((failed + 1)); failures+=("$1"); printf 'FAIL  %s %s\n' "$1" "${3:-}" ;;
	esac
}

# The devices' retry and error counters (since boot), after a failure:
# a drop, a retransmission or an RNR wait shows here.
rxe_counters() {
	local c
	for c in /sys/class/infiniband/rxe*/ports/1/hw_counters/*; do
		case "$c" in
		*retry* | *rnr* | *seq* | *err* | *duplicate*)
			[ "$(cat "$c" 2>/dev/null || echo 0)" = 0 ] ||
				echo "  $(echo "$c" | cut -d/ -f5,9): $(cat "$c")" ;;
		esac
	done
}

# run_scenario NAME FILE [EXTRA SERVE ARGS...]: one process per node.
run_scenario() {
	local name=$1 file=$2 n j rc all77=1 bad=0 t0 pids=() cl
	shift 2
	picked "$name" || return 0
	n=$(jq -r .nodes "$file")
	port=$((port + 16))
	cl=$(cluster "$n" "$port")
	t0=$(date +%s.%N)
	mkdir -p "$work/rec"
	for ((j = n - 1; j >= 0; j--)); do
		RDMA_DEVICE=$(dev_of "$j") timeout -k 5 $((tmo + 20)) \
			"$tv" serve "$file" --node "$j" --cluster "$cl" \
			--timeout "$tmo" --ack-timeout-ms "$ack" \
			--record "$work/rec/$name.$j.jsonl" "$@" \
			>"$work/$name.$j.log" 2>&1 &
		pids[j]=$!
	done
	for ((j = 0; j < n; j++)); do
		rc=0
		wait "${pids[j]}" || rc=$?
		[ "$rc" = 77 ] || all77=0
		[ "$rc" = 0 ] || [ "$rc" = 77 ] || bad=1
		echo "$rc" >"$work/$name.$j.rc"
	done
	local secs
	secs=$(echo "$(date +%s.%N) - $t0" | bc)
	if [ "$all77" = 1 ]; then
		result "$name" skip "$(sed -n 's/^SKIP: [^:]*: //p' "$work/$name.0.log" | head -1)"
	elif [ "$bad" = 0 ]; then
		result "$name" pass "($n processes, $(printf '%.1f' "$secs") s)"
	else
		result "$name" fail "($n processes)"
		for ((j = 0; j < n; j++)); do
			echo "---- $name node $j (exit $(cat "$work/$name.$j.rc")):"
			tail -n 30 "$work/$name.$j.log"
		done
		rxe_counters
	fi
}

# expect_refusal NAME WANT_TEXT ENV... -- SERVE ARGS: one process must exit
# non-zero with a message containing WANT_TEXT, and never say PASS.
expect_refusal() {
	local name=$1 want=$2 rc=0 envs=()
	shift 2
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	picked "$name" || return 0
	env "${envs[@]}" timeout -k 5 $((tmo + 20)) "$tv" serve "$@" \
		>"$work/$name.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] && grep -qF -- "$want" "$work/$name.log" &&
		! grep -q ': PASS:' "$work/$name.log"; then
		result "$name" pass "(exit $rc: $(grep -F -- "$want" "$work/$name.log" | head -1 | cut -c1-150))"
	else
		result "$name" fail "(exit $rc, wanted a message with '$want')"
		cat "$work/$name.log"
	fi
}

echo "rxe: $tv on $RXE_DEV0 ($RXE_IP0) and $RXE_DEV1 ($RXE_IP1); logs in $work"

# ---- every scenario -----------------------------------------------------------
for f in "$repo"/scenarios/*.json "$here"/scenarios/*.json; do
	[ -e "$f" ] || continue
	run_scenario "$(basename "$f" .json)" "$f"
done

# ---- port channels (docs/port.md), in both signal modes -------------------------
# Fetch-and-add signals and zero-length write-with-immediate ones (the
# receiver's proxy turns the immediate back into the 64-bit token).
for f in "$repo"/scenarios/port/*.json; do
	[ -e "$f" ] || continue
	b=$(basename "$f" .json)
	for mode in atomic write_imm; do
		# Deadlines for TCG: a packet rxe drops is sent again after
		# the QP's ACK timeout (MSCCL++'s 18: 1.07 s), and a wait
		# behind it must not fail at the simulator's 100 ms default
		# (the rendezvous scenarios get --ack-timeout-ms for the
		# same reason).  Programs with their own timeout_ns keep it.
		jq --arg m "$mode" '.port.signal = $m | .port.timeout_ns = 20000000000' \
			"$f" >"$work/port_${b}_$mode.json"
		run_scenario "port_${b}_$mode" "$work/port_${b}_$mode.json"
	done
done

# ---- RDMA READ gathers (docs/gather.md) -------------------------------------------
# One process per node, each a server of its partition and a client of
# its batches (two_servers: one client, two servers).  Deadlines for TCG:
# a READ rxe drops is sent again after the QP's ACK timeout (quiver's
# 14: 67 ms), and a gather behind it must not fail at 100 ms.
for f in "$repo"/scenarios/gather/*.json; do
	[ -e "$f" ] || continue
	b=$(basename "$f" .json)
	jq '.gather.timeout_ns = 20000000000' "$f" >"$work/gather_$b.json"
	run_scenario "gather_$b" "$work/gather_$b.json"
done

# ---- the suite's recordings, replayed in the simulator (docs/recording.md) --------
# Every scenario above ran with serve --record: one recording per node,
# merged into the run's, run again by replay --sim with its completions in
# the recorded order.  A run that does not replay identically is a
# fidelity finding, its first divergence printed (docs/simulator.md).
replay_recordings() {
	local name=recordings_replay n=0 same=0 bad=0 r b out v
	picked "$name" || return 0
	for r in "$work"/rec/*.0.jsonl; do
		[ -e "$r" ] || continue
		b=${r%.0.jsonl}
		n=$((n + 1))
		out=$work/rec/$(basename "$b").replay
		if ! "$tv" merge "$b.jsonl" "$b".[0-9]*.jsonl >"$out" 2>&1; then
			bad=$((bad + 1)); echo "REPLAY $(basename "$b"): merge failed:"; cat "$out"
			continue
		fi
		"$tv" replay "$b.jsonl" --sim >"$out" 2>&1
		case $? in
		0) same=$((same + 1)) ;;
		1) ;;
		*) bad=$((bad + 1)) ;;
		esac
		v=$(sed -n 's/^replay --sim: \([^(]*\) (.*/\1/p' "$out" | head -1)
		echo "REPLAY $(basename "$b"): ${v:-error}"
		[ "${v:-}" = "replayed identically" ] || sed -n '2,6p' "$out" | cut -c1-400
	done
	echo "$n recorded runs, $same replayed identically"
	if [ "$n" -gt 0 ] && [ "$bad" = 0 ]; then
		result "$name" pass "($n recorded runs, $same replayed identically; the rest: docs/simulator.md)"
	else
		result "$name" fail "($n recorded runs, $bad could not be merged or replayed)"
	fi
}
replay_recordings

# A recording from rxe with one completion altered (a receive that
# succeeded now failed): replay --sim must report the divergence at that
# very event, quoting it.  The recording is the first of the suite's that
# replays identically (basic_transfer's, usually).
recording_altered() {
	local name=recording_altered r src= i out=$work/rec/altered
	picked "$name" || return 0
	for r in "$work"/rec/*.jsonl; do
		[[ "$r" == *.[0-9].jsonl ]] && continue
		[ -e "$r" ] || continue
		if "$tv" replay "$r" --sim >/dev/null 2>&1; then src=$r; break; fi
	done
	if [ -z "$src" ]; then
		result "$name" fail "(no recording of the suite replays identically to alter)"
		return
	fi
	mkdir -p "$out"
	i=$(grep '"kind":"POLL","node":1,' "$src" |
	    grep '"op":"RECV_RDMA_WITH_IMM","status":"SUCCESS"' | sed -n 2p |
	    sed 's/^{"i":\([0-9]*\),.*/\1/')
	if [ -z "$i" ]; then
		result "$name" fail "($(basename "$src"): no second receive completion on node 1)"
		return
	fi
	sed "s/^\({\"i\":$i,.*\"status\":\)\"SUCCESS\"/\1\"RETRY_EXC_ERR\"/" "$src" >"$out/altered.jsonl"
	"$tv" replay "$out/altered.jsonl" --sim >"$out/replay.out" 2>&1
	if [ $? = 1 ] && grep -q "first divergence at recorded event $i " "$out/replay.out" &&
		grep -q "recorded: {\"i\":$i,.*RETRY_EXC_ERR" "$out/replay.out"; then
		result "$name" pass "($(basename "$src"): event $i altered, the divergence reported there)"
	else
		result "$name" fail "($(basename "$src"): event $i altered, not reported there)"
		head -n 6 "$out/replay.out" | cut -c1-300
	fi
}
recording_altered

# ---- MPI (docs/multihost.md) ------------------------------------------------------
# Two ranks, one per rxe device (mpirun's MPMD form gives each its
# RDMA_DEVICE); the ranks find their addresses from their devices' GIDs
# and gather them with MPI, rank 0 prints one verdict.
mpi_two_ranks() {
	local name=mpi_two_ranks f=$work/mpi_gather.json rc=0
	picked "$name" || return 0
	if ! command -v mpirun >/dev/null; then
		result "$name" skip "no mpirun (openmpi-bin)"
		return 0
	fi
	jq '.gather.timeout_ns = 20000000000' "$repo/scenarios/gather/quiver_reddit.json" >"$f"
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false \
		timeout -k 5 $((tmo + 20)) mpirun --oversubscribe \
		-np 1 -x RDMA_DEVICE="$RXE_DEV0" "$tv" serve "$f" --timeout "$tmo" : \
		-np 1 -x RDMA_DEVICE="$RXE_DEV1" "$tv" serve "$f" --timeout "$tmo" \
		>"$work/$name.log" 2>&1 || rc=$?
	if [ "$rc" = 0 ] && grep -q 'on 2 MPI ranks: PASS' "$work/$name.log"; then
		result "$name" pass "($(grep -c ': PASS:' "$work/$name.log") ranks passed)"
	elif grep -q 'built without MPI' "$work/$name.log"; then
		result "$name" skip "this build has no MPI"
	else
		result "$name" fail "(mpirun exit $rc)"
		tail -n 30 "$work/$name.log"
	fi
}
mpi_two_ranks

# Under mpirun every rank records and rank 0 gathers the recordings into
# the one file: both nodes' verbs in it, and it replays in the simulator.
mpi_recording() {
	local name=mpi_recording f=$repo/scenarios/basic_transfer.json rc=0
	local rec=$work/mpirec out
	picked "$name" || return 0
	if ! command -v mpirun >/dev/null; then
		result "$name" skip "no mpirun (openmpi-bin)"
		return 0
	fi
	mkdir -p "$rec"
	rm -f "$rec/$name.jsonl"
	out=$rec/$name.replay
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false \
		timeout -k 5 $((tmo + 20)) mpirun --oversubscribe \
		-np 1 -x RDMA_DEVICE="$RXE_DEV0" "$tv" serve "$f" --timeout "$tmo" --record "$rec/$name.jsonl" : \
		-np 1 -x RDMA_DEVICE="$RXE_DEV1" "$tv" serve "$f" --timeout "$tmo" --record "$rec/$name.jsonl" \
		>"$work/$name.log" 2>&1 || rc=$?
	if grep -q 'built without MPI' "$work/$name.log"; then
		result "$name" skip "this build has no MPI"
		return 0
	fi
	local merged nodes n0 n1 rv=
	merged=$(head -n1 "$rec/$name.jsonl" 2>/dev/null | jq -r '.recording.merged // empty')
	nodes=$(head -n1 "$rec/$name.jsonl" 2>/dev/null | jq -c '.recording.nodes // empty')
	n0=$(grep -c '"src":"verbs".*"node":0\|"node":0.*"src":"verbs"' "$rec/$name.jsonl" 2>/dev/null)
	n1=$(grep -c '"src":"verbs".*"node":1\|"node":1.*"src":"verbs"' "$rec/$name.jsonl" 2>/dev/null)
	if [ "$rc" = 0 ] && [ "$merged" = 2 ] && [ "$nodes" = "[0,1]" ] &&
		[ "${n0:-0}" -gt 0 ] && [ "${n1:-0}" -gt 0 ] &&
		grep -q 'recording of 2 rank(s) gathered by rank 0' "$work/$name.log"; then
		"$tv" replay "$rec/$name.jsonl" --sim >"$out" 2>&1
		rv=$(sed -n 's/^replay --sim: \([^(]*\) (.*/\1/p' "$out" | head -1)
	fi
	case $rv in
	"replayed identically"|"same outcome")
		result "$name" pass "(rank 0 gathered 2 recordings, $n0 + $n1 verbs events; replayed: $rv)" ;;
	*)
		result "$name" fail "(mpirun exit $rc, merged '$merged', nodes '$nodes', replay '$rv')"
		tail -n 20 "$work/$name.log"
		[ -f "$out" ] && tail -n 10 "$out" ;;
	esac
}
mpi_recording

# The benchmarks split across two processes, a node each (what two hosts
# run): under mpirun (a rank per rxe device, the addresses from MPI) and
# with --node (the two started by hand).  Node 0 must print every figure,
# the two sides exchanging handles and endpoints over node 0's TCP star.
mpirun_pair() { # mpirun_pair LOG ARGS...: a rank per rxe device (PAIR_TMO: s)
	local log=$1
	shift
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false \
		timeout -k 5 "${PAIR_TMO:-$((tmo + 20))}" mpirun --oversubscribe \
		-np 1 -x RDMA_DEVICE="$RXE_DEV0" "$tv" "$@" : \
		-np 1 -x RDMA_DEVICE="$RXE_DEV1" "$tv" "$@" >"$log" 2>&1
}

# bench_lines LOG PREFIX WANT: PREFIX lines in LOG, at least WANT of them
# with a positive figure in field 4 (bw/allreduce) or 3 (gather rows/s).
bench_lines() {
	awk -v p="$2" '$1 == p && (($2 == "bw" || $2 == "allreduce" || $2 == "lat" || $2 == "floor" || $2 ~ /^floor-/) ? $4 + 0 > 0 : $3 + 0 > 0) { n++ } END { exit !(n >= '"$3"') }' "$1"
}

mpi_benches() {
	local name rc log
	for name in mpi_bench_rxe mpi_bench_port mpi_bench_gather; do
		picked "$name" || continue
		if ! command -v mpirun >/dev/null; then
			result "$name" skip "no mpirun (openmpi-bin)"
			continue
		fi
		log=$work/$name.log rc=0
		case $name in
		mpi_bench_rxe)
			mpirun_pair "$log" bench rxe --sizes 65536,1048576 --bytes 8388608 \
				--lat-iters 200 --floor --timeout "$tmo" || rc=$?
			want="bench-rxe 4" ;;
		mpi_bench_port)
			mpirun_pair "$log" bench port --sizes 65536,1048576 --bytes 8388608 \
				--lat-iters 200 --allreduce 1048576 --floor --timeout "$tmo" || rc=$?
			want="bench-port 7" ;;
		mpi_bench_gather)
			mpirun_pair "$log" bench gather --total 32768 --batch 4096 \
				--timeout "$tmo" || rc=$?
			want="bench-gather 4" ;;
		esac
		if grep -q 'built without MPI' "$log"; then
			result "$name" skip "this build has no MPI"
		elif [ "$rc" = 0 ] && bench_lines "$log" $want && ! grep -q 'in flight' "$log"; then
			result "$name" pass "($(grep -c "^${want% *} " "$log") figures from rank 0)"
		else
			result "$name" fail "(mpirun exit $rc)"
			tail -n 30 "$log"
		fi
	done
}
mpi_benches

# Under mpirun, what one rank refuses ends the job at once: the rank says
# why, every rank still joins the collective the others wait in (no
# hang), and rank 0's verdict is FAIL.  A benchmark on one rank (it runs
# on two); a rank whose RDMA_DEVICE names no device (no address to give:
# the others must not wait for it);
# a rank whose scenario file is missing, with --record (rank 0 gathers
# the recordings and names the rank that made none), and every rank's
# (no recording to write: none is written).
mpi_run() { # mpi_run LOG MPIRUN-ARGS...: rc (the job's exit status)
	local log=$1
	shift
	rc=0
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false \
		timeout -k 5 90 mpirun --oversubscribe "$@" >"$log" 2>&1 || rc=$?
}
mpi_refusals() {
	local name=mpi_refusals bad=() log f=$repo/scenarios/basic_transfer.json
	local rec=$work/mpi_refusals.jsonl t0=$SECONDS
	picked "$name" || return 0
	if ! command -v mpirun >/dev/null; then
		result "$name" skip "no mpirun (openmpi-bin)"
		return 0
	fi
	log=$work/$name.one.log
	mpi_run "$log" -np 1 -x RDMA_DEVICE="$RXE_DEV0" "$tv" bench port \
		--sizes 65536 --bytes 1048576 --timeout 10
	if grep -q 'built without MPI' "$log"; then
		result "$name" skip "this build has no MPI"
		return 0
	fi
	{ [ "$rc" != 0 ] && [ "$rc" -lt 124 ] &&
		grep -q 'bench port: under mpirun a benchmark runs on 2 ranks (one node each), not 1' "$log"; } ||
		bad+=("bench port on 1 rank: exit $rc: $(tail -n 1 "$log")")
	log=$work/$name.nodev.log
	mpi_run "$log" -np 1 -x RDMA_DEVICE="$RXE_DEV0" "$tv" serve "$f" --timeout 20 : \
		-np 1 -x RDMA_DEVICE=nosuch_dev "$tv" serve "$f" --timeout 20
	{ [ "$rc" != 0 ] && [ "$rc" -lt 124 ] &&
		grep -q 'serve: rank 1: RDMA_DEVICE=nosuch_dev: no such device, valid names are: rxe0, rxe1' "$log" &&
		grep -q 'on 2 MPI ranks: FAIL' "$log"; } ||
		bad+=("a rank without a device: exit $rc: $(tail -n 1 "$log")")
	log=$work/$name.norec.log
	rm -f "$rec"
	mpi_run "$log" -np 1 -x RDMA_DEVICE="$RXE_DEV0" "$tv" serve "$f" --timeout 5 --record "$rec" : \
		-np 1 -x RDMA_DEVICE="$RXE_DEV1" "$tv" serve "$work/no_such.json" --timeout 5 --record "$rec"
	{ [ "$rc" != 0 ] && [ "$rc" -lt 124 ] &&
		grep -q "serve: --record $rec: rank 1 made no recording" "$log" &&
		grep -q 'on 2 MPI ranks: FAIL' "$log"; } ||
		bad+=("a rank without a scenario, --record: exit $rc: $(tail -n 1 "$log")")
	log=$work/$name.norecs.log
	rm -f "$rec"
	mpi_run "$log" -np 2 "$tv" serve "$work/no_such.json" --timeout 5 --record "$rec"
	{ [ "$rc" != 0 ] && [ "$rc" -lt 124 ] && [ ! -e "$rec" ] &&
		grep -q "serve: --record $rec: No data available" "$log" &&
		grep -q 'on 2 MPI ranks: FAIL' "$log"; } ||
		bad+=("no rank with a scenario, --record: exit $rc: $(tail -n 1 "$log")")
	if [ ${#bad[@]} = 0 ]; then
		result "$name" pass "(4 jobs each ended with FAIL saying why, $((SECONDS - t0)) s)"
	else
		result "$name" fail "(${#bad[@]} of 4 jobs wrong)"
		printf '  %s\n' "${bad[@]}"
	fi
}
mpi_refusals

# --node by hand, and the same benchmark with other options on each side:
# both must stop at once, naming the mismatch, instead of a wrong figure.
bench_node_split() {
	local name=bench_node_split rc0=0 rc1=0 p1 a0 a1
	picked "$name" || return 0
	port=$((port + 16))
	a0=$RXE_IP0:$port a1=$RXE_IP1:$((port + 1))
	RDMA_DEVICE=$RXE_DEV1 timeout -k 5 "$tmo" "$tv" bench port --node 1 \
		--addr0 "$a0" --addr1 "$a1" --sizes 65536 --bytes 4194304 \
		--lat-iters 100 --allreduce 1048576 >"$work/$name.1.log" 2>&1 &
	p1=$!
	RDMA_DEVICE=$RXE_DEV0 timeout -k 5 "$tmo" "$tv" bench port --node 0 \
		--addr0 "$a0" --addr1 "$a1" --sizes 65536 --bytes 4194304 \
		--lat-iters 100 --allreduce 1048576 >"$work/$name.0.log" 2>&1 || rc0=$?
	wait "$p1" || rc1=$?
	port=$((port + 16))
	a0=$RXE_IP0:$port a1=$RXE_IP1:$((port + 1))
	local m0=0 m1=0 t0 t1
	t0=$(date +%s)
	RDMA_DEVICE=$RXE_DEV1 timeout -k 5 "$tmo" "$tv" bench gather --node 1 \
		--addr0 "$a0" --addr1 "$a1" --total 8192 --batch 4096 \
		>"$work/$name.m1.log" 2>&1 &
	p1=$!
	RDMA_DEVICE=$RXE_DEV0 timeout -k 5 "$tmo" "$tv" bench gather --node 0 \
		--addr0 "$a0" --addr1 "$a1" --total 8192 --batch 2048 \
		>"$work/$name.m0.log" 2>&1 || m0=$?
	wait "$p1" || m1=$?
	t1=$(date +%s)
	if [ "$rc0" = 0 ] && [ "$rc1" = 0 ] && bench_lines "$work/$name.0.log" bench-port 3 &&
		! grep -q 'in flight' "$work/$name".[01].log &&
		[ "$m0" = 1 ] && [ "$m1" = 1 ] && [ $((t1 - t0)) -lt 60 ] &&
		grep -q fingerprint "$work/$name.m0.log" "$work/$name.m1.log"; then
		result "$name" pass "(port by hand: $(grep -c '^bench-port ' "$work/$name.0.log") figures; mismatched gathers stopped in $((t1 - t0)) s, exits $m0/$m1)"
	else
		result "$name" fail "(port exits $rc0/$rc1; mismatch exits $m0/$m1 in $((t1 - t0)) s)"
		tail -n 12 "$work/$name".*.log
	fi
}
bench_node_split

# A benchmark's peer killed (SIGKILL) while the figures are measured: the
# surviving node stops within seconds, non-zero, saying what it lost, and
# never hangs to its --timeout (on rxe a dead peer's RDMA never fails at
# retry_cnt 7: port and gather see the peers' TCP connection close, rxe's
# fetcher the rdma_cm disconnect).
bench_peer_dies() { # NAME KIND WANT_RE ARGS...
	local name=$1 kind=$2 want=$3 p0 p1 rc0=0 t0 k i
	shift 3
	picked "$name" || return 0
	port=$((port + 16))
	local a0=$RXE_IP0:$port a1=$RXE_IP1:$((port + 1))
	# Not under timeout(1): $! must be the node itself (SIGKILL to
	# timeout would leave it running); the test kills it in any case.
	RDMA_DEVICE=$RXE_DEV1 "$tv" bench "$kind" --node 1 \
		--addr0 "$a0" --addr1 "$a1" --timeout 120 "$@" >"$work/$name.1.log" 2>&1 &
	p1=$!
	# Line-buffered: its first figure is in the log as soon as printed.
	RDMA_DEVICE=$RXE_DEV0 timeout -k 5 "$tmo" stdbuf -oL "$tv" bench "$kind" --node 0 \
		--addr0 "$a0" --addr1 "$a1" --timeout 120 "$@" >"$work/$name.0.log" 2>&1 &
	p0=$!
	# Killed once node 0 printed its first figure (measuring, connected),
	# or after 30 s (still measuring its first configuration).
	for ((i = 0; i < 300; i++)); do
		grep -q "^bench-$kind " "$work/$name.0.log" && break
		sleep 0.1
	done
	kill -9 "$p1" 2>/dev/null
	wait "$p1" 2>/dev/null
	t0=$SECONDS
	wait "$p0" || rc0=$?
	k=$((SECONDS - t0))
	if [ "$rc0" != 0 ] && [ "$rc0" != 124 ] && [ "$k" -lt 60 ] &&
		grep -qE "$want" "$work/$name.0.log"; then
		result "$name" pass "(node 1 killed while measuring: node 0 exit $rc0 in $k s: $(grep -E "$want" "$work/$name.0.log" | head -1 | cut -c1-140))"
	else
		result "$name" fail "(first figure seen: $([ "$i" -lt 300 ] && echo yes || echo no); node 0 exit $rc0 in $k s)"
		tail -n 12 "$work/$name.0.log"
	fi
}
lost="node 1's coordinator connection closed \\(the process died\\?\\)"
bench_peer_dies bench_peer_dies_port port "^bench port: node 0: $lost$" --sizes 65536,4194304 --bytes 1073741824 --lat-iters 100000
bench_peer_dies bench_peer_dies_gather gather "^bench gather: [a-z0-9-]+: stopped: $lost$" --total 67108864 --batch 4096
bench_peer_dies bench_peer_dies_rxe rxe "^bench rxe: fetch failed: UNAVAILABLE: node 1 \\([0-9.:]+\\) went away: RDMA_CM_EVENT_DISCONNECTED$" --sizes 65536,4194304 --bytes 1073741824 --lat-iters 100000

# validate across two hosts: a rank per rxe device (what two hosts with a
# device each run).  Scenario nodes alternate between the ranks, the
# benchmarks run node 0 on rank 0 and node 1 on rank 1, perftest's server
# on rank 1; rank 0's report must follow the schema, name both ranks and
# hold every benchmark.  A scenario of each workload (and the two fault
# scenarios, which need basic_transfer and quiver_reddit) keeps it short.
mpi_validate() {
	local name=mpi_validate rc=0 sd=$work/mpi_validate_scenarios out=$work/validate_mpi
	picked "$name" || return 0
	if ! command -v mpirun >/dev/null; then
		result "$name" skip "no mpirun (openmpi-bin)"
		return 0
	fi
	rm -rf "$sd" "$out"
	mkdir -p "$sd/port" "$sd/gather"
	cp "$repo/scenarios/basic_transfer.json" "$sd/"
	cp "$repo/scenarios/port/ping_pong.json" "$sd/port/"
	cp "$repo/scenarios/gather/quiver_reddit.json" "$sd/gather/"
	# Its whole run, scenarios and benchmarks: a few of one process's.
	(cd "$repo" && PAIR_TMO=$((4 * tmo)) mpirun_pair "$work/$name.log" validate --out "$out" --scenarios "$sd" \
		--junit "$out/junit.xml" --timeout "$tmo") || rc=$?
	if grep -q 'built without MPI' "$work/$name.log"; then
		result "$name" skip "this build has no MPI"
	elif [ "$rc" = 0 ] && sh "$repo/tests/validate_report.sh" "$out" "$out/junit.xml" &&
		[ "$(jq '.ranks | length' "$out/report.json")" = 2 ] &&
		[ "$(jq '.benchmarks | length' "$out/report.json")" = 3 ] &&
		[ "$(jq '[.checks[] | select(.name | startswith("rank 1"))] | length' "$out/report.json")" -ge 5 ] &&
		ls "$out"/rank1/logs/*basic_transfer.1.log >/dev/null 2>&1; then
		result "$name" pass "($(jq -r '"\(.counts.pass) passed, \(.counts.skip) skipped of \(.checks | length) checks"' "$out/report.json") on 2 ranks)"
	else
		result "$name" fail "(mpirun exit $rc)"
		grep -E 'FAIL' "$work/$name.log" | head -20
		tail -n 15 "$work/$name.log"
	fi
}
mpi_validate

# ---- tensorverbs validate, interrupted (docs/validate.md) -----------------------
# Ctrl-C in the middle of its scenarios: it exits, and neither a serve
# process nor a QP of ours is left behind.
validate_interrupted() {
	local name=validate_interrupted pid rc=0 i qps procs before
	picked "$name" || return 0
	(cd "$repo" && exec "$tv" validate --out "$work/validate_int" --no-bench) \
		>"$work/$name.log" 2>&1 &
	pid=$!
	# Its scenarios have begun: QPs of its serve processes exist (the
	# kernel lists them with their pid), then Ctrl-C.
	before=0
	for ((i = 0; i < 600 && before == 0; i++)); do
		before=$( (rdma resource show qp 2>/dev/null || true) | grep -c " pid .*comm tensorverbs" || true)
		sleep 0.1
	done
	kill -INT "$pid"
	wait "$pid" || rc=$?
	sleep 1
	procs=$(pgrep -f "tensorverbs serve" | wc -l)
	qps=$( (rdma resource show qp 2>/dev/null || true) | grep -c " pid .*comm tensorverbs" || true)
	if [ "$rc" = 130 ] && [ "$before" -gt 0 ] && [ "$procs" = 0 ] && [ "$qps" = 0 ]; then
		result "$name" pass "(Ctrl-C with $before QPs of its processes up: exit $rc, no serve process, no QP left)"
	else
		result "$name" fail "(exit $rc; $before QPs seen before Ctrl-C; $procs serve processes and $qps QPs left)"
		tail -n 20 "$work/$name.log"
	fi
}
validate_interrupted

# ---- recovery -------------------------------------------------------------------
basic=$repo/scenarios/basic_transfer.json
cached=$repo/scenarios/cached_metadata.json

# A peer started late (TensorFlow #18630): node 0 retries until it is there.
late() {
	local name=late_peer rc0=0 rc1=0 p0 cl
	picked "$name" || return 0
	port=$((port + 16))
	cl=$(cluster 2 "$port")
	RDMA_DEVICE=rxe0 "$tv" serve "$basic" --node 0 --cluster "$cl" \
		--timeout "$tmo" --retry-delay-ms 300 >"$work/$name.0.log" 2>&1 &
	p0=$!
	sleep 3
	RDMA_DEVICE=rxe1 "$tv" serve "$basic" --node 1 --cluster "$cl" \
		--timeout "$tmo" >"$work/$name.1.log" 2>&1 || rc1=$?
	wait "$p0" || rc0=$?
	if [ "$rc0" = 0 ] && [ "$rc1" = 0 ]; then
		result "$name" pass "(node 1 started 3 s late)"
	else
		result "$name" fail "(exit $rc0/$rc1)"
		tail -n 15 "$work/$name.0.log" "$work/$name.1.log"
	fi
}
late

# A dropped connection mid-run: both ends reset, node 0 reconnects, the
# requests caught go again, every step still passes.
run_scenario reconnect_cached "$cached" --inject-disconnect 2
run_scenario reconnect_many "$repo/scenarios/many_concurrent.json" --inject-disconnect 2

# ---- faults on real verbs (the fault layer over the ibverbs device) ------------
# channel_errors NAME: channel errors in both nodes' summary lines, summed.
channel_errors() {
	cat "$work/$1".[01].log | sed -n 's/.* \([0-9]*\) channel errors.*/\1/p' |
		awk '{ s += $1 } END { print s + 0 }'
}

# hw_fault NAME FILE K PLAN: node K arms PLAN for its own hits; the run must
# pass with the fault fired (node K's summary) and a channel recovered from
# it somewhere (a summary's "channel errors").
hw_fault() {
	local name=$1 file=$2 k=$3 plan=$4 j rc bad=0 pids=() cl
	picked "$name" || return 0
	port=$((port + 16))
	cl=$(cluster 2 "$port")
	for ((j = 1; j >= 0; j--)); do
		RDMA_DEVICE=$(dev_of "$j") timeout -k 5 $((tmo + 20)) \
			"$tv" serve "$file" --node "$j" --cluster "$cl" \
			--timeout "$tmo" --ack-timeout-ms 2000 --faults "$plan" \
			--faults-node "$k" >"$work/$name.$j.log" 2>&1 &
		pids[j]=$!
	done
	for ((j = 0; j < 2; j++)); do
		rc=0
		wait "${pids[j]}" || rc=$?
		[ "$rc" = 0 ] || bad=1
	done
	local fired errs
	fired=$(sed -n 's/.* \([0-9]*\) faults fired here.*/\1/p' "$work/$name.$k.log" | tail -1)
	errs=$(channel_errors "$name")
	if [ "$bad" = 0 ] && [ "${fired:-0}" -ge 1 ] && [ "$errs" -ge 1 ]; then
		result "$name" pass "($plan on node $k: fired ${fired}x, $errs channel errors recovered)"
	else
		result "$name" fail "(exits ok=$((1 - bad)), fired ${fired:-0}, channel errors $errs)"
		tail -n 12 "$work/$name.0.log" "$work/$name.1.log"
	fi
}
# A lost ACK: here the one riding on node 0's second tensor write.
hw_fault hw_ack_drop "$cached" 0 "vf/ack/drop:nth=2,count=1"
# A lost TENSOR_REQUEST (posted as an empty RDMA_WRITE): the ACK timeout.
hw_fault hw_request_drop "$cached" 1 "vf/msg/drop/TENSOR_REQUEST:nth=2,count=1"
# The QP moved to ERR with ibv_modify_qp before a post: work flushes.
hw_fault hw_qp_error "$cached" 1 "vf/qp/error:nth=4,count=1"

# fiu-ctrl(1) enables a point in a running process: one QP error, once.
# Both processes record; the merged recording holds the firing (node 1,
# its own hit number) and replay --sim fires it there again, with the
# same outcome: the QP error, recovered.
fiu_ctrl_test() { # [fail]: without reconnect the run must fail, and so must its replay
	local name=fiu_ctrl_qp_error file=$here/long_cached.json j rc bad=0 pids=() cl fifo errs pid
	local ctl rec=$work/fiu rv mode=${1:-recover} node_failed=0
	if [ "$mode" = fail ]; then
		name=fiu_ctrl_qp_error_fails
		file=$work/long_cached_no_reconnect.json
		jq '.engine.reconnect = false | .engine.recv_timeout_ns = 2000000000' \
			"$here/long_cached.json" >"$file"
	fi
	picked "$name" || return 0
	command -v fiu-ctrl >/dev/null || { result "$name" skip "fiu-ctrl not installed (fiu-utils)"; return 0; }
	# libfiu's FIFOs need a local file system (not the VM's 9p shares).
	ctl=$(mktemp -d /tmp/fiu.XXXXXX)
	mkdir -p "$rec"
	port=$((port + 16))
	cl=$(cluster 2 "$port")
	for ((j = 1; j >= 0; j--)); do
		mkdir -p "$ctl/$j"
		RDMA_DEVICE=$(dev_of "$j") TMPDIR=$ctl/$j timeout -k 5 $((tmo + 20)) \
			"$tv" serve "$file" --node "$j" --cluster "$cl" \
			--timeout "$tmo" --ack-timeout-ms 2000 --fiu-ctrl \
			--record "$rec/$name.$j.jsonl" \
			>"$work/$name.$j.log" 2>&1 &
		pids[j]=$!
	done
	# Node 1's serve (a child of timeout): its FIFO names its pid.
	for ((j = 0; j < 100; j++)); do
		fifo=$(ls "$ctl"/1/fiu-ctrl-*.in 2>/dev/null | head -1)
		[ -n "$fifo" ] && break
		sleep 0.1
	done
	pid=${fifo##*fiu-ctrl-}
	pid=${pid%.in}
	# At once, not after a pause: the point fires at the first post_send,
	# which needs a connected channel, and a pause raced the run's end
	# once the run got faster (800 steps in 1.5 s).
	TMPDIR=$ctl/1 fiu-ctrl -c "enable name=vf/qp/error,onetime" "$pid" >"$work/$name.ctl.log" 2>&1 || bad=1
	for ((j = 0; j < 2; j++)); do
		rc=0
		wait "${pids[j]}" || rc=$?
		[ "$rc" = 0 ] || node_failed=1
	done
	rm -rf "$ctl"
	errs=$(channel_errors "$name")
	# Recovered: both nodes pass.  Without reconnect: the run fails.
	if [ "$mode" = fail ]; then
		[ "$node_failed" = 1 ] || bad=1
	else
		[ "$node_failed" = 0 ] || bad=1
	fi
	fiu_ctrl_replay "$name" "$rec" "$mode" || bad=1
	if [ "$bad" = 0 ] && [ "$mode" = fail ]; then
		result "$name" pass "(fiu-ctrl enabled vf/qp/error once in node 1, pid $pid, no reconnect: the run failed; recorded, replayed: $rv)"
	elif [ "$bad" = 0 ] && [ "$errs" -ge 1 ]; then
		result "$name" pass "(fiu-ctrl enabled vf/qp/error once in node 1, pid $pid: $errs channel errors recovered; recorded, replayed: $rv)"
	else
		result "$name" fail "(bad=$bad, channel errors $errs)"
		tail -n 12 "$work/$name.0.log" "$work/$name.1.log" "$work/$name.ctl.log" "$rec/$name.replay"
	fi
}

# The fiu-ctrl run's recordings, merged and replayed in the simulator:
# node 1 counted the firing itself, the recording has it with node 1's
# hit number, and the simulator fires it at that hit with the same outcome.
fiu_ctrl_replay() { # name dir [fail]; sets rv
	local name=$1 rec=$2 out=$2/$1.replay mode=${3:-recover}
	grep -q ", 1 faults fired here" "$work/$name.1.log" ||
		{ echo "fiu-ctrl: node 1 did not count the firing"; return 1; }
	"$tv" merge "$rec/$name.jsonl" "$rec/$name.0.jsonl" "$rec/$name.1.jsonl" \
		>"$out" 2>&1 || { cat "$out"; return 1; }
	grep -q '"kind":"FIRE","node":1,"point":"vf/qp/error","hit":0,"node_hit":[0-9]' \
		"$rec/$name.jsonl" || { echo "fiu-ctrl: no FIRE in the recording"; return 1; }
	"$tv" replay "$rec/$name.jsonl" --sim >"$out" 2>&1
	rc=$?
	cat "$out" | cut -c1-400
	rv=$(sed -n 's/^replay --sim: \([^(]*\) (.*/\1/p' "$out" | head -1)
	[ "$rc" -le 1 ] || return 1
	grep -q "faults: 1 recorded firing(s), 1 fired again" "$out" ||
		{ echo "fiu-ctrl: the simulator did not fire it at node 1's hit"; return 1; }
	if [ "$mode" = fail ]; then
		# The recorded run failed: the replay must fail the same way.
		case $rv in
		"replayed identically"|"reproduced: same failure kind") return 0 ;;
		esac
	else
		case $rv in
		"replayed identically"|"same outcome"|"reproduced: same failure kind") return 0 ;;
		esac
	fi
	echo "fiu-ctrl: the replay's outcome differs"
	return 1
}
fiu_ctrl_test
fiu_ctrl_test fail

# ---- every workload's hardware runner off its usual path ------------------------
# pair_run NAME FILE ARGS...: every node of FILE with ARGS; exits in prc[j],
# logs in $work/NAME.J.log, the wall time in psecs.
# pair_start NAME FILE TMO [ARGS...]: one serve per node of FILE in the
# background (pids[]); node $oom_node, if set, runs tensorverbs-oom with
# $oom_var in its environment (the allocation sweep below).
node_bin() { # J: the command node J runs
	if [ "$1" = "${oom_node:-}" ]; then
		echo "env $oom_var $oom_bin"
	else
		echo "$tv"
	fi
}
pair_start() {
	local name=$1 file=$2 t=$3 n j cl
	shift 3
	n=$(jq -r .nodes "$file")
	port=$((port + 16))
	cl=$(cluster "$n" "$port")
	pids=()
	for ((j = n - 1; j >= 0; j--)); do
		RDMA_DEVICE=$(dev_of "$j") timeout -k 5 $((t + 20)) \
			$(node_bin "$j") serve "$file" --node "$j" --cluster "$cl" \
			--timeout "$t" --ack-timeout-ms 2000 "$@" \
			${pair_record:+--record "$work/$name.$j.jsonl"} \
			>"$work/$name.$j.log" 2>&1 &
		pids[j]=$!
	done
}
pair_run() {
	local j t0=$SECONDS
	pair_start "$1" "$2" "$tmo" "${@:3}"
	prc=()
	for ((j = 0; j < ${#pids[@]}; j++)); do
		prc[j]=0
		wait "${pids[j]}" || prc[j]=$?
	done
	psecs=$((SECONDS - t0))
}
# has NAME J TEXT: node J's log holds TEXT (fixed string).
has() { grep -qF -- "$3" "$work/$1.$2.log"; }
# fired NAME J: the faults node J's summary says fired there.
fired() { sed -n 's/.* \([0-9]*\) faults fired here.*/\1/p' "$work/$1.$2.log" | tail -1; }
# pair_verdict NAME OK DETAIL: pass when OK is 0, else fail with the logs.
pair_verdict() {
	if [ "$2" = 0 ]; then
		result "$1" pass "$3"
	else
		result "$1" fail "(exits ${prc[*]}; $3)"
		for j in "${!prc[@]}"; do
			echo "---- $1 node $j (exit ${prc[j]}):"
			tail -n 15 "$work/$1.$j.log" | cut -c1-300
		done
	fi
}

# The end of a run after a QP error at the sender's tensor write (validate's
# fault_qp_error): the sender has nothing left and waits for the others; the
# receiver re-requests after its reconnect and the sender serves it from
# that wait.  The write's completion reaches the sender by the fabric, the
# receiver's "done" by the coordinator's TCP: whichever comes first, the
# sender must not end with the response live.  Polls that come back empty
# (vf/cq/delay, half of them) widen the window: the old runner failed here
# with "live_responses = 1 at the end".  Run several times (HW_END_RUNS).
hw_end_after_qp_error() {
	local name=hw_end_after_qp_error i bad=0 runs=${HW_END_RUNS:-8}
	local out="$runs runs, both nodes passed each time"
	picked "$name" || return 0
	for ((i = 1; i <= runs; i++)); do
		pair_run "$name" "$repo/scenarios/basic_transfer.json" \
			--faults "vf/qp/error:nth=3,count=1;vf/cq/delay:p=0.5,arg=2000000" \
			--faults-node 0
		if [ "${prc[0]}" != 0 ] || [ "${prc[1]}" != 0 ] ||
			! has "$name" 1 "1/1 recvs done (1 ok" ||
			[ "$(channel_errors "$name")" -lt 1 ]; then
			bad=1
			out="run $i of $runs failed"
			break
		fi
	done
	pair_verdict "$name" $bad "(vf/qp/error at node 0's write, half its polls empty: $out)"
}
hw_end_after_qp_error

# --verbose: every event logged with its node and time.
if picked serve_verbose; then
	pair_run serve_verbose "$basic" --verbose
	ok=1
	[ "${prc[0]}/${prc[1]}" = 0/0 ] &&
		grep -qE "^\[node 0 +[0-9.]+ s\] published step 1 'weights' for node 1$" "$work/serve_verbose.0.log" &&
		grep -qE "^\[node 1 +[0-9.]+ s\] step 1: recv 'weights' from node 0: OK$" "$work/serve_verbose.1.log" && ok=0
	pair_verdict serve_verbose $ok "($(grep -c '^\[node ' "$work/serve_verbose.0.log") + $(grep -c '^\[node ' "$work/serve_verbose.1.log") events logged)"
fi

# expect_faults in the scenario, over every node's firings (node 0 sums
# them): one QP error fired on node 1, expected once (holds) or 2..3
# times (node 0 fails, naming the point and the count).
for exp in 1 '{"min": 2, "max": 3}'; do
	if [ "$exp" = 1 ]; then name=hw_expect_faults; else name=hw_expect_faults_unmet; fi
	picked "$name" || continue
	jq --argjson e "$exp" '.faults = [{"point": "vf/qp/error", "nth": 4, "count": 1}] |
		.expect_faults = {"vf/qp/error": $e}' "$cached" >"$work/$name.json"
	pair_run "$name" "$work/$name.json" --faults-node 1
	ok=1
	if [ "$name" = hw_expect_faults ]; then
		[ "${prc[0]}/${prc[1]}" = 0/0 ] && [ "$(fired "$name" 1)" = 1 ] && ok=0
		pair_verdict "$name" $ok "(vf/qp/error fired once on node 1, expected once: both nodes pass)"
	else
		[ "${prc[0]}" = 1 ] && [ "$(fired "$name" 1)" = 1 ] &&
			has "$name" 0 "FAIL: expect_faults vf/qp/error: fired 1 times on all nodes, expected 2..3" && ok=0
		pair_verdict "$name" $ok "(node 0 exit ${prc[0]}: expect_faults vf/qp/error: fired 1 times on all nodes, expected 2..3)"
	fi
done

# A memory registration refused on real verbs, on either side of a 64 MiB
# transfer.  The receiver's: its recv ends with the allocation named.  The
# sender's: it fails naming the send, and the run stops at once (the
# receiver is told, instead of waiting for the tensor until --timeout).
large=$repo/scenarios/large_tensor.json
if picked hw_reg_mr_fail_recv; then
	pair_run hw_reg_mr_fail_recv "$large" --faults "vf/reg_mr/fail:nth=1,count=1" --faults-node 1
	ok=1
	[ "${prc[0]}/${prc[1]}" = 0/1 ] && [ "$(fired hw_reg_mr_fail_recv 1)" = 1 ] &&
		has hw_reg_mr_fail_recv 1 "FAIL: step 1: recv 'big' from node 0: expected ok, got RESOURCE_EXHAUSTED: allocating 67108864 bytes for 'big' failed: Cannot allocate memory" && ok=0
	pair_verdict hw_reg_mr_fail_recv $ok "(node 1: recv 'big': RESOURCE_EXHAUSTED, the allocation named; node 0 passes)"
fi
if picked hw_reg_mr_fail_send; then
	pair_run hw_reg_mr_fail_send "$large" --faults "vf/reg_mr/fail:nth=1,count=1" --faults-node 0
	ok=1
	[ "${prc[0]}/${prc[1]}" = 1/1 ] && [ "$psecs" -lt 60 ] && [ "$(fired hw_reg_mr_fail_send 0)" = 1 ] &&
		has hw_reg_mr_fail_send 0 "FAIL: step 1: send 'big' to node 1: Cannot allocate memory" &&
		grep -qE "^FAIL: stopped .*: node 0: step 1: send 'big' to node 1: Cannot allocate memory$" "$work/hw_reg_mr_fail_send.1.log" && ok=0
	pair_verdict hw_reg_mr_fail_send $ok "(node 0: send 'big' refused; node 1 stopped, told why, in $psecs s)"
fi

# Port channels: a QP moved to ERR mid-run (operations on it fail with
# their cause, nothing is retried, as MSCCL++ and the simulator: the run
# passes with the failed tasks counted and the failed connection shown); a
# receive not posted under write-with-immediate signals (RNR: the sender
# retries); a producer stalled.  Short deadlines: the waits behind the
# failed connection end at timeout_ns.
if picked port_qp_error; then
	jq '.port.timeout_ns = 3000000000' "$repo/scenarios/port/sequence.json" >"$work/port_qp_error.json"
	pair_run port_qp_error "$work/port_qp_error.json" --faults "vf/qp/error:nth=3,count=1" --faults-node 1
	ok=1 tf=$(sed -n 's/.*all nodes: [0-9]*\/36 operations, \([0-9]*\) tasks failed.*/\1/p' "$work/port_qp_error.0.log")
	[ "${prc[0]}/${prc[1]}" = 0/0 ] && [ "$(fired port_qp_error 1)" = 1 ] && [ "${tf:-0}" -ge 1 ] &&
		has port_qp_error 1 "; failed: an IB work item failed: Work Request Flushed Error" && ok=0
	pair_verdict port_qp_error $ok "(vf/qp/error on node 1: ${tf:-0} tasks failed on all nodes, the flushed connection shown)"
fi
if picked port_recv_drop; then
	jq '.port.signal = "write_imm" | .port.timeout_ns = 20000000000' "$repo/scenarios/port/sequence.json" >"$work/port_recv_drop.json"
	pair_run port_recv_drop "$work/port_recv_drop.json" --faults "vf/recv/drop:nth=2,count=1" --faults-node 1
	ok=1
	[ "${prc[0]}/${prc[1]}" = 0/0 ] && [ "$(fired port_recv_drop 1)" = 1 ] &&
		has port_recv_drop 0 "all nodes: 36/36 operations, 0 tasks failed" && ok=0
	pair_verdict port_recv_drop $ok "(a receive not posted on node 1, write_imm signals: 36/36 operations)"
fi
if picked port_producer_stall; then
	jq '.port.timeout_ns = 20000000000' "$repo/scenarios/port/sequence.json" >"$work/port_producer_stall.json"
	pair_run port_producer_stall "$work/port_producer_stall.json" --faults "port/producer/stall:nth=2,count=1,arg=20000000"
	ok=1
	[ "${prc[0]}/${prc[1]}" = 0/0 ] && [ "$(fired port_producer_stall 0)" = 1 ] && [ "$(fired port_producer_stall 1)" = 1 ] &&
		has port_producer_stall 0 "all nodes: 36/36 operations, 0 tasks failed" && ok=0
	pair_verdict port_producer_stall $ok "(a producer stalled 20 ms on each node: 36/36 operations)"
fi

# A flush whose proxy stalls past the scenario's deadline: the put's
# flush wait ends with -ETIMEDOUT and node 0's task fails naming the
# operation and its peer (a flush on every put, node 0's proxy stalled
# 6 s on its first trigger, the deadline 3 s); node 1, waiting for a ping
# that comes late, fails its task too.  With faults injected a failed
# task is tolerated (the run passes, exit 0), but its why is printed.
if picked port_flush_stall; then
	jq '.port.timeout_ns = 3000000000 | .programs[0].flush_every = 1' \
		"$repo/scenarios/port/ping_pong.json" >"$work/port_flush_stall.json"
	pair_run port_flush_stall "$work/port_flush_stall.json" \
		--faults "port/proxy/stall:nth=1,count=1,arg=6000000000" --faults-node 0
	ok=1
	[ "${prc[0]}/${prc[1]}" = 0/0 ] && [ "$(fired port_flush_stall 0)" = 1 ] &&
		has port_flush_stall 0 "node 0, program 0 (ping_pong): put to node 1: Connection timed out (tolerated: faults were injected)" &&
		has port_flush_stall 0 "2 tasks failed" && ok=0
	pair_verdict port_flush_stall $ok "(node 0's proxy stalled past the deadline: its put's flush timed out, named)"
fi

# READ gathers: a QP moved to ERR (the gather engine resets it and reads
# again: every row right); one READ of a post list failing.
for g in gather_qp_error gather_read_error; do
	picked "$g" || continue
	case $g in
	gather_qp_error) plan="vf/qp/error:nth=3,count=1" ;;
	gather_read_error) plan="gather/read/error:nth=2,count=1" ;;
	esac
	jq '.gather.timeout_ns = 20000000000' "$repo/scenarios/gather/quiver_reddit.json" >"$work/$g.json"
	pair_run "$g" "$work/$g.json" --faults "$plan" --faults-node 1
	ok=1
	[ "${prc[0]}/${prc[1]}" = 0/0 ] && [ "$(fired "$g" 1)" = 1 ] &&
		has "$g" 0 "all nodes: 2/2 gathers, 8192 rows, 0 failed, 0 wrong" && ok=0
	pair_verdict "$g" $ok "($plan on node 1: 2/2 gathers, 8192 rows, 0 failed, 0 wrong)"
done

# A tensor write corrupted on real verbs (vf/write/corrupt on the sender,
# one bit): without validation the receiver's data check finds it (its
# digest differs from what the sender publishes); with validation the
# engine refuses it as DATA_LOSS and nothing wrong is delivered as OK.
for v in off on; do
	name=hw_corrupt_validation_$v
	picked "$name" || continue
	jq --argjson on "$([ $v = on ] && echo true || echo false)" \
		'.engine = {"validate_checksum": $on}' "$basic" >"$work/$name.json"
	pair_run "$name" "$work/$name.json" --faults "vf/write/corrupt:nth=1,count=1" --faults-node 0
	ok=1
	if [ $v = off ]; then
		want=": data corrupted (digest "
	else
		want="expected ok, got DATA_LOSS"
	fi
	[ "${prc[1]}" = 1 ] && [ "$(fired "$name" 0)" = 1 ] && has "$name" 1 "$want" &&
		! grep -q ': PASS:' "$work/$name.1.log" && ok=0
	pair_verdict "$name" $ok "(one bit flipped in node 0's write; node 1 fails: '$want')"
done

# Allocation failures on real verbs (tensorverbs-oom, tests/rxe/oom_ctl.c),
# and the set-up calls a device, the kernel or the C library refuses for
# want of resources (tests/rxe/wrap_calls.c: ibv_create_qp, ibv_reg_mr,
# rdma_connect, socket, pthread_create, fopen ...; ENOMEM, EAGAIN):
# node K's sites are recorded in a clean run, those in the code only real
# verbs run are kept (the hardware runner, coordinator, peers, the
# workloads' hw and bench files, the backends: the unit suite's site sweep
# covers the rest), and the first allocation of each is failed in turn,
# one pair run each.  Every run must end by itself (no signal, no
# timeout), both nodes with 0 (absorbed), 1 (failed) or, for node K only,
# 2 (refused before it ran); node K failing must say why ("Cannot
# allocate memory", "Resource temporarily unavailable"), and a site that
# was reached must have failed.
# ~190 runs: only with TV_RXE_OOM=1 (ci/rxe-coverage.sh, where the runs
# also count for coverage; it fails CI when one of these fails).
oom_bin=${TV_OOM_BIN:-$(dirname "$tv")/tensorverbs-oom}
oom_hw_re='/(testbed/(hw[^/]*|coord|peers|mpi[^/]*)|testbed/workloads/[a-z]+/(hw[^/]*|bench[^/]*)|backends/(cm|cm_wire|config|ibverbs))\.c:'
# oom_serve FILE NAME, oom_bench KIND NAME: start both nodes (pids[]).
oom_serve() { pair_start "$2" "$1" 20; }
oom_bench() {
	local kind=$1 name=$2 j a0 a1 args
	port=$((port + 16))
	a0=$RXE_IP0:$port a1=$RXE_IP1:$((port + 1))
	case $kind in
	gather) args=(--total 4096 --batch 1024) ;;
	rxe) args=(--sizes 65536 --bytes 1048576 --lat-iters 50 --floor) ;;
	*) args=(--sizes 65536 --bytes 1048576 --lat-iters 50) ;;
	esac
	pids=()
	for j in 1 0; do
		RDMA_DEVICE=$(dev_of "$j") timeout -k 5 40 $(node_bin "$j") bench "$kind" \
			--node "$j" --addr0 "$a0" --addr1 "$a1" --timeout 20 \
			"${args[@]}" >"$work/$name.$j.log" 2>&1 &
		pids[j]=$!
	done
}
oom_pair() { # NAME K VAR=VALUE LAUNCH...: prc[], node K under tensorverbs-oom
	local name=$1 k=$2 i j
	oom_node=$k oom_var=$3
	"${@:4}" "$name"
	oom_node=
	prc=()
	prc[k]=0
	wait "${pids[k]}" || prc[k]=$?
	# A peer that node K left before the coordinator was up waits for it
	# to join until --timeout, as it should (a late node): 1 s, then
	# stopped (exit "stopped"; a peer told by the coordinator ends in
	# well under a second, and the sweep's time is in its sites).
	for ((j = 0; j < ${#pids[@]}; j++)); do
		[ "$j" = "$k" ] && continue
		for ((i = 0; i < 10; i++)); do
			kill -0 "${pids[j]}" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "${pids[j]}" 2>/dev/null; then
			kill -TERM "${pids[j]}" 2>/dev/null
			wait "${pids[j]}"
			prc[j]=stopped
			oom_stopped=$((oom_stopped + 1))
		else
			prc[j]=0
			wait "${pids[j]}" || prc[j]=$?
		fi
	done
}
# oom_verdict NAME K SITE: "" if the run of SITE is right, else why.
oom_verdict() {
	local name=$1 k=$2 site=$3 j
	for j in "${!prc[@]}"; do
		case "${prc[j]}" in
		0 | 1) ;;
		stopped) [ "$j" != "$k" ] || { echo "node $k stopped"; return; } ;;
		2) [ "$j" = "$k" ] || { echo "node $j exit 2"; return; } ;;
		*) echo "node $j exit ${prc[j]} (signal or timeout)"; return ;;
		esac
	done
	if has "$name" "$k" "oom: site $site never reached"; then
		return
	fi
	has "$name" "$k" "oom: site $site failed" ||
		{ echo "node $k did not say whether the site failed"; return; }
	# ENOMEM, or pthread_create's EAGAIN (tests/rxe/wrap_calls.c).
	if [ "${prc[k]}" != 0 ] && ! has "$name" "$k" "Cannot allocate memory" &&
		! has "$name" "$k" "Resource temporarily unavailable"; then
		echo "node $k exit ${prc[k]} without saying it ran out of memory"
	fi
}
oom_sweep() { # NAME K LAUNCH...
	local name=$1 k=$2 sites=() where=() i bad=() fired=0 why t0=$SECONDS
	shift 2
	oom_stopped=0
	picked "$name" || return 0
	if [ "${TV_RXE_OOM:-0}" != 1 ]; then
		result "$name" skip "(runs in CI's coverage stage: ci/rxe-coverage.sh sets TV_RXE_OOM=1 and fails on its failure)"
		return
	fi
	[ -x "$oom_bin" ] || { result "$name" fail "($oom_bin not built: ci/build-cli.sh builds it)"; return; }
	oom_pair "$name" "$k" "TV_OOM_RECORD=$work/$name.sites" "$@"
	if [[ "${prc[*]}" =~ [1-9] ]] || [ ! -s "$work/$name.sites" ]; then
		pair_verdict "$name" 1 "the clean recording run failed"
		return
	fi
	# Each return address minus one: the call's line, not the next one's.
	# (No process substitution: the VM has no /dev/fd.)
	# A backend's sites are kept one per function: each fails the same
	# way up through the testbed (its set-up call, passed up).
	addr2line -f -e "$oom_bin" $(while read -r off; do printf '0x%x ' $((off - 1)); done \
		<"$work/$name.sites") | paste -d ' ' - - | paste -d ' ' "$work/$name.sites" - |
		grep -E "${oom_re:-$oom_hw_re}" | awk -v b="${oom_backends:-1}" \
			-v one="${oom_one_re:-/backends/}" \
			'$3 !~ one || (b && !seen[$2]++) { print $1, $3 }' |
		sed 's| .*/\([^/]*/[^/]*\.c:\)| \1|' >"$work/$name.hw"
	while read -r off loc; do
		sites+=("$off")
		where+=("$loc")
	done <"$work/$name.hw"
	[ ${#sites[@]} -gt 0 ] || { pair_verdict "$name" 1 "no hardware-only allocation site recorded"; return; }
	for ((i = 0; i < ${#sites[@]}; i++)); do
		oom_pair "$name" "$k" "TV_OOM_SITE=${sites[i]}" "$@"
		has "$name" "$k" "oom: site ${sites[i]} failed" && fired=$((fired + 1))
		why=$(oom_verdict "$name" "$k" "${sites[i]}")
		if [ -n "$why" ]; then
			bad+=("${where[i]} (${sites[i]}): $why")
			cp "$work/$name.$k.log" "$work/$name.site${sites[i]}.log"
		fi
	done
	if [ ${#bad[@]} = 0 ]; then
		result "$name" pass "(node $k: ${#sites[@]} hardware-only allocation and call sites of $(wc -l <"$work/$name.sites"), $fired failed, every run ended by itself and said why; $oom_stopped waiting peers stopped after 1 s, $((SECONDS - t0)) s)"
	else
		result "$name" fail "(node $k: ${#bad[@]} of ${#sites[@]} sites wrong)"
		printf '  %s\n' "${bad[@]}" | head -20
	fi
}
for k in 0 1; do
	oom_sweep oom_rendezvous_$k $k oom_serve "$repo/scenarios/basic_transfer.json"
	oom_sweep oom_port_$k $k oom_serve "$repo/scenarios/port/ping_pong.json"
	oom_sweep oom_gather_$k $k oom_serve "$repo/scenarios/gather/direct_single_qp.json"
	oom_sweep oom_bench_rxe_$k $k oom_bench rxe
	# The port and gather benchmarks: their own sites, and the first of
	# each function of their engine and of the backends (each fails one
	# link of the benchmark's set-up chain; all of them, ~10 min more
	# under TCG, would fail the same links again).
	# (Port's node 1 makes the same set-up as node 0: its own sites.)
	for b in port gather; do
		if [ "$b$k" = port1 ]; then
			oom_backends=0 oom_sweep oom_bench_${b}_$k $k oom_bench $b
			continue
		fi
		oom_re="$oom_hw_re|/engine/$b/[a-z_]+\.c:" oom_one_re='/(backends|engine)/' \
			oom_sweep oom_bench_${b}_$k $k oom_bench $b
	done
done
# The fault layer's, the fault plan's and the recorder's sites (faults/,
# testbed/plan.c, testbed/record.c), one per function, on node K of a run
# with both (a plan that never fires, --record): the hardware runners'
# arms for an injector that could not be made, a device that could not be
# wrapped or tapped, and a recording that ran out of memory.
oom_serve_flt() { pair_record=1 pair_start "$2" "$1" 20 --faults vf/cq/delay:nth=1000000; }
# (Gather's node 1 wraps and records as node 0 does: node 0 only.)
for k in 0 1; do
	for wl in rendezvous:basic_transfer gather:gather/direct_single_qp; do
		[ "$wl$k" = gather:gather/direct_single_qp1 ] && continue
		oom_re='/(faults/[a-z_]+|testbed/(record|plan))\.c:' oom_one_re='/(faults|testbed)/' \
			oom_sweep oom_${wl%%:*}_flt_$k $k oom_serve_flt "$repo/scenarios/${wl#*:}.json"
	done
done
# A rank out of memory while rank 0 gathers the recordings (serve
# --record under mpirun): every allocation of the testbed's MPI code
# fails once on each rank in turn; every job must end by itself, both
# ranks failing and saying so (tests/swarm/mpi_oom.sh; its swarm and
# validate sweeps run in the unit suite, without devices).
mpi_oom_record() {
	local name=mpi_oom_record out rc=0
	picked "$name" || return 0
	if [ "${TV_RXE_OOM:-0}" != 1 ]; then
		result "$name" skip "(runs in CI's coverage stage: ci/rxe-coverage.sh sets TV_RXE_OOM=1 and fails on its failure)"
		return
	fi
	[ -x "$oom_bin" ] || { result "$name" fail "($oom_bin not built: ci/build-cli.sh builds it)"; return; }
	out=$(MPI_OOM_ENV0="RDMA_DEVICE=$RXE_DEV0" MPI_OOM_ENV1="RDMA_DEVICE=$RXE_DEV1" \
		OMPI_MCA_plm_rsh_agent=false bash "$repo/tests/swarm/mpi_oom.sh" "$oom_bin" \
		"$work/$name" serve serve "$basic" --timeout 60 --record "$work/$name.jsonl" 2>&1) || rc=$?
	case $rc in
	0) result "$name" pass "($out)" ;;
	77) result "$name" skip "($out)" ;;
	*)
		result "$name" fail "(exit $rc)"
		printf '%s\n' "$out" | tail -n 20 ;;
	esac
}
mpi_oom_record

# The fault sweep: every point real verbs can inject into a workload
# (`tensorverbs faults`, WHERE "sim and hw", its workload or any), armed
# on node K for its 1st and its 3rd hit, once, in one pair run each.
# Every run must end by itself (no signal, no timeout) with no broken
# invariant; when the point fired, a "recover" point leaves both nodes
# passing, a "may fail" point lets a node fail (exit 1) saying why (a
# FAIL line).  ~120 runs: only with TV_RXE_FAULTS=1 (ci/rxe-coverage.sh,
# where they also count for coverage; it fails CI when one fails).
flt_verdict() { # NAME K MUST: "" if the run is right, else why
	local name=$1 k=$2 must=$3 j f
	for j in "${!prc[@]}"; do
		case "${prc[j]}" in
		0) ;;
		1) has "$name" "$j" "FAIL: " || { echo "node $j exit 1 without a FAIL line"; return; } ;;
		*) echo "node $j exit ${prc[j]} (usage, signal or timeout)"; return ;;
		esac
		if grep -q "invariant:" "$work/$name.$j.log"; then
			echo "node $j: $(grep -m1 "invariant:" "$work/$name.$j.log" | cut -c1-200)"
			return
		fi
	done
	f=$(fired "$name" "$k")
	if [ "$must" = recover ] && [ "${f:-0}" -ge 1 ] && [[ "${prc[*]}" =~ 1 ]]; then
		echo "a recover point fired ${f}x and a node failed: $(grep -h -m1 "FAIL: " "$work/$name".[01].log | cut -c1-200)"
	fi
}
flt_sweep() { # NAME WORKLOAD FILE K
	local name=$1 wl=$2 file=$3 k=$4 pts=() musts=() i j nth why bad=() runs=0 fires=0 fails=0 t0=$SECONDS
	picked "$name" || return 0
	if [ "${TV_RXE_FAULTS:-0}" != 1 ]; then
		result "$name" skip "(runs in CI's coverage stage: ci/rxe-coverage.sh sets TV_RXE_FAULTS=1 and fails on its failure)"
		return
	fi
	# (No process substitution: the VM has no /dev/fd.)
	"$tv" faults | awk -F'  +' -v w="$wl" 'NR > 1 && $4 == "sim and hw" &&
		($3 == w || $3 == "any") { print $1 "|" $2 }' >"$work/$name.points"
	while IFS='|' read -r pt must; do
		pts+=("$pt")
		musts+=("$must")
	done <"$work/$name.points"
	[ ${#pts[@]} -gt 0 ] || { result "$name" fail "(tensorverbs faults lists no point real verbs can inject into $wl)"; return; }
	: >"$work/$name.runs"
	for ((i = 0; i < ${#pts[@]}; i++)); do
		for nth in 1 3; do
			tmo=30 pair_run "$name" "$file" --faults "${pts[i]}:nth=$nth,count=1" --faults-node "$k"
			runs=$((runs + 1))
			# One line a run: what fired, how each node ended, and why.
			printf '%s:nth=%s (%s): fired %s, exits %s: %s\n' "${pts[i]}" "$nth" \
				"${musts[i]}" "$(fired "$name" "$k")" "${prc[*]}" \
				"$(grep -h -m1 'FAIL: ' "$work/$name".[01].log | head -n 1 | cut -c1-160)" >>"$work/$name.runs"
			[ "$(fired "$name" "$k")" -ge 1 ] 2>/dev/null && fires=$((fires + 1))
			[[ "${prc[*]}" =~ 1 ]] && fails=$((fails + 1))
			why=$(flt_verdict "$name" "$k" "${musts[i]}")
			if [ -n "$why" ]; then
				bad+=("${pts[i]}:nth=$nth (${musts[i]}): $why")
				for j in "${!prc[@]}"; do
					cp "$work/$name.$j.log" "$work/$name.${pts[i]//\//_}.$nth.$j.log"
				done
			fi
		done
	done
	if [ ${#bad[@]} = 0 ]; then
		result "$name" pass "(node $k: ${#pts[@]} points x nth 1, 3: $runs runs, $fires fired, $fails with a node failing as its point allows; every run ended by itself, $((SECONDS - t0)) s)"
	else
		result "$name" fail "(node $k: ${#bad[@]} of $runs runs wrong)"
		printf '  %s\n' "${bad[@]}" | head -20
	fi
}
for k in 0 1; do
	flt_sweep flt_rendezvous_$k rendezvous "$cached" $k
	flt_sweep flt_port_$k port "$repo/scenarios/port/ping_pong.json" $k
	flt_sweep flt_gather_$k gather "$repo/scenarios/gather/direct_single_qp.json" $k
done

# The receive's verdicts on real verbs, in the simulator's words (the
# verdict code is shared): each negative scenario of ctest's makes node 1
# fail with the message its simulator run prints; deadline is
# simulator-only (skipped).
hw_negative() { # NAME WANT_ON_NODE_1_OR_0 NODE
	local name=hw_negative_$1 f=$repo/tests/scenarios/negative/$1.json ok=1
	picked "$name" || return 0
	pair_run "$name" "$f"
	[ "${prc[$3]}" = 1 ] && has "$name" "$3" "$2" && ok=0
	pair_verdict "$name" $ok "(node $3 exit ${prc[$3]}: '$2')"
}
hw_negative expect_ok_got_error "FAIL: step 1: recv 't' from node 0: expected ok, got NOT_FOUND: gone" 1
hw_negative expect_error_got_tensor "FAIL: step 1: recv 't' from node 0: expected an error, got a tensor" 1
hw_negative wrong_data "FAIL: step 1: recv 't' from node 0: data differs from the expected fill (digest 0x" 1
hw_negative wrong_shape "FAIL: step 1: recv 't' from node 0: shape [4,4], expected [4,5]" 1
hw_negative wrong_error_code "FAIL: step 1: recv 't' from node 0: expected NOT_FOUND, got ABORTED: stop" 1
hw_negative wrong_error_message "FAIL: step 1: recv 't' from node 0: message \"stop\" does not contain \"go on\"" 1
hw_negative wrong_strings "FAIL: step 1: recv 't' from node 0: string element 1 differs from the expected \"c\"" 1
hw_negative wrong_dead "FAIL: step 1: recv 't' from node 0: is_dead 1, expected 0" 1
hw_negative wrong_stats "FAIL: expect_stats \$.expect_stats[0].msgs_sent.META_DATA_UPDATE: 1, expected 0..0" 0
if picked hw_negative_deadline; then
	pair_run hw_negative_deadline "$repo/tests/scenarios/negative/deadline.json"
	ok=1
	[ "${prc[0]}/${prc[1]}" = 77/77 ] && has hw_negative_deadline 0 "SKIP: neg-deadline: it models link latency/bandwidth" && ok=0
	pair_verdict hw_negative_deadline $ok "(simulated link timing and a virtual deadline: both skip, naming why)"
fi

# Set-up data that lies (tests/rxe/coord_liar.py between node 1 and node
# 0's coordinator changes node 1's blob): node 0 refuses it naming node 1
# and the field, both nodes stop within seconds, nothing is connected.
liar_run() { # NAME FILE MODE
	local name=$1 file=$2 mode=$3 lp cl0 cl1 j lpid pids=()
	port=$((port + 16))
	lp=$((port + 8))
	cl0=$(cluster 2 "$port")
	cl1="0=$(ip_of 0):$lp,1=$(ip_of 1):$((port + 1))"
	python3 "$here/coord_liar.py" "$(ip_of 0):$lp" "$(ip_of 0):$port" "$mode" \
		>"$work/$name.liar.log" 2>&1 &
	lpid=$!
	sleep 0.5
	prc=()
	local t0=$SECONDS
	for j in 0 1; do
		local cl=$cl0
		[ "$j" = 1 ] && cl=$cl1
		RDMA_DEVICE=$(dev_of "$j") timeout -k 5 $((tmo + 20)) \
			"$tv" serve "$file" --node "$j" --cluster "$cl" \
			--timeout "$tmo" --ack-timeout-ms 2000 \
			>"$work/$name.$j.log" 2>&1 &
		pids[j]=$!
	done
	for j in 0 1; do
		prc[j]=0
		wait "${pids[j]}" || prc[j]=$?
	done
	wait "$lpid" 2>/dev/null
	psecs=$((SECONDS - t0))
}
liar_test() { # NAME FILE MODE WANT
	local ok=1
	picked "$1" || return 0
	liar_run "$1" "$2" "$3"
	[ "${prc[0]}/${prc[1]}" = 1/1 ] && [ "$psecs" -lt 60 ] &&
		grep -qF "coord_liar: $3: AG seq" "$work/$1.liar.log" &&
		has "$1" 0 "FAIL: set-up: $4" && ok=0
	pair_verdict "$1" $ok "(node 1's blob changed ($3): node 0 says '$4', both stop in $psecs s)"
}
pkt=$repo/scenarios/port/packets.json
liar_test setup_lie_port_truncate "$pkt" truncate "node 1's set-up data is malformed ("
liar_test setup_lie_port_magic "$pkt" magic "node 1's set-up data is not ours ("
liar_test setup_lie_port_handle "$pkt" handle "node 1's set-up data is malformed ("
liar_test setup_lie_port_qpn "$pkt" endpoint:87:1 "node 1's set-up data is bad for pair 0"
liar_test setup_lie_port_pair "$pkt" endpoint:80:9 "node 1's set-up data lacks pair 0"
gsmall=$work/gather_small.json
jq '.gather.rows = 1024 | .gather.row_bytes = 64 | .gather.qps_per_peer = 2 |
	.gather.post_list = 16 | .gather.timeout_ns = 20000000000 |
	.batches = [{"node": 0, "dist": "uniform", "count": 256},
		    {"node": 1, "dist": "uniform", "count": 256, "at_ns": 1000}]' \
	"$repo/scenarios/gather/quiver_reddit.json" >"$gsmall"
liar_test setup_lie_gather_truncate "$gsmall" truncate "node 1's set-up data is not ours (295 bytes"
liar_test setup_lie_gather_handle "$gsmall" handle "node 1's partition handle: malformed"
liar_test setup_lie_gather_endpoint "$gsmall" endpoint:110:1 "node 1's endpoint 0 is malformed"

# Port channels with flipped bits (vf/write/corrupt on node 0): LL flags
# catch a torn packet, not flipped data bits, so the receiver's check of
# the packets' contents must; a corrupted put shows in the final check.
if picked port_corrupt_packets; then
	jq '.port.timeout_ns = 5000000000' "$pkt" >"$work/port_corrupt_packets.json"
	pair_run port_corrupt_packets "$work/port_corrupt_packets.json" --faults "vf/write/corrupt:nth=2,count=1" --faults-node 0
	ok=1
	[ "${prc[1]}" = 1 ] && [ "$(fired port_corrupt_packets 0)" = 1 ] &&
		grep -qE "^FAIL: node 1, program [01] \(packet_ping_pong\): packets #[0-9]+ from node 0 read as complete hold other data than was sent$" "$work/port_corrupt_packets.1.log" && ok=0
	pair_verdict port_corrupt_packets $ok "(one bit of node 0's second LL write flipped: node 1's packet check names it)"
fi
if picked port_corrupt_put; then
	jq '.port.timeout_ns = 5000000000' "$repo/scenarios/port/sequence.json" >"$work/port_corrupt_put.json"
	pair_run port_corrupt_put "$work/port_corrupt_put.json" --faults "vf/write/corrupt:nth=1,count=1,arg=16" --faults-node 0
	ok=1
	[ "${prc[0]}/${prc[1]}" = 1/0 ] && [ "$(fired port_corrupt_put 0)" = 1 ] &&
		has port_corrupt_put 1 "node 1: program 0 (sequence) ended with node 1's byte " &&
		has port_corrupt_put 0 "FAIL: 1 program region(s) ended other than the reference says, though every task of every node succeeded: data changed in flight, undetected" && ok=0
	pair_verdict port_corrupt_put $ok "(16 bits of node 0's first put flipped: node 1 names the byte, node 0 fails the run: undetected)"
fi

# Gathers: a batch with an id past the tensor is refused before anything
# is posted (the run goes on: 2 of 3 gathers, as the simulator counts);
# READs failing at every post (the engine gives up on the rows, names
# them; faults were armed, so the run passes with the rows counted).
if picked gather_id_out_of_range; then
	jq '.batches = [{"node": 0, "ids": [0, 700, 5000]}] + .batches' "$gsmall" >"$work/gather_id_out_of_range.json"
	pair_run gather_id_out_of_range "$work/gather_id_out_of_range.json"
	ok=1
	[ "${prc[0]}/${prc[1]}" = 0/0 ] && has gather_id_out_of_range 0 "all nodes: 2/3 gathers" && ok=0
	pair_verdict gather_id_out_of_range $ok "(ids [0, 700, 5000] of 1024 rows: refused, 2/3 gathers)"
fi
if picked gather_reads_fail; then
	pair_run gather_reads_fail "$gsmall" --faults "gather/read/error:count=100000" --faults-node 0
	ok=1 nf=$(sed -n 's/.*all nodes: [0-9]*\/2 gathers, [0-9]* rows, \([0-9]*\) failed.*/\1/p' "$work/gather_reads_fail.0.log")
	[ "${prc[0]}/${prc[1]}" = 0/0 ] && [ "${nf:-0}" -ge 1 ] && ok=0
	pair_verdict gather_reads_fail $ok "(every READ of node 0 failing: ${nf:-0} rows failed, named, the run passes)"
fi

# ---- the benchmark runs: every figure it prints is there and positive --------
bench_smoke() {
	local out
	picked bench_smoke || return 0
	# Bounded: a hang fails this test, not the whole VM run.
	out=$("$tv" bench rxe --sizes 4096,65536 --bytes 262144 --lat-iters 200 \
		--floor --timeout 120 2>&1)
	if [ $? = 0 ] &&
		printf '%s\n' "$out" | awk '
			$1 == "bench-rxe" && $2 == "bw" && $4 > 0 { bw++ }
			$1 == "bench-rxe" && $2 == "lat" && $5 > 0 { lat++ }
			$1 == "bench-rxe" && $2 == "floor" && $4 > 0 { floor++ }
			END { exit !(bw == 2 && lat == 1 && floor == 1) }'; then
		result bench_smoke pass "($(printf '%s\n' "$out" | awk '$2 == "lat" { l = $5 } $2 == "floor" { f = $4 } END { printf "fetch %s us, bare verbs %s us", l, f }'))"
	else
		result bench_smoke fail
		printf '%s\n' "$out" | tail -n 12
	fi
}
bench_smoke

# A run that cannot finish in time stops, says so, and fails; the forked
# node goes too (its own alarm, or its parent's death).
bench_timeout() {
	local out rc i t0=$SECONDS
	picked bench_timeout || return 0
	out=$("$tv" bench rxe --sizes 4096 --bytes 65536 --lat-iters 1000000 \
		--timeout 2 2>&1)
	rc=$?
	for ((i = 0; i < 20; i++)); do
		pgrep -f 'tensorverbs bench rxe' >/dev/null || break
		sleep 0.1
	done
	if [ "$rc" = 1 ] && [ $((SECONDS - t0)) -lt 30 ] &&
		printf '%s\n' "$out" | grep -q 'node 0: no result within --timeout' &&
		! pgrep -f 'tensorverbs bench rxe' >/dev/null; then
		result bench_timeout pass "(exit 1 after $((SECONDS - t0)) s, both nodes gone)"
	else
		result bench_timeout fail "(exit $rc after $((SECONDS - t0)) s)"
		printf '%s\n' "$out" | tail -n 6
	fi
}
bench_timeout

# The engine benchmark's other options at once: the per-phase breakdown,
# --record (a recording per node), --wrap-only, a window, inline size and
# poll modes: every figure and both recordings there.
# --max-inline above what the device takes (rxe: 1 KiB): the engine's QPs
# and the floor's are made without inline data instead of not at all, as
# a ConnectX with a smaller inline limit would need; every figure comes.
bench_inline_fallback() {
	local name=bench_inline_fallback out rc=0
	picked "$name" || return 0
	out=$("$tv" bench rxe --sizes 4096 --bytes 65536 --lat-iters 20 --floor \
		--max-inline 4096 --timeout 120 2>&1) || rc=$?
	printf '%s\n' "$out" >"$work/$name.log"
	if [ "$rc" = 0 ] && bench_lines "$work/$name.log" bench-rxe 3 &&
		grep -q '^bench-rxe floor' "$work/$name.log"; then
		result "$name" pass "(--max-inline 4096 on rxe: $(grep -c '^bench-rxe ' "$work/$name.log") figures, the floor's among them)"
	else
		result "$name" fail "(exit $rc)"
		tail -n 12 "$work/$name.log"
	fi
}
bench_inline_fallback

bench_options() {
	local name=bench_options out rc=0 n0 n1
	picked "$name" || return 0
	rm -f "$work/$name.rec".node[01]
	out=$("$tv" bench rxe --sizes 4096 --bytes 65536 --lat-iters 50 --breakdown \
		--window 4 --max-inline 64 --fetcher-poll busy --publisher-poll event \
		--record "$work/$name.rec" --wrap-only --timeout 120 2>&1) || rc=$?
	printf '%s\n' "$out" >"$work/$name.log"
	n0=$(sed -n 's/^bench rxe: node 0 recorded \([0-9]*\) verbs events to .*/\1/p' "$work/$name.log")
	n1=$(sed -n 's/^bench rxe: node 1 recorded \([0-9]*\) verbs events to .*/\1/p' "$work/$name.log")
	if [ "$rc" = 0 ] && bench_lines "$work/$name.log" bench-rxe 2 &&
		grep -q '^bench-rxe bw 4096 [0-9]* (16 fetches, window 4,' "$work/$name.log" &&
		[ "$(grep -c '^bench-rxe breakdown .* us median ' "$work/$name.log")" = 5 ] &&
		[ "${n0:-0}" -gt 0 ] && [ "${n1:-0}" -gt 0 ] &&
		[ -s "$work/$name.rec.node0" ] && [ -s "$work/$name.rec.node1" ]; then
		result "$name" pass "(5 breakdown phases; recorded $n0 + $n1 verbs events)"
	else
		result "$name" fail "(exit $rc)"
		tail -n 12 "$work/$name.log"
	fi
}
bench_options

# Options past what a run can take, bounded without refusing: a window
# of 200 fetches of 1 MiB is cut to 128 (the destinations in flight stay
# within 128 MiB); --bytes below four puts still makes four.
bench_clamps() {
	local name=bench_clamps r1=0 r2=0
	picked "$name" || return 0
	"$tv" bench rxe --sizes 1048576 --bytes 4194304 --window 200 --lat-iters 10 \
		--timeout 120 >"$work/$name.rxe.log" 2>&1 || r1=$?
	"$tv" bench port --sizes 65536 --bytes 65536 --lat-iters 10 --timeout 60 \
		>"$work/$name.port.log" 2>&1 || r2=$?
	if [ "$r1/$r2" = 0/0 ] &&
		grep -q '^bench-rxe bw 1048576 [1-9][0-9]* (4 fetches, window 128,' "$work/$name.rxe.log" &&
		grep -q '^bench-port bw 65536 [1-9][0-9]*$' "$work/$name.port.log"; then
		result "$name" pass "(window 200 of 1 MiB ran as 128; 64 KiB of 64 KiB puts measured)"
	else
		result "$name" fail "(exit $r1/$r2)"
		tail -n 6 "$work/$name.rxe.log" "$work/$name.port.log"
	fi
}
bench_clamps

# Refusals: a value out of range names the option; --breakdown with
# --node; node 1 not there (node 0 names the address it tried).
bench_refusals() {
	local name=bench_refusals r1=0 r2=0 r3=0 r4=0 t0
	picked "$name" || return 0
	"$tv" bench rxe --sizes 0 >"$work/$name.1.log" 2>&1 || r1=$?
	"$tv" bench rxe --breakdown --node 0 >"$work/$name.2.log" 2>&1 || r2=$?
	"$tv" bench gather --batch 0 >"$work/$name.3.log" 2>&1 || r3=$?
	port=$((port + 16))
	t0=$SECONDS
	RDMA_DEVICE=$RXE_DEV0 timeout -k 5 120 "$tv" bench rxe --node 0 \
		--addr0 "$RXE_IP0:$port" --addr1 "$RXE_IP1:$((port + 1))" \
		--sizes 4096 --bytes 65536 --timeout 60 >"$work/$name.4.log" 2>&1 || r4=$?
	if [ "$r1/$r2/$r3/$r4" = 2/2/2/1 ] &&
		grep -q '^bench rxe: bad option --sizes 0$' "$work/$name.1.log" &&
		grep -q '^bench rxe: --breakdown needs both nodes in one host' "$work/$name.2.log" &&
		grep -q '^bench gather: bad option --batch 0$' "$work/$name.3.log" &&
		grep -qF "bench rxe: node 0: not connected: connecting to node 1 at $RXE_IP1:$((port + 1)) failed after" "$work/$name.4.log"; then
		result "$name" pass "(exits 2/2/2/1, each naming the option or the absent peer; $((SECONDS - t0)) s for the peer)"
	else
		result "$name" fail "(exits $r1/$r2/$r3/$r4)"
		head -n 3 "$work/$name".[1-4].log
	fi
}
bench_refusals

# ---- refusals: a clear message and a non-zero exit ---------------------------
port=$((port + 16))
c2=$(cluster 2 "$port")
expect_refusal bad_sl "RDMA_QP_SL=9" RDMA_QP_SL=9 -- "$basic" --node 0 --cluster "$c2"
expect_refusal bad_mtu "RDMA_QP_MTU=3000" RDMA_QP_MTU=3000 -- "$basic" --node 0 --cluster "$c2"
expect_refusal unknown_device "nosuch0" RDMA_DEVICE=nosuch0 -- "$basic" --node 0 --cluster "$c2"
expect_refusal not_a_number "RDMA_QP_TIMEOUT" RDMA_QP_TIMEOUT=fourteen -- "$basic" --node 0 --cluster "$c2"
expect_refusal wrong_device "is on device rxe0" RDMA_DEVICE=rxe1 -- "$basic" --node 0 --cluster "$c2"
expect_refusal no_address "cannot bind 10.77.0.9:$port with rdma_cm" -- "$basic" --node 0 \
	--cluster "0=10.77.0.9:$port,1=$RXE_IP1:$((port + 1))"
# Nobody listens on node 1's port: three attempts, then the reason.
expect_refusal peer_absent "$RXE_IP1:$((port + 1)) failed after 3 attempt(s): RDMA_CM_EVENT_REJECTED" -- \
	"$basic" --node 0 --cluster "$c2" --connect-attempts 3 --retry-delay-ms 200

# expect_exit NAME RC WANT ENV... -- SERVE ARGS: exit RC exactly, with a
# message containing WANT, and never a PASS.
expect_exit() {
	local name=$1 code=$2 want=$3 rc=0 envs=()
	shift 3
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	picked "$name" || return 0
	env "${envs[@]}" timeout -k 5 60 "$tv" serve "$@" >"$work/$name.log" 2>&1 || rc=$?
	if [ "$rc" = "$code" ] && grep -qF -- "$want" "$work/$name.log" &&
		! grep -q ': PASS:' "$work/$name.log"; then
		result "$name" pass "(exit $rc: $(grep -F -- "$want" "$work/$name.log" | head -1 | cut -c1-150))"
	else
		result "$name" fail "(exit $rc, wanted $code and a message with '$want')"
		cat "$work/$name.log"
	fi
}
# Refused before any device is opened: the scenario, the plan, the node.
printf '{"nodes": 2, "steps": [' >"$work/truncated.json"
expect_exit serve_bad_scenario 2 "tensorverbs serve: invalid scenario $work/truncated.json" -- \
	"$work/truncated.json" --node 0 --cluster "$c2"
expect_exit serve_bad_faults 2 "tensorverbs serve: bad --faults: " -- \
	"$basic" --node 0 --cluster "$c2" --faults "vf/no/such:nth=1"
expect_exit serve_node_range 2 "tensorverbs serve: --node 5, but the scenario has 2 nodes" -- \
	"$basic" --node 5 --cluster "$c2"
expect_exit serve_no_peer 2 "tensorverbs serve: no address for node 1 (--peer J=ADDR:PORT or --cluster)" -- \
	"$basic" --node 0 --cluster "0=$RXE_IP0:$port"
# What has no hardware equivalent is a SKIP (77) naming it.
expect_exit skip_sim_fault 77 "sim/deliver/delay" -- \
	"$basic" --node 0 --cluster "$c2" --faults "sim/deliver/delay:nth=1,count=1"
jq '.link = {"latency_ns": 5000}' "$basic" >"$work/sim_link.json"
expect_exit skip_sim_link 77 "it models link latency/bandwidth" -- \
	"$work/sim_link.json" --node 0 --cluster "$c2"
expect_exit skip_port_recycle 77 "recycles semaphores" -- \
	"$repo/tests/regressions/port_795_recycled_semaphore.json" --node 0 --cluster "$c2"
# libfiu's FIFO names do not fit: refused before connecting.
expect_exit fiu_ctrl_tmpdir_long 2 "TMPDIR is longer than 240 bytes: no room for libfiu's remote control FIFOs" \
	TMPDIR="/tmp/$(printf 'd%.0s' {1..250})" -- "$basic" --node 0 --cluster "$c2" --fiu-ctrl
# libfiu cannot make its FIFOs (TMPDIR does not exist): the run fails at
# once, naming it (the summary says no more: nothing was opened).
expect_exit fiu_ctrl_tmpdir_missing 1 "libfiu remote control on /nonexistent/tmp/fiu-ctrl-PID failed" \
	TMPDIR=/nonexistent/tmp -- "$basic" --node 0 --cluster "$c2" --fiu-ctrl
# A recording that could not be written at the end: refused at the start,
# before connecting (node 1 is not there: no attempt may be made).
record_unwritable() {
	local name=record_unwritable rc=0 want="tensorverbs serve: node 0: --record /nonexistent/dir/n0.jsonl: No such file or directory"
	picked "$name" || return 0
	timeout -k 5 60 "$tv" serve "$basic" --node 0 --cluster "$c2" --record /nonexistent/dir/n0.jsonl \
		--connect-attempts 2 --retry-delay-ms 100 >"$work/$name.log" 2>&1 || rc=$?
	if [ "$rc" = 1 ] && grep -qF -- "$want" "$work/$name.log" &&
		! grep -q 'connecting to node 1' "$work/$name.log"; then
		result "$name" pass "(exit 1 before any connection attempt: $want)"
	else
		result "$name" fail "(exit $rc, wanted 1 and '$want' before connecting)"
		cat "$work/$name.log"
	fi
}
record_unwritable
# A recording named without a folder goes to the current one, checked
# the same way (here: the repository, read-only in the VM).
if picked record_relative_readonly; then
	rc=0
	timeout -k 5 60 "$tv" serve "$basic" --node 0 --cluster "$c2" --record n0.jsonl \
		--connect-attempts 2 --retry-delay-ms 100 >"$work/record_relative_readonly.log" 2>&1 || rc=$?
	want="tensorverbs serve: node 0: --record n0.jsonl: Read-only file system"
	if [ "$rc" = 1 ] && grep -qF -- "$want" "$work/record_relative_readonly.log" &&
		! grep -q 'connecting to node 1' "$work/record_relative_readonly.log"; then
		result record_relative_readonly pass "(exit 1 before connecting: $want)"
	else
		result record_relative_readonly fail "(exit $rc, wanted 1 and '$want')"
		cat "$work/record_relative_readonly.log"
	fi
fi

# Last, since it takes an address away: under mpirun, a rank whose
# device has no IPv4 address (rxe1 with 10.77.0.2 removed from its
# interface, put back after) has none to give; it says so, naming the
# device, and the job ends (every rank joins the exchange).
mpi_no_ipv4() {
	local name=mpi_no_ipv4 log=$work/mpi_no_ipv4.log ifc cidr ok=1
	picked "$name" || return 0
	if ! command -v mpirun >/dev/null; then
		result "$name" skip "no mpirun (openmpi-bin)"
		return 0
	fi
	# (No process substitution: the VM has no /dev/fd.)
	cidr=$(ip -o -4 addr show | awk -v ip="$RXE_IP1" \
		'{ split($4, a, "/") } a[1] == ip { print $2, $4; exit }')
	ifc=${cidr% *} cidr=${cidr#* }
	[ -n "$ifc" ] || { result "$name" fail "(no interface holds $RXE_IP1)"; return; }
	ip addr del "$cidr" dev "$ifc"
	sleep 1 # the device's GID table follows the address
	mpi_run "$log" -np 1 -x RDMA_DEVICE="$RXE_DEV0" "$tv" serve "$basic" --timeout 20 : \
		-np 1 -x RDMA_DEVICE="$RXE_DEV1" "$tv" serve "$basic" --timeout 20
	ip addr add "$cidr" dev "$ifc"
	sleep 1
	[ "$rc" != 0 ] && [ "$rc" -lt 124 ] &&
		grep -q "serve: rank 1: no RoCE device with an IPv4 address named $RXE_DEV1 (2 device(s) found): set RDMA_DEVICE" "$log" &&
		grep -q 'on 2 MPI ranks: FAIL' "$log" && ok=0
	if [ $ok = 0 ]; then
		result "$name" pass "(rank 1 named its device without an address, the job ended: exit $rc)"
	else
		result "$name" fail "(exit $rc)"
		head -n 20 "$log"
	fi
}
mpi_no_ipv4

echo
printf 'rxe: port scenarios (both signal modes): %d ran, %d passed\n' "$port_ran" "$port_passed"
printf 'rxe: gather scenarios: %d ran, %d passed\n' "$gather_ran" "$gather_passed"

# JUnit XML of every test (docs/results.md), for CI systems.
xml_escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' \
	-e 's/"/\&quot;/g' -e "s/'/\\&apos;/g" -e 's/[[:cntrl:]]//g'; }
{
	echo '<?xml version="1.0" encoding="UTF-8"?>'
	echo '<testsuites>'
	printf '  <testsuite name="tensorverbs rxe" tests="%d" failures="%d" errors="0" skipped="%d">\n' \
		"$((passed + failed + skipped))" "$failed" "$skipped"
	for row in "${junit_rows[@]}"; do
		IFS=$'\t' read -r name status detail <<<"$row"
		name=$(printf '%s' "$name" | xml_escape)
		detail=$(printf '%s' "$detail" | xml_escape)
		case "$status" in
		pass) printf '    <testcase classname="tensorverbs.rxe" name="%s"/>\n' "$name" ;;
		skip) printf '    <testcase classname="tensorverbs.rxe" name="%s">\n      <skipped message="%s"/>\n    </testcase>\n' "$name" "$detail" ;;
		*) printf '    <testcase classname="tensorverbs.rxe" name="%s">\n      <failure message="%s" type="rxe">logs: %s/%s.*.log</failure>\n    </testcase>\n' \
			"$name" "${detail:-failed}" "$work" "$name" ;;
		esac
	done
	echo '  </testsuite>'
	echo '</testsuites>'
} >"$work/junit.xml"
printf 'rxe: %d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
[ "$failed" = 0 ] || { printf 'rxe: failed: %s\n' "${failures[*]}"; exit 1; }
exit 0

#!/bin/sh
# Recordings (docs/recording.md) made on the simulator, run again with
# `replay --sim`.  Modes:
#   suite TV WORK DIR...   every scenario of the directories: recorded,
#                          replayed; prints "N recorded runs, N replayed
#                          identically" and fails unless all are
#   altered TV WORK FILE   one completion's status changed: the divergence
#                          is found at that very event, exit 1
#   faults TV WORK FILE    a run under faults replays identically
#   malformed TV WORK FILE a plain trace, a truncated recording, a broken
#                          line: exit 2 with the culprit named
set -u
mode=$1 tv=$2 work=$3
shift 3
rm -rf "$work" && mkdir -p "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

case $mode in
suite)
	n=0 same=0
	for dir in "$@"; do
		for f in "$dir"/*.json; do
			b=$(basename "$f" .json)
			n=$((n + 1))
			"$tv" run "$f" --record "$work/$b.jsonl" -q >/dev/null 2>&1
			rc=$?
			[ $rc -le 3 ] && [ -s "$work/$b.jsonl" ] ||
				fail "$b: run --record exit $rc, no recording"
			if "$tv" replay "$work/$b.jsonl" --sim >"$work/$b.out" 2>&1; then
				same=$((same + 1))
			else
				echo "$b:"; cat "$work/$b.out"
			fi
		done
	done
	echo "$n recorded runs, $same replayed identically"
	[ "$n" -gt 0 ] && [ "$same" -eq "$n" ] || exit 1
	;;
altered)
	f=$1
	"$tv" run "$f" --record "$work/r.jsonl" -q || fail "run --record"
	# The third successful receive completion of node 1 now failed.
	i=$(grep '"kind":"POLL","node":1,' "$work/r.jsonl" |
	    grep '"op":"RECV_RDMA_WITH_IMM","status":"SUCCESS"' | sed -n 3p |
	    sed 's/^{"i":\([0-9]*\),.*/\1/')
	[ -n "$i" ] || fail "no third receive completion on node 1"
	sed "s/^\({\"i\":$i,.*\"status\":\)\"SUCCESS\"/\1\"RETRY_EXC_ERR\"/" \
		"$work/r.jsonl" >"$work/altered.jsonl"
	cmp -s "$work/r.jsonl" "$work/altered.jsonl" && fail "nothing altered"
	"$tv" replay "$work/r.jsonl" --sim >"$work/same.out" 2>&1 ||
		{ cat "$work/same.out"; fail "the unaltered recording diverges"; }
	"$tv" replay "$work/altered.jsonl" --sim >"$work/alt.out" 2>&1
	rc=$?
	cat "$work/alt.out"
	[ $rc -eq 1 ] || fail "altered: exit $rc, expected 1"
	grep -q "first divergence at recorded event $i " "$work/alt.out" ||
		fail "the divergence is not reported at the altered event $i"
	grep -q "recorded: {\"i\":$i,.*RETRY_EXC_ERR" "$work/alt.out" ||
		fail "the altered line is not quoted"
	;;
faults)
	f=$1 plan=$2
	"$tv" run "$f" --faults "$plan" --record "$work/r.jsonl" -q
	grep -q '"src":"fault","kind":"FIRE"' "$work/r.jsonl" ||
		fail "no fault fired in the recording"
	"$tv" replay "$work/r.jsonl" --sim >"$work/out" 2>&1
	rc=$?
	cat "$work/out"
	[ $rc -eq 0 ] && grep -q "replayed identically" "$work/out" ||
		fail "a faulted run did not replay identically (exit $rc)"
	;;
node_fires)
	# Node rules fire at a node's own hit; a recording from real verbs
	# (here a sim recording relabelled, every injector hit number erased
	# as a fiu-ctrl firing has none) is replayed from its FIREs' node and
	# node_hit alone, and identically.
	f=$1 plan=$2
	"$tv" run "$f" --faults "$plan" --record "$work/r.jsonl" -q ||
		fail "run --faults with node rules"
	grep -q '"kind":"FIRE","node":1,"point":"vf/qp/error","hit":[0-9]*,"node_hit":5}' \
		"$work/r.jsonl" || fail "no FIRE of vf/qp/error at node 1's hit 5"
	grep -q '"kind":"FIRE","node":0,"point":"vf/ack/drop","hit":[0-9]*,"node_hit":2}' \
		"$work/r.jsonl" || fail "no FIRE of vf/ack/drop at node 0's hit 2"
	sed -e '1s/"recording":{"backend":"sim"/"recording":{"backend":"ibverbs"/' \
	    -e 's/\("kind":"FIRE",.*"hit":\)[0-9]*/\10/' \
		"$work/r.jsonl" >"$work/hw.jsonl"
	grep -q '"backend":"ibverbs"' "$work/hw.jsonl" || fail "not relabelled"
	[ "$(grep -c '"kind":"FIRE",.*"hit":0,' "$work/hw.jsonl")" -eq 2 ] ||
		fail "hit numbers not erased"
	"$tv" replay "$work/hw.jsonl" --sim >"$work/out" 2>&1
	rc=$?
	cat "$work/out"
	[ $rc -eq 0 ] && grep -q "replayed identically (ibverbs recording" "$work/out" ||
		fail "node fires did not replay identically (exit $rc)"
	grep -q "faults: 2 recorded firing(s), 2 fired again" "$work/out" ||
		fail "the firings are not reported as fired again"
	# Moved to another hit, the firing is found where it now differs.
	sed 's/\("point":"vf\/qp\/error","hit":0,"node_hit":\)5/\16/' \
		"$work/hw.jsonl" >"$work/moved.jsonl"
	"$tv" replay "$work/moved.jsonl" --sim >"$work/moved.out" 2>&1
	rc=$?
	cat "$work/moved.out"
	[ $rc -eq 1 ] || fail "a moved firing: exit $rc, expected 1"
	;;
merge)
	# One sim recording cut into one file per node, as serve --record
	# writes them (node, start times, host), joined again.
	f=$1
	"$tv" run "$f" --record "$work/r.jsonl" -q || fail "run --record"
	for k in 0 1; do
		{ head -n 1 "$work/r.jsonl" |
		  sed "s/\"recording\":{\"backend\":\"sim\",\"clock\":\"virtual\"}/\"recording\":{\"backend\":\"sim\",\"clock\":\"virtual\",\"node\":$k,\"t0_monotonic_ns\":$((k * 7)),\"t0_realtime_ns\":0,\"host\":\"h\"}/"
		  tail -n +2 "$work/r.jsonl" |
		  grep "^{\"i\":[0-9]*,\"t\":[0-9]*,\"src\":\"[a-z]*\",\"kind\":\"[A-Z_]*\",\"node\":$k,"
		  tail -n 1 "$work/r.jsonl"; } >"$work/node$k.jsonl"
	done
	grep -q '"node":0' "$work/node0.jsonl" || fail "no node 0 file"
	"$tv" merge "$work/m.jsonl" "$work/node1.jsonl" "$work/node0.jsonl" ||
		fail "merge"
	[ "$(wc -l <"$work/m.jsonl")" -eq "$(wc -l <"$work/r.jsonl")" ] ||
		fail "the merged recording has another number of lines"
	"$tv" replay "$work/m.jsonl" --sim >"$work/out" 2>&1 ||
		{ cat "$work/out"; fail "the merged recording diverges"; }
	cat "$work/out"
	"$tv" merge "$work/x.jsonl" "$work/node1.jsonl" "$work/node1.jsonl" \
		>"$work/dup.out" 2>&1
	[ $? -eq 2 ] && grep -q "node 1 again" "$work/dup.out" ||
		{ cat "$work/dup.out"; fail "a node twice is not refused"; }
	"$tv" run "$f" --seed 99 --record "$work/other.jsonl" -q
	"$tv" merge "$work/x.jsonl" "$work/node0.jsonl" "$work/other.jsonl" \
		>"$work/other.out" 2>&1
	[ $? -eq 2 ] && grep -q "another seed" "$work/other.out" ||
		{ cat "$work/other.out"; fail "another run's recording is not refused"; }
	;;
malformed)
	f=$1
	"$tv" run "$f" --trace "$work/trace.jsonl" -q || fail "run --trace"
	"$tv" run "$f" --record "$work/r.jsonl" -q || fail "run --record"
	check() { # name expected-text
		"$tv" replay "$work/$1" --sim >"$work/$1.out" 2>&1
		rc=$?
		[ $rc -eq 2 ] || { cat "$work/$1.out"; fail "$1: exit $rc, expected 2"; }
		grep -q "$2" "$work/$1.out" ||
			{ cat "$work/$1.out"; fail "$1: no '$2' in the message"; }
	}
	cp "$work/trace.jsonl" "$work/plain.jsonl"
	check plain.jsonl "not a recording"
	head -n 20 "$work/r.jsonl" >"$work/truncated.jsonl"
	check truncated.jsonl "no summary line"
	{ head -n 5 "$work/r.jsonl"; echo '{"i":4,"t":0,"src":"verbs","kind":"POLL"}'; 
	  tail -n 1 "$work/r.jsonl"; } >"$work/nonode.jsonl"
	check nonode.jsonl "nonode.jsonl:6"
	{ head -n 5 "$work/r.jsonl"; echo 'not json'; } >"$work/garbage.jsonl"
	check garbage.jsonl "garbage.jsonl:6"
	: >"$work/empty.jsonl"
	check empty.jsonl "empty"
	echo "malformed recordings refused: plain, truncated, nonode, garbage, empty"
	;;
*)
	fail "unknown mode $mode"
	;;
esac

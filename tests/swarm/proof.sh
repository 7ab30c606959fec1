#!/bin/sh
# The swarm and the shrinker can find a real bug (docs/swarm.md):
# with the engine's ACK timeout switched off (TV_BREAK, tests only), a
# bounded swarm must find the TensorFlow #11416 hang, and shrinking it
# must give one transfer in a few dozen simulator events that still
# fails the same way, and passes on the healthy engine.
# usage: proof.sh TENSORVERBS WORKDIR SEEDS MAX_SIM_EVENTS
set -u
bin=$1
work=$2
seeds=$3
max_events=$4

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

rm -rf "$work"
mkdir -p "$work"

# 1. The swarm finds it, and says how to reproduce it.
out=$(TV_BREAK=no-ack-timeout "$bin" swarm --seeds "$seeds" --jobs 2 \
	--out "$work/failures" 2>&1)
status=$?
printf '%s\n' "$out" | grep -E '^(FAIL|swarm:|reproduce:|  )'
[ "$status" -eq 1 ] || fail "no violation in $seeds seeds (exit $status)"
kind=$(printf '%s\n' "$out" | sed -n 's/^FAIL seed [0-9]*: \[\([a-z-]*\)\].*/\1/p' | head -1)
case $kind in
outcome|hang) ;;
*) fail "the swarm found [$kind], not a lost-ACK hang or an unrecovered fault" ;;
esac
file=$(printf '%s\n' "$out" | sed -n 's/^reproduce: .* run \(.*\) --seed [0-9]*$/\1/p')
seed=$(printf '%s\n' "$out" | sed -n 's/^reproduce: .* --seed \([0-9]*\)$/\1/p')
[ -s "$file" ] && [ -s "${file%.json}.jsonl" ] || fail "no scenario or trace written for seed $seed"
TV_BREAK=no-ack-timeout "$bin" run "$file" --seed "$seed" --quiet >/dev/null 2>&1
[ $? -eq 1 ] || fail "the reproduce command does not fail"

# 2. Shrinking keeps the same violation and ends small.
out=$(TV_BREAK=no-ack-timeout "$bin" shrink "$file" --out "$work/min.json" 2>&1)
status=$?
printf '%s\n' "$out"
[ "$status" -eq 0 ] || fail "shrink failed (exit $status)"
printf '%s\n' "$out" | grep -q "still fails \[$kind\]" || fail "shrink lost [$kind]"
transfers=$(printf '%s\n' "$out" | sed -n 's/^minimal: .* (\([0-9]*\) transfers, \([0-9]*\) sim events)$/\1/p')
events=$(printf '%s\n' "$out" | sed -n 's/^minimal: .* (\([0-9]*\) transfers, \([0-9]*\) sim events)$/\2/p')
echo "minimal reproducer: $transfers transfer(s), $events sim events (bound $max_events)"
[ "$transfers" = 1 ] || fail "$transfers transfers left, expected 1"
[ "$events" -le "$max_events" ] || fail "$events sim events, more than $max_events"
# What is left is the lost message: an ACK or a control message dropped.
grep -Eq '"point": "vf/(ack|msg)/drop' "$work/min.json" ||
	fail "the minimal plan does not lose an ACK or a message"

# 3. The minimal run fails the same way in a fresh process ...
out=$(TV_BREAK=no-ack-timeout "$bin" run "$work/min.json" --quiet 2>&1)
[ $? -eq 1 ] || fail "the minimal scenario does not fail"
case $kind in
outcome) pattern="recoverable fault not recovered" ;;
hang) pattern="never completed|waits for the ACK" ;;
esac
printf '%s\n' "$out" | grep -Eq "$pattern" || fail "the minimal run does not fail with [$kind]"
# ... and the healthy engine (ACK timeout on) recovers from it.
"$bin" run "$work/min.json" --quiet >/dev/null 2>&1 ||
	fail "the healthy engine does not recover from the minimal scenario"
# 4. Its trace shrinks to the same (the header says the engine was broken).
"$bin" shrink "${file%.json}.jsonl" --out "$work/min-from-trace.json" >/dev/null 2>&1 ||
	fail "shrinking the trace failed"
cmp -s "$work/min.json" "$work/min-from-trace.json" ||
	fail "the trace shrank to another scenario than its JSON"
echo "proof: found [$kind] at seed $seed, shrunk to $transfers transfer, $events sim events"

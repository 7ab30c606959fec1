#!/bin/sh
# shrink and replay work on runs with node/crash (docs/swarm.md): a
# scenario whose only unrecoverable fault is a crash (its receives
# expect ok; recoverable faults around it) shrinks to one transfer and
# the crash rule alone, pinned to its hit; the minimal run fails the same
# way in a fresh process, its trace replays identically and shrinks to
# the same scenario.
# usage: crash_shrink.sh TENSORVERBS WORKDIR SCENARIO.json
set -u
bin=$1
work=$2
input=$3

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

rm -rf "$work"
mkdir -p "$work"

# 1. It fails because of the crash, and its trace replays identically.
"$bin" run "$input" --quiet --trace "$work/in.jsonl" >/dev/null 2>&1
[ $? -eq 1 ] || fail "the input does not fail"
grep -q '"src":"node","kind":"CRASH"' "$work/in.jsonl" ||
	fail "no CRASH event in the input's trace"
out=$("$bin" replay "$work/in.jsonl" 2>&1) || fail "replay: $out"

# 2. Shrinking keeps [expect] and the crash, nothing else.
out=$("$bin" shrink "$input" --out "$work/min.json" 2>&1)
status=$?
printf '%s\n' "$out"
[ "$status" -eq 0 ] || fail "shrink failed (exit $status)"
printf '%s\n' "$out" | grep -q 'still fails \[expect\]' || fail "shrink lost [expect]"
transfers=$(printf '%s\n' "$out" | sed -n 's/^minimal: .* (\([0-9]*\) transfers, .*/\1/p')
[ "$transfers" = 1 ] || fail "$transfers transfers left, expected 1"
rules=$(grep -c '"point"' "$work/min.json")
[ "$rules" = 1 ] && grep -q '"point": "node/crash"' "$work/min.json" ||
	fail "the minimal plan is not the crash alone"
grep -q '"nth"' "$work/min.json" || fail "the crash rule is not pinned to its hit"

# 3. The minimal run fails the same way in a fresh process; its trace
#    replays identically and shrinks to the same scenario.
"$bin" run "$work/min.json" --quiet --trace "$work/min.jsonl" >/dev/null 2>&1
[ $? -eq 1 ] || fail "the minimal scenario does not fail"
grep -q '"src":"node","kind":"SKIP"' "$work/min.jsonl" ||
	fail "the minimal run skips nothing: the crash is not what fails it"
out=$("$bin" replay "$work/min.jsonl" 2>&1) || fail "replay of the minimal run: $out"
"$bin" shrink "$work/min.jsonl" --out "$work/min-from-trace.json" >/dev/null 2>&1 ||
	fail "shrinking the trace failed"
cmp -s "$work/min.json" "$work/min-from-trace.json" ||
	fail "the trace shrank to another scenario than its JSON"
echo "crash_shrink: $transfers transfer, the crash rule alone; replays identical"

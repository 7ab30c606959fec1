#!/bin/sh
# Trace tests (docs/trace.md): run --trace, replay, tampering, malformed
# traces, show.  Exit 77 means "skipped" (a tool is missing).
# usage: trace_check.sh MODE TENSORVERBS WORKDIR [SCENARIO.json [PLAN]]
set -u
mode=$1
bin=$2
work=$3
scenario=${4:-}
plan=${5:-}
mkdir -p "$work"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# expect STATUS REGEX COMMAND...: exit status and a line of the output.
expect() {
	want=$1
	regex=$2
	shift 2
	out=$("$@" 2>&1)
	got=$?
	printf '%s\n' "$out" | head -20
	[ "$got" -eq "$want" ] || fail "exit status $got, expected $want: $*"
	printf '%s\n' "$out" | grep -Eq -- "$regex" ||
		fail "output does not match /$regex/: $*"
}

record() {
	"$bin" run "$1" --quiet --trace "$2" >/dev/null 2>&1
	[ -s "$2" ] || fail "no trace written to $2"
}

case $mode in
replay)
	# Any scenario: its trace replays identically in a new process.
	name=$(basename "$scenario" .json)
	record "$scenario" "$work/$name.jsonl"
	expect 0 "^replay: [0-9]+ events identical" "$bin" replay "$work/$name.jsonl"
	;;
tamper)
	# One changed event: replay names its index (line - 2) and exits 1.
	t="$work/tamper.jsonl"
	record "$scenario" "$t"
	line=$(grep -n '"kind":"DELIVER"' "$t" | sed -n '3s/:.*//p')
	[ -n "$line" ] || fail "no DELIVER event to tamper with"
	sed "${line}s/\"len\":\([0-9]*\)/\"len\":9\1/" "$t" >"$t.bad"
	cmp -s "$t" "$t.bad" && fail "sed changed nothing"
	expect 1 "first divergence at event $((line - 2)) .*differs in: len" \
		"$bin" replay "$t.bad"
	# Expected and actual are both printed.
	expect 1 "expected: .*\"len\":9" "$bin" replay "$t.bad"
	# A different result in the summary is a divergence too.
	sed '$s/"result":"PASS"/"result":"FAIL"/' "$t" >"$t.sum"
	expect 1 "summary differs in: result" "$bin" replay "$t.sum"
	;;
malformed)
	t="$work/good.jsonl"
	record "$scenario" "$t"
	: >"$work/empty.jsonl"
	expect 2 "malformed trace: .*empty file" "$bin" replay "$work/empty.jsonl"
	echo '{"hello": 1}' >"$work/nohdr.jsonl"
	expect 2 "not a tensorverbs trace header" "$bin" replay "$work/nohdr.jsonl"
	sed '5s/.*/{"i": oops/' "$t" >"$work/badjson.jsonl"
	expect 2 "malformed trace: .*badjson.jsonl:5:" "$bin" replay "$work/badjson.jsonl"
	sed '$d' "$t" >"$work/truncated.jsonl"
	expect 2 "without a summary line" "$bin" replay "$work/truncated.jsonl"
	sed '1s/"seed":[0-9]*/"seed":"x"/' "$t" >"$work/badseed.jsonl"
	expect 2 "header needs" "$bin" replay "$work/badseed.jsonl"
	sed '1s/"tensorverbs_trace":1/"tensorverbs_trace":99/' "$t" >"$work/v99.jsonl"
	expect 2 "trace format 99" "$bin" replay "$work/v99.jsonl"
	sed '1s/"plan":null/"plan":{"drop":1}/' "$t" >"$work/plan.jsonl"
	expect 2 'header needs "plan" \(an array or null\)' "$bin" replay "$work/plan.jsonl"
	sed '1s|"plan":null|"plan":[{"point":"vf/nope"}]|' "$t" >"$work/badplan.jsonl"
	expect 2 "plan is invalid: unknown fault point 'vf/nope'" "$bin" replay "$work/badplan.jsonl"
	expect 2 "No such file" "$bin" replay "$work/does_not_exist.jsonl"
	expect 2 "No such file" "$bin" show "$work/does_not_exist.jsonl" --svg "$work/x.svg"
	expect 2 "malformed trace: .*badjson" "$bin" show "$work/badjson.jsonl" --svg "$work/x.svg"
	;;
faults)
	# A run with faults: the plan is in the header, every firing is an
	# event line, and replay arms the plan again: identical.
	t="$work/faults.jsonl"
	"$bin" run "$scenario" --quiet --faults "$plan" --trace "$t" >/dev/null 2>&1
	[ -s "$t" ] || fail "no trace written to $t"
	head -1 "$t" | grep -q '"plan":\[{"point":' || fail "no plan in the header"
	n=$(grep -c '"src":"fault","kind":"FIRE"' "$t")
	rules=$(printf '%s' "$plan" | grep -o '"point"' | wc -l)
	points=$(grep -o '"src":"fault","kind":"FIRE","node":[0-9a-z]*,"point":"[^"]*"' "$t" |
		sed 's/.*"point"://' | sort -u | wc -l)
	echo "$n fault events, $points of the plan's $rules points fired"
	[ "$points" -eq "$rules" ] || fail "not every point of the plan fired"
	expect 0 "^replay: [0-9]+ events identical" "$bin" replay "$t"
	# Replay really uses the header's plan: without it the run differs.
	sed '1s/"plan":\[[^]]*\]/"plan":null/' "$t" >"$t.noplan"
	expect 1 "first divergence" "$bin" replay "$t.noplan"
	# A fault event that did not happen that way is found.
	line=$(grep -n '"src":"fault"' "$t" | sed -n '1s/:.*//p')
	sed "${line}s/\"hit\":\([0-9]*\)/\"hit\":9\1/" "$t" >"$t.bad"
	expect 1 "first divergence at event $((line - 2)) .*differs in: hit" \
		"$bin" replay "$t.bad"
	;;
breakage)
	# TV_BREAK is recorded in the header and replayed from it.
	t="$work/break.jsonl"
	TV_BREAK=no-ack-timeout "$bin" run "$scenario" --quiet --faults "$plan" \
		--trace "$t" >/dev/null 2>&1
	head -1 "$t" | grep -q '"test_breakage":"no-ack-timeout"' ||
		fail "no test_breakage in the header"
	expect 0 "^replay: [0-9]+ events identical to .*, result FAIL" \
		"$bin" replay "$t"
	;;
build_id)
	# Another build: a warning, and the comparison still runs.
	t="$work/bid.jsonl"
	record "$scenario" "$t"
	sed '1s/"build_id":"[^"]*"/"build_id":"0.0.0+elsewhere"/' "$t" >"$t.other"
	expect 0 "warning: trace made by build 0.0.0\+elsewhere" "$bin" replay "$t.other"
	;;
show)
	command -v xmllint >/dev/null || { echo "SKIP: no xmllint"; exit 77; }
	command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }
	t="$work/show.jsonl"
	record "$scenario" "$t"
	"$bin" show "$t" --svg "$work/show.svg" --chrome "$work/show.json" ||
		fail "show failed"
	xmllint --noout "$work/show.svg" || fail "the SVG is not well-formed XML"
	grep -Eq "TENSOR_REQUEST #[0-9]+ " "$work/show.svg" || fail "no message label in the SVG"
	grep -Eq "write #[0-9]+ " "$work/show.svg" || fail "no tensor write in the SVG"
	# Chrome: valid JSON with metadata, instants, write slices, flows
	# (s, f) and request lifetimes (b, e).
	phs=$(jq -r '[.traceEvents[].ph] | unique | join(" ")' "$work/show.json") ||
		fail "the Chrome trace is not valid JSON"
	echo "phases: $phs"
	[ "$phs" = "M X b e f i s" ] || fail "phases '$phs', expected 'M X b e f i s'"
	n=$(jq '[.traceEvents[] | select(.ph == "s")] | length' "$work/show.json")
	m=$(jq '[.traceEvents[] | select(.ph == "f")] | length' "$work/show.json")
	[ "$n" -gt 0 ] && [ "$n" -eq "$m" ] || fail "$n flow starts, $m flow ends"
	# A window of the trace, with a row cap, is still well-formed.
	"$bin" show "$t" --from 2000 --to 2100 --max-rows 10 --svg "$work/cut.svg" ||
		fail "show --from/--to failed"
	xmllint --noout "$work/cut.svg" || fail "the cut SVG is not well-formed XML"
	;;
*)
	fail "unknown mode $mode"
	;;
esac
exit 0

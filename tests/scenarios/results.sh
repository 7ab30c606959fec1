#!/bin/sh
# --json and --junit (docs/results.md): the files CI systems read.  The
# JUnit XML is well-formed (xmllint) with the testsuite / testcase /
# failure elements and counts it claims, the JSON has its version and
# the fields the docs promise, for a passing run, a failing run (with its
# reproducer), a name full of XML's special characters, and a swarm with
# violations.
# usage: results.sh TENSORVERBS SCENARIO WORKDIR
set -u
bin=$1
scenario=$2
work=$3
rm -rf "$work"
mkdir -p "$work"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

xcount() { # xcount FILE XPATH
	xmllint --xpath "$2" "$1"
}

"$bin" run "$scenario" --seed 3 --quiet --json "$work/ok.json" --junit "$work/ok.xml" ||
	fail "the passing run failed"
xmllint --noout "$work/ok.xml" || fail "ok.xml is not well-formed"
[ "$(xcount "$work/ok.xml" 'count(//testsuite/testcase)')" = 1 ] || fail "ok.xml: not one test case"
[ "$(xcount "$work/ok.xml" 'count(//failure)')" = 0 ] || fail "ok.xml: a failure in a pass"
[ "$(xcount "$work/ok.xml" 'string(//testsuite/@failures)')" = 0 ] || fail "ok.xml: failures attribute"
jq -e '.tensorverbs_result == 1 and .kind == "run" and .passed == true and .seed == 3
	and (.event_hash | test("^0x[0-9a-f]{16}$")) and .failures == [] and .reproduce == null
	and .ops.total >= 1' "$work/ok.json" >/dev/null || fail "ok.json: $(cat "$work/ok.json")"

# A failing run: its failure, its kind and the reproducer.
TV_BREAK=ignore-errors "$bin" run "$(dirname "$0")/../regressions/gather_ignored_error.json" \
	--quiet --json "$work/bad.json" --junit "$work/bad.xml" >/dev/null 2>&1
[ $? -eq 1 ] || fail "the broken run did not fail"
xmllint --noout "$work/bad.xml" || fail "bad.xml is not well-formed"
[ "$(xcount "$work/bad.xml" 'count(//testcase/failure)')" = 1 ] || fail "bad.xml: no failure element"
[ "$(xcount "$work/bad.xml" 'string(//testsuite/@failures)')" = 1 ] || fail "bad.xml: failures attribute"
[ "$(xcount "$work/bad.xml" 'string(//failure/@type)')" = data ] || fail "bad.xml: failure type"
xcount "$work/bad.xml" 'string(//failure)' | grep -q '^reproduce: TV_BREAK=ignore-errors .* run .*gather_ignored_error.json --seed 1$' ||
	fail "bad.xml: no reproducer in the failure text"
jq -e '.passed == false and .failures[0].kind == "data" and (.reproduce | test("--seed 1$"))' \
	"$work/bad.json" >/dev/null || fail "bad.json: $(cat "$work/bad.json")"

# XML's special characters in a name.
jq '.name = "a&b<c>\"d'"'"'e"' "$scenario" >"$work/odd.json"
"$bin" run "$work/odd.json" --quiet --junit "$work/odd.xml" || fail "the odd-named run failed"
xmllint --noout "$work/odd.xml" || fail "odd.xml is not well-formed"
[ "$(xcount "$work/odd.xml" 'string(//testcase/@name)')" = "a&b<c>\"d'e (seed 1)" ] ||
	fail "odd.xml: the name did not survive: $(xcount "$work/odd.xml" 'string(//testcase/@name)')"

# A swarm with violations: the range's case and one per failing seed.
TV_BREAK=ignore-errors "$bin" swarm --workload gather --seeds 60 --jobs 2 --keep-going \
	--out "$work/sw" --json "$work/sw.json" --junit "$work/sw.xml" >/dev/null 2>&1
[ $? -eq 1 ] || fail "the broken swarm found nothing"
xmllint --noout "$work/sw.xml" || fail "sw.xml is not well-formed"
n=$(jq '.failures | length' "$work/sw.json")
[ "$n" -ge 1 ] || fail "sw.json: no failures"
[ "$(xcount "$work/sw.xml" 'count(//testcase)')" = $((n + 1)) ] || fail "sw.xml: not $((n + 1)) test cases"
[ "$(xcount "$work/sw.xml" 'count(//testcase/failure)')" = $((n + 1)) ] || fail "sw.xml: failures"
jq -e '.kind == "swarm" and .done == 60 and .violations >= 1 and .faults["gather/read/error"].seeds_on >= 1
	and (.failures[0].scenario_file | test("seed-[0-9]+.json$"))' "$work/sw.json" >/dev/null ||
	fail "sw.json: $(jq -c 'del(.faults)' "$work/sw.json")"
echo "results: run (pass, fail, odd name) and swarm: JSON and JUnit as documented"

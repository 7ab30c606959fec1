#!/bin/sh
# The report of tensorverbs validate against its schema (docs/validate.md):
# report.json's version, counts that add up, every check with a group,
# a name, a status and a detail, a FAIL exactly when a check failed;
# report.html and the JUnit XML well-formed with one case per check.
# usage: validate_report.sh DIR [JUNIT.xml]
set -u
dir=$1
junit=${2:-}
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
[ -s "$dir/report.json" ] || fail "no $dir/report.json"
[ -s "$dir/report.html" ] || fail "no $dir/report.html"
jq -e '
	.tensorverbs_validate == 1
	and (.build | type) == "string" and (.host | type) == "string"
	and (.kernel | type) == "string" and (.seconds | type) == "number"
	and (.checks | type) == "array" and (.checks | length) >= 1
	and ([.checks[] | select((.group | type) == "string" and (.name | type) == "string"
		and (.status | IN("PASS", "FAIL", "SKIP")) and (.detail | type) == "string"
		and (.seconds | type) == "number")] | length) == (.checks | length)
	and .counts.pass == ([.checks[] | select(.status == "PASS")] | length)
	and .counts.fail == ([.checks[] | select(.status == "FAIL")] | length)
	and .counts.skip == ([.checks[] | select(.status == "SKIP")] | length)
	and .passed == (.counts.fail == 0)
	and ([.devices[] | select((.name | type) == "string" and (.ip | type) == "string")] | length) == (.devices | length)
	and (.ranks | length) >= 1
	and ([.ranks[] | select((.rank | type) == "number" and (.host | type) == "string"
		and (.devices | type) == "array")] | length) == (.ranks | length)
	and ([.benchmarks[] | select((.what | type) == "string" and (.points | length) >= 1
		and ([.points[] | select((.tensorverbs | type) == "number" and (.perftest | type) == "number")] | length) == (.points | length))] | length) == (.benchmarks | length)
' "$dir/report.json" >/dev/null || fail "report.json does not follow docs/validate.md"
xmllint --html --noout "$dir/report.html" 2>/dev/null || fail "report.html is not well-formed HTML"
n=$(jq '.checks | length' "$dir/report.json")
[ "$(grep -c '<tr class=' "$dir/report.html")" = "$n" ] || fail "report.html: not $n check rows"
[ "$(grep -o '<svg' "$dir/report.html" | wc -l)" = "$(jq '.benchmarks | length' "$dir/report.json")" ] ||
	fail "report.html: not one chart per benchmark"
if [ -n "$junit" ]; then
	xmllint --noout "$junit" || fail "$junit is not well-formed"
	[ "$(xmllint --xpath 'count(//testcase)' "$junit")" = "$n" ] || fail "$junit: not $n test cases"
	[ "$(xmllint --xpath 'count(//testcase/failure)' "$junit")" = "$(jq '.counts.fail' "$dir/report.json")" ] ||
		fail "$junit: failures do not match"
fi
echo "validate report: $n checks ($(jq -r '"\(.counts.pass) passed, \(.counts.fail) failed, \(.counts.skip) skipped"' "$dir/report.json")), $(jq '.benchmarks | length' "$dir/report.json") charts: as documented"

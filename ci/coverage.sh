#!/usr/bin/env bash
# Coverage build: run the suite with gcov instrumentation, write the lcov
# HTML report under the build folder, print engine/, sim/, faults/ and
# testbed/ line and branch coverage.
#   BUILD_DIR       (default: build-cov)
#   COVERAGE_FLOORS   "area:lines:branches ...": fail below any of them
#   RXE_COVERAGE_INFO the rxe VM run's tracefile (ci/rxe-coverage.sh), added
#   COVERAGE_REPORT_ONLY  set: no build, no tests, only the report
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh
build=${BUILD_DIR:-build-cov}
src=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
if [ -z "${COVERAGE_REPORT_ONLY:-}" ]; then
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DTV_COVERAGE=ON >/dev/null
	cmake --build "$build" -j "$jobs"
	lcov --quiet --zerocounters --directory "$build"
	ctest --test-dir "$build" --output-on-failure -j "$jobs"
fi

# ci/lcovrc: branch coverage on, the branches of assert() lines left out.
rc=(--config-file "$src/ci/lcovrc")
info="$build/coverage.info"
# Once in a while geninfo came back without branch records: try again.
for try in 1 2 3; do
	lcov --quiet "${rc[@]}" --capture --directory "$build" \
		--output-file "$info.all" 2>&1 | grep -v '^Subroutine .* redefined' || true
	grep -q '^BRDA' "$info.all" && break
	echo "coverage: no branch records in the capture (try $try)" >&2
done
grep -q '^BRDA' "$info.all" || { echo "coverage: geninfo gave no branch data" >&2; exit 1; }
# The VM run's figures for the code only real verbs run (ci/rxe-coverage.sh).
if [ -n "${RXE_COVERAGE_INFO:-}" ]; then
	[ -s "$RXE_COVERAGE_INFO" ] || { echo "coverage: $RXE_COVERAGE_INFO is missing or empty" >&2; exit 1; }
	lcov --quiet "${rc[@]}" --add-tracefile "$info.all" \
		--add-tracefile "$RXE_COVERAGE_INFO" --output-file "$info.sum" 2>&1 |
		grep -v 'negative counts' || true
	mv "$info.sum" "$info.all"
	echo "coverage: with the rxe VM run's ($RXE_COVERAGE_INFO)"
fi
lcov --quiet "${rc[@]}" --extract "$info.all" "$src/engine/*" "$src/sim/*" \
     "$src/backends/*" "$src/faults/*" "$src/testbed/*" --output-file "$info"
genhtml --quiet "${rc[@]}" --output-directory "$build/coverage-html" "$info"
echo "coverage report: $build/coverage-html/index.html"

summary() { # area
	local out=$info.${1//\//-}
	lcov "${rc[@]}" --extract "$info" "$src/$1/*" --output-file "$out" \
		>/dev/null
	lcov "${rc[@]}" --summary "$out" 2>&1 |
		awk -v a="$1" '/lines|branches/ { printf "coverage %-18s %s\n", a":", $0 }'
}
summary engine
summary engine/rendezvous
summary engine/port
summary engine/gather
summary sim
summary faults
summary testbed

# The floors (.ci/run sets them to the figures docs/coverage.md records):
#   COVERAGE_FLOORS  "area:lines:branches ..." e.g. "engine:98:90 sim:99:93"
fail=0
# From the counts ("98.1% (14911 of 15201 lines)"), not lcov's rounded
# figure: a floor of 98 must refuse 97.96.
pct() { # area lines|branches
	lcov "${rc[@]}" --summary "$info.${1//\//-}" 2>&1 |
		awk -v k="$2" '$1 ~ ("^" k "[.]+:$") && $4 == "of" && $5 > 0 {
			sub("[(]", "", $3); printf "%.4f\n", 100 * $3 / $5 }'
}
for f in ${COVERAGE_FLOORS:-}; do
	IFS=: read -r area lmin bmin <<<"$f"
	[ -f "$info.${area//\//-}" ] || summary "$area" >/dev/null
	l=$(pct "$area" lines) b=$(pct "$area" branches)
	for kv in "lines:$l:$lmin" "branches:$b:$bmin"; do
		IFS=: read -r what got want <<<"$kv"
		if [ -z "$got" ] || awk -v p="$got" -v m="$want" 'BEGIN { exit !(p < m) }'; then
			echo "coverage: $area/ $what ${got:-?}% is below the floor of $want% (docs/coverage.md)" >&2
			fail=1
		fi
	done
done
[ "$fail" = 0 ] || exit 1
echo "coverage: every floor held (${COVERAGE_FLOORS:-none set})"

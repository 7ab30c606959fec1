#!/usr/bin/env bash
# Coverage build: run the suite with gcov instrumentation, write the lcov
# HTML report under the build folder, print engine/, sim/, faults/ and
# testbed/ line and branch coverage.
#   BUILD_DIR       (default: build-cov)
#   MIN_ENGINE_LINES  fail below this engine/ line percentage (default 0)
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh
build=${BUILD_DIR:-build-cov}
src=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DTV_COVERAGE=ON >/dev/null
cmake --build "$build" -j "$jobs"
lcov --quiet --zerocounters --directory "$build"
ctest --test-dir "$build" --output-on-failure -j "$jobs"

rc=(--rc lcov_branch_coverage=1)
info="$build/coverage.info"
lcov --quiet "${rc[@]}" --capture --directory "$build" --output-file "$info.all"
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

min=${MIN_ENGINE_LINES:-0}
pct=$(lcov "${rc[@]}" --summary "$info.engine" 2>&1 |
	awk '/lines/ { sub("%", "", $2); print $2 }')
if awk -v p="$pct" -v m="$min" 'BEGIN { exit !(p < m) }'; then
	echo "coverage: engine/ lines $pct% is below the floor of $min%" >&2
	exit 1
fi

#!/usr/bin/env bash
# CI stage: the rxe suite (tests/rxe/run.sh) in the qemu VM with two
# Soft-RoCE devices: every hardware-applicable scenario as one process per
# node over rdma_cm, the refusal tests and the recovery tests.
#
#   bash ci/rxe-tests.sh
#
# Builds the CLI into build-rxe-tests (if needed), boots ci/rxe/vm.sh
# --devices 2 and prints how many rxe tests ran and passed.  Logs of every
# process: build-rxe-tests/out/.  About 3 minutes under TCG on 2 cores
# (boot ~10 s; the 64 MiB scenario ~15 s).  Exit status: the suite's
# (non-zero on any failure), or vm.sh's 124/125 (timeout, VM trouble).
#   RXE_TESTS_TIMEOUT  whole VM run, seconds (default 900)
#   RXE_TESTS_SKIP     a tests/rxe/run.sh --skip glob: tests another stage
#                      runs and judges (.ci/run: the coverage stage's)
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$(date +%s)
bash ci/install-deps.sh python3 librdmacm-dev libibverbs-dev rdma-core ibverbs-providers fiu-utils \
	qemu-system-x86 xz-utils cpio kmod busybox-static iproute2 jq bc libxml2-utils
build="build-rxe-tests"
out=$PWD/$build/out
bash ci/build-cli.sh "$build" RelWithDebInfo
tv=$PWD/$build/cli/tensorverbs
if ! "$tv" serve --help >/dev/null 2>&1; then
	echo "rxe-tests: $tv has no 'serve' (built without librdmacm?)" >&2
	exit 1
fi
rm -rf "$out"
mkdir -p "$out"
skip=()
[ -z "${RXE_TESTS_SKIP:-}" ] || skip=(--skip "$RXE_TESTS_SKIP")
set +e
TV_BIN=$tv TV_RXE_OUT=$out bash ci/rxe/vm.sh --devices 2 --mem 2048 \
	--timeout "${RXE_TESTS_TIMEOUT:-900}" --share "$out" -- \
	bash tests/rxe/run.sh "${skip[@]}" 2>&1 | tee "$out/../rxe-tests.log"
rc=${PIPESTATUS[0]}
set -e
line=$(grep -E '^rxe: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out/../rxe-tests.log" | tail -1 || true)
grep -E '^rxe: (port|gather) scenarios' "$out/../rxe-tests.log" | tail -2 | sed 's/^rxe:/rxe-tests:/' || true
# The suite's JUnit XML, checked: well-formed, one test case per test.
if [ -f "$out/junit.xml" ] && xmllint --noout "$out/junit.xml"; then
	cp "$out/junit.xml" "$build/rxe-junit.xml"
	echo "rxe-tests: JUnit XML in $build/rxe-junit.xml ($(xmllint --xpath 'count(//testcase)' "$out/junit.xml") test cases)"
else
	echo "rxe-tests: no well-formed JUnit XML from the suite" >&2
	[ "$rc" != 0 ] || rc=1
fi
if [ -n "$line" ]; then
	read -r _ p _ f _ s _ <<<"$line"
	echo "rxe-tests: $((p + f)) rxe tests ran, $p passed, $f failed, $s skipped ($(($(date +%s) - t0)) s in all)${skip[*]:+; the tests matching $RXE_TESTS_SKIP left to the stage that runs them}"
else
	echo "rxe-tests: the suite printed no summary (vm.sh exit $rc)"
	[ "$rc" != 0 ] || rc=1
fi
exit "$rc"

#!/usr/bin/env bash
# Coverage of the code that only real verbs run: the testbed's hardware
# runner (testbed/hw.c, coord.c, peers.c, the workloads' hw code), the
# ibverbs and rdma_cm backends, validate.  The rxe suite (tests/rxe/run.sh)
# and `tensorverbs validate` run in the VM with a gcov-instrumented CLI;
# its build folder is shared with the VM so every process writes its
# .gcda files there.  Writes $BUILD_DIR/rxe.info, which ci/coverage.sh
# adds to the unit tests' figures (RXE_COVERAGE_INFO).
#
#   BUILD_DIR         (default build-rxe-cov)
#   RXE_COV_TIMEOUT   the whole VM run, seconds (default 3600; ~2,500 s in CI)
#   RXE_COV_ONLY      a tests/rxe/run.sh --only glob (default: every test)
#
# The tests it runs are judged here, and only here: .ci/run's rxe stage
# skips them (RXE_TESTS_SKIP) so that each rxe test runs once.  This
# script fails on any test's failure, when the suite did not end (its exit
# status, its summary), when no coverage came back, and when the
# allocation sweep (oom_*) or the fault sweep (flt_*) did not run.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh python3 librdmacm-dev libibverbs-dev rdma-core ibverbs-providers \
	fiu-utils qemu-system-x86 xz-utils cpio kmod busybox-static iproute2 jq bc \
	libxml2-utils lcov binutils
build=$PWD/${BUILD_DIR:-build-rxe-cov}
out=$build/out
bash ci/build-cli.sh "$build" Debug -DTV_COVERAGE=ON
lcov --quiet --zerocounters --directory "$build"
rm -rf "$out"
mkdir -p "$out/vsc/port" "$out/vsc/gather"
# validate on one scenario of each protocol: its own code, not the suite's.
cp scenarios/basic_transfer.json "$out/vsc/"
cp scenarios/port/ping_pong.json "$out/vsc/port/"
cp scenarios/gather/two_servers.json "$out/vsc/gather/"
only=()
[ -z "${RXE_COV_ONLY:-}" ] || only=(--only "$RXE_COV_ONLY")
set +e
TV_RXE_OOM=1 TV_RXE_FAULTS=1 TV_BIN=$build/cli/tensorverbs TV_RXE_OUT=$out bash ci/rxe/vm.sh --devices 2 \
	--mem 2048 --timeout "${RXE_COV_TIMEOUT:-3600}" --share "$build" -- \
	bash -c 'bash tests/rxe/run.sh "$@"; echo "rxe-coverage: run.sh exit $?"; "$TV_BIN" validate --scenarios "$TV_RXE_OUT/vsc" --out "$TV_RXE_OUT/validate" >"$TV_RXE_OUT/validate.log" 2>&1; echo "rxe-coverage: validate exit $?"' \
	_ "${only[@]}" >"$build/rxe-coverage.log" 2>&1
rc=$?
set -e
grep -E '^rxe: [0-9]+ passed|^rxe-coverage:' "$build/rxe-coverage.log" || true
echo "rxe-coverage: the VM run exited $rc (log: $build/rxe-coverage.log)"
lcov --quiet --config-file ci/lcovrc --capture --directory "$build" \
	--output-file "$build/rxe.info.all"
lcov --quiet --config-file ci/lcovrc --extract "$build/rxe.info.all" \
	"$PWD/testbed/*" "$PWD/backends/*" "$PWD/engine/*" "$PWD/faults/*" \
	--output-file "$build/rxe.info"
lcov --config-file ci/lcovrc --summary "$build/rxe.info" 2>&1 |
	sed -n 's/^ *\(lines\|branches\)/rxe-coverage: the VM run alone: \1/p'
[ -s "$build/rxe.info" ] || { echo "rxe-coverage: no coverage came back from the VM" >&2; exit 1; }
# Every verdict of the suite (the sweeps among them: TV_RXE_OOM=1,
# allocations and calls, oom_*; TV_RXE_FAULTS=1, fault points, flt_*).
log=$build/rxe-coverage.log
grep -E "^(PASS|FAIL|SKIP)  (oom_|flt_)" "$log" || true
if grep -q "^FAIL  " "$log"; then
	grep -A20 "^FAIL  " "$log" | grep -E '^(FAIL|  )' >&2 || true
	echo "rxe-coverage: $(grep -c "^FAIL  " "$log") rxe test(s) failed (log: $log)" >&2
	exit 1
fi
grep -qE '^rxe: [0-9]+ passed, 0 failed, [0-9]+ skipped$' "$log" &&
	grep -q '^rxe-coverage: run.sh exit 0$' "$log" ||
	{ echo "rxe-coverage: the rxe suite did not end with its summary and exit 0 (log: $log)" >&2; exit 1; }
shopt -s extglob # RXE_COV_ONLY's @(a|b)
for sweep in "allocation:oom_rendezvous_0" "fault:flt_rendezvous_0"; do
	IFS=: read -r what first <<<"$sweep"
	if [ -z "${RXE_COV_ONLY:-}" ] || [[ "$first" == ${RXE_COV_ONLY} ]]; then
		grep -q "^PASS  $first" "$log" ||
			{ echo "rxe-coverage: the $what sweep did not run" >&2; exit 1; }
	fi
done

#!/usr/bin/env bash
# The real-RDMA stage: Soft-RoCE (rxe) in a qemu VM booting Debian's stock
# kernel (this host's kernel may have no RDMA; see docs/rxe.md).  Runs the
# perftest/rping smoke, then the ibverbs backend's device suite, then the
# scenario suite across processes when it exists (ci/rxe-tests.sh).
#   BUILD_DIR  the build folder to test (default build-test, built by
#              ci/test.sh); it must live outside /tmp.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh qemu-system-x86 xz-utils rdma-core ibverbs-utils \
	ibverbs-providers perftest rdmacm-utils busybox-static kmod cpio iproute2
build=${BUILD_DIR:-build-test}
[ -x "$build/cli/tensorverbs" ] || BUILD_DIR=$build bash ci/test.sh

echo "rxe: smoke (ibv_devinfo, ib_write_bw, ib_write_lat, rping)"
bash ci/rxe/smoke.sh

echo "rxe: the ibverbs backend's device suite, inside the VM"
bash ci/rxe/vm.sh --devices 2 --timeout 600 --share "$build" -- \
	ctest --test-dir "$build" -R '^test_ibverbs' --output-on-failure

if [ -f ci/rxe-tests.sh ]; then
	echo "rxe: scenarios across two processes"
	BUILD_DIR=$build bash ci/rxe-tests.sh
fi

# tensorverbs validate in the VM: the report kept under the build folder
# and checked against its schema (docs/validate.md).
echo "rxe: tensorverbs validate, inside the VM"
vdir=$PWD/$build/validate
rm -rf "$vdir"
mkdir -p "$vdir"
set +e
bash ci/rxe/vm.sh --devices 2 --mem 2048 --timeout 900 --share "$vdir" -- \
	"$build/cli/tensorverbs" validate --out "$vdir" --junit "$vdir/junit.xml" |
	tail -n 60
vrc=${PIPESTATUS[0]}
set -e
sh tests/validate_report.sh "$vdir" "$vdir/junit.xml"
[ "$vrc" = 0 ] || { echo "rxe: validate failed (exit $vrc): $vdir/report.html" >&2; exit 1; }
echo "rxe: validate passed: $vdir/report.html, $vdir/report.json, $vdir/junit.xml"

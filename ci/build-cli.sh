#!/usr/bin/env bash
# Configure and build only the tensorverbs CLI (no test suites) into a
# build folder: what the rxe scripts run inside the VM, and tensorverbs-oom
# beside it (cli/CMakeLists.txt: the allocation sweep's).
#
#   bash ci/build-cli.sh DIR BUILD_TYPE [CMAKE_ARGS...]
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DIR BUILD_TYPE [CMAKE_ARGS...]" >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$1 type=$2
shift 2
cmake -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DTV_BUILD_TESTS=OFF "$@" >/dev/null
cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" --target tensorverbs-cli tensorverbs-oom >/dev/null

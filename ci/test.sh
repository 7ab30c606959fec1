#!/usr/bin/env bash
# Build tensorverbs and run every test (ctest).  This is the README's test
# command and the first stage of .ci/run.
#   BUILD_DIR   build folder (default: build-test)
#   CMAKE_ARGS  extra arguments for cmake's configure step
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh
build=${BUILD_DIR:-build-test}
jobs=$(nproc 2>/dev/null || echo 2)
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"

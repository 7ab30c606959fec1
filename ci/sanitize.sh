#!/usr/bin/env bash
# The whole suite built with AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
BUILD_DIR=${BUILD_DIR:-build-asan} CMAKE_ARGS="-DTV_SANITIZE=ON" bash ci/test.sh

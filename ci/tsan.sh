#!/usr/bin/env bash
# The shared memory between threads under ThreadSanitizer: the port
# engine's FIFO, semaphores and flush positions (tests/port), with real
# producer threads, a consumer thread and a network thread.  Any report
# fails the run (halt_on_error).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-tsan}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DTV_TSAN=ON >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" \
	--target test_port test_port_threads
# No fork per test: ThreadSanitizer follows the threads of one process.
CK_FORK=no "$build/tests/port/test_port_threads"
CK_FORK=no "$build/tests/port/test_port"
echo "tsan: port engine thread tests clean"

#!/usr/bin/env bash
# Build the libFuzzer targets (clang, ASan + UBSan) in build-fuzz and run
# each for a bounded time on a scratch copy of its seed corpus
# (tests/fuzz/corpus/<target>, never modified).  docs/fuzzing.md.
#   FUZZ_SECONDS  time per target (default 60)
#   FUZZ_TARGETS  targets to run (default: "wire dispatch scenario trace cm")
#   FUZZ_JOBS     parallel libFuzzer workers per target (default 1)
#   FUZZ_SEED     libFuzzer -seed (default 1: CI runs are reproducible;
#                 0: a fresh one each run)
#   BUILD_DIR     build folder (default: build-fuzz)
#   FUZZ_OUT      where scratch corpora, logs and crashes go
#                 (default: $BUILD_DIR/fuzz-out, emptied first)
# Exits non-zero on any crash, leak, sanitizer report or timeout, printing
# the reproducer and the command that replays it.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-wire dispatch scenario trace cm}
workers=${FUZZ_JOBS:-1}
out=${FUZZ_OUT:-$build/fuzz-out}
jobs=$(nproc 2>/dev/null || echo 2)

# libFuzzer ships with clang's runtime package.
bash ci/install-deps.sh clang libclang-rt-14-dev
command -v clang >/dev/null || { echo "fuzz.sh: clang not found" >&2; exit 1; }
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DTV_SANITIZE=ON -DTV_FUZZ=ON >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $(printf 'fuzz_%s ' $targets)

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)

failed=0
summary=""
for t in $targets; do
	bin=$build/tests/fuzz/fuzz_$t
	corpus=$out/corpus-$t
	log=$out/$t.log
	mkdir -p "$corpus" "$out/crashes-$t"
	cp tests/fuzz/corpus/"$t"/* "$corpus"/
	printf '\n==== fuzz_%s: %s s ====\n' "$t" "$seconds"
	# -malloc_limit_mb: a huge allocation a peer asks for is refused by the
	# engine's max_recv_bytes now (docs/fuzzing.md, "Findings"), and
	# fuzz_dispatch's engines allocate from its own arena; the high limit
	# stays so that a file parser's failed huge allocation is an ENOMEM to
	# handle, not a libFuzzer abort.  Real memory use is still capped by
	# -rss_limit_mb.
	par=()
	if [ "$workers" -gt 1 ]; then
		par=(-jobs="$workers" -workers="$workers")
	fi
	set +e
	# A fixed seed (FUZZ_SEED, default 1) makes a CI run reproducible;
	# FUZZ_SEED=0 lets libFuzzer pick one (exploration by hand).
	# Scenario files and traces are text: room for a few objects.
	maxlen=4096
	case $t in scenario|trace) maxlen=16384 ;; esac
	"$bin" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" \
		-max_len="$maxlen" -timeout=25 \
		-rss_limit_mb=2048 -malloc_limit_mb=1048576 \
		-print_final_stats=1 "${par[@]}" \
		-artifact_prefix="$out/crashes-$t/" "$corpus" >"$log" 2>&1
	rc=$?
	set -e
	if [ "$workers" -gt 1 ]; then
		cat fuzz-*.log >>"$log" 2>/dev/null || true
		rm -f fuzz-*.log
	fi
	runs=$(awk '/^stat::number_of_executed_units:/ {s += $2} END {print s + 0}' "$log")
	rate=$(awk '/^stat::average_exec_per_sec:/ {s += $2} END {print s + 0}' "$log")
	grep -E '^(stat::|Done )' "$log" || tail -n 20 "$log"
	line="fuzz_$t: $runs runs, $rate execs/s"
	crash=$(find "$out/crashes-$t" -type f | head -n 1)
	if [ "$rc" -ne 0 ] || [ -n "$crash" ]; then
		failed=1
		grep -E 'ERROR|SUMMARY|invariant failed|runtime error' "$log" | head -n 20 || true
		echo "fuzz_$t FAILED (exit $rc); log: $log"
		if [ -n "$crash" ]; then
			echo "reproducer: $crash"
			echo "replay:     $bin $crash"
			echo "            $build/tests/fuzz/fuzz_${t}_replay $crash"
		fi
		line="$line  FAILED"
	fi
	summary="$summary$line"$'\n'
done

printf '\n==== fuzz summary ====\n%s' "$summary"
exit "$failed"

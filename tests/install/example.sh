#!/usr/bin/env bash
# The testbed example (examples/) built against the installed tree, with
# pkg-config or with CMake's find_package, runs a scenario of scenarios/:
# it passes; with a write limit below the scenario's writes, its own
# invariant fails (exit 1, its message); and a bad scenario is refused.
#   usage: example.sh BUILD_DIR CC EXTRA_CFLAGS MODE(pkg-config|cmake)
set -euo pipefail
build=$1
cc=${2:-cc}
extra=${3:-}
mode=${4:-pkg-config}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "$(cd "$build" && pwd)/install-example.XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
lib=$(dirname "$(find "$work/prefix" -name 'libtensorverbs.so' | head -n 1)")
case $mode in
pkg-config)
	pc=$(dirname "$(find "$work/prefix" -name tensorverbs.pc | head -n 1)")
	# shellcheck disable=SC2046,SC2086
	"$cc" -std=c11 -Wall -Wextra -Werror $extra "$src/examples/testbed_example.c" \
		-o "$work/example" $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs tensorverbs)
	;;
cmake)
	CC=$cc CFLAGS="$extra" LDFLAGS="$extra" cmake -S "$src/examples" -B "$work/b" \
		-DCMAKE_PREFIX_PATH="$work/prefix" >"$work/cmake.log" 2>&1 ||
		{ cat "$work/cmake.log"; exit 1; }
	cmake --build "$work/b" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
	cp "$work/b/testbed_example" "$work/example"
	;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
run() { LD_LIBRARY_PATH=$lib "$work/example" "$@"; }

# 1. A scenario of the repository passes, with every invariant.
out=$(run "$src/scenarios/basic_transfer.json")
echo "$out"
grep -q '^result: PASS$' <<<"$out" || { echo "FAIL: basic_transfer did not pass" >&2; exit 1; }
grep -q 'workload rendezvous' <<<"$out" || { echo "FAIL: no workload name" >&2; exit 1; }
# 2. The example's own invariant can fail: 64 MiB writes against a 1 MiB limit.
rc=0
out=$(run "$src/scenarios/large_tensor.json" 1048576) || rc=$?
echo "$out" | tail -n 3
[ "$rc" = 1 ] || { echo "FAIL: exit $rc with a 1 MiB write limit, expected 1" >&2; exit 1; }
grep -q '^FAIL: max-write: node [0-9] got a [0-9]*-byte write' <<<"$out" ||
	{ echo "FAIL: the invariant's message is missing" >&2; exit 1; }
# 3. The same seed, the same run; a bad scenario is refused, not crashed on.
a=$(run "$src/scenarios/many_concurrent.json" 1073741824 5 | grep -o 'event hash 0x[0-9a-f]*')
b=$(run "$src/scenarios/many_concurrent.json" 1073741824 5 | grep -o 'event hash 0x[0-9a-f]*')
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: '$a' / '$b'" >&2; exit 1; }
rc=0
run "$src/tests/scenarios/malformed/unknown_key.json" >"$work/bad.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "unknown key 'frm'" "$work/bad.log" ||
	{ cat "$work/bad.log"; echo "FAIL: a malformed scenario gave exit $rc" >&2; exit 1; }
echo "install example ($mode): ok"

#!/usr/bin/env bash
# The port scenarios on the simulator (docs/port.md): every
# scenarios/port/*.json in both signal modes and three placement modes
# (in order, 8-byte words, 128-byte blocks in seeded order), with two
# seeds each, every invariant checked.  Prints how many ran and passed.
#   TV_BIN  the CLI (default build-test/cli/tensorverbs)
set -euo pipefail
cd "$(dirname "$0")/.."
tv=${TV_BIN:-build-test/cli/tensorverbs}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ran=0 passed=0 failed=()
for f in scenarios/port/*.json; do
	b=$(basename "$f" .json)
	for mode in atomic write_imm; do
		for pl in in_order random8 block128; do
			jq --arg m "$mode" --arg p "$pl" \
				'.port.signal = $m | .sim.placement = $p' "$f" >"$work/$b.json"
			for seed in 1 2; do
				ran=$((ran + 1))
				if "$tv" run "$work/$b.json" --seed "$seed" --quiet >"$work/out" 2>&1; then
					passed=$((passed + 1))
				else
					failed+=("$b/$mode/$pl/seed $seed")
					cat "$work/out"
				fi
			done
		done
	done
done
echo "port-sim: ${ran} port scenario runs on the simulator, ${passed} passed"
[ "${#failed[@]}" = 0 ] || { echo "port-sim: failed: ${failed[*]}" >&2; exit 1; }

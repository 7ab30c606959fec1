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
# shellcheck source=ci/sim-runs.sh
. ci/sim-runs.sh
for f in scenarios/port/*.json; do
	b=$(basename "$f" .json)
	for mode in atomic write_imm; do
		for pl in in_order random8 block128; do
			jq --arg m "$mode" --arg p "$pl" \
				'.port.signal = $m | .sim.placement = $p' "$f" >"$work/$b.json"
			sim_run "$b/$mode/$pl" "$work/$b.json"
		done
	done
done
sim_report port-sim "port scenario"

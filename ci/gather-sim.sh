#!/usr/bin/env bash
# The gather scenarios on the simulator (docs/gather.md): every
# scenarios/gather/*.json under both device profiles (mlx5, rxe), with
# ids in request order and sorted, with two seeds each, every invariant
# checked.  Prints how many ran and passed.
#   TV_BIN  the CLI (default build-test/cli/tensorverbs)
set -euo pipefail
cd "$(dirname "$0")/.."
tv=${TV_BIN:-build-test/cli/tensorverbs}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=ci/sim-runs.sh
. ci/sim-runs.sh
for f in scenarios/gather/*.json; do
	b=$(basename "$f" .json)
	for profile in mlx5 rxe; do
		for sort in false true; do
			jq --arg p "$profile" --argjson s "$sort" \
				'.sim.profile = $p | .gather.sort = $s' "$f" >"$work/$b.json"
			sim_run "$b/$profile/sort=$sort" "$work/$b.json"
		done
	done
done
sim_report gather-sim "gather scenario"

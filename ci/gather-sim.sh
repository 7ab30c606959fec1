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
ran=0 passed=0 failed=()
for f in scenarios/gather/*.json; do
	b=$(basename "$f" .json)
	for profile in mlx5 rxe; do
		for sort in false true; do
			jq --arg p "$profile" --argjson s "$sort" \
				'.sim.profile = $p | .gather.sort = $s' "$f" >"$work/$b.json"
			for seed in 1 2; do
				ran=$((ran + 1))
				if "$tv" run "$work/$b.json" --seed "$seed" --quiet >"$work/out" 2>&1; then
					passed=$((passed + 1))
				else
					failed+=("$b/$profile/sort=$sort/seed $seed")
					cat "$work/out"
				fi
			done
		done
	done
done
echo "gather-sim: ${ran} gather scenario runs on the simulator, ${passed} passed"
[ "${#failed[@]}" = 0 ] || { echo "gather-sim: failed: ${failed[*]}" >&2; exit 1; }

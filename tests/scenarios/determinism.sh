#!/bin/sh
# Same scenario, same seed: the same event hash; another seed: another hash
# (the scenario must have simultaneous events for the seed to matter).
# usage: determinism.sh TENSORVERBS SCENARIO.json
set -eu
bin=$1
scenario=$2

hash_of() {
	"$bin" run "$scenario" --quiet --print-hash --seed "$1" |
		sed -n 's/^event-hash: //p'
}

h1=$(hash_of 1)
h2=$(hash_of 1)
h3=$(hash_of 2)
echo "seed 1: $h1; seed 1 again: $h2; seed 2: $h3"
if [ -z "$h1" ] || [ -z "$h3" ]; then
	echo "FAIL: no event-hash printed" >&2
	exit 1
fi
if [ "$h1" != "$h2" ]; then
	echo "FAIL: the same seed gave two different event hashes" >&2
	exit 1
fi
if [ "$h1" = "$h3" ]; then
	echo "FAIL: seeds 1 and 2 gave the same event hash" >&2
	exit 1
fi

#!/bin/sh
# sim.profile and sim.qp_op_ns reach the simulator: a scenario with them
# passes, and a per-QP processing cost changes its event stream (its
# timing) from the same scenario's without them.
# usage: sim_keys.sh TENSORVERBS BASE.json PACED.json
set -eu
bin=$1
base=$2
paced=$3

hash_of() {
	"$bin" run "$1" --quiet --print-hash | sed -n 's/^event-hash: //p'
}

h1=$(hash_of "$base")
h2=$(hash_of "$paced")
echo "without: $h1; with profile and qp_op_ns: $h2"
if [ -z "$h1" ] || [ -z "$h2" ]; then
	echo "FAIL: a run failed or printed no event-hash" >&2
	exit 1
fi
if [ "$h1" = "$h2" ]; then
	echo "FAIL: qp_op_ns did not change the run" >&2
	exit 1
fi

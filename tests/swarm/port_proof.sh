#!/bin/sh
# The swarm finds each of MSCCL++'s bugs by itself (docs/port.md): with
# the port engine broken on purpose (TV_BREAK=BREAKAGE, tests only), a
# bounded swarm of port scenarios finds a violation, shrink reduces it
# while it fails the same way, and the healthy engine passes what is left.
# usage: port_proof.sh TENSORVERBS WORKDIR SEEDS BREAKAGE [WORKLOAD]
# (WORKLOAD: port by default; the gather workload's breakages too.)
set -u
bin=$1
work=$2
seeds=$3
brk=$4
wl=${5:-port}

fail() {
	echo "FAIL ($brk): $*" >&2
	exit 1
}

rm -rf "$work"
mkdir -p "$work"
out=$(TV_BREAK=$brk "$bin" swarm --workload "$wl" --seeds "$seeds" --jobs 2 \
	--out "$work/failures" 2>&1)
status=$?
printf '%s\n' "$out" | grep -E '^(FAIL|swarm:|reproduce:)'
[ "$status" -eq 1 ] || fail "no violation in $seeds seeds (exit $status)"
kind=$(printf '%s\n' "$out" | sed -n 's/^FAIL seed [0-9]*: \[\([a-z-]*\)\].*/\1/p' | head -1)
file=$(printf '%s\n' "$out" | sed -n 's/^reproduce: .* run \(.*\) --seed [0-9]*$/\1/p')
[ -s "$file" ] || fail "no scenario written"

out=$(TV_BREAK=$brk "$bin" shrink "$file" --out "$work/min.json" --max-runs 3000 2>&1)
status=$?
printf '%s\n' "$out" | grep -E '^(shrink|minimal)'
[ "$status" -eq 0 ] || fail "shrink failed (exit $status)"
printf '%s\n' "$out" | grep -q "still fails \[$kind\]" || fail "shrink lost [$kind]"
TV_BREAK=$brk "$bin" run "$work/min.json" --quiet >/dev/null 2>&1
[ $? -eq 1 ] || fail "the minimal scenario does not fail"
"$bin" run "$work/min.json" --quiet >/dev/null 2>&1 ||
	fail "the healthy engine fails the minimal scenario too"
min=$(printf '%s\n' "$out" | sed -n 's/^minimal: [^(]*(\(.*\))$/\1/p')
echo "$wl proof ($brk): found [$kind], shrunk to $min; the healthy engine passes it"

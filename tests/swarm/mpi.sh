#!/usr/bin/env bash
# mpirun splits a swarm over its ranks (docs/multihost.md): two ranks on
# this machine give the report of the single-process swarm over the same
# seeds (every counter and the fault table; on a violation, the same
# smallest failing seed).  Skips (77) without mpirun or a build with MPI.
# usage: mpi.sh TENSORVERBS WORKDIR
set -u
bin=$1
work=$2
. "$(dirname "$0")/../common/mpi_test.sh" "$work"
mpi() { mpirun --oversubscribe -np 2 "$bin" swarm "$@"; }

out=$(mpi --seeds 600 --jobs 1 --out "$work/m" --json "$work/mpi.json" 2>&1)
rc=$?
skip_without_mpi_build "$out"
[ $rc -eq 0 ] || fail "the MPI swarm failed (exit $rc): $out"
printf '%s\n' "$out" | grep -q '^swarm: 2 MPI ranks' || fail "not split over 2 ranks: $out"
[ "$(printf '%s\n' "$out" | grep -c '^fault kind')" = 1 ] || fail "the table printed $(printf '%s\n' "$out" | grep -c '^fault kind') times"
"$bin" swarm --seeds 600 --jobs 2 --out "$work/p" --json "$work/plain.json" >/dev/null 2>&1 ||
	fail "the plain swarm failed"
strip='del(.seconds, .jobs, .build)'
[ "$(jq -S "$strip" "$work/mpi.json")" = "$(jq -S "$strip" "$work/plain.json")" ] ||
	fail "the reports differ: $(diff <(jq -S "$strip" "$work/mpi.json") <(jq -S "$strip" "$work/plain.json") | head)"

# same_as_plain TAG SEEDS JOBS: the MPI swarm's report is the plain one's.
same_as_plain() {
	out=$(mpi --seeds "$2" --jobs "$3" --out "$work/m$1" --json "$work/mpi$1.json" 2>&1)
	[ $? -eq 0 ] || fail "the MPI swarm of $2 seeds failed: $out"
	"$bin" swarm --seeds "$2" --jobs "$3" --out "$work/p$1" --json "$work/plain$1.json" \
		>/dev/null 2>&1 || fail "the plain swarm of $2 seeds failed"
	[ "$(jq -S "$strip" "$work/mpi$1.json")" = "$(jq -S "$strip" "$work/plain$1.json")" ] ||
		fail "$2 seeds, $3 jobs over 2 ranks: the reports differ"
}

# Fewer seeds than ranks and more jobs than seeds: rank 0 has none, rank
# 1 one seed and one worker; the report is still the plain swarm's.
same_as_plain 1 1 3
[ "$(jq .seeds "$work/mpi1.json")" = 1 ] || fail "1 seed over 2 ranks: $(jq -c .seeds "$work/mpi1.json") seeds reported"
# More jobs than a rank's seeds: 3 seeds, 3 jobs, rank 0 has 1 seed and
# runs it with 1 worker, rank 1 2 with 2; the plain report again.
same_as_plain 3 3 3

# A violation: the same smallest failing seed, reported once.
out=$(TV_BREAK=ignore-errors mpi --workload gather --seeds 400 --jobs 1 --out "$work/mb" \
	--json "$work/mpi_bad.json" 2>&1)
[ $? -eq 1 ] || fail "the broken MPI swarm did not fail"
[ "$(printf '%s\n' "$out" | grep -c '^FAIL seed')" = 1 ] || fail "not one failure printed: $out"
TV_BREAK=ignore-errors "$bin" swarm --workload gather --seeds 400 --jobs 2 --out "$work/pb" \
	--json "$work/plain_bad.json" >/dev/null 2>&1
[ "$(jq '.failures[0].seed' "$work/mpi_bad.json")" = "$(jq '.failures[0].seed' "$work/plain_bad.json")" ] ||
	fail "smallest failing seed: MPI $(jq '.failures[0].seed' "$work/mpi_bad.json"), plain $(jq '.failures[0].seed' "$work/plain_bad.json")"
echo "mpi: 2 ranks give the single-process report over 600 seeds, over 1 and over 3 with 3 jobs, and its smallest failing seed"

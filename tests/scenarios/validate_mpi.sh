#!/usr/bin/env bash
# tensorverbs validate under mpirun (docs/validate.md) where one rank
# cannot start: rank 1 cannot make its folder (out/rank1 is a file).
# Every rank must end by itself (rank 1 alone leaving would leave rank 0
# in the ranks' exchange for ever: the bug this pins), rank 1 naming the
# folder and why, rank 0 saying another rank could not start.  Then the
# folder is made right and the same job runs to its report: no device
# here, so exit 1 with every rank's checks in rank 0's report.
# Skips (77) without mpirun or a build with MPI.
# usage: validate_mpi.sh TENSORVERBS WORKDIR
set -u
bin=$1
work=$2
. "$(dirname "$0")/../common/mpi_test.sh" "$work"
mkdir -p "$work/out"
unset RDMA_DEVICE RDMA_DEVICE_PORT

job() {
	timeout 120 mpirun --oversubscribe -np 2 "$bin" validate --out "$work/out" \
		</dev/null >"$work/$1.log" 2>&1
}

: >"$work/out/rank1"
job blocked
rc=$?
skip_without_mpi_build "$(cat "$work/blocked.log")"
[ $rc != 124 ] || fail "rank 1 could not start and the job hung (killed after 120 s)"
[ $rc != 0 ] || fail "rank 1 could not start, yet the job passed"
grep -qF "tensorverbs validate: rank 1: $work/out/rank1/logs: Not a directory" "$work/blocked.log" ||
	fail "rank 1 did not name its folder: $(head -5 "$work/blocked.log")"
grep -qF "tensorverbs validate: rank 0: another rank could not start (its message says why)" "$work/blocked.log" ||
	fail "rank 0 did not say another rank could not start: $(head -5 "$work/blocked.log")"

rm "$work/out/rank1"
job healthy
rc=$?
[ $rc = 1 ] || fail "without a device the job should fail its checks (exit 1), not exit $rc: $(tail -5 "$work/healthy.log")"
jq -e '[.checks[] | select(.name | startswith("rank 1 ("))] | length > 0' "$work/out/report.json" >/dev/null ||
	fail "rank 1's checks are not in rank 0's report"
echo "validate under mpirun: a rank that cannot start ends the job on every rank, naming it; made right, the job reports"

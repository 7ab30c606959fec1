#!/usr/bin/env bash
# A rank out of memory in an MPI job (docs/multihost.md): every
# allocation the testbed's MPI code makes (testbed/mpi.c for swarm,
# validate.c and validate_mpi.c for validate) fails once, on rank 0 and
# then on rank 1 of a two-rank job, with the allocation-failing build of
# the command (tensorverbs-oom, tests/rxe/oom_ctl.c).  Each job must end
# by itself (a rank that left alone would leave the other in a
# collective for ever: the bug this found in four places) and say it ran
# out of memory.
# Skips (77) without mpirun, addr2line or a build with MPI.
# usage: mpi_oom.sh TENSORVERBS-OOM WORKDIR [NAME ARGS...]
#   without NAME: `swarm` and `validate` (no device needed); with it, the
#   job `tensorverbs ARGS...` (the rxe suite's `serve --record`: rank 0
#   gathers the recordings).  MPI_OOM_ENV0 / MPI_OOM_ENV1: more
#   assignments for rank 0's / rank 1's environment (RDMA_DEVICE=...).
set -u
bin=$1
work=$2
. "$(dirname "$0")/../common/mpi_test.sh" "$work"
command -v addr2line >/dev/null || { echo "SKIP: no addr2line (binutils)"; exit 77; }
# No RDMA device needed: validate reports the missing devices after the
# ranks have met (that meeting is what is swept).
unset RDMA_DEVICE RDMA_DEVICE_PORT

# run TAG ENV0 ENV1 ARGS...: the job, rank 0 with ENV0, rank 1 with ENV1
# (each an environment assignment); its output in $work/TAG.log, with a
# line "rank exit N" per rank.  mpirun lets every rank end by itself (its
# default kills the others at the first failure, before they can say what
# they saw); its own status is then 0, hence the lines.
# (Not from stdin: mpirun would read the sweep's list of sites.)
each='"$0" "$@"; echo "rank exit $?"'
run() {
	local tag=$1 e0=$2 e1=$3
	shift 3
	timeout 120 mpirun --oversubscribe --mca orte_abort_on_non_zero_status 0 \
		-np 1 env "$e0" ${MPI_OOM_ENV0:-} sh -c "$each" "$bin" "$@" : \
		-np 1 env "$e1" ${MPI_OOM_ENV1:-} sh -c "$each" "$bin" "$@" \
		</dev/null >"$work/$tag.log" 2>&1
}

# sweep NAME ARGS...: every site of testbed/mpi.c and validate_mpi.c the
# job reaches, failed on each rank in turn.
sweep() {
	local name=$1 rc sites=0 fired=0 off loc k
	shift
	run "$name.rec" "TV_OOM_RECORD=$work/$name.0" "TV_OOM_RECORD=$work/$name.1" "$@"
	skip_without_mpi_build "$(cat "$work/$name.rec.log")"
	[ -s "$work/$name.0" ] && [ -s "$work/$name.1" ] ||
		fail "$name: the recording run wrote no sites: $(tail -5 "$work/$name.rec.log")"
	# A return address minus one: the call's line, not the next one's.
	sort -u "$work/$name.0" "$work/$name.1" | while read -r off; do
		printf '%s %s\n' "$off" "$(addr2line -e "$bin" "$(printf '0x%x' $((off - 1)))")"
	done | grep -E ' .*/testbed/(mpi|validate|validate_mpi)\.c:' >"$work/$name.sites"
	[ -s "$work/$name.sites" ] || fail "$name: no allocation of the MPI code recorded"
	while read -r off loc; do
		sites=$((sites + 1))
		for k in 0 1; do
			if [ $k = 0 ]; then
				run "$name.$off.$k" "TV_OOM_SITE=$off" "TV_OOM=" "$@"
			else
				run "$name.$off.$k" "TV_OOM=" "TV_OOM_SITE=$off" "$@"
			fi
			rc=$?
			[ $rc != 124 ] || fail "$name: ${loc##*/} failed on rank $k: the job hung (killed after 120 s)"
			grep -q "oom: site $off failed" "$work/$name.$off.$k.log" || continue
			fired=$((fired + 1))
			[ "$(grep -c '^rank exit [1-9]' "$work/$name.$off.$k.log")" = 2 ] ||
				fail "$name: ${loc##*/} failed on rank $k, yet not both ranks failed: $(grep '^rank exit' "$work/$name.$off.$k.log" | tr '\n' ' ')"
			grep -q "Cannot allocate memory" "$work/$name.$off.$k.log" ||
				fail "$name: ${loc##*/} failed on rank $k without saying so: $(grep -v '^oom:' "$work/$name.$off.$k.log" | tail -5)"
		done
	done <"$work/$name.sites"
	[ $fired -ge $sites ] || fail "$name: $sites sites, only $fired failures came"
	echo "$name: $sites sites of the MPI code, $fired failures over the two ranks, every job ended and said so"
}

if [ $# -gt 2 ]; then
	shift 2
	sweep "$@"
	exit
fi
sweep swarm swarm --seeds 4 --jobs 1 --out "$work/swarm-failures"
sweep validate validate --out "$work/validate"

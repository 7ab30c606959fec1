# Sourced by the suite's MPI scripts (tests/swarm/mpi.sh, mpi_oom.sh,
# tests/scenarios/validate_mpi.sh): `. mpi_test.sh WORKDIR`.  Skips the
# script (77) without mpirun; WORKDIR made afresh; mpirun allowed to run
# as root (CI and the rxe VM are root); fail() ends the script.
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (openmpi-bin)"; exit 77; }
rm -rf "$1"
mkdir -p "$1"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI keeps memory past MPI_Finalize on purpose: not our leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# skip_without_mpi_build OUTPUT: skips the script (77) when the command
# said it was built without MPI (OUTPUT: its words).
skip_without_mpi_build() {
	if printf '%s\n' "$1" | grep -q "built without MPI"; then
		echo "SKIP: this build has no MPI (libopenmpi-dev)"
		exit 77
	fi
}

# Shared by the benchmarks in the rxe VM (bench.sh, bench-port.sh,
# bench-gather.sh): booting the VM, perftest between its two devices, and
# reading perftest's tables.  Sourced; inside the VM, needs RXE_DEV0/1,
# RXE_GID0/1, RXE_IP1 (ci/rxe/vm.sh sets them).

# bench_in_vm SCRIPT TIMEOUT_S [ENV ...] -- [ARGS ...]: outside the VM, build
# the Release CLI (unless TV_BIN names one) and run SCRIPT in a VM with two
# rxe devices, passing those environment variables; inside it, return.
bench_in_vm() {
	local script=$1 timeout=$2 envs=(--env TV_BIN)
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=(--env "$1"); shift; done
	[ $# -gt 0 ] && shift
	[ -z "${RXE_DEV1:-}" ] || return 0
	[ -n "${TV_BIN:-}" ] || bash "$repo/ci/build-cli.sh" "$repo/build-bench" Release
	exec bash "$here/vm.sh" --devices 2 --mem 2048 --pin "${envs[@]}" \
		--timeout "${RXE_BENCH_VM_TIMEOUT:-$timeout}" -- bash "$script" "$@"
}

wait_listen() { # wait_listen PORT PID
	local i
	for ((i = 0; i < 200; i++)); do
		[ -n "$(ss -Hltn "sport = :$1")" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# perf TOOL PORT OUT ARGS...: server on rxe1, client on rxe0 -> rxe1's IP.
perf() {
	local tool=$1 port=$2 out=$3 spid
	shift 3
	"$tool" -d "$RXE_DEV1" -x "$RXE_GID1" -p "$port" -F "$@" >"$out.server" 2>&1 &
	spid=$!
	wait_listen "$port" "$spid" || { cat "$out.server"; return 1; }
	"$tool" -d "$RXE_DEV0" -x "$RXE_GID0" -p "$port" -F "$@" "$RXE_IP1" >"$out" 2>&1 ||
		{ cat "$out" "$out.server"; return 1; }
	wait "$spid"
}

# field FILE FIRST COLUMN: column COLUMN of the line whose first is FIRST.
field() { awk -v s="$2" -v c="$3" '$1 == s && NF >= c { print $c; exit }' "$1"; }

human() { # human BYTES
	awk -v b="$1" 'BEGIN { u = "B"; if (b >= 1048576) { b /= 1048576; u = "MiB" } else if (b >= 1024) { b /= 1024; u = "KiB" } printf "%g %s", b, u }'
}

# Shared by ci/port-sim.sh and ci/gather-sim.sh (sourced): run a variant
# of a scenario on the simulator with two seeds, count, and report.
# Needs $tv (the CLI) and $work (a scratch folder).
ran=0 passed=0 failed=()

sim_run() { # sim_run LABEL FILE
	local seed
	for seed in 1 2; do
		ran=$((ran + 1))
		if "$tv" run "$2" --seed "$seed" --quiet >"$work/out" 2>&1; then
			passed=$((passed + 1))
		else
			failed+=("$1/seed $seed")
			cat "$work/out"
		fi
	done
}

sim_report() { # sim_report NAME WHAT
	echo "$1: ${ran} $2 runs on the simulator, ${passed} passed"
	[ "${#failed[@]}" = 0 ] || { echo "$1: failed: ${failed[*]}" >&2; return 1; }
}

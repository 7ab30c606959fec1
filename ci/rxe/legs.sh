#!/usr/bin/env bash
# Where a 64-byte fetch's time goes on rxe: the kernel's part against the
# user-space part, for the engine and for the bare-verbs floor, from ftrace
# inside the VM.  Every post_send on rxe is a write(2) on the uverbs fd (a
# 32-byte doorbell; its entry and exit are traced) and every completion an
# rxe_cq_post (a receive's comes from rxe_responder, in the sender's write).
# Per direction of each run (`bench rxe --floor`: the engine's fetch, then
# the floor), medians over the run, in us:
#   leg       sender's write(2) entry -> the receiver's receive CQE: the
#             kernel's work (rxe requester, the veth hop, the responder)
#   reaction  that CQE -> the receiver's next write(2) entry: its poll
#             noticing and its user-space work up to the next post
#   syscall   the sender's write(2), entry to exit (it also carries the
#             ACK back and the send completion)
# The fetcher's reaction also holds the work after its done callback, which
# no fetch's latency includes.  Timestamps have 1 us resolution and tracing
# adds a little to each leg; compare the engine with the floor of the same
# round.  A measurement, not a test.
#
#   bash ci/rxe/legs.sh [BIN]   # default build-rxe-tests/cli/tensorverbs
#
# Knobs: LEGS_ROUNDS (default 4), LEGS_ITERS (default 2000).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
tv=${1:-$repo/build-rxe-tests/cli/tensorverbs}
if [ -z "${RXE_DEV1:-}" ]; then
	[ -x "$tv" ] || { echo "legs: no $tv (bash ci/rxe-tests.sh builds it)" >&2; exit 2; }
	out=$repo/build-rxe/legs
	rm -rf "$out"
	mkdir -p "$out"
	LEGS_OUT=$out exec bash "$here/vm.sh" --devices 2 --mem 2048 --share "$out" \
		--env LEGS_OUT --env LEGS_ROUNDS --env LEGS_ITERS -- \
		bash "$here/legs.sh" "$tv"
fi

T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T"
[ -e "$T/events/syscalls/sys_enter_write" ] ||
	{ echo "legs: this kernel has no syscall trace events" >&2; exit 2; }
echo mono >"$T/trace_clock"
echo 16384 >"$T/buffer_size_kb"

trace_on() {
	echo >"$T/trace"
	echo rxe_cq_post >"$T/set_ftrace_filter"
	echo function >"$T/current_tracer"
	echo 1 >"$T/events/syscalls/sys_enter_write/enable"
	echo 1 >"$T/events/syscalls/sys_exit_write/enable"
	echo 1 >"$T/tracing_on"
}
trace_off() { # trace_off FILE
	echo 0 >"$T/tracing_on"
	echo 0 >"$T/events/syscalls/sys_enter_write/enable"
	echo 0 >"$T/events/syscalls/sys_exit_write/enable"
	cat "$T/trace" >"$1"
	echo nop >"$T/current_tracer"
}

# One line per sample: "RUN DIRECTION METRIC US".  The fetcher (the parent)
# posts in both runs; each run's publisher is a child of its own.
samples() { # samples TRACE
	awk '
	function us(s) { return int(s * 1000000 + 0.5) }
	$0 ~ /^#/ || NF < 5 { next }
	{
		task = $1; pid = task; sub(/.*-/, "", pid)
		if (task ~ /^ksoftirqd/) next
		t = $4; sub(/:$/, "", t)
		k = ""
		if ($5 == "sys_write(fd:" && $0 ~ /count: 20\)$/) k = "enter"
		else if ($5 == "sys_write" && $7 == "0x20") k = "exit"
		else if ($0 ~ /rxe_cq_post <-rxe_responder/) k = "rcqe"
		if (k == "") next
		n++; T[n] = us(t); P[n] = pid; K[n] = k
		if (k == "enter") posts[pid]++
	}
	END {
		best = 0
		for (p in posts) if (posts[p] > best) { best = posts[p]; f = p }
		for (i = 1; i <= n; i++)
			if (P[i] != f && !(P[i] in run)) { run[P[i]] = ++runs }
		for (i = 1; i <= n; i++) {
			if (K[i] != "enter") continue
			s = P[i]
			# Its peer: the publisher of the run this post belongs to.
			if (s != f) r = s
			else { r = ""; for (j = i + 1; j <= n && j < i + 400; j++)
				if (P[j] != f) { r = P[j]; break } }
			if (r == "") continue
			rcv = (s == f) ? r : f
			t1 = t2 = tx = 0
			for (j = i + 1; j <= n && j < i + 400 && !tx; j++)
				if (P[j] == s && K[j] == "exit") tx = T[j]
			for (j = i + 1; j <= n && j < i + 400; j++) {
				if (!t1 && P[j] == s && K[j] == "rcqe") t1 = T[j]
				else if (t1 && P[j] == rcv && K[j] == "enter") { t2 = T[j]; break }
			}
			if (!t1 || !t2 || !tx) continue
			dir = (s == f) ? "fetcher->publisher" : "publisher->fetcher"
			name = (run[r] == 1) ? "engine" : "floor"
			print name, dir, "leg", t1 - T[i]
			print name, dir, "reaction", t2 - t1
			print name, dir, "syscall", tx - T[i]
		}
	}' "$1"
}

median_table() { # stdin: samples
	sort -k1,1 -k2,2 -k3,3 -k4,4n | awk '
	{ key = $1 " " $2 " " $3; v[key, ++c[key]] = $4 }
	END {
		for (key in c) {
			split(key, f, " ")
			m[f[1] " " f[2], f[3]] = v[key, int((c[key] + 1) / 2)]
			cnt[f[1] " " f[2]] = c[key]
		}
		for (g in cnt) {
			split(g, f, " ")
			printf "%-6s %-19s leg %4d  reaction %4d  syscall %4d  (%d posts)\n",
				f[1], f[2], m[g, "leg"], m[g, "reaction"], m[g, "syscall"], cnt[g]
		}
	}' | sort
}

rounds=${LEGS_ROUNDS:-4}
for ((r = 1; r <= rounds; r++)); do
	f=$LEGS_OUT/trace.$r
	trace_on
	out=$("$tv" bench rxe --sizes 4096 --bytes 65536 --lat-iters "${LEGS_ITERS:-2000}" \
		--floor --timeout 120 2>&1) || { trace_off "$f"; echo "$out"; exit 1; }
	trace_off "$f"
	echo "---- round $r: $(printf '%s\n' "$out" | awk '$2 == "lat" { printf "fetch %s us", $5 } $2 == "floor" { printf ", floor %s us (medians, traced)", $4 }')"
	samples "$f" | median_table
done

#!/usr/bin/env bash
# Instructions per 64-byte fetch on rxe, in both processes, counted by
# callgrind inside the rxe VM.  Unlike a latency figure, a count does not
# move with the host's load, so it is how to compare two builds' hot paths:
# the fetcher from its call to the request's post and through the tensor
# write's completion, the publisher through the request's completion (the
# early answer up to the write's post, then the books).  A measurement, not
# a test.
#
#   bash ci/rxe/callgrind.sh [BIN]   # default: build-rxe-nolto, built here
#
# Knobs: CG_LAT_ITERS (default 1000).  Needs valgrind on the host (its / is
# the guest's).  Raw outputs: build-rxe/callgrind/cg.PID.  Counts are per
# function, so BIN must be built without link-time optimisation, which
# inlines them away: cmake -DTV_LTO=OFF.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$repo/build-rxe/callgrind
bin=${1:-$repo/build-rxe-nolto/cli/tensorverbs}
if [ -z "${RXE_DEV1:-}" ] && [ $# -eq 0 ]; then
	# Its own build: per-function counts need functions that LTO keeps.
	bash "$repo/ci/build-cli.sh" "$repo/build-rxe-nolto" RelWithDebInfo -DTV_LTO=OFF
fi
if [ -z "${RXE_DEV1:-}" ]; then
	command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
		{ echo "callgrind: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
	[ -x "$bin" ] || { echo "callgrind: no $bin" >&2; exit 2; }
	rm -rf "$out"
	mkdir -p "$out"
	bash "$here/vm.sh" --devices 2 --mem 2048 --share "$out" \
		--env CG_LAT_ITERS -- bash "$here/callgrind.sh" "$bin"
	# What a function costs with its callees, per call of the fetch.
	per_fetch() { # per_fetch FILE FUNCTION FETCHES
		callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
			awk -v fn="$2" -v n="$3" '$0 ~ "[/:]" fn " \\[" {
				gsub(",", "", $1); printf "%8.0f", $1 / n; found = 1; exit }
				END { if (!found) printf "%8s", "-" }'
	}
	calls() { # calls FILE FUNCTION: how often it ran
		# A block: its callers ("<"), then the function ("*").
		callgrind_annotate --inclusive=yes --tree=caller "$1" 2>/dev/null |
			awk -v fn="$2" '
				/^ *$/ { blk = 0; next }
				/ < / { s = $0; sub(/.*\(/, "", s); sub(/x\).*/, "", s)
					gsub(",", "", s); blk += s; next }
				$0 ~ "\\*  .*[/:]" fn "( |$)" { n += blk }
				END { print n + 0 }'
	}
	for f in "$out"/cg.*; do
		n=$(calls "$f" tv_engine_recv_async)
		if [ "$n" -gt 0 ]; then
			printf 'fetcher   (%s fetches) instructions per fetch:\n' "$n"
			printf '  %-44s %s\n' "call to the request's post (recv_async)" \
				"$(per_fetch "$f" tv_engine_recv_async "$n")"
			printf '  %-44s %s\n' "receive completions (the tensor write)" \
				"$(per_fetch "$f" 'channel_on_recv[.a-z0-9]*' "$n")"
		else
			n=$(calls "$f" tv__response_on_request)
			if [ "$n" -eq 0 ]; then
				echo "callgrind: $bin has neither tv_engine_recv_async nor" \
					"tv__response_on_request: built with LTO? (cmake -DTV_LTO=OFF)" >&2
				exit 1
			fi
			printf 'publisher (%s requests) instructions per request:\n' "$n"
			printf '  %-44s %s\n' "receive completions (decode, answer)" \
				"$(per_fetch "$f" 'channel_on_recv[.a-z0-9]*' "$n")"
			printf '  %-44s %s\n' "  of which the early answer (peek, post)" \
				"$(per_fetch "$f" tv__response_early "$n")"
			printf '  %-44s %s\n' "  of which the books (after the post)" \
				"$(per_fetch "$f" tv__response_on_request "$n")"
			printf '  %-44s %s\n' "  of which decodes (the general path)" \
				"$(per_fetch "$f" tv__wire_decode_scratch "$n")"
		fi
	done
	exit 0
fi

cd "$out"
valgrind --tool=callgrind --callgrind-out-file="$out/cg.%p" \
	"$bin" bench rxe --sizes 4096 --bytes 16384 \
	--lat-iters "${CG_LAT_ITERS:-1000}" 2>&1 | grep -E '^bench-rxe|rror' || true

#!/bin/sh
# A seed's run does not depend on the process that runs it: the same seeds
# with 1 and 3 workers give the same per-kind table and totals (transfers,
# simulator events), and a failing seed is the same one.
# usage: jobs.sh TENSORVERBS WORKDIR
set -u
bin=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
strip() {
	# Wall time and rates differ; everything else must not.
	sed -e 's/, [0-9]* jobs, [0-9.]* s: [0-9]* seeds\/min//' "$1" | grep -v '^reproduce\|^  '
}
for j in 1 3; do
	"$bin" swarm --seeds 150 --first 1000 --jobs $j --out "$work/out$j" \
		>"$work/jobs$j.txt" 2>/dev/null
	echo "exit $?" >>"$work/jobs$j.txt"
	TV_BREAK=no-ack-timeout "$bin" swarm --seeds 60 --jobs $j \
		--out "$work/broken$j" >"$work/broken$j.txt" 2>/dev/null
done
cat "$work/jobs1.txt"
strip "$work/jobs1.txt" >"$work/a" && strip "$work/jobs3.txt" >"$work/b"
cmp -s "$work/a" "$work/b" || { diff "$work/a" "$work/b"; echo "FAIL: 1 and 3 jobs differ" >&2; exit 1; }
a=$(grep '^FAIL seed' "$work/broken1.txt")
b=$(grep '^FAIL seed' "$work/broken3.txt")
echo "$a"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: the smallest failing seed depends on --jobs: '$a' / '$b'" >&2; exit 1; }

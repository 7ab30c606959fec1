#!/bin/sh
# The regression corpus covers every fault point and every real failure.
# A point counts when some file expects it to fire at least once: its
# "expect_faults" (one line in these files) names it with a count >= 1
# or {"min": >= 1}.
# usage: coverage.sh TENSORVERBS DIR [MORE_DIR...]  (the first holds the
# TensorFlow regressions)
set -u
bin=$1
dir=$2
shift 2
more=""
for d in "$@"; do more="$more $d/*.json"; done
status=0

points=$("$bin" faults | awk 'NR > 1 && NF && $1 ~ /\// { print $1 }')
[ -n "$points" ] || { echo "FAIL: tensorverbs faults listed nothing" >&2; exit 1; }
for p in $points; do
	files=$(grep -l "\"expect_faults\": {.*\"$p\": \\([1-9]\\|{\"min\": [1-9]\\)" \
		"$dir"/*.json $more | xargs -r -n1 basename | tr '\n' ' ')
	if [ -z "$files" ]; then
		echo "FAIL: no regression makes $p fire" >&2
		status=1
	else
		printf '%-30s %s\n' "$p" "$files"
	fi
done
# protocol-notes.md: the failures users reported.
for issue in tf11416 tf10699 tf23220 tf9926 tf18630; do
	ls "$dir"/${issue}_*.json >/dev/null 2>&1 || {
		echo "FAIL: no regression for TensorFlow #${issue#tf}" >&2
		status=1
	}
done
exit $status

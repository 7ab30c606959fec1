#!/bin/sh
# Run a command; require its exit status and a regex in its output.
# usage: expect_exit.sh STATUS REGEX COMMAND [ARGS...]
set -u
want=$1
regex=$2
shift 2
out=$("$@" 2>&1)
got=$?
printf '%s\n' "$out"
if [ "$got" -ne "$want" ]; then
	echo "FAIL: exit status $got, expected $want" >&2
	exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then
	echo "FAIL: output does not match /$regex/" >&2
	exit 1
fi

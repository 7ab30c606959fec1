#!/usr/bin/env python3
"""Every uncovered line of an area, with the class of its reason.

    ci/coverage-uncovered.py TRACEFILE AREA [SRC_ROOT]

TRACEFILE is an lcov tracefile (ci/coverage.sh writes build-cov/coverage.info,
with the rxe VM run's added when RXE_COVERAGE_INFO is set), AREA a folder of
the tree ("testbed").  Prints one line per uncovered line:

    testbed/hw.c:160 [real verbs; allocation] <the source line>

and, at the end, how many lines fall in each class.  The class comes from
the line and the lines just above it (the condition that guards it):

  allocation   the arm of a failed allocation (-ENOMEM, a NULL from malloc,
               calloc, realloc, strdup, json_*, open_memstream ...)
  system call  the arm of a failed pipe, fork, poll, waitpid, write, read,
               fopen, fflush, fclose, dup2, kill, sigaction ...
  scheduling   the simulator refusing to schedule a callback (only without
               memory or with a bad time, which the runner never asks)
  invariant    an invariant's failure message: reached only when the engine
               under test breaks that invariant (tests/testbed/
               test_wl_invariants.c shows the checkers fire)
  passed up    a callee's error handed to the caller unchanged (`if (rc)
               return rc;`, `goto out;`): the callee's own failures are
               the ones above, not provoked on this path
  untested     none of the above: a path no test reaches yet

Files that only real verbs run (the hardware runner, coordinator, peers,
MPI, validate, the workloads' hw and bench files) get "real verbs; " in
front: the rxe VM run is what covers them (ci/rxe-coverage.sh).
Branch arms are not listed (docs/coverage.md gives their counts).
"""
import os
import re
import sys

HW = re.compile(r"(^|/)(hw[^/]*|coord|peers|mpi[^/]*|validate[^/]*|"
                r"bench[^/]*)\.c$")
ALLOC = re.compile(r"ENOMEM|nomem|\b(malloc|calloc|realloc|strdup|strndup|"
                   r"asprintf|vasprintf|open_memstream|fmemopen|json_\w+|"
                   r"tv_ju_grow|aligned_alloc|posix_memalign)\s*\(")
SYSCALL = re.compile(r"\b(pipe|fork|poll|waitpid|write|read|fopen|fdopen|"
                     r"fflush|fclose|fputs|fprintf|fwrite|dup2|kill|"
                     r"sigaction|open|close|rename|unlink|mkdir|mkdtemp|"
                     r"ftruncate|getline|clock_gettime|setsockopt|socket|"
                     r"bind|listen|accept|connect|send|recv|getaddrinfo)"
                     r"\s*\(|errno")
SCHED = re.compile(r"tv_sim_schedule|tv_tb_run_schedule")
INVARIANT = re.compile(r"invariant")
PASS_UP = re.compile(r"^\s*(return\s+(rc|ret|err|r|-?errno|res)?\s*;|"
                     r"goto\s+\w+\s*;|break\s*;)\s*$")
GUARD_RC = re.compile(r"\bif\s*\(\s*!?\(?\s*(rc|ret|err|r|res)\b")


def records(path):
    """{file: {line: hits}} from an lcov tracefile (DA records)."""
    out, cur = {}, None
    with open(path) as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("SF:"):
                cur = out.setdefault(line[3:], {})
            elif line.startswith("DA:") and cur is not None:
                no, hits = line[3:].split(",")[:2]
                no = int(no)
                cur[no] = cur.get(no, 0) + max(int(hits), 0)
    return out


def classify(src, no):
    """The class of uncovered line no (1-based) of src (a list of lines)."""
    here = src[no - 1] if no - 1 < len(src) else ""
    above = src[max(0, no - 4):no - 1]
    # The guard: the nearest line above that opens a condition.
    guard = ""
    for text in reversed(above):
        if re.search(r"\b(if|while|for|else)\b|\?|&&|\|\|", text):
            guard = text
            break
    ctx = " ".join([guard, here])
    if INVARIANT.search(here) or (INVARIANT.search(" ".join(src[no:no + 2]))
                                  and "tv_tb_fail" in here):
        return "invariant"
    if SCHED.search(ctx):
        return "scheduling"
    if ALLOC.search(ctx) and not SYSCALL.search(here):
        return "allocation"
    if SYSCALL.search(ctx):
        return "system call"
    if ALLOC.search(ctx):
        return "allocation"
    if PASS_UP.search(here) and GUARD_RC.search(guard):
        return "passed up"
    return "untested"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    info, area = sys.argv[1], sys.argv[2].rstrip("/")
    root = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else ".")
    counts = {}
    for path, lines in sorted(records(info).items()):
        rel = os.path.relpath(path, root)
        if not (rel == area or rel.startswith(area + "/")):
            continue
        try:
            with open(path) as f:
                src = f.read().split("\n")
        except OSError as e:
            sys.exit(f"coverage-uncovered: {path}: {e.strerror}")
        hw = bool(HW.search(rel))
        for no in sorted(n for n, h in lines.items() if h == 0):
            kind = classify(src, no)
            label = ("real verbs; " if hw else "") + kind
            counts[label] = counts.get(label, 0) + 1
            text = src[no - 1].strip() if no - 1 < len(src) else ""
            print(f"{rel}:{no} [{label}] {text[:100]}")
    total = sum(counts.values())
    print(f"# {total} uncovered lines in {area}/:")
    for label, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"#   {n:5d} {label}")


if __name__ == "__main__":
    main()

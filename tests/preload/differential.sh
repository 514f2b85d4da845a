#!/bin/bash
# The differential suite (differential_test.cc): the same socket-semantics
# tests once on plain kernel sockets and once under librspreload, both
# required to pass. The preloaded run must also have carried its TCP
# connections on rsockets (its own count, SLIPSTREAM_PRELOAD_STATS): a
# preload that silently left them on kernel TCP fails here.
set -u
name=differential.sh
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
BIN=$B/preload_differential_test
PRELOAD=$B/.libs/librspreload.so
for f in "$BIN" "$PRELOAD"; do
  [ -f "$f" ] || { echo "ERROR: $name: $f not found: build first"; exit 99; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-diff.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
fails=0
# run WHAT LOG [ENV...] -- ARGS...: the binary, its result reported.
run() {
  local what=$1 log=$2 rc
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 120 "$BIN" "$@" >"$T/$log" 2>&1
  rc=$?
  tail -n 3 "$T/$log"
  [ "$rc" = 0 ] && echo "PASS: $what" || { cat "$T/$log"; echo "FAIL: $what (exit $rc)"; fails=$((fails + 1)); }
}
run "plain kernel sockets" plain.log --
# counted WHAT DIR PATTERN CLAIM [ENV...] -- ARGS...: a run under the
# preload, whose counts (SLIPSTREAM_PRELOAD_STATS in $T/DIR) must match
# PATTERN (grep -E) for CLAIM to hold.
counted() {
  local what=$1 dir=$2 pattern=$3 claim=$4 line
  shift 4
  mkdir "$T/$dir"
  run "$what" "$dir.log" LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$T/$dir" "$@"
  line=$(cat "$T/$dir"/rspreload.* 2>/dev/null)
  echo "$name: $dir counts: $line"
  if grep -Eq "$pattern" <<<"$line"; then
    echo "PASS: $claim"
  else
    echo "FAIL: not so: $claim ($line)"
    fails=$((fails + 1))
  fi
}
# Each connected pair counts twice (connect and accept in this process);
# RefusedWithNoListener counts nothing (refused), so everything on shm.
# The late-fallback tests end their connections on kernel TCP, and the
# kernel-TCP ones are there from the start: each has a run of its own.
counted "under librspreload" st " rsockets=([2-9]|[1-9][0-9]+) .* kernel_tcp=0$" \
  "the preloaded run's connections were on rsockets" -- \
  --gtest_filter='-DifferentialLateFallback.*:DifferentialKernelTcp.*:*InTwoSets'
# Passed to another process (SCM_RIGHTS): each of the 4 receiving
# children (one by the batch calls) built its connection back on
# rsockets. A child counts only that (its file), beside what it
# inherited from the fork.
counted "passing under librspreload" pass " rsockets=[1-9].* kernel_tcp=0$" \
  "the passing run's connections were on rsockets" -- --gtest_filter='DifferentialPass.*'
n=$(ls "$T"/pass/rspreload.* 2>/dev/null | wc -l)
if [ "$n" = 5 ]; then
  echo "PASS: each child that got a passed connection built it back on rsockets"
else
  echo "FAIL: $n processes counted rsockets in the passing run, expected the parent and 4 children"
  fails=$((fails + 1))
fi
# Late fallback: every connection began as an rsocket (the stand-in
# rendezvous took it) and moved to kernel TCP.
counted "late fallback under librspreload" late " rsockets=0 .* kernel_tcp=[1-9]" \
  "the late-fallback connections moved to kernel TCP" -- \
  --gtest_filter='DifferentialLateFallback.*'
# Kernel TCP beside rsockets: descriptors duplicated before they connect
# stay on kernel TCP, beside rsocket connections in the same process (an
# edge-triggered listener takes one of each).
counted "kernel TCP under librspreload" kernel " rsockets=[1-9].* kernel_tcp=[1-9]" \
  "the kernel-TCP run had connections on both kernel TCP and rsockets" -- \
  --gtest_filter='DifferentialKernelTcp.*'
# One listener edge-triggered in two sets: with no wake-up interval, a
# sleeper that missed its edge waits out the test's bound and fails.
counted "edges in two sets under librspreload" twosets " rsockets=[1-9][0-9]* .* kernel_tcp=0$" \
  "the two-set run's connections were on rsockets" SLIPSTREAM_RS_WAKE_UP_INTERVAL=0 -- \
  --gtest_filter='*InTwoSets'
# A signal in the busy phase: the blocking recvs of DifferentialSignals
# spin for a minute (polling_time) under the preload, longer than their
# signals last, so only the preload's count of handlers can end them as
# the kernel would; on rsockets, as the counts show.
counted "signals in a receive's busy phase under librspreload" spin \
  " rsockets=[1-9][0-9]* .* kernel_tcp=0$" "the busy-phase run's connections were on rsockets" \
  SLIPSTREAM_RS_POLLING_TIME=60000000 -- --gtest_filter='DifferentialSignals.*'
[ "$fails" = 0 ]

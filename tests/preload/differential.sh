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
mkdir "$T/st" "$T/late"
# The late-fallback tests end their connections on kernel TCP, and the
# kernel-TCP ones are there from the start: run apart.
late='DifferentialLateFallback.*:DifferentialKernelTcp.*'
run "under librspreload" pre.log LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$T/st" -- \
  --gtest_filter="-$late"
line=$(cat "$T"/st/rspreload.* 2>/dev/null)
echo "$name: counts: $line"
# Each connected pair counts twice (connect and accept in this process);
# RefusedWithNoListener counts nothing (refused), so everything on shm.
rs=$(sed -n 's/.* rsockets=\([0-9]*\) .*/\1/p' <<<"$line")
k=$(sed -n 's/.*kernel_tcp=\([0-9]*\).*/\1/p' <<<"$line")
if [ "${rs:-0}" -ge 2 ] && [ "${k:-1}" = 0 ]; then
  echo "PASS: the preloaded run's connections were on rsockets"
else
  echo "FAIL: the preloaded run's connections were not all on rsockets ($line)"
  fails=$((fails + 1))
fi
# Late fallback: every connection began as an rsocket (the stand-in
# rendezvous took it) and moved to kernel TCP; the others never left it.
run "late fallback and kernel TCP under librspreload" late.log LD_PRELOAD="$PRELOAD" \
  SLIPSTREAM_PRELOAD_STATS="$T/late" -- --gtest_filter="$late"
line=$(cat "$T"/late/rspreload.* 2>/dev/null)
echo "$name: late fallback counts: $line"
if grep -q " rsockets=0 .* kernel_tcp=[1-9]" <<<"$line"; then
  echo "PASS: the late-fallback connections moved to kernel TCP"
else
  echo "FAIL: the late-fallback connections did not all move to kernel TCP ($line)"
  fails=$((fails + 1))
fi
# A signal in the busy phase: the blocking recvs of DifferentialSignals
# spin for a minute (polling_time) under the preload, longer than their
# signals last, so only the preload's count of handlers can end them as
# the kernel would; on rsockets, as the counts show.
mkdir "$T/spin"
run "signals in a receive's busy phase under librspreload" spin.log LD_PRELOAD="$PRELOAD" \
  SLIPSTREAM_PRELOAD_STATS="$T/spin" SLIPSTREAM_RS_POLLING_TIME=60000000 -- \
  --gtest_filter='DifferentialSignals.*'
line=$(cat "$T"/spin/rspreload.* 2>/dev/null)
if grep -q " rsockets=[1-9][0-9]* .* kernel_tcp=0$" <<<"$line"; then
  echo "PASS: the busy-phase run's connections were on rsockets"
else
  echo "FAIL: the busy-phase run's connections were not all on rsockets ($line)"
  fails=$((fails + 1))
fi
[ "$fails" = 0 ]

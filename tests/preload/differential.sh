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
timeout 120 "$BIN" >"$T/plain.log" 2>&1
rc=$?
tail -n 3 "$T/plain.log"
[ "$rc" = 0 ] && echo "PASS: plain kernel sockets" || { cat "$T/plain.log"; echo "FAIL: plain kernel sockets (exit $rc)"; fails=$((fails + 1)); }
mkdir "$T/st"
env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$T/st" timeout 120 "$BIN" >"$T/pre.log" 2>&1
rc=$?
tail -n 3 "$T/pre.log"
[ "$rc" = 0 ] && echo "PASS: under librspreload" || { cat "$T/pre.log"; echo "FAIL: under librspreload (exit $rc)"; fails=$((fails + 1)); }
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
[ "$fails" = 0 ]

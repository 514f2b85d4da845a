#!/bin/bash
# rdmacm-utils' riostream on Slipstream: riomap/riowrite direct placement.
# Server (riostream -b) and client (riostream -s) on loopback, both with
# librsocket.so preloaded, for each software provider.  Custom mode only
# (-S/-C; the default mode's exit code is meaningless).  Blocking (-T b),
# non-blocking (-T n) and rpoll (-T a: non-blocking with a spinning rpoll)
# I/O, each with and without verification (-T v), sizes 64 B to 1 MiB; then
# blocking I/O after a sleeping rpoll (-T b -T a), and one run with no -T
# option at all.
#
# riostream's receiver busy-waits without a timeout for the last byte of
# its mapped buffer, so a provider that never places the write hangs: every
# command runs under timeout, a hang is a FAIL, and after two hangs the
# provider's remaining cases are reported failed without running them.
#
# Run from the build directory: bash $srcdir/tests/ext/riostream.sh
# EXT_PROVIDERS overrides the provider list (default "tcp shm").
set -u
. "$(dirname "$0")/common.sh" || { echo "ERROR: $0: common.sh not found"; exit 99; }
ext_init riostream

PROVIDERS=${EXT_PROVIDERS:-tcp shm}
SIZES="64:1000 4096:1000 65536:200 1048576:20"
MAX_HANGS=2

CASES=()
for m in b n a; do
  for v in "" v; do
    for sc in $SIZES; do
      CASES+=("-T $m${v:+ -T v} -S ${sc%%:*} -C ${sc##*:}")
    done
  done
done
CASES+=("-T b -T a -T v -S 65536 -C 200" "-S 65536 -C 100")

for prov in $PROVIDERS; do
  echo "== provider $prov (librsocket.so preloaded on both ends)"
  run_env_preload "$prov"
  first=1
  missing=
  hangs=0
  for c in "${CASES[@]}"; do
    label="$prov: riostream -b/-s 127.0.0.1 $c"
    if [ -n "$missing" ]; then
      n_skip=$((n_skip + 1))
      continue
    fi
    if [ "$hangs" -ge "$MAX_HANGS" ]; then
      echo "FAIL: $label: not run: provider $prov already hung $hangs times"
      n_fail=$((n_fail + 1))
      continue
    fi
    # shellcheck disable=SC2086  # $c holds words without spaces
    ext_pair riostream -b 127.0.0.1 -p @PORT@ $c -- riostream -s 127.0.0.1 -p @PORT@ $c
    ext_stream_verdict
    if [ "$first" = 1 ] && [ "$prov" = shm ] && [ -n "$WHY" ] && ext_unavailable; then
      missing=$WHY
      n_skip=$((n_skip + 1))
      continue
    fi
    first=0
    # A hang: the client never ended, or it ended well and the server did
    # not.  (A server left waiting by a client that failed is no hang.)
    if ext_timed_out "$C_RC" || { [ "$C_RC" = 0 ] && [ "$SRV_HUNG" = 1 ]; }; then
      hangs=$((hangs + 1))
      WHY="hung (riostream busy-waits for placed data that never arrives): $WHY"
    fi
    ext_report "$label"
  done
  [ -z "$missing" ] || echo "SKIP: $prov: all ${#CASES[@]} cases: provider unavailable: $missing"
done

ext_finish

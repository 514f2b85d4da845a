#!/bin/bash
# Repeats one interop case to catch a rare failure; runs INSIDE the guest:
#   tests/rxe/rxe-vm.sh -s BUILD -s SRC -- bash SRC/tests/rxe/stress.sh BUILD
# Knobs: RXE_STRESS_N (runs, default 50), RXE_STRESS_PAIR (SRV:CLI ends,
# default ours:ours), RXE_STRESS_PROG (rstream), RXE_STRESS_ADDR (default
# $RXE_IP6, else $RXE_IP), RXE_STRESS_ARGS (default "-T b -T v -S 65536
# -C 20"), RXE_STRESS_ENV (VAR=value words for our ends, e.g.
# SLIPSTREAM_LOG_LEVEL=debug), RXE_STRESS_TAIL (stderr lines shown, 3);
# RXE_STRESS_SIW=1 runs on siw0 instead of rxe0;
# RXE_STRESS_DMESG=1 adds the kernel log's last lines to each failure
# (with `echo 'file siw_cm.c +p' > .../dynamic_debug/control`, siw's CM
# story).  Prints each failure with both ends' last stderr lines; exits 1
# when any run failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "${RXE_STRESS_SIW:-0}" = 1 ]; then
  RXE_IP=${SIW_IP:?no siw0 in this guest} RXE_IP6=${SIW_IP6:-} RXE_DEV=$SIW_DEV RXE_NETDEV=$SIW_NETDEV
fi
. "$HERE/common.sh"
rxe_init "${1:-}"
n=${RXE_STRESS_N:-50}
pair_ends=${RXE_STRESS_PAIR:-ours:ours}
prog=${RXE_STRESS_PROG:-rstream}
addr=${RXE_STRESS_ADDR:-${RXE_IP6:-$RXE_IP}}
read -r -a args <<<"${RXE_STRESS_ARGS:--T b -T v -S 65536 -C 20}"
read -r -a EXTRA_ENV <<<"${RXE_STRESS_ENV:-}"
fails=0
for ((i = 1; i <= n; i++)); do
  pair "${pair_ends%:*}" "${pair_ends#*:}" "$prog" "$addr" "${args[@]}"
  verdict
  [ -n "$WHY" ] || [ -n "$(perf_line "$CASE_DIR/c.out")" ] || WHY="client printed no result line"
  if [ -n "$WHY" ]; then
    fails=$((fails + 1))
    echo "run $i: FAIL ($WHY)"
    for f in c s; do
      [ -s "$CASE_DIR/$f.err" ] && tail -n "${RXE_STRESS_TAIL:-3}" "$CASE_DIR/$f.err" | sed "s/^/    $f stderr: /"
    done
    [ "${RXE_STRESS_DMESG:-0}" != 1 ] || dmesg | tail -n 40 | sed 's/^/    dmesg: /'
  fi
  [ "${RXE_STRESS_DMESG:-0}" != 1 ] || dmesg -C
done
echo "stress: $prog $pair_ends $addr ${args[*]}: $fails of $n runs failed"
[ "$fails" = 0 ]

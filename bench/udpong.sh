#!/bin/bash
# 64 B datagram echo latency and datagram rate with rdmacm-utils' udpong:
# plain kernel UDP sockets (udpong -T s, nothing preloaded) against udpong
# on Slipstream's datagram rsockets (LD_PRELOAD on both ends) with
# SLIPSTREAM_PROVIDER=shm (shared-memory rings) and =tcp (the kernel's UDP
# under our header), all on 127.0.0.1 in the same run, each server on its
# own port.
#
#   bench/udpong.sh [LIBRARY]      (run from the build directory)
#
# Latency: udpong -T e -S 64 -C $COUNT (the server echoes each datagram;
# udpong prints usec/xfer over both directions). Rate: udpong -S 64
# -C $COUNT without echo (fire and forget; the server reports what it got).
# Each figure is the best of UDPONG_RUNS runs (default 5): on a shared
# machine one run can wait out another program's time slice, or udpong's
# own retransmission after a loss.
# Knobs: UDPONG_COUNT (default 20000), UDPONG_MODE (b, n or a; default b),
# UDPONG_RUNS, UDPONG_ROWS (which of "kernel shm udp" to run; default all).
set -u
LIB=${1:-./.libs/librsocket.so}
COUNT=${UDPONG_COUNT:-20000}
MODE=${UDPONG_MODE:-b}
RUNS=${UDPONG_RUNS:-5}
ROWS=${UDPONG_ROWS:-kernel shm udp}

command -v udpong >/dev/null 2>&1 || { echo "udpong.sh: udpong not found (Debian: rdmacm-utils)" >&2; exit 2; }
[ -f "$LIB" ] || { echo "udpong.sh: $LIB not found (run from the build directory, or pass the path)" >&2; exit 2; }
case $LIB in /*) ;; *) LIB=$PWD/${LIB#./} ;; esac

PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null' EXIT
PORT=$((20000 + RANDOM % 20000))

# best ENV... -- ARGS : the lowest usec/xfer of RUNS client runs (empty
# when none finished within 30 s).
best() {
  local -a env=()
  local i
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  for ((i = 0; i < RUNS; i++)); do
    env "${env[@]}" timeout 30 udpong -s 127.0.0.1 -p "$PORT" "$@" -T "$MODE" -S 64 -C "$COUNT" |
      awk '/^custom/ {print $7}'
  done | sort -g | head -n1
}

# run NAME ENV... -- EXTRA-ARGS : one server, a latency and a rate figure.
run() {
  local name=$1 lat rate
  shift
  local -a env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  PORT=$((PORT + 1))
  env "${env[@]}" timeout 300 udpong -b 127.0.0.1 -p "$PORT" "$@" >/dev/null 2>&1 &
  PIDS+=($!)
  sleep 0.3
  lat=$(best "${env[@]}" -- "$@" -T e)
  rate=$(best "${env[@]}" -- "$@")
  # Gone before the next row: a server left waiting takes its CPU time.
  kill "${PIDS[-1]}" 2>/dev/null
  wait "${PIDS[-1]}" 2>/dev/null
  printf '%-28s %12s %14s\n' "$name" "${lat:-fail}" "${rate:-fail}"
  eval "LAT_$name=\${lat:-0}"
}

printf '%-28s %12s %14s\n' "udpong -T $MODE, 64 B" "echo us/xfer" "rate us/xfer"
for row in $ROWS; do
  case $row in
    kernel) run kernel -u LD_PRELOAD -- -T s ;;
    shm) run shm LD_PRELOAD="$LIB" SLIPSTREAM_PROVIDER=shm -- ;;
    udp) run udp LD_PRELOAD="$LIB" SLIPSTREAM_PROVIDER=tcp -- ;;
    *) echo "udpong.sh: no row \"$row\" (kernel, shm, udp)" >&2; exit 2 ;;
  esac
done
awk -v k="${LAT_kernel:-0}" -v s="${LAT_shm:-0}" \
  'BEGIN { if (k > 0 && s > 0) printf "echo latency, kernel UDP / shm: %.1fx\n", k / s }'

#!/bin/bash
# 64 B ping-pong latency with rdmacm-utils' rstream: plain kernel sockets
# (rstream -T s, nothing preloaded) against rstream on Slipstream's
# librsocket.so (LD_PRELOAD on both ends) with SLIPSTREAM_PROVIDER=shm and
# =tcp, all on 127.0.0.1 in the same run, each on its own port.
#
#   bench/rstream.sh [LIBRARY]      (run from the build directory)
#
# LIBRARY defaults to ./.libs/librsocket.so. Each measurement is
#   rstream -S 64 -C 1 -I $ITERS    (custom mode: ITERS iterations of one
#                                    64 B transfer each way; rstream prints
#                                    usec/xfer = one-way latency = RTT / 2)
# rstream's default I/O is non-blocking (MSG_DONTWAIT): both ends spin, so
# these are busy-poll figures; RSTREAM_EXTRA="-T b" measures blocking calls.
# Knobs: RSTREAM_ITERS (default 100000), RSTREAM_TIMEOUT (seconds per run,
# default 120), RSTREAM_EXTRA (more rstream options for every run, e.g.
# "-T n" for non-blocking calls).
set -u
LIB=${1:-./.libs/librsocket.so}
ITERS=${RSTREAM_ITERS:-100000}
TMO=${RSTREAM_TIMEOUT:-120}
EXTRA=${RSTREAM_EXTRA:-}

command -v rstream >/dev/null 2>&1 || { echo "rstream.sh: rstream not found (Debian: rdmacm-utils)" >&2; exit 2; }
command -v timeout >/dev/null 2>&1 || { echo "rstream.sh: timeout not found" >&2; exit 2; }
[ -f "$LIB" ] || { echo "rstream.sh: $LIB not found (run from the build directory, or pass the path)" >&2; exit 2; }
case $LIB in /*) ;; *) LIB=$PWD/${LIB#./} ;; esac
LIBDIR=$(dirname "$LIB")

TMPD=$(mktemp -d "${TMPDIR:-/tmp}/rstream-bench.XXXXXX") || exit 2
SPID=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  [ -z "$SPID" ] || kill "$SPID" 2>/dev/null
  rm -rf "$TMPD"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A TCP port nothing on this host uses (any state), from a random start.
next_port=$((20000 + (RANDOM % 200) * 100))
pick_port() {
  local p
  while :; do
    p=$next_port
    next_port=$((p + 1))
    if command -v ss >/dev/null 2>&1; then
      [ -n "$(ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null)" ] && continue
    fi
    PORT=$p
    return 0
  done
}

# Waits (at most 3 s) until something listens on $PORT, or the server exits.
wait_listen() {
  local n=0 hex
  hex=$(printf '%04X' "$PORT")
  while [ $n -lt 60 ]; do
    n=$((n + 1))
    kill -0 "$SPID" 2>/dev/null || return 0
    if command -v ss >/dev/null 2>&1; then
      [ -n "$(ss -Hltn "sport = :$PORT" 2>/dev/null)" ] && return 0
    elif grep -q ":$hex [0-9A-F:]* 0A " /proc/net/tcp 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
}

# run LABEL ENV... -- RSTREAM-ARGS... : one server/client pair; sets USEC
# (usec/xfer from the client) or WHY.
run() {
  local label=$1 tries=0 crc
  shift
  local -a envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  pick_port
  USEC=
  WHY=
  # shellcheck disable=SC2086  # EXTRA is a list of words
  timeout -k 5 "$TMO" env "${envs[@]}" rstream -b 127.0.0.1 -p "$PORT" "$@" $EXTRA \
    >"$TMPD/$label.s.out" 2>"$TMPD/$label.s.err" </dev/null &
  SPID=$!
  wait_listen
  while :; do
    # shellcheck disable=SC2086
    timeout -k 5 "$TMO" env "${envs[@]}" rstream -s 127.0.0.1 -p "$PORT" "$@" $EXTRA \
      >"$TMPD/$label.c.out" 2>"$TMPD/$label.c.err" </dev/null
    crc=$?
    # The server may listen a moment after its port shows up.
    if [ "$crc" -ne 0 ] && [ $tries -lt 20 ] && kill -0 "$SPID" 2>/dev/null &&
       grep -qi 'refused' "$TMPD/$label.c.err"; then
      tries=$((tries + 1))
      sleep 0.1
      continue
    fi
    break
  done
  local n=0
  while [ $n -lt 100 ] && kill -0 "$SPID" 2>/dev/null; do
    n=$((n + 1))
    sleep 0.05
  done
  if kill -0 "$SPID" 2>/dev/null; then
    kill "$SPID" 2>/dev/null
    WHY="server did not exit"
  fi
  wait "$SPID" 2>/dev/null
  local src=$?
  SPID=
  # The result line: "custom 64 1 100k 12m 1.23s 0.08 6.15"; usec/xfer last.
  local line
  line=$(grep -E '^custom' "$TMPD/$label.c.out" | tail -1)
  if [ "$crc" -eq 124 ] || [ "$crc" -eq 137 ]; then
    WHY="client timed out after $TMO s${WHY:+; $WHY}"
  elif [ "$crc" -ne 0 ]; then
    WHY="client exit status $crc${WHY:+; $WHY}"
  elif [ -z "$line" ]; then
    WHY="no result line${WHY:+; $WHY}"
  elif [ -z "$WHY" ] && [ "$src" -ne 0 ]; then
    WHY="server exit status $src"
  fi
  if [ -z "$WHY" ]; then
    USEC=$(echo "$line" | awk '{print $NF}')
  else
    local err
    err=$(cat "$TMPD/$label.c.err" "$TMPD/$label.s.err" 2>/dev/null | grep -v '^$' | head -3 | tr '\n' ' ')
    [ -z "$err" ] || WHY="$WHY: $err"
  fi
}

ARGS=(-S 64 -C 1 -I "$ITERS")
echo "rstream ${ARGS[*]}${EXTRA:+ $EXTRA} on 127.0.0.1 (usec/xfer = one-way latency)"
case " $EXTRA " in
  *" -T b "*|*" -T blocking "*) echo "blocking calls (-T b)" ;;
  *) echo "rstream's default non-blocking calls: both ends spin on MSG_DONTWAIT (busy-poll)" ;;
esac
echo "library: $LIB"
echo

declare -A RES ERR
rc=0
# kernel first, then the preloaded runs; the same binary and arguments.
run kernel -u LD_PRELOAD -u SLIPSTREAM_PROVIDER -- -T s "${ARGS[@]}"
RES[kernel]=$USEC; ERR[kernel]=$WHY
for prov in shm tcp; do
  run "$prov" LD_PRELOAD="$LIB" LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    SLIPSTREAM_PROVIDER="$prov" -- "${ARGS[@]}"
  RES[$prov]=$USEC; ERR[$prov]=$WHY
done

printf '%-28s %12s %14s\n' "transport" "usec/xfer" "vs kernel"
printf '%-28s %12s %14s\n' "---------" "---------" "---------"
for t in kernel shm tcp; do
  case $t in
    kernel) name="kernel sockets (-T s)" ;;
    *) name="librsocket.so, $t" ;;
  esac
  if [ -n "${ERR[$t]}" ]; then
    printf '%-28s FAILED: %s\n' "$name" "${ERR[$t]}"
    rc=1
    continue
  fi
  ratio=-
  if [ -n "${RES[kernel]}" ]; then
    ratio=$(awk -v k="${RES[kernel]}" -v v="${RES[$t]}" 'BEGIN { if (v > 0) printf "%.2fx", k / v; else print "-" }')
  fi
  printf '%-28s %12s %14s\n' "$name" "${RES[$t]}" "$ratio"
done
echo
echo "vs kernel: kernel usec/xfer / this usec/xfer (above 1 is faster than kernel sockets)"
exit $rc

#!/bin/bash
# Soak: a mixed load against one long-lived librsocket process for a given
# time, checking that nothing it holds grows. Not part of `make check`.
#
#   bench/soak.sh [SECONDS]          (default 1800; run from the build dir)
#
# The long-lived process is bench/soak_peer serve (SLIPSTREAM_PROVIDER=auto:
# it listens on shm and tcp at once). Against it, for each provider in
# SOAK_PROVIDERS ("shm tcp"), in parallel and until the time is up:
#   - streams: rdmacm-utils' rstream -s in custom mode with verification
#     (-T v), librsocket preloaded, 1 B to 64 KiB; every 4th one is
#     SIGKILLed at a random moment (a peer dying mid-stream);
#   - riowrite: soak_peer riowrite (64 KiB riowrites, each checked by the
#     server, answered);
#   - churn: soak_peer churn (connect, one byte echoed, close, 100 times);
#   - a peer killed mid-transfer: soak_peer hang, SIGKILLed a moment later.
# A client that fails without having been killed fails the soak.
#
# The server's descriptors, threads, RSS, memfds (open and mapped) and
# /dev/shm files (named slipstream* or mapped by it) are sampled after a
# warm-up round once it is idle ("start"), every SOAK_INTERVAL seconds
# (60) under load, and idle again at the end ("end"). The soak fails when
# at the end: descriptors > start + 2, threads > start + 1 (a connection
# thread still on its way out), RSS > start + 16 MiB + 25% (malloc arenas
# of the connection threads settle), memfds or /dev/shm files > start.
set -u
DURATION=${1:-1800}
INTERVAL=${SOAK_INTERVAL:-60}
PROVIDERS=${SOAK_PROVIDERS:-shm tcp}
BUILDDIR=$(pwd)
PEER=$BUILDDIR/bench/soak_peer
LIB=$BUILDDIR/.libs/librsocket.so
[ -x "$PEER" ] || { echo "soak.sh: $PEER not built (make bench/soak_peer)" >&2; exit 2; }
[ -f "$LIB" ] || { echo "soak.sh: $LIB not found: run from the build dir" >&2; exit 2; }
command -v rstream >/dev/null || { echo "soak.sh: rstream not found (rdmacm-utils)" >&2; exit 2; }

TMPD=$(mktemp -d "${TMPDIR:-/tmp}/ss-soak.XXXXXX") || exit 2
SERVER=
cleanup() {
  local p
  for p in $(jobs -p); do kill "$p" 2>/dev/null; done
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$TMPD"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export LD_LIBRARY_PATH=$BUILDDIR/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SLIPSTREAM_PROVIDER=auto "$PEER" serve "$TMPD/port" >"$TMPD/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do [ -s "$TMPD/port" ] && break; sleep 0.1; done
[ -s "$TMPD/port" ] || { echo "soak.sh: the server did not start:"; cat "$TMPD/server.log"; exit 1; }
PORT=$(cat "$TMPD/port")

# sample LABEL : one line of the server's figures; sets S_FDS S_THREADS
# S_RSS (KiB) S_MEMFD (open) S_MEMMAP (mapped) S_SHM.
sample() {
  local p=/proc/$SERVER
  S_FDS=$(ls "$p/fd" | wc -l)
  S_THREADS=$(awk '/^Threads:/ {print $2}' "$p/status")
  S_RSS=$(awk '/^VmRSS:/ {print $2}' "$p/status")
  S_MEMFD=$(find "$p/fd" -lname '/memfd:*' 2>/dev/null | wc -l)
  S_MEMMAP=$(grep -c 'memfd:' "$p/maps")
  S_SHM=$( (ls /dev/shm | grep '^slipstream'; grep -o '/dev/shm/[^ ]*' "$p/maps") | sort -u | wc -l)
  printf '%-6s %6ds  fds %4d  threads %3d  RSS %7d KiB  memfds %3d open %4d mapped  /dev/shm %d\n' \
    "$1" $((SECONDS - T0)) "$S_FDS" "$S_THREADS" "$S_RSS" "$S_MEMFD" "$S_MEMMAP" "$S_SHM"
}

# client NAME PROVIDER CMD... : runs one client; its failure is recorded
# unless this script killed it (KILL_IT=1: SIGKILL after a random moment).
client() {
  local name=$1 prov=$2 pid rc
  shift 2
  SLIPSTREAM_PROVIDER=$prov "$@" >"$TMPD/$name.out" 2>&1 &
  pid=$!
  if [ "${KILL_IT:-0}" = 1 ]; then
    sleep "0.$((RANDOM % 10))"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid"
  rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 137 ]; then
    { echo "FAIL: $name on $prov exited $rc:"; tail -5 "$TMPD/$name.out"; } >>"$TMPD/failures"
  fi
}

stream_loop() {
  # rstream's client sends all COUNT messages before it reads the first
  # answer: SIZE x COUNT stays well inside the buffers of an echo.
  local prov=$1 i=0 sc sizes=("1:500" "4096:100" "65536:6" "1000:300")
  while [ "$SECONDS" -lt "$END" ]; do
    sc=${sizes[$((i % 4))]}
    KILL_IT=$((i % 4 == 3)) client "stream-$prov" "$prov" env LD_PRELOAD="$LIB" \
      rstream -s 127.0.0.1 -p "$PORT" -T v -S "${sc%%:*}" -C "${sc##*:}"
    i=$((i + 1))
  done
}
riowrite_loop() {
  while [ "$SECONDS" -lt "$END" ]; do client "riowrite-$1" "$1" "$PEER" riowrite "$PORT" 65536 200; done
}
churn_loop() {
  while [ "$SECONDS" -lt "$END" ]; do client "churn-$1" "$1" "$PEER" churn "$PORT" 100; done
}
kill_loop() {
  while [ "$SECONDS" -lt "$END" ]; do
    KILL_IT=1 client "hang-$1" "$1" "$PEER" hang "$PORT"
    sleep 5
  done
}

run_load() {
  local prov pids=()
  for prov in $PROVIDERS; do
    # (stderr: bash's "Killed" for the peers killed on purpose; each
    # client's own output goes to a file, its failure to $TMPD/failures)
    stream_loop "$prov" 2>/dev/null & pids+=($!)
    riowrite_loop "$prov" 2>/dev/null & pids+=($!)
    churn_loop "$prov" 2>/dev/null & pids+=($!)
    kill_loop "$prov" 2>/dev/null & pids+=($!)
  done
  local left
  while left=$((END - SECONDS)) && [ "$left" -gt 0 ]; do
    sleep $((left < INTERVAL ? left : INTERVAL))
    kill -0 "$SERVER" 2>/dev/null || break
    sample load
  done
  wait "${pids[@]}"
}

# Idle: the last connections' lingering closes (close_linger, 500 ms) and
# their threads are done.
settle() { sleep 3; }

T0=$SECONDS
echo "soak.sh: ${DURATION}s over: $PROVIDERS; server pid $SERVER port $PORT"
END=$((SECONDS + 5))
run_load  # warm-up: one round of everything
settle
sample start
B_FDS=$S_FDS B_THREADS=$S_THREADS B_RSS=$S_RSS B_MEMFD=$S_MEMFD B_MEMMAP=$S_MEMMAP B_SHM=$S_SHM
END=$((SECONDS + DURATION))
run_load
settle
if ! kill -0 "$SERVER" 2>/dev/null; then
  echo "FAIL: the server died:"
  cat "$TMPD/server.log"
  exit 1
fi
sample end

rc=0
check() {  # check WHAT VALUE LIMIT
  if [ "$2" -gt "$3" ]; then
    echo "FAIL: $1 grew: $2 at the end, at most $3 allowed"
    rc=1
  fi
}
check descriptors "$S_FDS" $((B_FDS + 2))
check threads "$S_THREADS" $((B_THREADS + 1))
check "RSS (KiB)" "$S_RSS" $((B_RSS + 16384 + B_RSS / 4))
check "open memfds" "$S_MEMFD" "$B_MEMFD"
check "mapped memfds" "$S_MEMMAP" "$B_MEMMAP"
check "/dev/shm files" "$S_SHM" "$B_SHM"
if [ -s "$TMPD/failures" ]; then
  echo "FAIL: clients failed ($(grep -c '^FAIL' "$TMPD/failures") times):"
  head -30 "$TMPD/failures"
  rc=1
fi
kill -TERM "$SERVER"
wait "$SERVER"
SERVER=
cat "$TMPD/server.log"
[ "$rc" = 0 ] && echo "PASS: soak of ${DURATION}s: nothing grew"
exit "$rc"

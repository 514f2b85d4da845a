#!/bin/bash
# Unmodified Debian programs, plain (kernel TCP) against both ends preloaded
# with librspreload (rsockets, shm on one host), in the same run:
#   redis-benchmark -t set,get (requests per second, 10 clients, 64 B
#     values, and pipelined -P 16) against redis-server on 127.0.0.1;
#   iperf3 -c 127.0.0.1 (Gbit/s, one stream; its server listens on [::]).
# Each figure is the best of APPS_RUNS runs (default 3), the ratio is
# preloaded / plain. Each preloaded run's counts must show rsockets only,
# or the row says so.
#
#   bench/preload_apps.sh [PRELOAD]      (run from the build directory)
set -u
LIB=${1:-./.libs/librspreload.so}
RUNS=${APPS_RUNS:-3}
for p in redis-server redis-benchmark redis-cli iperf3 python3; do
  command -v $p >/dev/null || { echo "preload_apps.sh: $p not found (scripts/install-deps.sh)" >&2; exit 2; }
done
[ -f "$LIB" ] || { echo "preload_apps.sh: $LIB not found (run from the build directory)" >&2; exit 2; }
case $LIB in /*) ;; *) LIB=$PWD/${LIB#./} ;; esac
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-apps.XXXXXX") || exit 2
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT
port=$((30000 + RANDOM % 20000))

# with PRELOADED CMD...: the command, preloaded (counts under $T/st) or not.
with() {
  if [ "$1" = 1 ]; then
    shift
    env LD_PRELOAD="$LIB" SLIPSTREAM_PRELOAD_STATS="$T/st" "$@"
  else
    shift
    "$@"
  fi
}

# offloaded: every preloaded process of this run counted rsockets only.
offloaded() {
  cat "$T"/st/* 2>/dev/null | awk '{for (i = 1; i <= NF; i++) {split($i, kv, "=");
    if (kv[1] == "rsockets") r += kv[2]; if (kv[1] == "kernel_tcp") k += kv[2]}}
    END {exit !(r > 0 && k == 0)}'
}

best() { sort -g | tail -n1; }

# redis PRELOADED TEST PIPELINE: best requests/s over RUNS runs.
redis() {
  local pre=$1 test=$2 pipe=$3 i spid
  port=$((port + 1))
  with "$pre" redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
  spid=$!
  PIDS+=("$spid")
  # Listening (ss: no connection of its own to count), and a moment for
  # the preloaded server's rsocket listener beside the kernel's.
  for i in $(seq 50); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
  sleep 0.2
  for ((i = 0; i < RUNS; i++)); do
    with "$pre" redis-benchmark -p $port -h 127.0.0.1 -n 100000 -c 10 -P "$pipe" -t "$test" \
      -d 64 -q 2>/dev/null | tr '\r' '\n' | awk -v t="${test^^}" '$1 == t":" && /requests per second/ {print $2}'
  done | best
  with "$pre" redis-cli -p $port shutdown nosave >/dev/null 2>&1
  wait "$spid" 2>/dev/null
}

# iperf PRELOADED: best Gbit/s received over RUNS runs of 2 s.
iperf() {
  local pre=$1 i spid
  for ((i = 0; i < RUNS; i++)); do
    port=$((port + 1))
    with "$pre" timeout 30 iperf3 -s -1 -p $port >/dev/null 2>&1 &
    spid=$!
    PIDS+=("$spid")
    sleep 0.3
    with "$pre" timeout 30 iperf3 -c 127.0.0.1 -p $port -t 2 -J 2>/dev/null |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9)' 2>/dev/null
    wait "$spid" 2>/dev/null
  done | best
}

# row NAME FUNCTION ARGS...: plain, preloaded, ratio, and whether the
# preloaded runs were offloaded.
row() {
  local name=$1 plain pre note=
  shift
  plain=$("$@" 0 2>/dev/null)
  rm -rf "$T/st" && mkdir -p "$T/st"
  pre=$("$@" 1 2>/dev/null)
  offloaded || note="  (NOT offloaded: $(cat "$T"/st/* 2>/dev/null | tr '\n' ' '))"
  awk -v n="$name" -v a="${plain:-0}" -v b="${pre:-0}" -v note="$note" 'BEGIN {
    printf "%-34s %12.2f %12.2f %7s%s\n", n, a, b, (a > 0 ? sprintf("%.2fx", b / a) : "-"), note }'
}

redis_set() { redis "$1" set 1; }
redis_get() { redis "$1" get 1; }
redis_get_p16() { redis "$1" get 16; }

printf '%-34s %12s %12s %7s\n' "best of $RUNS" "kernel TCP" "preloaded" "ratio"
row "redis SET, 10 clients (req/s)" redis_set
row "redis GET, 10 clients (req/s)" redis_get
row "redis GET, 10 clients, -P 16 (req/s)" redis_get_p16
row "iperf3, one stream (Gbit/s)" iperf

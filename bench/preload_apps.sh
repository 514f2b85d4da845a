#!/bin/bash
# Unmodified Debian programs, plain (kernel TCP) against both ends preloaded
# with librspreload (rsockets, shm on one host), in the same run:
#   redis-benchmark -t set,get (requests per second, 10 clients, 64 B
#     values, and pipelined -P 16) against redis-server on 127.0.0.1;
#   iperf3 -c 127.0.0.1 (Gbit/s, one stream; its server listens on [::]);
#   memcslap set/get (operations/s, 4 threads) against memcached;
#   ab -k (requests/s, 10 clients, keep-alive, a 4 KB file) against nginx
#     (two worker processes, epoll, sendfile);
#   sockperf TCP ping-pong (average latency in usec, lower is better).
# Each figure is the best of APPS_RUNS runs (default 3), the ratio is
# preloaded / plain. Each preloaded run's counts must show rsockets only,
# or the row says so.
#
#   bench/preload_apps.sh [PRELOAD]      (run from the build directory)
set -u
LIB=${1:-./.libs/librspreload.so}
RUNS=${APPS_RUNS:-3}
for p in redis-server redis-benchmark redis-cli iperf3 python3 memcached memcslap nginx ab \
  sockperf; do
  command -v $p >/dev/null || { echo "preload_apps.sh: $p not found (scripts/install-deps.sh)" >&2; exit 2; }
done
[ -f "$LIB" ] || { echo "preload_apps.sh: $LIB not found (run from the build directory)" >&2; exit 2; }
case $LIB in /*) ;; *) LIB=$PWD/${LIB#./} ;; esac
. "$(dirname "$0")/../tests/ext/nginx_conf.sh" || exit 2
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-apps.XXXXXX") || exit 2
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT
port=$((30000 + RANDOM % 20000))

# serve PRELOADED CMD...: becomes the command (exec), preloaded (counts
# under $T/st) or not; started with `&`, $! is the program itself, so
# kill reaches it. with runs it in the foreground.
serve() {
  if [ "$1" = 1 ]; then
    shift
    exec env LD_PRELOAD="$LIB" SLIPSTREAM_PRELOAD_STATS="$T/st" "$@"
  fi
  shift
  exec "$@"
}
with() { (serve "$@"); }

# offloaded: every preloaded process of this run counted rsockets only.
offloaded() {
  cat "$T"/st/* 2>/dev/null | awk '{for (i = 1; i <= NF; i++) {split($i, kv, "=");
    if (kv[1] == "rsockets") r += kv[2]; if (kv[1] == "kernel_tcp") k += kv[2]}}
    END {exit !(r > 0 && k == 0)}'
}

best() { sort -g | tail -n1; }
least() { sort -g | head -n1; }

# listening PORT: a server listens (ss: no connection of its own to
# count), and a moment for a preloaded server's rsocket listener beside
# the kernel's.
listening() {
  local i
  for i in $(seq 50); do ss -Hltn "sport = :$1" | grep -q . && break; sleep 0.1; done
  sleep 0.2
}

# redis PRELOADED TEST PIPELINE: best requests/s over RUNS runs.
redis() {
  local pre=$1 test=$2 pipe=$3 i spid
  port=$((port + 1))
  serve "$pre" redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
  spid=$!
  PIDS+=("$spid")
  listening $port
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
    serve "$pre" timeout 30 iperf3 -s -1 -p $port >/dev/null 2>&1 &
    spid=$!
    PIDS+=("$spid")
    sleep 0.3
    with "$pre" timeout 30 iperf3 -c 127.0.0.1 -p $port -t 2 -J 2>/dev/null |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9)' 2>/dev/null
    wait "$spid" 2>/dev/null
  done | best
}

# memc PRELOADED TEST: best operations/s of memcslap (4 threads, 20000
# keys each) over RUNS runs; root must name memcached's user.
memc() {
  local pre=$1 test=$2 i spid
  port=$((port + 1))
  serve "$pre" memcached -p $port -U 0 -l 127.0.0.1 -u root >/dev/null 2>&1 &
  spid=$!
  PIDS+=("$spid")
  listening $port
  for ((i = 0; i < RUNS; i++)); do
    with "$pre" memcslap -s 127.0.0.1:$port -c 4 -e 20000 -t "$test" 2>/dev/null |
      awk -v t="$test" '$1 == "Time" && $3 == t && $6 == "by" && $9 > 0 {print $4 / $9}'
  done | best
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
}

# nginx_ab PRELOADED: best requests/s of ab -k (10 clients, 20000
# requests of a 4 KB file) against nginx with two workers, over RUNS runs.
nginx_ab() {
  local pre=$1 i spid d=$T/nginx
  port=$((port + 1))
  mkdir -p "$d/www" && head -c 4096 /dev/urandom >"$d/www/small"
  nginx_conf "$d" $port "$d/www"
  serve "$pre" nginx -e "$d/error.log" -c "$d/nginx.conf" -p "$d" >/dev/null 2>&1 &
  spid=$!
  PIDS+=("$spid")
  listening $port
  for ((i = 0; i < RUNS; i++)); do
    with "$pre" ab -q -k -c 10 -n 20000 "http://127.0.0.1:$port/small" 2>/dev/null |
      awk '/^Requests per second:/ {print $4}'
  done | best
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
}

# sockperf_pp PRELOADED: least average latency (usec) of 2 s TCP
# ping-pong runs over RUNS runs.
sockperf_pp() {
  local pre=$1 i spid
  port=$((port + 1))
  serve "$pre" sockperf server --tcp -i 127.0.0.1 -p $port >/dev/null 2>&1 &
  spid=$!
  PIDS+=("$spid")
  listening $port
  for ((i = 0; i < RUNS; i++)); do
    with "$pre" sockperf ping-pong --tcp -i 127.0.0.1 -p $port --time 2 2>&1 |
      sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p'
  done | least
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
}

# row NAME FUNCTION ARGS...: plain, preloaded, ratio, and whether the
# preloaded runs were offloaded.
row() {
  local name=$1 plain pre note=
  shift
  # Each run in a subshell: the port it used is bumped here.
  port=$((port + 10))
  plain=$("$@" 0 2>/dev/null)
  port=$((port + 10))
  rm -rf "$T/st" && mkdir -p "$T/st"
  pre=$("$@" 1 2>/dev/null)
  offloaded || note="  (NOT offloaded: $(cat "$T"/st/* 2>/dev/null | tr '\n' ' '))"
  awk -v n="$name" -v a="${plain:-0}" -v b="${pre:-0}" -v note="$note" 'BEGIN {
    printf "%-34s %12.2f %12.2f %7s%s\n", n, a, b, (a > 0 ? sprintf("%.2fx", b / a) : "-"), note }'
}

redis_set() { redis "$1" set 1; }
redis_get() { redis "$1" get 1; }
redis_get_p16() { redis "$1" get 16; }
memc_set() { memc "$1" set; }
memc_get() { memc "$1" get; }

printf '%-34s %12s %12s %7s\n' "best of $RUNS" "kernel TCP" "preloaded" "ratio"
row "redis SET, 10 clients (req/s)" redis_set
row "redis GET, 10 clients (req/s)" redis_get
row "redis GET, 10 clients, -P 16 (req/s)" redis_get_p16
row "iperf3, one stream (Gbit/s)" iperf
row "memcached SET, memcslap -c 4 (ops/s)" memc_set
row "memcached GET, memcslap -c 4 (ops/s)" memc_get
row "nginx 4 KB, ab -k -c 10 (req/s)" nginx_ab
row "sockperf TCP ping-pong (usec, lower)" sockperf_pp

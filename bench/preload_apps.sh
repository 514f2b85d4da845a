#!/bin/bash
# Unmodified Debian programs, plain (kernel TCP) against both ends preloaded
# with librspreload (rsockets, shm on one host), in the same run, with
# issue 14's bench targets:
#   redis-benchmark -t set / -t get (requests per second, 50 clients, 64 B
#     values; no pipelining: target >= 2x; and -P 16: reported) against
#     redis-server on 127.0.0.1;
#   iperf3 -c 127.0.0.1 (Gbit/s, one stream; its server listens on [::]):
#     target >= 2x;
#   memcslap set/get (operations/s, 4 threads) against memcached;
#   ab -k (requests/s, 10 clients, keep-alive, a 4 KB file) against nginx
#     (two worker processes, epoll, sendfile);
#   sockperf TCP ping-pong, 14 B messages: one-way latency in usec, which
#     is what sockperf prints without --full-rtt (each observation is its
#     round trip / 2): the average (target <= 1 usec and >= 10x), p50, p99.
# redis, iperf3 and sockperf run their server on CPU 1 and their client on
# CPU 0 (taskset; APPS_PIN=0: not pinned): a preloaded end busy-polls,
# and two pollers the scheduler put on one CPU take turns there (sockperf
# one-way 14 usec instead of 0.1 on the 2-core machine). memcached and
# nginx have several threads or processes and are not pinned.
# Each figure is the best of APPS_RUNS runs (default 3; sockperf: the run
# with the least average, its percentiles). "gain" is preloaded / plain
# for rates and plain / preloaded for latencies (above 1: the preload is
# better). Each preloaded row's processes must count rsockets only, or
# the row says NOT offloaded.
#
#   bench/preload_apps.sh [PRELOAD]      (run from the build directory)
#   APPS_ONLY=REGEX                      only the rows whose name matches
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
SRV=() CLI=()
if [ "${APPS_PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ]; then
  SRV=(taskset -c 1) CLI=(taskset -c 0)
fi

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

# redis PRELOADED TEST PIPELINE: best requests/s over RUNS runs of
# 200000 requests from 50 clients.
redis() {
  local pre=$1 test=$2 pipe=$3 i spid
  port=$((port + 1))
  serve "$pre" "${SRV[@]}" redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
  spid=$!
  PIDS+=("$spid")
  listening $port
  for ((i = 0; i < RUNS; i++)); do
    with "$pre" "${CLI[@]}" redis-benchmark -p $port -h 127.0.0.1 -n 200000 -c 50 -P "$pipe" -t "$test" \
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
    serve "$pre" "${SRV[@]}" timeout 30 iperf3 -s -1 -p $port >/dev/null 2>&1 &
    spid=$!
    PIDS+=("$spid")
    sleep 0.3
    with "$pre" "${CLI[@]}" timeout 30 iperf3 -c 127.0.0.1 -p $port -t 2 -J 2>/dev/null |
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

# sockperf_pp PRELOADED: "avg p50 p99" one-way latency (usec) of the
# 3 s TCP ping-pong run with the least average over RUNS runs. --mps:
# unpaced, sockperf sizes its table for 600,000 round trips a second and
# exits ("_seqN > m_maxSequenceNo") when shm goes faster; 2 M/s is above
# what either path reached here (sockperf's closing "rate is too high"
# note: no send waited for the pacer).
sockperf_pp() {
  local pre=$1 i spid
  port=$((port + 1))
  serve "$pre" "${SRV[@]}" sockperf server --tcp -i 127.0.0.1 -p $port >/dev/null 2>&1 &
  spid=$!
  PIDS+=("$spid")
  listening $port
  for ((i = 0; i < RUNS; i++)); do
    with "$pre" "${CLI[@]}" sockperf ping-pong --tcp -i 127.0.0.1 -p $port --time 3 --mps 2000000 2>&1 | awk '
      /avg-latency=/ {sub(/.*avg-latency=/, ""); a = $0 + 0}
      /percentile 50.000 =/ {p50 = $NF} /percentile 99.000 =/ {p99 = $NF}
      END {if (a > 0) print a, p50, p99}'
  done | sort -g -k1,1 | head -n1
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
}

# row NAMES TARGETS FUNCTION: the function, given 0 (plain) or 1
# (preloaded), prints one or more figures on a line; NAMES and TARGETS
# name them, ';' between. A target: "rate>=N" (preloaded/plain at least
# N), "lat>=N" (plain/preloaded at least N), "lat>=N,<=U" (also at most U
# usec preloaded), "rate" or "lat" (reported only: the gain's direction).
row() {
  local names=$1 targets=$2 fn=$3 plain pre note=
  [[ $names =~ ${APPS_ONLY:-.} ]] || return 0
  # Each run in a subshell: the port it used is bumped here.
  port=$((port + 10))
  plain=$("$fn" 0 2>/dev/null)
  port=$((port + 10))
  rm -rf "$T/st" && mkdir -p "$T/st"
  pre=$("$fn" 1 2>/dev/null)
  offloaded || note="NOT offloaded: $(cat "$T"/st/* 2>/dev/null | tr '\n' ' ')"
  awk -v names="$names" -v targets="$targets" -v a="$plain" -v b="$pre" -v note="$note" 'BEGIN {
    n = split(names, nm, ";"); split(targets, tg, ";"); split(a, av, " "); split(b, bv, " ")
    for (i = 1; i <= n; i++) {
      x = av[i] + 0; y = bv[i] + 0; t = tg[i]; lat = (t ~ /^lat/)
      g = (x > 0 && y > 0) ? (lat ? x / y : y / x) : 0
      verdict = "-"
      if (match(t, />=[0-9.]+/)) {
        want = substr(t, RSTART + 2, RLENGTH - 2) + 0
        ok = (g >= want); verdict = sprintf(">=%gx", want)
        if (match(t, /<=[0-9.]+/)) {
          cap = substr(t, RSTART + 2, RLENGTH - 2) + 0
          ok = ok && y > 0 && y <= cap; verdict = verdict sprintf(", <=%g", cap)
        }
        verdict = verdict (ok ? " met" : " NOT met")
      }
      printf "%-44s %12.2f %12.2f %8s  %s%s\n", nm[i], x, y,
        (g > 0 ? sprintf("%.2fx", g) : "-"), verdict, (note != "" ? "  (" note ")" : "")
    }
  }'
}

redis_set() { redis "$1" set 1; }
redis_get() { redis "$1" get 1; }
redis_set_p16() { redis "$1" set 16; }
redis_get_p16() { redis "$1" get 16; }
memc_set() { memc "$1" set; }
memc_get() { memc "$1" get; }

echo "# $(date -u '+%F %T UTC'), $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null) $(git -C "$(dirname "$0")" status --porcelain -uno 2>/dev/null | grep -q . && echo '(modified)'), load:$(uptime | sed 's/.*load average://')"
printf '%-44s %12s %12s %8s  %s\n' "best of $RUNS" "kernel TCP" "preloaded" "gain" "target"
row "redis SET, 50 clients (req/s)" "rate>=2" redis_set
row "redis GET, 50 clients (req/s)" "rate>=2" redis_get
row "redis SET, 50 clients, -P 16 (req/s)" "rate" redis_set_p16
row "redis GET, 50 clients, -P 16 (req/s)" "rate" redis_get_p16
row "iperf3, one stream (Gbit/s)" "rate>=2" iperf
row "memcached SET, memcslap -c 4 (ops/s)" "rate" memc_set
row "memcached GET, memcslap -c 4 (ops/s)" "rate" memc_get
row "nginx 4 KB, ab -k -c 10 (req/s)" "rate" nginx_ab
row "sockperf TCP ping-pong one-way avg (usec);sockperf TCP ping-pong one-way p50 (usec);sockperf TCP ping-pong one-way p99 (usec)" \
  "lat>=10,<=1;lat;lat" sockperf_pp
echo "# load at the end:$(uptime | sed 's/.*load average://')"

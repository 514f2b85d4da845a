# shellcheck shell=bash
# The librspreload program cases (issue 14), sourced by tests/ext/preload.sh
# (one host: shm), tests/ext/preload_netns_apps.sh and
# tests/ext/preload_netns_fallback.sh (two network namespaces: rsockets
# over the tcp provider, or kernel TCP); not a test by itself. Every case
# checks the exit codes, the bytes, and each process's own count of where
# its connections went (SLIPSTREAM_PRELOAD_STATS): every connection of a
# case where both ends are preloaded on rsockets of provider $PROV, every
# connection of a case with one end preloaded on kernel TCP in that end
# (none on rsockets), and every process that counted anything checked
# (end), so a connection silently left on kernel TCP, or one on rsockets
# with a plain peer, fails the case. A case's SERVER_PRELOADED and
# CLIENT_PRELOADED arguments (1: preloaded; srv_pre and cli_pre inside)
# say which ends are.
#
# The sourcing script sets: PRELOAD (the library), T (scratch directory,
# with $T/in: 3 MB of random bytes, $T/www/blob its copy), port (the last
# port used; each case takes the next), pids and pg_dirs (what its EXIT
# trap ends and removes), HOST (the servers' IPv4 address, also the
# clients' target), PROV (shm or tcp), and for namespaces SRV_NS and
# CLI_NS (command prefixes: ip netns exec NS; empty on one host) and
# WHERE (appended to every case's name), and B (the build directory).
. "$(dirname "${BASH_SOURCE[0]}")/libs_copy.sh" || exit 99
SRV_NS=(${SRV_NS[@]+"${SRV_NS[@]}"})
CLI_NS=(${CLI_NS[@]+"${CLI_NS[@]}"})
WHERE=${WHERE:-}
fails=0

fail() { echo "FAIL: $case: $*"; bad=1; }

# bg_env PRELOADED(0/1) CMD...: becomes the command (exec) on the server's
# side, preloaded or not, with its counts under $T/st; started with `&`,
# $! is the command itself, so killing it reaches the program. run_env
# runs it in the foreground on the client's side.
bg_env() {
  local pre=$1
  shift
  if [ "$pre" = 1 ]; then
    exec ${SRV_NS[@]+"${SRV_NS[@]}"} env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$T/st" \
      timeout 30 "$@"
  fi
  exec ${SRV_NS[@]+"${SRV_NS[@]}"} timeout 30 "$@"
}
run_env() { (SRV_NS=(${CLI_NS[@]+"${CLI_NS[@]}"}) && bg_env "$@"); }

wait_listening() {  # port
  local i
  for i in $(seq 100); do
    ${SRV_NS[@]+"${SRV_NS[@]}"} ss -Hltn "sport = :$1" | grep -q . && return 0
    sleep 0.1
  done
  return 1
}

# url_host ADDRESS: the address as a URL or socat names it ([v6]).
url_host() {
  case $1 in *:*) echo "[$1]" ;; *) echo "$1" ;; esac
}

# make_value: $T/value, 200 KB of text (base64) from $T/in.
make_value() { base64 -w0 "$T/in" | head -c 200000 >"$T/value"; }

# expect_counts COMM RSOCKETS KERNEL: the sum over the processes named COMM
# (RSOCKETS or KERNEL "some": at least one, for programs that open as
# many connections as they see fit), every rsocket on provider $PROV.
expect_counts() {
  local comm=$1 want_rs=$2 want_k=$3 rs=0 k=0 f line n
  counted+=" $comm "
  for f in "$T"/st/rspreload.*; do
    [ -f "$f" ] || continue
    line=$(cat "$f")
    case " $line " in *" comm=$comm "*) ;; *) continue ;; esac
    n=$(sed 's/.* rsockets=\([0-9]*\) .*/\1/' <<<"$line")
    rs=$((rs + n))
    k=$((k + $(sed 's/.*kernel_tcp=\([0-9]*\).*/\1/' <<<"$line")))
    grep -q " $PROV=$n " <<<"$line" || fail "$comm: not all on $PROV: $line"
  done
  if [ "$want_rs" = some ] && [ "$rs" -gt 0 ]; then want_rs=$rs; fi
  if [ "$want_k" = some ] && [ "$k" -gt 0 ]; then want_k=$k; fi
  [ "$rs" = "$want_rs" ] && [ "$k" = "$want_k" ] ||
    fail "$comm: rsockets=$rs kernel_tcp=$k, expected $want_rs and $want_k"
}

# expect_end PRELOADED COMM N: the N connections ("some": at least one)
# of the processes named COMM at one end of the case: nothing counted
# when PRELOADED is 0 (a plain process counts nothing), else on rsockets
# when both ends are preloaded (the case's srv_pre and cli_pre), on
# kernel TCP when only this one is.
expect_end() {
  [ "$1" = 1 ] || return 0
  if [ "$srv_pre$cli_pre" = 11 ]; then expect_counts "$2" "$3" 0; else expect_counts "$2" 0 "$3"; fi
}

# expect_both COMM N: one program at both ends, N connections in each
# (their sum when both are preloaded), as expect_end says.
expect_both() {
  if [ "$srv_pre$cli_pre" = 11 ]; then expect_counts "$1" $((2 * $2)) 0; else expect_end 1 "$1" "$2"; fi
}

# ends: which ends of the case are preloaded, for its name.
ends() {
  case $srv_pre$cli_pre in
    11) echo "both preloaded" ;;
    10) echo "preloaded server, plain client" ;;
    01) echo "plain server, preloaded client" ;;
  esac
}

begin() {
  case=$1$WHERE
  bad=0
  counted=
  port=$((port + 1))
  rm -rf "$T/st" "$T/out"
  mkdir -p "$T/st"
}

# end: the verdict; a process that counted connections no expect_counts
# looked at fails the case too.
end() {
  local f comm
  for f in "$T"/st/rspreload.*; do
    [ -f "$f" ] || continue
    comm=$(sed 's/.* comm=\([^ ]*\) .*/\1/' "$f")
    case $counted in *" $comm "*) ;; *) fail "unchecked counts: $(cat "$f")" ;; esac
  done
  if [ "$bad" = 0 ]; then echo "PASS: $case"; else fails=$((fails + 1)); fi
}

# socat_case NAME SERVER_PRELOADED CLIENT_PRELOADED DIRECTION(up: client
# sends; down: server speaks first and sends) [ADDRESS]
socat_case() {
  local srv_pre=$2 cli_pre=$3 dir=$4 src rc s_rc h tcp=TCP
  h=$(url_host "${5:-$HOST}")
  case $h in \[*) tcp=TCP6 ;; esac
  begin "$1"
  if [ "$dir" = up ]; then
    bg_env "$srv_pre" socat -u $tcp-LISTEN:$port,bind="$h",reuseaddr CREATE:"$T/out" &
  else
    bg_env "$srv_pre" socat -u OPEN:"$T/in" $tcp-LISTEN:$port,bind="$h",reuseaddr &
  fi
  src=$!
  pids+=("$src")
  wait_listening $port || fail "server never listened"
  if [ "$dir" = up ]; then
    run_env "$cli_pre" socat -u OPEN:"$T/in" $tcp:"$h":$port
  else
    run_env "$cli_pre" socat -u $tcp:"$h":$port CREATE:"$T/out"
  fi
  rc=$?
  wait "$src"
  s_rc=$?
  [ "$rc" = 0 ] || fail "client exit $rc"
  [ "$s_rc" = 0 ] || fail "server exit $s_rc"
  cmp -s "$T/in" "$T/out" || fail "bytes differ"
  expect_both socat 1
  end
}

# http_case NAME SERVER_PRELOADED CLIENT_PRELOADED REQUESTS [ADDRESS]
http_case() {
  local srv_pre=$2 cli_pre=$3 n=$4 host=${5:-$HOST} url spid i rc
  begin "$1"
  url=http://$(url_host "$host"):$port/blob
  bg_env "$srv_pre" python3 -m http.server --directory "$T/www" --bind "$host" $port \
    >"$T/http.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  for i in $(seq "$n"); do
    run_env "$cli_pre" curl -sf -o "$T/out" "$url"
    rc=$?
    [ "$rc" = 0 ] || fail "curl $i exit $rc"
    cmp -s "$T/in" "$T/out" || fail "curl $i: bytes differ"
  done
  expect_end "$srv_pre" python3 "$n"
  expect_end "$cli_pre" curl "$n"
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  end
}

# redis_case NAME SERVER_PRELOADED CLIENT_PRELOADED N: a 200 KB value set
# and read back by redis-cli, then redis-benchmark's 10 clients (N
# requests) and its 50 pipelining 16 requests (10 N) (SET and GET rates
# reported).
redis_case() {
  local srv_pre=$2 cli_pre=$3 n=$4 spid args
  begin "$1"
  make_value
  # protected-mode no: clients from another host (namespace), no password
  bg_env "$srv_pre" redis-server --port $port --bind "$HOST" --save '' --appendonly no --protected-mode no \
    >"$T/redis.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  run_env "$cli_pre" redis-cli -h "$HOST" -p $port -x set blob <"$T/value" >/dev/null ||
    fail "redis-cli set failed"
  run_env "$cli_pre" redis-cli -h "$HOST" -p $port --raw get blob >"$T/out" || fail "redis-cli get failed"
  cmp -s <(cat "$T/value"; echo) "$T/out" || fail "value read back differs"
  for args in "-n $n -c 10" "-n $((10 * n)) -c 50 -P 16"; do
    run_env "$cli_pre" redis-benchmark -p $port -h "$HOST" $args -t set,get -q >"$T/bench" 2>&1 ||
      fail "redis-benchmark $args failed: $(tail -c 300 "$T/bench")"
    [ "$(tr '\r' '\n' <"$T/bench" | grep -c -E '^(SET|GET): [0-9.]+ requests per second')" = 2 ] ||
      fail "redis-benchmark $args: $(tail -c 300 "$T/bench")"
  done
  run_env "$cli_pre" redis-cli -h "$HOST" -p $port shutdown nosave >/dev/null 2>&1
  wait "$spid" 2>/dev/null
  expect_end "$srv_pre" redis-server some
  expect_end "$cli_pre" redis-cli 3
  expect_end "$cli_pre" redis-benchmark some
  end
}

# iperf_case SERVER_PRELOADED CLIENT_PRELOADED HOST CONNECTIONS [ARGS...]:
# iperf3's server listens on [::] (dual-stack), reached on HOST, IPv6 or
# IPv4 (a v4-mapped peer, as the kernel's); its control and data
# connections (CONNECTIONS on each side), data moved both ways the run
# asks (iperf3's own JSON report). Not a byte check: iperf3's server stops counting at the end
# message, so on kernel TCP too it reports up to a few MB less than was
# sent.
iperf_case() {
  local srv_pre=$1 cli_pre=$2 host=$3 conns=$4 spid
  shift 4
  begin "iperf3${*:+ $*} to $host, [::] server, $(ends)"
  bg_env "$srv_pre" iperf3 -s -1 -p $port >"$T/iperf_srv.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  run_env "$cli_pre" iperf3 -c "$host" -p $port -t 1 -J "$@" >"$T/iperf.json" || fail "iperf3 client failed"
  wait "$spid" || fail "iperf3 server failed"
  python3 - "$T/iperf.json" <<'PY' || fail "iperf3 report: $(tail -c 300 "$T/iperf.json")"
import json, sys
end = json.load(open(sys.argv[1]))["end"]
ways = [""] + (["_bidir_reverse"] if "sum_sent_bidir_reverse" in end else [])
sys.exit(0 if all(0 < end["sum_received" + w]["bytes"] <= end["sum_sent" + w]["bytes"]
                  for w in ways) else 1)
PY
  expect_both iperf3 "$conns"
  end
}

# memc_case NAME SERVER_PRELOADED CLIENT_PRELOADED: memcached (libevent's
# epoll loop, worker threads) and a python3 client (raw socket) setting a
# 100 KB value and reading it back over memcached's text protocol, then
# memcslap's 4 client threads (set, get).
memc_case() {
  local srv_pre=$2 cli_pre=$3 spid t
  begin "$1"
  head -c 100000 "$T/in" >"$T/value.bin"
  cat >"$T/memc_client.py" <<'PY'
import socket, sys
value = open(sys.argv[3], "rb").read()
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
f = s.makefile("rb")
s.sendall(b"set blob 0 0 %d\r\n" % len(value) + value + b"\r\n")
if f.readline() != b"STORED\r\n":
    sys.exit("set: not stored")
s.sendall(b"get blob\r\n")
head = f.readline().split()
if head[:2] != [b"VALUE", b"blob"] or int(head[3]) != len(value):
    sys.exit("get: %r" % head)
got = f.read(len(value))
if f.read(2) != b"\r\n" or f.readline() != b"END\r\n" or got != value:
    sys.exit("get: the value read back differs")
s.sendall(b"quit\r\n")
PY
  # -u root: memcached run by root must be told whom to run as (only
  # then read); root keeps it able to write its counts under $T.
  bg_env "$srv_pre" memcached -p $port -U 0 -l "$HOST" -u root >"$T/memcached.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  run_env "$cli_pre" python3 "$T/memc_client.py" "$HOST" $port "$T/value.bin" ||
    fail "python3 client failed"
  for t in set get; do
    run_env "$cli_pre" memcslap -s "$HOST:$port" -c 4 -e 500 -t $t >"$T/slap" 2>&1 ||
      fail "memcslap $t failed: $(tail -c 300 "$T/slap")"
  done
  expect_end "$cli_pre" memcslap some
  expect_end "$srv_pre" memcached some  # python3's and memcslap's
  expect_end "$cli_pre" python3 1
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  end
}

# nginx_case NAME SERVER_PRELOADED CLIENT_PRELOADED CURLS [BIG_MB]: nginx's
# master and two forked worker processes accepting on the inherited
# listener (epoll, sendfile on, daemon off), a config of the test's own;
# curl fetches the 3 MB file twice on one keep-alive connection (its
# second transfer made no new connect), then CURLS more curls; every copy
# matches by sha256; nginx_load follows (BIG_MB: 100).
nginx_case() {
  local srv_pre=$2 cli_pre=$3 more=$4 spid want url connects i d=$T/nginx
  begin "$1"
  nginx_conf "$d" $port "$T/www" "$HOST"
  bg_env "$srv_pre" nginx -e "$d/error.log" -c "$d/nginx.conf" -p "$d" >"$T/nginx.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened: $(tail -c 300 "$d/error.log")"
  want=$(sha256sum <"$T/in")
  url=http://$HOST:$port/blob
  rm -f "$T"/out*
  connects=$(run_env "$cli_pre" curl -sf -w '%{num_connects} ' -o "$T/out1" "$url" -o "$T/out2" "$url") ||
    fail "curl (keep-alive) failed"
  [ "$connects" = "1 0 " ] || fail "keep-alive: new connects per transfer: $connects"
  for ((i = 1; i <= 2 + more; i++)); do
    [ "$i" -gt 2 ] && { run_env "$cli_pre" curl -sf -o "$T/out$i" "$url" || fail "curl $i failed"; }
    [ "$(sha256sum <"$T/out$i")" = "$want" ] || fail "transfer $i: sha256 differs"
  done
  nginx_load $port "${5:-100}"
  expect_end "$cli_pre" curl $((2 + more))
  expect_end "$cli_pre" wrk some
  expect_end "$srv_pre" nginx some  # curl's and wrk's
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  end
}
# nginx_load PORT MB: (the case's client preloaded when cli_pre is 1) an
# MB MB file through curl (sha256 compared), then
# wrk (2 threads, 10 connections, 1 s) on a 4 KB file: requests made, no
# socket error, no status other than 200. nginx keeps wrk's connections
# (keepalive_requests): wrk's event loop takes descriptors below 10 + 3
# per connection only, and a connection under the preload holds about
# three (sockets and an eventfd; seen in /proc/PID/fd) and a closed one
# its numbers while its close lingers, so reconnecting every 1000
# requests (nginx's default) runs past that: wrk counts a connect error.
nginx_load() {
  local url=http://$HOST:$1
  head -c $(($2 * 1000000)) /dev/urandom >"$T/www/big"
  head -c 4096 "$T/in" >"$T/www/small"
  run_env "$cli_pre" curl -sf -o "$T/out.big" "$url/big" || fail "curl of $2 MB failed"
  [ "$(sha256sum <"$T/out.big")" = "$(sha256sum <"$T/www/big")" ] || fail "$2 MB: sha256 differs"
  rm -f "$T/www/big" "$T/out.big"
  run_env "$cli_pre" wrk -t 2 -c 10 -d 1s "$url/small" >"$T/wrk" 2>&1 || fail "wrk failed: $(tail -c 300 "$T/wrk")"
  awk '/^Requests\/sec:/ {r = $2} /Socket errors|Non-2xx/ {bad = 1}
    END {exit !(r > 0 && !bad)}' "$T/wrk" || fail "wrk: $(tail -c 400 "$T/wrk")"
}

# sockperf_case NAME SERVER_PRELOADED CLIENT_PRELOADED MODE MUX [PATTERN]:
# sockperf's server and MODE client (ping-pong and under-load 2 s,
# throughput 1 s).
# MUX "-": one TCP connection (sockperf then blocks in recvfrom); else two
# connections from a feed file, both ends waiting in MUX (epoll, poll,
# select), 1 s. The client's report must carry a positive figure
# (PATTERN: avg-latency by default).
# ping-pong gets --mps: without it sockperf assumes at most 600,000 round
# trips a second (its table holds (time + 1) s of them) and exits with
# "_seqN > m_maxSequenceNo" past that; one connection over shm makes about
# 4 million a second whenever both ends have a CPU. Paced below that
# ceiling, sockperf's table covers any run. under-load sends 10,000
# messages a second, timing some of them.
sockperf_case() {
  local srv_pre=$2 cli_pre=$3 mode=$4 mux=$5 pattern=${6:-avg-latency=} spid conn time=1 n=2 fig rate=()
  begin "$1"
  if [ "$mux" = - ]; then
    conn=(--tcp -i "$HOST" -p $port)
    n=1
    [ "$mode" = throughput ] || time=2
  else
    printf 'T:%s:%d\nT:%s:%d\n' "$HOST" $port "$HOST" $((port + 1)) >"$T/feed"
    conn=(-f "$T/feed" -F "$mux")
  fi
  bg_env "$srv_pre" sockperf server "${conn[@]}" >"$T/sp_srv.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  [ "$n" = 1 ] || wait_listening $((port + 1)) || fail "server never listened on its second port"
  [ "$mux" = - ] || port=$((port + 1))
  case $mode in
    ping-pong) rate=(--mps 500000) ;;
    under-load) rate=(--mps 10000) ;;
  esac
  run_env "$cli_pre" sockperf "$mode" "${conn[@]}" "${rate[@]}" --time $time >"$T/sp.log" 2>&1 ||
    fail "sockperf client failed: $(tail -c 300 "$T/sp.log")"
  fig=$(grep -a -o "$pattern[0-9.]*" "$T/sp.log" | head -n1)
  awk -v f="${fig#"$pattern"}" 'BEGIN {exit !(f > 0)}' ||
    fail "no figure ($pattern) in the report: $(tail -c 300 "$T/sp.log")"
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  expect_both sockperf $n
  end
}

# sockperf_cases SERVER_PRELOADED CLIENT_PRELOADED: ping-pong on one
# connection and on two in each multiplexer, throughput, under-load.
sockperf_cases() {
  local srv_pre=$1 cli_pre=$2 mux e
  e=$(ends)
  sockperf_case "sockperf TCP ping-pong, one connection, $e" "$@" ping-pong -
  for mux in epoll poll select; do
    sockperf_case "sockperf TCP ping-pong, two connections in $mux, $e" "$@" ping-pong $mux
  done
  sockperf_case "sockperf TCP throughput, $e" "$@" throughput - "BandWidth is "
  sockperf_case "sockperf TCP under-load (10,000 messages a second), $e" "$@" under-load -
}

# pg_case NAME SERVER_PRELOADED CLIENT_PRELOADED: PostgreSQL (a backend
# forked per connection after accept; the postmaster closes its copy):
# psql sends a 200 KB value and reads it back intact, pgbench -i and 4
# clients of 200 transactions each, no failure; the postmaster's 7
# connections, psql's 1 and pgbench's 6. PostgreSQL refuses to run as
# root, and shm shares memory only within one uid, so server and clients
# run as the postgres user, with a directory of their own. Skipped
# without root, the postgres user or PostgreSQL.
pg_case() {
  local srv_pre=$2 cli_pre=$3 pg_bin spid i PG psql pgbench
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  if [ "$(id -u)" != 0 ] || [ ! -x "$pg_bin/postgres" ] || ! id postgres >/dev/null 2>&1 ||
    ! command -v runuser >/dev/null; then
    echo "SKIP: PostgreSQL$WHERE (needs root, the postgres user and $pg_bin/postgres)"
    return 0
  fi
  begin "$1"
  make_value
  PG=$(mktemp -d "${TMPDIR:-/tmp}/ss-preload-pg.XXXXXX") && chmod 755 "$PG" || exit 99
  pg_dirs+=("$PG")
  mkdir "$PG/st" && chown -R postgres "$PG"
  libs_copy "$PG/lib" || fail "copying the libraries for the postgres user failed"
  # as_pg PRELOADED CMD...: as the postgres user, preloaded (counts under
  # $PG/st) or not, on the server's side (run_pg: the client's).
  as_pg() {
    local pre=(env)
    [ "$1" = 1 ] && pre=(env LD_PRELOAD="$PG/lib/${PRELOAD##*/}" LD_LIBRARY_PATH="$PG/lib"
      SLIPSTREAM_PRELOAD_STATS="$PG/st")
    shift
    exec ${SRV_NS[@]+"${SRV_NS[@]}"} runuser -u postgres -- "${pre[@]}" timeout 60 "$@"
  }
  run_pg() { (SRV_NS=(${CLI_NS[@]+"${CLI_NS[@]}"}) && as_pg "$cli_pre" "$@"); }
  runuser -u postgres -- "$pg_bin/initdb" -D "$PG/data" -A trust -U postgres --no-sync \
    >"$PG/initdb.log" 2>&1 || fail "initdb: $(tail -c 300 "$PG/initdb.log")"
  # initdb trusts loopback only: clients on $HOST's subnet (namespaces) too
  echo "host all postgres samenet trust" >>"$PG/data/pg_hba.conf"
  # Its dynamic shared memory in its data directory, not /dev/shm: the
  # conformance suite, running beside this test under make -j2, checks
  # that nothing appears in /dev/shm while it runs.
  (as_pg "$srv_pre" "$pg_bin/postgres" -D "$PG/data" -p $port -k "$PG" -c listen_addresses="$HOST" \
    -c fsync=off -c dynamic_shared_memory_type=mmap) >"$PG/server.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened: $(tail -c 300 "$PG/server.log")"
  # It listens before its startup ends ("the database system is starting up").
  for i in $(seq 300); do
    grep -q "ready to accept connections" "$PG/server.log" && break
    sleep 0.1
  done
  psql=("$pg_bin/psql" -h "$HOST" -p $port -U postgres -X -At -v ON_ERROR_STOP=1)
  printf "select '%s';\n" "$(cat "$T/value")" >"$PG/query.sql"
  run_pg "${psql[@]}" -f "$PG/query.sql" >"$T/out" 2>"$T/psql.err" ||
    fail "psql failed: $(tail -c 300 "$T/psql.err")"
  cmp -s <(cat "$T/value"; echo) "$T/out" || fail "psql: the value read back differs"
  pgbench=("$pg_bin/pgbench" -h "$HOST" -p $port -U postgres)
  run_pg "${pgbench[@]}" -i -s 1 -q postgres >"$T/pgbench" 2>&1 ||
    fail "pgbench -i failed: $(tail -c 300 "$T/pgbench")"
  run_pg "${pgbench[@]}" -c 4 -t 200 postgres >"$T/pgbench" 2>&1 ||
    fail "pgbench failed: $(tail -c 300 "$T/pgbench")"
  grep -q '^number of transactions actually processed: 800/800$' "$T/pgbench" ||
    fail "pgbench: $(tail -c 300 "$T/pgbench")"
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  cp "$PG"/st/* "$T/st/" 2>/dev/null
  expect_end "$srv_pre" postgres 7
  expect_end "$cli_pre" psql 1
  expect_end "$cli_pre" pgbench 6
  end
}

# runtime_ready PROGRAM...: the programs there, and JavaEcho
# (java_echo.java) compiled into $T/java once; else a SKIP line for the
# case (counted) and 1.
runtime_ready() {
  local p
  for p in "$@"; do
    command -v "$p" >/dev/null || { echo "SKIP: $case: $p not found (scripts/install-deps.sh)"; return 1; }
  done
  [ "$1" != java ] || [ -f "$T/java/JavaEcho.class" ] ||
    javac -d "$T/java" "$(dirname "${BASH_SOURCE[0]}")/java_echo.java" ||
    { fail "javac failed"; return 1; }
}

# java_case NAME SERVER_PRELOADED CLIENT_PRELOADED MODE [ADDRESS]: a
# JavaEcho server (MODE block: a thread per connection; nio: a Selector)
# echoes 4 clients' 2 MiB each; Java's sockets are IPv6 ones, an IPv4
# address reached IPv4-mapped.
java_case() {
  local srv_pre=$2 cli_pre=$3 mode=$4 host=${5:-$HOST} spid
  begin "$1"
  if runtime_ready java javac; then
    bg_env "$srv_pre" java -cp "$T/java" JavaEcho "$mode" "$host" $port >"$T/java.log" 2>&1 &
    spid=$!
    pids+=("$spid")
    wait_listening $port || fail "server never listened: $(tail -3 "$T/java.log")"
    run_env "$cli_pre" java -cp "$T/java" JavaEcho client "$host" $port 4 2 >"$T/out" 2>&1
    grep -q "^clients 4 bad 0$" "$T/out" || fail "client: $(tail -3 "$T/out")"
    expect_both java 4
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
  fi
  end
}

# node_case NAME SERVER_PRELOADED CLIENT_PRELOADED [ADDRESS [MODE]]:
# Node.js's http module both ends (node_http.js): 20 GETs of $T/in over 4
# kept-alive connections, each checked, then $T/in POSTed and its
# SHA-256 answered. MODE cluster: the server is Node's cluster module,
# whose primary accepts each connection and passes it to one of 2
# workers (SCM_RIGHTS); both preloaded, each connection is counted on
# rsockets by the client, the primary and the worker it went to (a
# connection the worker got as a bare descriptor would hang the client).
node_case() {
  local srv_pre=$2 cli_pre=$3 host=${4:-$HOST} mode=${5:-server} spid js f n=0
  js=$(dirname "${BASH_SOURCE[0]}")/node_http.js
  begin "$1"
  if runtime_ready node; then
    bg_env "$srv_pre" node "$js" "$mode" "$host" $port "$T/in" >"$T/node.log" 2>&1 &
    spid=$!
    pids+=("$spid")
    for f in $(seq 100); do grep -q "^ready$" "$T/node.log" && break; sleep 0.1; done
    wait_listening $port || fail "server never listened: $(tail -3 "$T/node.log")"
    run_env "$cli_pre" node "$js" client "$host" $port "$T/in" 20 >"$T/out" 2>&1
    grep -q "^gets 20 ok$" "$T/out" && grep -q "^post ok$" "$T/out" ||
      fail "client: $(tail -3 "$T/out")"
    if [ "$srv_pre$cli_pre" = 11 ]; then
      expect_counts node some 0
    else
      expect_end "$srv_pre" node some
      expect_end "$cli_pre" node some
    fi
    if [ "$mode" = cluster ]; then
      # The client, the primary and at least one worker.
      for f in "$T"/st/rspreload.*; do
        grep -q " rsockets=[1-9]" "$f" && n=$((n + 1))
      done
      [ "$n" -ge 3 ] || fail "$n processes counted rsockets, expected the client, the primary and a worker"
    fi
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
  fi
  end
}

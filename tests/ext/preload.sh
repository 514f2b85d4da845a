#!/bin/bash
# librspreload with unmodified Debian programs on loopback (docs/status.md,
# issue 14). Every case checks the exit codes, the bytes (cmp), and each
# process's own count of where its connections went
# (SLIPSTREAM_PRELOAD_STATS), so a connection silently left on kernel TCP
# fails a case that expects rsockets, and one that reached rsockets fails a
# case that must fall back:
#   both ends preloaded: socat client-speaks-first and server-speaks-first,
#     python3 -m http.server + curl                       -> shm on both ends
#   redis-server + redis-cli/redis-benchmark, iperf3 (::1, 127.0.0.1;
#     -P 4, -R, --bidir)                                  -> shm
#   memcached + python3 client/memcslap, nginx (2 forked workers) + curl
#     (3 MB keep-alive, 100 MB) and wrk,
#     sockperf TCP ping-pong (recvfrom; epoll, poll, select), throughput, under-load -> shm
#   memcached, nginx with one end preloaded, both ways     -> kernel TCP
#   PostgreSQL (a backend forked per connection) + psql/pgbench, run as
#     the postgres user (root only, else skipped)           -> shm
#   one end preloaded, both ways, both speaking orders    -> kernel TCP
#   a unix socket under the preload                       -> untouched
#   RS_SQ_SIZE/RS_RQ_SIZE/RS_INLINE set                   -> still shm
#   SLIPSTREAM_PRELOAD=0                                  -> untouched
#   SLIPSTREAM_PRELOAD_KERNEL_PORTS listing the port      -> kernel TCP
#   preload_config: a rule for another program / for socat -> untouched / shm
#   exec with an rsocket open                             -> EBADF there
#   an epoll (asyncio) server, preloaded client           -> shm
#   pre-forked workers accepting, preloaded clients       -> shm
#   fork after accept (a child per connection)            -> shm
#   an epoll set of kernel descriptors only               -> the kernel's syscalls
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=preload.sh
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
PRELOAD=$B/.libs/librspreload.so
[ -f "$PRELOAD" ] || { echo "ERROR: $name: $PRELOAD not found: build first"; exit 99; }
for p in socat curl python3 ss cmp timeout redis-server redis-cli redis-benchmark iperf3 \
  memcached memcslap nginx wrk sockperf sha256sum; do
  command -v $p >/dev/null || { echo "SKIP: $name: $p not found (scripts/install-deps.sh)"; exit 77; }
done
. "$(dirname "$0")/nginx_conf.sh" || exit 99
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-preload.XXXXXX") || exit 99
pids=()
pg_dirs=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$T" "${pg_dirs[@]}"
}
trap cleanup EXIT
fails=0
port=$((20000 + RANDOM % 9000))
head -c 3000000 /dev/urandom >"$T/in"
mkdir -p "$T/www" && cp "$T/in" "$T/www/blob"

fail() { echo "FAIL: $case: $*"; bad=1; }

# bg_env PRELOADED(0/1) CMD...: becomes the command (exec), preloaded or
# not, with its counts under $T/st; started with `&`, $! is the command
# itself, so killing it reaches the program. run_env runs it in the
# foreground.
bg_env() {
  local pre=$1
  shift
  if [ "$pre" = 1 ]; then
    exec env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$T/st" timeout 30 "$@"
  fi
  exec timeout 30 "$@"
}
run_env() { (bg_env "$@"); }

wait_listening() {  # port
  local i
  for i in $(seq 100); do
    ss -Hltn "sport = :$1" | grep -q . && return 0
    sleep 0.1
  done
  return 1
}

# expect_counts COMM RSOCKETS KERNEL: the sum over the processes named COMM
# (RSOCKETS "some": at least one, for programs that open as many
# connections as they see fit).
expect_counts() {
  local comm=$1 want_rs=$2 want_k=$3 rs=0 k=0 f line n
  for f in "$T"/st/rspreload.*; do
    [ -f "$f" ] || continue
    line=$(cat "$f")
    case " $line " in *" comm=$comm "*) ;; *) continue ;; esac
    n=$(sed 's/.* rsockets=\([0-9]*\) .*/\1/' <<<"$line")
    rs=$((rs + n))
    k=$((k + $(sed 's/.*kernel_tcp=\([0-9]*\).*/\1/' <<<"$line")))
    grep -q " shm=$n " <<<"$line" || fail "$comm: not all on shm (loopback): $line"
  done
  if [ "$want_rs" = some ] && [ "$rs" -gt 0 ]; then want_rs=$rs; fi
  [ "$rs" = "$want_rs" ] && [ "$k" = "$want_k" ] ||
    fail "$comm: rsockets=$rs kernel_tcp=$k, expected $want_rs and $want_k"
}

# expect_pair SERVER CLIENT SERVER_PRELOADED CLIENT_PRELOADED N: N
# connections between the two programs, on rsockets in both when both are
# preloaded, else on kernel TCP in the preloaded one.
expect_pair() {
  local srv=$1 cli=$2 srv_pre=$3 cli_pre=$4 n=$5
  if [ "$srv_pre" = 1 ] && [ "$cli_pre" = 1 ]; then
    expect_counts "$srv" "$n" 0
    expect_counts "$cli" "$n" 0
  elif [ "$cli_pre" = 1 ]; then
    expect_counts "$cli" 0 "$n"
  else
    expect_counts "$srv" 0 "$n"
  fi
}

begin() {
  case=$1
  bad=0
  port=$((port + 1))
  rm -rf "$T/st" "$T/out"
  mkdir -p "$T/st"
}

end() {
  if [ "$bad" = 0 ]; then echo "PASS: $case"; else fails=$((fails + 1)); fi
}

# socat_case NAME SERVER_PRELOADED CLIENT_PRELOADED DIRECTION(up: client
# sends; down: server speaks first and sends)
socat_case() {
  local srv_pre=$2 cli_pre=$3 dir=$4 src rc s_rc
  begin "$1"
  if [ "$dir" = up ]; then
    bg_env "$srv_pre" socat -u TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr CREATE:"$T/out" &
  else
    bg_env "$srv_pre" socat -u OPEN:"$T/in" TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr &
  fi
  src=$!
  pids+=("$src")
  wait_listening $port || fail "server never listened"
  if [ "$dir" = up ]; then
    run_env "$cli_pre" socat -u OPEN:"$T/in" TCP:127.0.0.1:$port
  else
    run_env "$cli_pre" socat -u TCP:127.0.0.1:$port CREATE:"$T/out"
  fi
  rc=$?
  wait "$src"
  s_rc=$?
  [ "$rc" = 0 ] || fail "client exit $rc"
  [ "$s_rc" = 0 ] || fail "server exit $s_rc"
  cmp -s "$T/in" "$T/out" || fail "bytes differ"
  local want_rs=$((srv_pre && cli_pre))
  [ "$srv_pre" = 1 ] && [ "$cli_pre" = 1 ] && expect_counts socat 2 0
  [ "$want_rs" = 0 ] && [ $((srv_pre + cli_pre)) = 1 ] && expect_counts socat 0 1
  end
}

socat_case "socat both preloaded, client speaks first" 1 1 up
socat_case "socat both preloaded, server speaks first" 1 1 down
socat_case "preloaded socat client, plain server, client speaks first" 0 1 up
socat_case "preloaded socat client, plain server, server speaks first" 0 1 down
socat_case "plain socat client, preloaded server, client speaks first" 1 0 up
socat_case "plain socat client, preloaded server, server speaks first" 1 0 down

# http_case NAME SERVER_PRELOADED CLIENT_PRELOADED REQUESTS [ADDRESS]
http_case() {
  local srv_pre=$2 cli_pre=$3 n=$4 host=${5:-127.0.0.1} url spid i rc
  begin "$1"
  url=http://$host:$port/blob
  [ "$host" = ::1 ] && url="http://[::1]:$port/blob"
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
  expect_pair python3 curl "$srv_pre" "$cli_pre" "$n"
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  end
}

http_case "python3 http.server + curl, both preloaded" 1 1 3
http_case "python3 http.server + curl on ::1, both preloaded" 1 1 2 ::1
http_case "preloaded curl, plain http.server" 0 1 2
http_case "plain curl, preloaded http.server" 1 0 2

# Servers built on their own event loops. redis: a 200 KB value set and
# read back by redis-cli, then redis-benchmark's 10 clients and its 50
# pipelining 16 requests (SET and GET rates reported), every
# connection on rsockets (both processes' counts, nothing on kernel TCP).
begin "redis-server with redis-cli and redis-benchmark, all preloaded"
base64 -w0 "$T/in" | head -c 200000 >"$T/value"
bg_env 1 redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no \
  >"$T/redis.log" 2>&1 &
spid=$!
pids+=("$spid")
wait_listening $port || fail "server never listened"
run_env 1 redis-cli -p $port -x set blob <"$T/value" >/dev/null || fail "redis-cli set failed"
run_env 1 redis-cli -p $port --raw get blob >"$T/out" || fail "redis-cli get failed"
cmp -s <(cat "$T/value"; echo) "$T/out" || fail "value read back differs"
for args in "-n 2000 -c 10" "-n 20000 -c 50 -P 16"; do
  run_env 1 redis-benchmark -p $port -h 127.0.0.1 $args -t set,get -q >"$T/bench" 2>&1 ||
    fail "redis-benchmark $args failed: $(tail -c 300 "$T/bench")"
  [ "$(tr '\r' '\n' <"$T/bench" | grep -c -E '^(SET|GET): [0-9.]+ requests per second')" = 2 ] ||
    fail "redis-benchmark $args: $(tail -c 300 "$T/bench")"
done
run_env 1 redis-cli -p $port shutdown nosave >/dev/null 2>&1
wait "$spid" 2>/dev/null
expect_counts redis-server some 0
expect_counts redis-cli 3 0
expect_counts redis-benchmark some 0
end

# iperf_case HOST CONNECTIONS [ARGS...]: iperf3's server listens on [::]
# (dual-stack), reached from ::1 or from 127.0.0.1 (a v4-mapped peer, as
# the kernel's); its control and data connections (CONNECTIONS on each
# side) on rsockets, data moved both ways the run asks (iperf3's own JSON
# report). Not a byte check: iperf3's server stops counting at the end
# message, so on kernel TCP too it reports up to a few MB less than was
# sent.
iperf_case() {
  local host=$1 conns=$2 spid
  shift 2
  begin "iperf3${*:+ $*} to $host, [::] server, both preloaded"
  bg_env 1 iperf3 -s -1 -p $port >"$T/iperf_srv.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  run_env 1 iperf3 -c "$host" -p $port -t 1 -J "$@" >"$T/iperf.json" || fail "iperf3 client failed"
  wait "$spid" || fail "iperf3 server failed"
  python3 - "$T/iperf.json" <<'PY' || fail "iperf3 report: $(tail -c 300 "$T/iperf.json")"
import json, sys
end = json.load(open(sys.argv[1]))["end"]
ways = [""] + (["_bidir_reverse"] if "sum_sent_bidir_reverse" in end else [])
sys.exit(0 if all(0 < end["sum_received" + w]["bytes"] <= end["sum_sent" + w]["bytes"]
                  for w in ways) else 1)
PY
  expect_counts iperf3 $((2 * conns)) 0
  end
}
iperf_case ::1 2
iperf_case 127.0.0.1 2
iperf_case ::1 5 -P 4
iperf_case ::1 2 -R
iperf_case ::1 3 --bidir

# memc_case NAME SERVER_PRELOADED CLIENT_PRELOADED: memcached (libevent's
# epoll loop, worker threads) and a python3 client (raw socket) setting a
# 100 KB value and reading it back over memcached's text protocol; both
# preloaded, memcslap's 4 client threads follow (set, get). Counted as
# expect_pair says.
head -c 100000 "$T/in" >"$T/value.bin"
cat >"$T/memc_client.py" <<'PY'
import socket, sys
value = open(sys.argv[2], "rb").read()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
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
memc_case() {
  local srv_pre=$2 cli_pre=$3 spid t
  begin "$1"
  # -u root: memcached run by root must be told whom to run as (only
  # then read); root keeps it able to write its counts under $T.
  bg_env "$srv_pre" memcached -p $port -U 0 -l 127.0.0.1 -u root >"$T/memcached.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  run_env "$cli_pre" python3 "$T/memc_client.py" $port "$T/value.bin" || fail "python3 client failed"
  if [ "$srv_pre" = 1 ] && [ "$cli_pre" = 1 ]; then
    for t in set get; do
      run_env 1 memcslap -s 127.0.0.1:$port -c 4 -e 500 -t $t >"$T/slap" 2>&1 ||
        fail "memcslap $t failed: $(tail -c 300 "$T/slap")"
    done
    expect_counts memcslap some 0
    expect_counts memcached some 0  # python3's and memcslap's
    expect_counts python3 1 0
  else
    expect_pair memcached python3 "$srv_pre" "$cli_pre" 1
  fi
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  end
}
memc_case "memcached with a python3 client and memcslap, all preloaded" 1 1
memc_case "preloaded python3 client, plain memcached" 0 1
memc_case "plain python3 client, preloaded memcached" 1 0

# nginx_case NAME SERVER_PRELOADED CLIENT_PRELOADED CURLS: nginx's master
# and two forked worker processes accepting on the inherited listener
# (epoll, sendfile on, daemon off), a config of the test's own; curl
# fetches the 3 MB file twice on one keep-alive connection (its second
# transfer made no new connect), then CURLS more curls; every copy matches
# by sha256. Both preloaded, nginx_load follows. Counted as expect_pair
# says.
nginx_case() {
  local srv_pre=$2 cli_pre=$3 more=$4 spid want url connects i d=$T/nginx
  begin "$1"
  nginx_conf "$d" $port "$T/www"
  bg_env "$srv_pre" nginx -e "$d/error.log" -c "$d/nginx.conf" -p "$d" >"$T/nginx.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened: $(tail -c 300 "$d/error.log")"
  want=$(sha256sum <"$T/in")
  url=http://127.0.0.1:$port/blob
  rm -f "$T"/out*
  connects=$(run_env "$cli_pre" curl -sf -w '%{num_connects} ' -o "$T/out1" "$url" -o "$T/out2" "$url") ||
    fail "curl (keep-alive) failed"
  [ "$connects" = "1 0 " ] || fail "keep-alive: new connects per transfer: $connects"
  for ((i = 1; i <= 2 + more; i++)); do
    [ "$i" -gt 2 ] && { run_env "$cli_pre" curl -sf -o "$T/out$i" "$url" || fail "curl $i failed"; }
    [ "$(sha256sum <"$T/out$i")" = "$want" ] || fail "transfer $i: sha256 differs"
  done
  if [ "$srv_pre" = 1 ] && [ "$cli_pre" = 1 ]; then
    nginx_load $port
    expect_counts curl $((2 + more)) 0
    expect_counts wrk some 0
    expect_counts nginx some 0  # curl's and wrk's
  else
    expect_pair nginx curl "$srv_pre" "$cli_pre" $((1 + more))
  fi
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  end
}
# nginx_load PORT: a 100 MB file through curl (sha256 compared), then wrk
# (2 threads, 10 connections, 1 s) on a 4 KB file: requests made, no
# socket error, no status other than 200. nginx keeps wrk's connections
# (keepalive_requests): wrk's event loop takes descriptors below 10 + 3
# per connection only, and a connection under the preload holds about
# three (sockets and an eventfd; seen in /proc/PID/fd) and a closed one
# its numbers while its close lingers, so reconnecting every 1000
# requests (nginx's default) runs past that: wrk counts a connect error.
nginx_load() {
  local url=http://127.0.0.1:$1
  head -c 100000000 /dev/urandom >"$T/www/big"
  head -c 4096 "$T/in" >"$T/www/small"
  run_env 1 curl -sf -o "$T/out.big" "$url/big" || fail "curl of 100 MB failed"
  [ "$(sha256sum <"$T/out.big")" = "$(sha256sum <"$T/www/big")" ] || fail "100 MB: sha256 differs"
  rm -f "$T/www/big" "$T/out.big"
  run_env 1 wrk -t 2 -c 10 -d 1s "$url/small" >"$T/wrk" 2>&1 || fail "wrk failed: $(tail -c 300 "$T/wrk")"
  awk '/^Requests\/sec:/ {r = $2} /Socket errors|Non-2xx/ {bad = 1}
    END {exit !(r > 0 && !bad)}' "$T/wrk" || fail "wrk: $(tail -c 400 "$T/wrk")"
}
nginx_case "nginx (master, 2 workers, epoll, sendfile) + curl and wrk, all preloaded" 1 1 3
nginx_case "preloaded curl, plain nginx" 0 1 0
nginx_case "plain curl, preloaded nginx (2 workers)" 1 0 0

# sockperf_case NAME MODE MUX [PATTERN]: sockperf's server and MODE
# client (ping-pong 2 s, or throughput 1 s), both preloaded. MUX "-": one
# TCP connection (sockperf then blocks in recvfrom); else two connections
# from a feed file, both ends waiting in MUX (epoll, poll, select), 1 s.
# The client's report must carry a positive figure (PATTERN: avg-latency
# by default), both processes' connections on rsockets.
# ping-pong gets --mps: without it sockperf assumes at most 600,000 round
# trips a second (its table holds (time + 1) s of them) and exits with
# "_seqN > m_maxSequenceNo" past that; one connection over shm makes about
# 4 million a second whenever both ends have a CPU. Paced below that
# ceiling, sockperf's table covers any run.
sockperf_case() {
  local mode=$2 mux=$3 pattern=${4:-avg-latency=} spid conn time=1 n=2 fig rate=()
  begin "$1"
  if [ "$mux" = - ]; then
    conn=(--tcp -i 127.0.0.1 -p $port)
    n=1
    [ "$mode" = throughput ] || time=2
  else
    printf 'T:127.0.0.1:%d\nT:127.0.0.1:%d\n' $port $((port + 1)) >"$T/feed"
    conn=(-f "$T/feed" -F "$mux")
  fi
  bg_env 1 sockperf server "${conn[@]}" >"$T/sp_srv.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  [ "$n" = 1 ] || wait_listening $((port + 1)) || fail "server never listened on its second port"
  [ "$mux" = - ] || port=$((port + 1))
  case $mode in
    ping-pong) rate=(--mps 500000) ;;
    under-load) rate=(--mps 10000) ;;
  esac
  run_env 1 sockperf "$mode" "${conn[@]}" "${rate[@]}" --time $time >"$T/sp.log" 2>&1 ||
    fail "sockperf client failed: $(tail -c 300 "$T/sp.log")"
  fig=$(grep -a -o "$pattern[0-9.]*" "$T/sp.log" | head -n1)
  awk -v f="${fig#"$pattern"}" 'BEGIN {exit !(f > 0)}' ||
    fail "no figure ($pattern) in the report: $(tail -c 300 "$T/sp.log")"
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  expect_counts sockperf $((2 * n)) 0
  end
}
sockperf_case "sockperf TCP ping-pong, one connection, both preloaded" ping-pong -
for mux in epoll poll select; do
  sockperf_case "sockperf TCP ping-pong, two connections in $mux, both preloaded" ping-pong $mux
done
sockperf_case "sockperf TCP throughput, both preloaded" throughput - "BandWidth is "
sockperf_case "sockperf TCP under-load (10,000 messages a second), both preloaded" under-load -

# PostgreSQL (a backend forked per connection after accept; the
# postmaster closes its copy): psql sends a 200 KB value and reads it
# back intact, pgbench -i and 4 clients of 200 transactions each, no
# failure; every connection of the postmaster and the clients on
# rsockets. PostgreSQL refuses to run as root, and shm shares memory only
# within one uid, so server and clients run as the postgres user, with
# a directory of their own.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
if [ "$(id -u)" = 0 ] && [ -x "$pg_bin/postgres" ] && id postgres >/dev/null 2>&1 &&
  command -v runuser >/dev/null; then
  begin "PostgreSQL + psql and pgbench, all as postgres, all preloaded"
  PG=$(mktemp -d "${TMPDIR:-/tmp}/ss-preload-pg.XXXXXX") && chmod 755 "$PG" || exit 99
  pg_dirs+=("$PG")
  mkdir "$PG/st" && chown -R postgres "$PG"
  # as_pg CMD...: as the postgres user, preloaded, counts under $PG/st.
  as_pg() {
    exec runuser -u postgres -- env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$PG/st" \
      timeout 60 "$@"
  }
  runuser -u postgres -- "$pg_bin/initdb" -D "$PG/data" -A trust -U postgres --no-sync \
    >"$PG/initdb.log" 2>&1 || fail "initdb: $(tail -c 300 "$PG/initdb.log")"
  (as_pg "$pg_bin/postgres" -D "$PG/data" -p $port -k "$PG" -c listen_addresses=127.0.0.1 \
    -c fsync=off) >"$PG/server.log" 2>&1 &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened: $(tail -c 300 "$PG/server.log")"
  # It listens before its startup ends ("the database system is starting up").
  for i in $(seq 300); do
    grep -q "ready to accept connections" "$PG/server.log" && break
    sleep 0.1
  done
  psql=("$pg_bin/psql" -h 127.0.0.1 -p $port -U postgres -X -At -v ON_ERROR_STOP=1)
  printf "select '%s';\n" "$(cat "$T/value")" >"$PG/query.sql"
  (as_pg "${psql[@]}" -f "$PG/query.sql") >"$T/out" 2>"$T/psql.err" ||
    fail "psql failed: $(tail -c 300 "$T/psql.err")"
  cmp -s <(cat "$T/value"; echo) "$T/out" || fail "psql: the value read back differs"
  pgbench=("$pg_bin/pgbench" -h 127.0.0.1 -p $port -U postgres)
  (as_pg "${pgbench[@]}" -i -s 1 -q postgres) >"$T/pgbench" 2>&1 ||
    fail "pgbench -i failed: $(tail -c 300 "$T/pgbench")"
  (as_pg "${pgbench[@]}" -c 4 -t 200 postgres) >"$T/pgbench" 2>&1 ||
    fail "pgbench failed: $(tail -c 300 "$T/pgbench")"
  grep -q '^number of transactions actually processed: 800/800$' "$T/pgbench" ||
    fail "pgbench: $(tail -c 300 "$T/pgbench")"
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  cp "$PG"/st/* "$T/st/" 2>/dev/null
  expect_counts postgres 7 0
  expect_counts psql 1 0
  expect_counts pgbench 6 0
  end
else
  echo "SKIP: PostgreSQL (needs root, the postgres user and $pg_bin/postgres)"
fi

# Upstream's RS_SQ_SIZE/RS_RQ_SIZE/RS_INLINE (settings of the "preload"
# component) apply to the rsockets made; still on rsockets, bytes intact.
RUN_SIZES=(RS_SQ_SIZE=64 RS_RQ_SIZE=64 RS_INLINE=32)
export "${RUN_SIZES[@]}"
socat_case "socat both preloaded, RS_SQ_SIZE/RS_RQ_SIZE/RS_INLINE set" 1 1 up
unset RS_SQ_SIZE RS_RQ_SIZE RS_INLINE

# untracked_case NAME: socat both ends preloaded, yet the preload must
# leave every socket alone (nothing tracked, nothing counted).
untracked_case() {
  local spid
  begin "$1"
  bg_env 1 socat -u TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr CREATE:"$T/out" &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  run_env 1 socat -u OPEN:"$T/in" TCP:127.0.0.1:$port || fail "client failed"
  wait "$spid" || fail "server failed"
  cmp -s "$T/in" "$T/out" || fail "bytes differ"
  ls "$T"/st/rspreload.* >/dev/null 2>&1 && fail "sockets were tracked: $(cat "$T"/st/*)"
  end
}

# Upstream's preload_config rules (in the rsocket configuration
# directory): a rule for another program leaves socat's sockets to the
# kernel (nothing tracked); a case-insensitive prefix rule, after a
# comment and a line that is no rule, takes them.
mkdir -p "$T/conf"
export SLIPSTREAM_RS_CONF_DIR=$T/conf
printf '# only this one\nnginx inet stream tcp\n' >"$T/conf/preload_config"
untracked_case "preload_config naming another program: socat untouched"
printf '# socat only\nno rule here\nSOC * STREAM *\n' >"$T/conf/preload_config"
socat_case "preload_config with a prefix rule for socat: rsockets" 1 1 up
# A rule asking for UDP sockets, which this preload leaves to the kernel:
# a warning naming the line, and (the only rule) TCP untouched.
printf '# udp\nsocat inet dgram udp\n' >"$T/conf/preload_config"
untracked_case "preload_config with a UDP rule only: TCP untouched" 2>"$T/dgram.err"
begin "preload_config asking for UDP: warned, naming the line"
grep -q "preload_config:2: UDP and AF_IB sockets stay on the kernel" "$T/dgram.err" ||
  fail "no warning: $(cat "$T/dgram.err")"
end
unset SLIPSTREAM_RS_CONF_DIR

# SLIPSTREAM_PRELOAD_KERNEL_PORTS: a listed port (here inside a range
# and a list) stays on kernel TCP, both ends preloaded: the client's
# connect is counted kernel TCP, the listener is not tracked; a list
# without the port leaves rsockets; a bad list is a warning naming the
# setting, and rsockets (the default: no port).
kernel_ports_case() {
  local list=$1 want=$2 spid
  begin "SLIPSTREAM_PRELOAD_KERNEL_PORTS=\"${list//PORT/$((port + 1))}\": $want"
  export SLIPSTREAM_PRELOAD_KERNEL_PORTS=${list//PORT/$port}
  bg_env 1 socat -u TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr CREATE:"$T/out" 2>"$T/ports.err" &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  run_env 1 socat -u OPEN:"$T/in" TCP:127.0.0.1:$port 2>>"$T/ports.err" || fail "client failed"
  wait "$spid" || fail "server failed"
  unset SLIPSTREAM_PRELOAD_KERNEL_PORTS
  cmp -s "$T/in" "$T/out" || fail "bytes differ"
  case $want in
    kernel) expect_counts socat 0 1 ;;
    rsockets) expect_counts socat 2 0 ;;
    warning)
      expect_counts socat 2 0
      grep -q 'SLIPSTREAM_PRELOAD_KERNEL_PORTS="1-x"' "$T/ports.err" ||
        fail "no warning naming the setting: $(cat "$T/ports.err")"
      ;;
  esac
  end
}
kernel_ports_case "22, 100-200 ,PORT" kernel
kernel_ports_case "1-PORT" kernel
kernel_ports_case "22,1-1000" rsockets
kernel_ports_case "1-x" warning

# SLIPSTREAM_PRELOAD=0: the preload leaves every socket to the kernel
# (nothing is tracked, so nothing is counted).
export SLIPSTREAM_PRELOAD=0
untracked_case "SLIPSTREAM_PRELOAD=0 on both ends"
unset SLIPSTREAM_PRELOAD

# exec with an rsocket left open: the new program gets EBADF for it (a
# clear error), never a kernel socket that is not the connection; the
# connection itself goes on in the parent.
begin "exec with an rsocket inherited: EBADF in the new program"
cat >"$T/exec_srv.py" <<'PY'
import socket, subprocess, sys
l = socket.socket()
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(1)
c, _ = l.accept()
child = subprocess.run([sys.executable, "-c", "import os, sys; os.fstat(int(sys.argv[1]))",
                        str(c.fileno())], pass_fds=(c.fileno(),), stderr=subprocess.PIPE)
c.sendall(b"child-exit=%d " % child.returncode + (b"EBADF" if b"Bad file descriptor" in child.stderr else b"-"))
c.close()
PY
bg_env 1 python3 "$T/exec_srv.py" $port &
spid=$!
pids+=("$spid")
wait_listening $port || fail "server never listened"
run_env 1 socat -u TCP:127.0.0.1:$port CREATE:"$T/out" || fail "client failed"
wait "$spid" || fail "server failed"
[ "$(cat "$T/out")" = "child-exit=1 EBADF" ] || fail "the exec'd child: $(cat "$T/out")"
expect_counts python3 1 0
end

# An epoll server (asyncio: its listener and each connection in one epoll
# set, waited on by epoll_wait): both ends on rsockets, bytes intact, each
# process's count proves it.
begin "asyncio (epoll) echo server and a preloaded client: shm"
cat >"$T/epoll_srv.py" <<'PY'
import asyncio, sys
async def echo(r, w):
    w.write(await r.read())
    await w.drain()
    w.close()
    done.set()
async def main():
    global done
    done = asyncio.Event()
    s = await asyncio.start_server(echo, "127.0.0.1", int(sys.argv[1]))
    await done.wait()
    s.close()
asyncio.run(main())
PY
bg_env 1 python3 "$T/epoll_srv.py" $port &
spid=$!
pids+=("$spid")
wait_listening $port || fail "server never listened"
run_env 1 socat TCP:127.0.0.1:$port - <"$T/in" >"$T/out" || fail "client failed"
wait "$spid" || fail "server failed"
cmp -s "$T/in" "$T/out" || fail "bytes differ"
expect_counts socat 1 0
expect_counts python3 1 0
end

# echo_case NAME SCRIPT CLIENTS: a preloaded python echo server SCRIPT
# (port as argument) and CLIENTS preloaded socat clients one after the
# other, each echoed back intact, every connection on rsockets.
echo_case() {
  local script=$2 n=$3 spid i
  begin "$1"
  bg_env 1 python3 "$script" $port &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  head -c 200000 "$T/in" >"$T/in.small"
  for i in $(seq "$n"); do
    run_env 1 socat TCP:127.0.0.1:$port - <"$T/in.small" >"$T/out" || fail "client $i failed"
    cmp -s "$T/in.small" "$T/out" || fail "client $i: bytes differ"
  done
  wait "$spid" || fail "server failed"
  expect_counts python3 "$n" 0
  expect_counts socat "$n" 0
  end
}

# Serves one connection on `c` in a fork child: echo until EOF.
cat >"$T/echo_child.py" <<'PY'
def echo(c):
    data = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        data += b
    c.sendall(data)
    c.close()
PY

# A pre-forking server: listen, fork two workers that accept, the parent
# closes its copy of the listener.
cat >"$T/prefork_srv.py" <<'PY'
import os, socket, sys
from echo_child import echo
l = socket.socket()
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(8)
kids = []
for i in range(2):
    pid = os.fork()
    if pid == 0:
        for j in range(2):
            echo(l.accept()[0])
        os._exit(0)
    kids.append(pid)
l.close()
sys.exit(0 if [os.waitpid(k, 0)[1] for k in kids] == [0, 0] else 1)
PY
echo_case "pre-forked workers accepting on an inherited listener" "$T/prefork_srv.py" 4

# Fork after accept (a PostgreSQL-style backend per connection): the
# child serves the connection, the parent closes its copy.
cat >"$T/forkaccept_srv.py" <<'PY'
import os, socket, sys
from echo_child import echo
l = socket.socket()
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(8)
kids = []
for i in range(3):
    c, _ = l.accept()
    pid = os.fork()
    if pid == 0:
        l.close()
        echo(c)
        os._exit(0)
    c.close()
    kids.append(pid)
sys.exit(0 if [os.waitpid(k, 0)[1] for k in kids] == [0, 0, 0] else 1)
PY
echo_case "fork after accept: a child per connection" "$T/forkaccept_srv.py" 3

# A non-blocking connect as event loops make it (connect: EINPROGRESS;
# writable by poll, select or epoll (asyncio); SO_ERROR 0; then the
# bytes, echoed back; or made blocking at once, its send waiting for the
# connect) by a preloaded client, to a server that is
#  * plain: shm's rendezvous refuses at once, kernel TCP;
#  * preloaded, but stopped (SIGSTOP) while the client connects: the
#    kernel queues the rsocket connect on the listener's rendezvous, nobody
#    answers, it times out (connect_timeout 300 ms) after EINPROGRESS, and
#    the connect falls back to kernel TCP late (the client's debug line
#    says so). The program's wait sees the kernel connection writable, as
#    without the preload. Continued, the server accepts a second later
#    (both connections queued by then): its accept drops the rsocket
#    connection the client gave up (counted "abandoned", as TCP never
#    completes a connection whose client went away) and takes the
#    kernel one.
head -c 300000 "$T/in" >"$T/in.nb"
NB=$(cd "$(dirname "$0")/../preload" && pwd)
# nb_case HOW SERVER(plain|stopped)
nb_case() {
  local how=$1 srv=$2 spid cpid i rc
  begin "non-blocking connect ($how), preloaded client, $srv server: kernel TCP"
  rm -f "$T/srv.pid" "$T/nb.err"
  bg_env $([ "$srv" = plain ] && echo 0 || echo 1) python3 "$NB/nb_server.py" 127.0.0.1 $port "$T/srv.pid" \
    $([ "$srv" = stopped ] && echo after-stop) &
  spid=$!
  pids+=("$spid")
  for i in $(seq 100); do [ -s "$T/srv.pid" ] && break; sleep 0.1; done
  [ "$srv" = stopped ] && kill -STOP "$(cat "$T/srv.pid")"
  SLIPSTREAM_RS_CONNECT_TIMEOUT=300 SLIPSTREAM_LOG_LEVEL=debug \
    bg_env 1 python3 "$NB/nb_client.py" 127.0.0.1 $port "$how" <"$T/in.nb" >"$T/out" 2>"$T/nb.err" &
  cpid=$!
  pids+=("$cpid")
  if [ "$srv" = stopped ]; then
    for i in $(seq 100); do grep -q "after EINPROGRESS" "$T/nb.err" && break; sleep 0.1; done
    grep -q "after EINPROGRESS" "$T/nb.err" || fail "no late fallback logged"
    kill -CONT "$(cat "$T/srv.pid")"
  fi
  wait "$cpid"
  rc=$?
  [ "$rc" = 0 ] || fail "client exit $rc: $(grep -v DEBUG "$T/nb.err" | tail -3)"
  wait "$spid" || fail "server failed"
  cmp -s "$T/in.nb" "$T/out" || fail "bytes differ"
  if [ "$srv" = plain ]; then
    expect_counts python3 0 1
  else  # the server's own counts apart: kernel TCP for the connection it served
    mv "$T/st/rspreload.$(cat "$T/srv.pid")" "$T/srv.st" || fail "no server counts"
    grep -q " rsockets=0 .* abandoned=1 kernel_tcp=1$" "$T/srv.st" || fail "server: $(cat "$T/srv.st")"
    expect_counts python3 0 1
  fi
  end
}
for how in poll select epoll asyncio blocking; do
  nb_case $how plain
  nb_case $how stopped
done

# Not TCP: a unix socket passes through untouched (no rsocket, no count).
begin "unix socket under the preload"
bg_env 1 socat -u UNIX-LISTEN:"$T/sock" CREATE:"$T/out" &
spid=$!
pids+=("$spid")
for i in $(seq 100); do [ -S "$T/sock" ] && break; sleep 0.1; done
run_env 1 socat -u OPEN:"$T/in" UNIX-CONNECT:"$T/sock" || fail "client failed"
wait "$spid" || fail "server failed"
cmp -s "$T/in" "$T/out" || fail "bytes differ"
ls "$T"/st/rspreload.* >/dev/null 2>&1 && fail "a unix socket was counted: $(cat "$T"/st/*)"
end

# An epoll set of kernel descriptors only costs what the kernel's does:
# between two marks, the preloaded program makes the same syscalls as the
# plain one (strace), its epoll_waits (idle ones included) and nothing else.
cat >"$T/epoll_kernel.py" <<'PY'
import os, select
r, w = os.pipe()
ep = select.epoll()
ep.register(r, select.EPOLLIN)
os.write(2, b"MARK\n")
for _ in range(5):
    ep.poll(0.01)  # idle: the timeout ends each (a busy phase would show)
os.write(w, b"x")
ep.poll(-1)
os.write(2, b"END\n")
PY
# The syscalls between the marks, one name per line.
marked_syscalls() {
  strace -f -o "$T/strace" "$@" 2>/dev/null
  sed -n '/"MARK\\n"/,/"END\\n"/p' "$T/strace" | sed -e 's/^[0-9]* *//' -e 's/(.*//' |
    grep -v '^write$'
}
if command -v strace >/dev/null; then
  begin "epoll over kernel descriptors only: the kernel's syscalls, no more"
  plain=$(marked_syscalls python3 "$T/epoll_kernel.py")
  pre=$(marked_syscalls env LD_PRELOAD="$PRELOAD" python3 "$T/epoll_kernel.py")
  [ "$(grep -c '^epoll_wait$' <<<"$pre")" = 6 ] || fail "preloaded: $(tr '\n' ' ' <<<"$pre")"
  [ "$plain" = "$pre" ] || fail "plain: $(tr '\n' ' ' <<<"$plain") preloaded: $(tr '\n' ' ' <<<"$pre")"
  end
else
  echo "SKIP: epoll over kernel descriptors only (no strace)"
fi

[ "$fails" = 0 ] || { echo "$name: $fails case(s) failed"; exit 1; }
echo "$name: all cases passed"

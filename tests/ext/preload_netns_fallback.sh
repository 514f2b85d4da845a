#!/bin/bash
# librspreload's fallback (issue 14) with unmodified Debian programs across
# two network namespaces joined by a veth pair: the cases of
# preload_netns_apps.sh (from preload_cases.sh) with only one end
# preloaded, both ways (a preloaded server and a plain client; a plain
# server and a preloaded client): socat, python3 -m http.server + curl,
# redis-server + redis-cli/redis-benchmark (-c 50 -P 16), iperf3 (-P 4,
# --bidir), memcached + python3/memcslap, nginx (2 forked workers) + curl
# (keep-alive, 20 MB, sha256) and wrk, sockperf TCP (ping-pong: one
# connection, epoll, poll, select; throughput; under-load; 1-2 s each),
# PostgreSQL + psql/pgbench. Every case checks exit codes and bytes, and
# the preloaded process's own counts: rsockets=0 and every connection on
# kernel TCP, so a case fails if the fallback took a connection onto
# rsockets or left it uncounted.
# Then a server that speaks first (an SMTP-like banner, then it checks
# what the client sends back) and a preloaded client: bytes checked both
# ways, kernel TCP counted, and the time from connect to the banner's
# first byte printed for a plain and a preloaded client (the preloaded
# one's first connect pays the side channel's probe, answered by the
# kernel's port unreachable; the next ones are remembered): measured,
# never asserted on.
# Creates ss-4a-PID (10.213.4.1, servers) and ss-4z-PID (.2, clients)
# and removes them on exit (preload_netns_setup.sh); no traffic leaves
# them. Needs root; skipped otherwise. Automake exit codes: 0 pass,
# 1 fail, 77 skip, 99 hard error.
set -u
name=preload_netns_fallback.sh
NET=4
. "$(dirname "$0")/preload_netns_setup.sh" || exit 99

for pre in "1 0" "0 1"; do
  read -r srv_pre cli_pre <<<"$pre"
  e=$(ends)
  socat_case "socat, $e, client speaks first" $pre up
  http_case "python3 http.server + curl, $e" $pre 2
  redis_case "redis-server with redis-cli and redis-benchmark, $e" $pre 2000
  iperf_case $pre "$HOST" 5 -P 4
  iperf_case $pre "$HOST" 3 --bidir
  memc_case "memcached with a python3 client and memcslap, $e" $pre
  nginx_case "nginx (master, 2 workers) + curl and wrk, $e" $pre 1 20
  sockperf_cases $pre
  pg_case "PostgreSQL + psql and pgbench, as postgres, $e" $pre
done

# The banner server: first one connection to PORT+1 (the client's
# warm-up), then for each of N connections to PORT, a 220 line and 64 KB,
# then it reads them back from the client and answers 250 (or 554 when
# they differ); exits 1 if any differed.
cat >"$T/banner_srv.py" <<'PY'
import socket, sys
host, port, n, data = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), open(sys.argv[4], "rb").read()
banner = b"220 slipstream banner test\r\n" + data[:65536]
warm = socket.create_server((host, port + 1))
l = socket.create_server((host, port))
warm.accept()[0].close()
ok = True
for _ in range(n):
    c, _ = l.accept()
    c.sendall(banner)
    got = b""
    while len(got) < len(banner):
        b = c.recv(65536)
        if not b:
            break
        got += b
    ok &= got == banner
    c.sendall(b"250 ok\r\n" if got == banner else b"554 differ\r\n")
    c.close()
sys.exit(0 if ok else 1)
PY
# The client: one warm-up connection to PORT+1 (a process's first
# connect costs more; the side channel remembers a peer by address and
# port, so PORT is still probed), then N connections, each reading the
# whole banner (its length given), sending it back, reading 250; prints
# the time from the start of connect to the banner's first byte (ms):
# the first connection's and the median of the others.
cat >"$T/banner_cli.py" <<'PY'
import socket, statistics, sys, time
host, port, n, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
socket.create_connection((host, port + 1)).close()
ts = []
for _ in range(n):
    t = time.perf_counter()
    s = socket.create_connection((host, port))
    got = s.recv(65536)
    ts.append((time.perf_counter() - t) * 1000)
    while got and len(got) < want:
        b = s.recv(65536)
        if not b:
            break
        got += b
    if len(got) != want or not got.startswith(b"220 "):
        sys.exit("banner: %d bytes of %d" % (len(got), want))
    s.sendall(got)
    if s.makefile("rb").readline() != b"250 ok\r\n":
        sys.exit("the server did not take the banner back")
    s.close()
print("first %.3f, then median %.3f" % (ts[0], statistics.median(ts[1:])))
PY
# banner_case CLIENT_PRELOADED: a plain banner server, 5 connections (and
# the warm-up); the first connection's time less the others' median: the
# probe's cost for a preloaded client, noise for a plain one.
banner_case() {
  local srv_pre=0 cli_pre=$1 spid out n=5
  begin "server speaks first (banner), plain server, $([ "$cli_pre" = 1 ] && echo preloaded || echo plain) client"
  port=$((port + 1))  # two ports: the banner's ($port - 1) and the warm-up's
  bg_env 0 python3 "$T/banner_srv.py" "$HOST" $((port - 1)) $n "$T/in" &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  wait_listening $((port - 1)) || fail "server never listened"
  out=$(run_env "$cli_pre" python3 "$T/banner_cli.py" "$HOST" $((port - 1)) $n $((28 + 65536))) ||
    fail "client failed: $out"
  wait "$spid" || fail "server exit $?: bytes differ"
  echo "  connect to the banner's first byte, $([ "$cli_pre" = 1 ] && echo preloaded || echo plain) client: $out ms"
  awk '{printf "  first less median: %.3f ms\n", $2 - $5}' <<<"$out"
  expect_end "$cli_pre" python3 $((n + 1))
  end
}
banner_case 0
banner_case 1

[ "$fails" = 0 ] || { echo "$name: $fails case(s) failed"; exit 1; }
echo "$name: all cases passed"

#!/bin/bash
# librspreload with unmodified Debian programs across two network
# namespaces joined by a veth pair (issue 14; the loopback half is
# preload.sh, with the same cases from preload_cases.sh): servers in one
# namespace, clients in the other, both preloaded, so every connection
# goes over the tcp provider by the listener's side channel
# (docs/architecture.md "librspreload"). Every case checks the exit
# codes, the bytes, and each process's counts: tcp=N with N its
# connections, kernel_tcp=0, every process that counted anything checked,
# so a silent fallback to kernel TCP fails:
#   socat both speaking orders (IPv4, IPv6), python3 -m http.server + curl
#   (IPv4, IPv6), redis-server + redis-cli/redis-benchmark (-c 50 -P 16),
#   iperf3 (IPv6, IPv4; -P 4, -R, --bidir), memcached + python3/memcslap,
#   nginx (2 forked workers, epoll, sendfile) + curl (keep-alive, 100 MB)
#   and wrk, sockperf TCP (ping-pong: one connection, epoll, poll,
#   select; throughput; under-load), PostgreSQL + psql/pgbench (a backend
#   forked per connection; as the postgres user), Java's NIO server and
#   clients, Node.js's http server and client.
# The clients wait up to 1 s for the side channel's answer (see below).
# Creates ss-3a-PID (10.213.3.1, fd00:213:3::1, servers) and ss-3z-PID
# (.2, ::2, clients) and removes them on exit (preload_netns_setup.sh);
# no traffic leaves them. Needs root; skipped otherwise. Automake exit
# codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=preload_netns_apps.sh
NET=3
. "$(dirname "$0")/preload_netns_setup.sh" || exit 99

# A server answers side-channel probes from its own thread, between its
# other work: on this busy machine the default wait (20 ms) loses some,
# and those connections go to kernel TCP (seen at 605172c in one run at
# 20 ms: iperf3 -R, 1 of 2 connections; memcslap, 1 of 9; curl to
# nginx, 1 of 3; before it, redis-benchmark -c 50, 21 of 125, pgbench
# -c 4, up to 5 of 7). The clients wait 1 s (the setting for a slow
# peer; unless set already): every connection must still end on
# rsockets, and SLIPSTREAM_SIDE_PROBE_TIMEOUT=0 makes every case fail.
export SLIPSTREAM_SIDE_PROBE_TIMEOUT=${SLIPSTREAM_SIDE_PROBE_TIMEOUT-1000}

socat_case "socat both preloaded, client speaks first" 1 1 up
socat_case "socat both preloaded, server speaks first" 1 1 down
socat_case "socat both preloaded on IPv6, client speaks first" 1 1 up "$HOST6"

http_case "python3 http.server + curl, both preloaded" 1 1 2
http_case "python3 http.server + curl on IPv6, both preloaded" 1 1 1 "$HOST6"

redis_case "redis-server with redis-cli and redis-benchmark, all preloaded" 1 1 2000

iperf_case 1 1 "$HOST6" 2
iperf_case 1 1 "$HOST" 2
iperf_case 1 1 "$HOST" 5 -P 4
iperf_case 1 1 "$HOST" 2 -R
iperf_case 1 1 "$HOST" 3 --bidir

memc_case "memcached with a python3 client and memcslap, all preloaded" 1 1

nginx_case "nginx (master, 2 workers, epoll, sendfile) + curl and wrk, all preloaded" 1 1 1 100

sockperf_cases 1 1

pg_case "PostgreSQL + psql and pgbench, all as postgres, all preloaded" 1 1

java_case "Java: an NIO server (one Selector) and its clients, both preloaded" 1 1 nio
node_case "Node.js: http server and client, both preloaded" 1 1
node_case "Node.js: cluster (the primary passes each connection to a worker) and client, both preloaded" 1 1 "$HOST" cluster

[ "$fails" = 0 ] || { echo "$name: $fails case(s) failed"; exit 1; }
echo "$name: all cases passed"

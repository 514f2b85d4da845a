#!/bin/bash
# librspreload between two network namespaces joined by a veth pair: the
# peer is another "host". Both ends preloaded: rsockets over the tcp
# provider (the listener's side channel, docs/architecture.md
# "librspreload"), bytes intact, each process counting one tcp-provider
# connection and no kernel TCP, whichever side speaks first, IPv4 and
# IPv6. One end preloaded, either end: kernel TCP, bytes intact, counted
# so. The delay a preloaded client pays before reaching a plain server
# over kernel TCP is measured and printed (a refused probe: one round
# trip; a UDP socket on the port that never answers: the probe timeout,
# once, then remembered). Creates ss-pa-PID (10.213.2.1, fd00:213:2::1,
# server) and ss-pb-PID (.2, ::2, client) and removes them on exit; no
# traffic leaves them. Needs root; skipped otherwise.
set -u
name=preload_netns.sh
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
PRELOAD=$B/.libs/librspreload.so
[ -f "$PRELOAD" ] || { echo "ERROR: $name: $PRELOAD not found: build first"; exit 99; }
[ "$(id -u)" = 0 ] || { echo "SKIP: $name: needs root for network namespaces"; exit 77; }
for p in socat ip ss cmp timeout python3; do
  command -v $p >/dev/null || { echo "SKIP: $name: $p not found"; exit 77; }
done
A=ss-pa-$$ Z=ss-pb-$$
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-pnetns.XXXXXX") || exit 99
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  ip netns del "$A" 2>/dev/null
  ip netns del "$Z" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
skip() { echo "SKIP: $name: $*"; exit 77; }
ip netns add "$A" && ip netns add "$Z" || skip "ip netns add failed"
ip -n "$A" link add veth-pa type veth peer name veth-pb netns "$Z" || skip "no veth pair"
ip -n "$A" addr add 10.213.2.1/24 dev veth-pa && ip -n "$Z" addr add 10.213.2.2/24 dev veth-pb &&
  ip -n "$A" addr add fd00:213:2::1/64 dev veth-pa nodad &&
  ip -n "$Z" addr add fd00:213:2::2/64 dev veth-pb nodad &&
  ip -n "$A" link set veth-pa up && ip -n "$Z" link set veth-pb up &&
  ip -n "$A" link set lo up && ip -n "$Z" link set lo up || skip "configuring the pair failed"
for i in $(seq 50); do
  ip -n "$Z" link show veth-pb | grep -q LOWER_UP && break
  sleep 0.1
done

head -c 2000000 /dev/urandom >"$T/in"
fails=0
port=$((20000 + RANDOM % 9000))
# run NS PRELOADED CMD...: becomes the command (exec; `&` makes $! the
# program), preloaded (counting into $T/st) when PRELOADED is 1
run() {
  local ns=$1 pre=$2
  shift 2
  [ "$pre" = 1 ] || exec ip netns exec "$ns" timeout 30 "$@"
  exec ip netns exec "$ns" env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$T/st" \
    timeout 30 "$@"
}
listening() {
  for i in $(seq 100); do
    ip netns exec "$A" ss -Hltn "sport = :$1" | grep -q . && break
    sleep 0.1
  done
  sleep 0.2  # a preloaded server's rsocket listener comes up beside the kernel's
}
verdict() {
  if [ "$1" = 0 ]; then echo "PASS: $2"; else echo "FAIL: $2"; fails=$((fails + 1)); fi
}
# counts EXPECTED_FILES PATTERN: every count file matches
counts() {
  local n=0 bad=0 f
  for f in "$T"/st/rspreload.*; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    grep -q "$2" "$f" || { echo "  counts: $(cat "$f")"; bad=1; }
  done
  [ "$n" = "$1" ] || { echo "  $n count files, expected $1"; bad=1; }
  return $bad
}

# socat one way: server in A (preloaded when $2), client in Z (when $3)
transfer() {
  local addr=$1 spre=$2 cpre=$3 dir=$4 bad=0 spid
  port=$((port + 1))
  rm -rf "$T/st" "$T/out" && mkdir "$T/st"
  local saddr=$addr tcp=TCP
  case $addr in *:*) saddr="[$addr]" tcp=TCP6 ;; esac
  if [ "$dir" = up ]; then
    run "$A" "$spre" socat -u $tcp-LISTEN:$port,bind="$saddr",reuseaddr CREATE:"$T/out" &
  else
    run "$A" "$spre" socat -u OPEN:"$T/in" $tcp-LISTEN:$port,bind="$saddr",reuseaddr &
  fi
  spid=$!
  pids+=("$spid")
  listening $port
  if [ "$dir" = up ]; then
    (run "$Z" "$cpre" socat -u OPEN:"$T/in" $tcp:"$saddr":$port) || bad=1
  else
    (run "$Z" "$cpre" socat -u $tcp:"$saddr":$port CREATE:"$T/out") || bad=1
  fi
  wait "$spid" || bad=1
  cmp -s "$T/in" "$T/out" || { echo "  bytes differ"; bad=1; }
  return $bad
}

for addr in 10.213.2.1 fd00:213:2::1; do
  for dir in up down; do
    first=$([ $dir = up ] && echo client || echo server)
    bad=0
    transfer $addr 1 1 $dir || bad=1
    counts 2 " rsockets=1 shm=0 verbs=0 tcp=1 abandoned=0 kernel_tcp=0$" || bad=1
    verdict $bad "both preloaded across namespaces ($addr), $first speaks first: rsockets (tcp)"
  done
done
for dir in up down; do
  first=$([ $dir = up ] && echo client || echo server)
  bad=0
  transfer 10.213.2.1 0 1 $dir || bad=1
  counts 1 " rsockets=0 .* kernel_tcp=1$" || bad=1
  verdict $bad "preloaded client, plain server across namespaces, $first speaks first: kernel TCP"
  bad=0
  transfer 10.213.2.1 1 0 $dir || bad=1
  counts 1 " rsockets=0 .* kernel_tcp=1$" || bad=1
  verdict $bad "plain client, preloaded server across namespaces, $first speaks first: kernel TCP"
done

# The delay: N connects to a plain server, plain and preloaded clients,
# each connect timed (first, median, max in ms); then with a UDP socket
# on the server's port that never answers.
cat >"$T/times.py" <<'EOF'
import socket, statistics, sys, time
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ts = []
for _ in range(n):
    t = time.perf_counter()
    s = socket.create_connection((addr, port))
    ts.append((time.perf_counter() - t) * 1000)
    s.close()
print("first %.3f median %.3f max %.3f" % (ts[0], statistics.median(ts), max(ts)))
EOF
port=$((port + 1))
run "$A" 0 python3 -c "
import socket
s = socket.create_server(('10.213.2.1', $port), backlog=128)
while True:
    s.accept()[0].close()" &
pids+=($!)
listening $port
for how in plain preloaded; do
  bad=0
  rm -rf "$T/st" && mkdir "$T/st"
  out=$(run "$Z" $([ $how = plain ] && echo 0 || echo 1) python3 "$T/times.py" 10.213.2.1 $port 20) ||
    bad=1
  echo "  connect to a plain server, $how client: $out ms"
  [ $how = plain ] || counts 1 " rsockets=0 .* kernel_tcp=20$" || bad=1
  verdict $bad "connect delay to a plain server measured, $how client (probe refused)"
done
run "$A" 0 python3 -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('10.213.2.1', $port))
time.sleep(30)" &
pids+=($!)
sleep 0.3
bad=0
rm -rf "$T/st" && mkdir "$T/st"
out=$(run "$Z" 1 python3 "$T/times.py" 10.213.2.1 $port 20) || bad=1
echo "  connect to a plain server with a silent UDP socket on its port, preloaded client: $out ms"
echo "  (the first pays SLIPSTREAM_SIDE_PROBE_TIMEOUT, 50 ms by default; the rest are remembered)"
counts 1 " rsockets=0 .* kernel_tcp=20$" || bad=1
verdict $bad "connect delay to a plain server measured, preloaded client (probe unanswered)"
[ "$fails" = 0 ]

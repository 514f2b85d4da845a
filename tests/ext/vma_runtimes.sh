#!/bin/bash
# Java and Node.js programs under libvma.so (SLIPSTREAM_VMA_TCP=1) in
# namespace A against plain ones in B, across a veth pair this script
# makes and removes (no traffic leaves them): JavaEcho (java_echo.java)
# as a blocking server, as an NIO server and as 4 clients (2 MiB each
# echoed), its UDP echo both ways; Node.js's http module as server and
# as client, and in a cluster whose primary passes each connection to a
# worker (node_http.js). Java's sockets are IPv6 ones reaching IPv4 by
# mapped addresses. Each case proves its offload: A's kernel moved fewer
# than 5 TCP segments (UDP: datagrams) meanwhile. About 20 s.
set -u
name=vma_runtimes.sh
A=ss-ra-$$ Z=ss-rb-$$
IP4=10.227.0.1 IP4B=10.227.0.2
. "$(dirname "$0")/vma_pair.sh"
for p in java javac node; do
  command -v $p >/dev/null || skip "$p not found (scripts/install-deps.sh)"
done
vma_pair "$A" "$Z" ra rb "$IP4/24" "$IP4B/24"
export VMA_STATS_SHMEM_DIR= VMA_CONFIG_FILE=/dev/null
javac -d "$T/java" "$here/java_echo.java" || { echo "ERROR: $name: javac failed"; exit 99; }
head -c 3000000 /dev/urandom >"$T/blob" || exit 99
J=(java -cp "$T/java" JavaEcho)
V=(env LD_PRELOAD="$LIB" SLIPSTREAM_VMA_TCP=1)

# serve NS PRELOADED CMD...: a server in NS (under libvma.so when
# PRELOADED is 1), waited for until it says "ready".
serve() {
  local ns=$1 pre=()
  [ "$2" = 1 ] && pre=("${V[@]}")
  shift 2
  : >"$T/srv"  # emptied before the background job may start: no last server's "ready"
  ip netns exec "$ns" ${pre[@]+"${pre[@]}"} timeout 60 "$@" >"$T/srv" 2>&1 &
  srv=$!
  pids+=("$srv")
  for _ in $(seq 100); do grep -q "^ready" "$T/srv" && return 0; sleep 0.1; done
  echo "  server never ready: $(tail -3 "$T/srv")"
  return 1
}
stop() { kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; }
# client NS PRELOADED CMD...: the client in NS, its output in $T/out;
# sets $segs and $dgrams to what A's kernel moved meanwhile.
client() {
  local ns=$1 pre=() tcp0 udp0 rc
  [ "$2" = 1 ] && pre=("${V[@]}")
  shift 2
  tcp0=$(kernel_tcp) udp0=$(($(kernel_udp In 4) + $(kernel_udp Out 4)))
  ip netns exec "$ns" ${pre[@]+"${pre[@]}"} timeout 60 "$@" >"$T/out" 2>&1
  rc=$?
  segs=$(($(kernel_tcp) - tcp0)) dgrams=$(($(kernel_udp In 4) + $(kernel_udp Out 4) - udp0))
  return $rc
}
# offloaded COUNT: fewer than 5 (a silent fallback to A's kernel moves thousands).
offloaded() { [ "$1" -lt 5 ] || { echo "  A's kernel moved $1"; return 1; }; }

# java_round SERVER_NS SERVER_PRELOADED CLIENT_NS CLIENT_PRELOADED MODE
# ADDRESS PORT: a JavaEcho server (MODE), its 4 clients' 2 MiB echoed;
# node_round ... the same for node_http.js (MODE server or cluster) and
# its client's 20 GETs and POST. Each sets bad=1 on a failure.
java_round() {
  serve "$1" "$2" "${J[@]}" "$5" "$6" "$7" || bad=1
  client "$3" "$4" "${J[@]}" client "$6" "$7" 4 2 || bad=1
  has "$T/out" "^clients 4 bad 0$" || bad=1
  stop
}
node_round() {
  serve "$1" "$2" node "$here/node_http.js" "$5" "$6" "$7" "$T/blob" || bad=1
  client "$3" "$4" node "$here/node_http.js" client "$6" "$7" "$T/blob" 20 || bad=1
  has "$T/out" "^gets 20 ok$" || bad=1
  has "$T/out" "^post ok$" || bad=1
  stop
}

for mode in block nio; do
  bad=0
  java_round "$A" 1 "$Z" 0 $mode $IP4 7100
  offloaded "$segs" || bad=1
  check "Java $mode server in A under libvma.so: 4 clients' 2 MiB echoed, A's kernel moved $segs TCP segments" $bad
done

bad=0
java_round "$Z" 0 "$A" 1 nio $IP4B 7101
offloaded "$segs" || bad=1
check "Java clients in A under libvma.so (IPv6 sockets to a mapped IPv4 address): 2 MiB each echoed, A's kernel moved $segs TCP segments" $bad

bad=0
serve "$Z" 0 "${J[@]}" udp-server $IP4B 7102 || bad=1
client "$A" 1 "${J[@]}" udp-client $IP4B 7102 200 || bad=1
has "$T/out" "^udp ok 400 of 400$" || bad=1
offloaded "$dgrams" || bad=1
stop
serve "$A" 1 "${J[@]}" udp-server $IP4 7103 || bad=1
client "$Z" 0 "${J[@]}" udp-client $IP4 7103 200 || bad=1
has "$T/out" "^udp ok 400 of 400$" || bad=1
offloaded "$dgrams" || bad=1
stop
check "Java UDP in A under libvma.so, client and server: 400 datagrams echoed each way, A's kernel moved $dgrams" $bad

bad=0
node_round "$A" 1 "$Z" 0 server $IP4 7104
offloaded "$segs" || bad=1
check "Node.js http server in A under libvma.so: 20 GETs of 3 MB and a POST intact, A's kernel moved $segs TCP segments" $bad

# The primary passes each connection it accepted on the rings to a
# worker: the worker has only the kernel socket, so the connection goes
# there first (TCP_REPAIR); the rings served the handshake.
bad=0
node_round "$A" 1 "$Z" 0 cluster $IP4 7106
handed=$(grep -c "connection handed to the kernel (passed to another process)" "$T/srv")
[ "$handed" -ge 1 ] || { echo "  no connection handed to A's kernel:"; tail -5 "$T/srv"; bad=1; }
check "Node.js cluster in A under libvma.so (its primary passes each connection to a worker by SCM_RIGHTS): $handed handed to A's kernel first, 20 GETs and a POST intact" $bad

bad=0
node_round "$Z" 0 "$A" 1 server $IP4B 7105
offloaded "$segs" || bad=1
check "Node.js http client in A under libvma.so: 20 GETs of 3 MB and a POST intact, A's kernel moved $segs TCP segments" $bad

echo "$name: $fails failure(s)"
[ $fails = 0 ]

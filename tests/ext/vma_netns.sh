#!/bin/bash
# libvma.so offloading UDP (docs/architecture.md, "The VMA preload"):
# namespaces A (the preloaded side) and B (a kernel peer) joined by veth
# (B's tx checksum offload off), made here and removed on exit; no traffic
# leaves them. Needs root (exit 77 otherwise).
#  (a) tests/ext/vma_udp_echo.c as server in A under the preload, IPv4 and
#      IPv6, a kernel client in B: every datagram comes back intact, and
#      the proof that the rings carried them: the socket's vmastat block
#      says Offloaded with exactly COUNT packets received and sent offloaded
#      (the netdev's ring block too, with their bytes and the XDP redirects),
#      and A's kernel UDP counter (Udp InDatagrams / Udp6InDatagrams) did
#      not move by COUNT.
#      With VMA_STATS_FILE, the file (named by its pid) holds that
#      socket's report once, with the same counts.
#      The same with the server waiting for each datagram in ppoll, then
#      in pselect (ECHO_WAIT), and with VMA_RX_POLL=0 (each blocking
#      receive that finds nothing sleeps at once on its wait set): none
#      sleeps through the rings.
#  (b) Fallback: VMA_OFFLOADED_SOCKETS=0, and a server without privileges
#      (setpriv to nobody: no XDP attach), both still echo everything, the
#      block says Not offloaded, and the kernel counter grew by COUNT (which
#      shows the counter is the right witness).
#  (c) Debian's sockperf ping-pong (recvfrom) in A under the preload
#      against its server in B on the kernel: completes, its socket
#      offloaded (debug line), and A's kernel counter moved by fewer than
#      the replies sockperf received.
#  (d) sockperf's server in A under the preload, waiting in poll, then in
#      select, ping-pong from B on the kernel: the same proof.
#  (e) sockperf's server in A under the preload with its default
#      multiplexer (epoll, for two sockets: with one it blocks in
#      recvfrom, case (d)'s proof holds for that) and with -F epoll: the
#      same proof (epoll serves offloaded sockets).
#  (f) tests/ext/vma_epoll.c in A under the preload, its peer in B on the
#      kernel: one epoll set mixing the offloaded socket, a pipe and an
#      eventfd (level, EPOLLET, also in two sets waited on by two threads,
#      EPOLLONESHOT, a nested set, ELOOP, the set's duplicate), idle
#      waits (flat and nested epoll, a blocking receive) that sleep (CPU
#      time under a quarter of the wall time) and wake on the first
#      datagram, also one from before the socket's bind (a few sleeps,
#      not one per slice); every datagram read through the rings (vmastat counts
#      them all, A's kernel counter does not). A second socket added to
#      a kernel epoll set the preload does not know (the syscall instruction's) is
#      handed back to the kernel (the log line) and its datagram seen.
#  (g) MTU 9000 on both ends: datagrams longer than a ring frame (1800,
#      4000, 8000 bytes; AF_XDP would drop them) reach the offloaded socket
#      through its kernel twin, A's kernel counting exactly those; 100-byte
#      ones through the rings.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_netns.sh
set -u
name=vma_netns.sh
A=ss-va-$$ Z=ss-vb-$$
IP4=10.215.0.1 IP4B=10.215.0.2 IP6=fd00:215::1 IP6B=fd00:215::2
. "$(dirname "$0")/vma_pair.sh"
vma_pair "$A" "$Z" va vb "$IP4/24 $IP6/64" "$IP4B/24 $IP6B/64"

# Readable by nobody for (b): the program and the stats directory.
chmod 755 "$T"
"$CC" -O2 -Wall -o "$T/echo" "$here/vma_udp_echo.c" || { echo "ERROR: $name: build failed"; exit 99; }
mkdir -m 1777 "$T/stats"
export VMA_STATS_SHMEM_DIR=$T/stats VMA_CONFIG_FILE=/dev/null

# A's kernel count of UDP datagrams received for family 4 or 6.
kernel_udp_in() { kernel_udp In "$1"; }

COUNT=200
port=$((21000 + RANDOM % 8000))
# echo_case LABEL FAMILY PEER-ADDR EXPECT(offloaded|kernel) [PREFIX...]:
# the server in A (preloaded, held open after COUNT), the client in B.
echo_case() {
  local label=$1 fam=$2 peer=$3 expect=$4 tx=${ECHO_TX:-$COUNT}
  shift 4
  port=$((port + 1))
  rm -f "$T/hold" && mkfifo "$T/hold"
  local before after pid fd bad=0
  before=$(kernel_udp_in "$fam")
  ip netns exec "$A" "$@" env ECHO_HOLD=1 VMA_TRACELEVEL=info LD_PRELOAD="$LIB" \
    timeout 60 "$T/echo" server "$fam" $port $COUNT <"$T/hold" >"$T/out" 2>"$T/err" &
  pids+=($!)
  exec 3>"$T/hold"
  for _ in $(seq 100); do grep -q '^ready' "$T/out" && break; sleep 0.1; done
  read -r _ pid fd <"$T/out"
  if ! ip netns exec "$Z" timeout 60 "$T/echo" client "$peer" $port $COUNT >"$T/cl" 2>&1; then
    echo "  client: $(cat "$T/cl")"
    bad=1
  fi
  after=$(kernel_udp_in "$fam")
  block "${pid:-0}" >"$T/block"
  if [ "$expect" = offloaded ]; then
    # The netdev's ring block, refreshed once a second: read until it counts them all.
    for _ in $(seq 20); do
      grep -Eq "^Tx Offload: [0-9]+ KB / $tx \[" "$T/block" && break
      sleep 0.5
      block "${pid:-0}" >"$T/block"
    done
  fi
  exec 3>&-
  wait "${pids[-1]}" || { echo "  server failed: $(tail -5 "$T/err")"; bad=1; }
  echo "  kernel UDP in A: $before -> $after; $(grep -E 'Offloaded|Rx Offload|Tx Offload|Rx OS|Tx OS' "$T/block" | tr '\n' ' ')"
  if [ "$expect" = offloaded ]; then
    has "$T/block" "^- UDP, Offloaded" || bad=1
    has "$T/block" "^Rx Offload: [0-9]+ KB / $COUNT /" || bad=1
    has "$T/block" "^Tx Offload: [0-9]+ KB / $tx /" || bad=1
    [ "$tx" = $COUNT ] || has "$T/block" "^Tx OS info: [0-9]+ KB / $((COUNT - tx)) /" || bad=1
    # The ring's block: the netdev's datagrams and their payload bytes.
    has "$T/block" "RING_XDP=\[0\] va" || bad=1
    has "$T/block" "^Rx Offload: [1-9][0-9]* KB / $COUNT \[" || bad=1
    has "$T/block" "^Tx Offload: [1-9][0-9]* KB / $tx \[" || bad=1
    has "$T/block" "^XDP: [1-9][0-9]* / 0 \[redirected/dropped\], malformed dropped 0" || bad=1
    [ $((after - before)) -lt $COUNT ] || { echo "  the kernel received them"; bad=1; }
  else
    has "$T/block" "^- UDP, Not offloaded" || bad=1
    [ $((after - before)) -ge $COUNT ] || { echo "  the kernel counter did not move"; bad=1; }
  fi
  check "$label" $bad
}

# (a) offloaded, both families.
echo_case "IPv4 echo through the rings: $COUNT datagrams intact, offloaded, kernel silent" \
  4 $IP4 offloaded env VMA_STATS_FILE="$T/sfile.%d"
# VMA_STATS_FILE (its %d the pid; made at start, as libvma's, so timeout(1)
# under the preload has an empty one): the socket's counters, once, as
# vmastat had them.
sf=$(find "$T" -maxdepth 1 -name 'sfile.*' -size +0)
[ "$(echo "$sf" | wc -w)" = 1 ] && [[ ${sf##*/} =~ ^sfile\.[0-9]+$ ]] &&
  [ "$(grep -c 'Fd=\[' "$sf")" = 1 ] && has "$sf" "^- UDP, Offloaded" &&
  has "$sf" "^Rx Offload: [0-9]+ KB / $COUNT /" && has "$sf" "^Tx Offload: [0-9]+ KB / $COUNT /"
check "VMA_STATS_FILE: the offloaded socket's counters written once, at its close or exit" $?
# VMA_MTU=700: a reply whose IP datagram is larger (the client's payload
# sizes are 1 + i*97 % 1400) leaves through the kernel socket (which
# would fragment it at the interface's MTU), the rest take the rings; the
# client checks every reply.
mtu_tx=$(awk -v n=$COUNT 'BEGIN { for (i = 0; i < n; i++) c += 1 + (i * 97) % 1400 + 28 <= 700; print c }')
ECHO_TX=$mtu_tx echo_case "VMA_MTU=700: $mtu_tx replies on the rings, $((COUNT - mtu_tx)) larger through the kernel, all intact" \
  4 $IP4 offloaded env VMA_MTU=700
echo_case "IPv6 echo through the rings: $COUNT datagrams intact, offloaded, kernel silent" \
  6 $IP6 offloaded
echo_case "waiting in ppoll and pselect: $COUNT datagrams intact, offloaded, kernel silent" \
  4 $IP4 offloaded env ECHO_WAIT=1
echo_case "each receive asleep (VMA_RX_POLL=0): $COUNT datagrams intact, offloaded, kernel silent" \
  4 $IP4 offloaded env VMA_RX_POLL=0

# (b) fallback.
echo_case "VMA_OFFLOADED_SOCKETS=0: echoed by the kernel, not offloaded" \
  4 $IP4 kernel env VMA_OFFLOADED_SOCKETS=0
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  echo_case "without privileges (nobody): echoed by the kernel, not offloaded" \
    4 $IP4 kernel setpriv --reuid=nobody --regid=nogroup --clear-groups
  has "$T/err" "WARN.*va: no rings" 
  check "without privileges: one warning says the netdev has no rings" $?
else
  echo "SKIP: setpriv or user nobody missing: the unprivileged fallback not run"
fi

# sockperf_proof LABEL PRELOADED-LOG PORT-REGEX, after a ping-pong whose
# client wrote $T/sp.client and exited $rc, A's counter read into $before:
# it completed, the preloaded side's socket was offloaded, and A's kernel
# received fewer datagrams than sockperf counted replies.
# The replies sockperf's client ($T/sp.client) counted.
replies() { sed -n 's/.*ReceivedMessages=\([0-9]*\).*/\1/p' "$T/sp.client" | head -1; }
sockperf_proof() {
  local after got bad=0
  after=$(kernel_udp_in 4)
  got=$(replies)
  echo "  kernel UDP in A: $before -> $after; sockperf received ${got:-?} replies"
  { [ $rc = 0 ] && has "$T/sp.client" "Summary: Latency is"; } || { echo "  client exit $rc"; bad=1; }
  has "$2" "DEBUG: fd [0-9]+ \(udp port $3\): offloaded on 1 netdev" || bad=1
  [ "${got:-0}" -gt 0 ] && [ $((after - before)) -lt "${got:-0}" ] ||
    { echo "  the kernel received them"; bad=1; }
  check "$1" $bad
}

# (c) sockperf: the kernel's server in B, the preloaded ping-pong client in
# A (recvfrom). The proof: the round trips it reports against A's kernel UDP counter.
if command -v sockperf >/dev/null; then
  port=$((port + 1))
  ip netns exec "$Z" timeout 60 sockperf server -i $IP4B -p $port >"$T/sp.server" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do grep -q 'IP = ' "$T/sp.server" && break; sleep 0.1; done
  before=$(kernel_udp_in 4)
  ip netns exec "$A" env VMA_TRACELEVEL=debug LD_PRELOAD="$LIB" timeout 60 \
    sockperf ping-pong -i $IP4B -p $port --time 2 >"$T/sp.client" 2>&1
  rc=$?
  sockperf_proof "sockperf ping-pong, preloaded client in A, kernel server in B: offloaded" \
    "$T/sp.client" "[0-9]+"
else
  echo "SKIP: sockperf not installed: part (c) not run"
fi

# serve_and_ping LOG-REGEX SERVER-ARGS...: sockperf's server preloaded in
# A at debug ($spid: not under timeout, so that it is sockperf's pid for
# vma_stats; a hang shows as the client's failure), then once its log
# $T/sp.server matches LOG-REGEX a 2 s ping-pong from B's kernel to $port
# ($rc, $T/sp.client); A's counter in $before and $after.
serve_and_ping() {
  local want=$1
  shift
  ip netns exec "$A" env VMA_TRACELEVEL=debug LD_PRELOAD="$LIB" \
    sockperf server "$@" >"$T/sp.server" 2>&1 &
  spid=$!
  pids+=($spid)
  for _ in $(seq 100); do grep -Eq "$want|no rings" "$T/sp.server" && break; sleep 0.1; done
  before=$(kernel_udp_in 4)
  ip netns exec "$Z" timeout 60 sockperf ping-pong -i $IP4 -p $port --time 2 >"$T/sp.client" 2>&1
  rc=$?
  after=$(kernel_udp_in 4)
}

# (d) sockperf's server preloaded in A, waiting in poll and in select (a
# feed file: sockperf takes -F with -f only), ping-pong from B's kernel.
if command -v sockperf >/dev/null; then
  for mux in poll select; do
    port=$((port + 1))
    echo "U:$IP4:$port" >"$T/feed"
    serve_and_ping "offloaded on 1 netdev" -f "$T/feed" -F $mux
    kill $spid 2>/dev/null
    wait $spid 2>/dev/null
    sockperf_proof "sockperf server preloaded in A waiting in $mux, ping-pong from B: offloaded" \
      "$T/sp.server" $port
  done
fi

# (e) sockperf's server preloaded in A waiting in epoll: by default (a
# feed of two sockets) and with -F epoll (one).
if command -v sockperf >/dev/null; then
  for how in default "-F epoll"; do
    port=$((port + 1))
    echo "U:$IP4:$port" >"$T/feed"
    args=(-f "$T/feed" -F epoll)
    if [ "$how" = default ]; then
      echo "U:$IP4:$((port + 1000))" >>"$T/feed"
      args=(-f "$T/feed")
    fi
    serve_and_ping "offloaded on 1 netdev" "${args[@]}"
    block $spid >"$T/block"
    kill $spid 2>/dev/null
    wait $spid 2>/dev/null
    has "$T/sp.server" "using epoll"
    check "sockperf server preloaded in A ($how): it waits in epoll" $?
    has "$T/block" "^- UDP, Offloaded" && ! grep -q "^- UDP, Not offloaded" "$T/block"
    check "sockperf server preloaded in A ($how): vmastat shows its sockets offloaded" $?
    sockperf_proof "sockperf server preloaded in A waiting in epoll ($how), ping-pong from B: offloaded" \
      "$T/sp.server" $port
  done
fi

# (f) epoll over an offloaded socket, a pipe and an eventfd.
"$CC" -O2 -Wall -pthread -o "$T/epoll" "$here/vma_epoll.c" || { echo "ERROR: $name: build failed"; exit 99; }
port=$((port + 1))
peer_port=$((port + 1000))
ip netns exec "$Z" timeout 90 "$T/epoll" peer $peer_port >"$T/peer" 2>&1 &
pids+=($!)
rm -f "$T/hold" && mkfifo "$T/hold"
before=$(kernel_udp_in 4)
ip netns exec "$A" env VMA_TRACELEVEL=debug LD_PRELOAD="$LIB" \
  timeout 90 "$T/epoll" server $IP4 $port $IP4B $peer_port <"$T/hold" >"$T/out" 2>"$T/err" &
pids+=($!)
exec 3>"$T/hold"
for _ in $(seq 600); do grep -q '^received' "$T/out" && break; sleep 0.1; done
after=$(kernel_udp_in 4)
read -r _ epid <"$T/out"
block "${epid:-0}" >"$T/block"
exec 3>&-
bad=0
wait "${pids[-1]}" || { echo "  the program failed: $(grep FAIL "$T/err" | head -5)"; bad=1; }
sed -n 's/^idle/  idle/p' "$T/out"
read -r _ got _ sent < <(grep '^received' "$T/out")
echo "  kernel UDP in A: $before -> $after; received ${got:-?} datagrams; $(grep -E 'Rx Offload|Tx Offload' "$T/block" | tr '\n' ' ')"
has "$T/err" "DEBUG: fd [0-9]+ \(udp port $port\): offloaded on 1 netdev" || bad=1
has "$T/err" "INFO: va: fd [0-9]+ handed back to the kernel \(in an epoll set the preload does not know\)" || bad=1
has "$T/block" "^Rx Offload: [0-9]+ KB / ${got:-x} /" || bad=1
has "$T/block" "^Tx Offload: [0-9]+ KB / ${sent:-x} /" || bad=1
kpath=$(sed -n 's/^kernel path //p' "$T/out")
sed -n 's/^\(EPOLLET in two sets\|a wait from before bind\)/  &/p' "$T/out"
[ "${got:-0}" -gt 0 ] && [ $((after - before - ${kpath:-0})) -lt "${got:-0}" ] || { echo "  the kernel received them"; bad=1; }
check "epoll over an offloaded socket, a pipe and an eventfd: level, EPOLLET (also in two sets, two threads), EPOLLONESHOT, nested, duplicated; a wait from before bind asleep until the bind, then woken by the rings; idle epoll and recv sleep; all through the rings" $bad

# (g) Jumbo datagrams.
ip -n "$A" link set va mtu 9000 && ip -n "$Z" link set vb mtu 9000 || skip "MTU 9000 refused"
port=$((port + 1))
before=$(kernel_udp_in 4)
ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_TRACELEVEL=debug timeout 30 python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(5)
print("ready", flush=True)
got = []
while len(got) < 6:
    got.append(len(s.recv(65536)))
print("received", *sorted(got))' "$IP4" $port >"$T/out" 2>"$T/err" &
pids+=($!)
for _ in $(seq 100); do grep -q '^ready' "$T/out" && break; sleep 0.1; done
ip netns exec "$Z" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for n in (100, 1800, 4000, 8000, 100, 100):
    s.sendto(bytes(n), (sys.argv[1], int(sys.argv[2])))' "$IP4" $port
bad=0
wait "${pids[-1]}" || { echo "  receiver: $(tail -3 "$T/err")"; bad=1; }
after=$(kernel_udp_in 4)
echo "  $(cat "$T/out" | tail -1); kernel UDP in A: $before -> $after"
has "$T/out" "^received 100 100 100 1800 4000 8000$" || bad=1
has "$T/err" "DEBUG: fd [0-9]+ \(udp port $port\): offloaded on 1 netdev" || bad=1
[ $((after - before)) = 3 ] || bad=1
check "MTU 9000: datagrams longer than a ring frame through the kernel twin, the rest on the rings, all received" $bad
ip -n "$A" link set va mtu 1500 && ip -n "$Z" link set vb mtu 1500

echo "$name: $fails failure(s)"
[ $fails = 0 ]

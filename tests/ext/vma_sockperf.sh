#!/bin/bash
# Debian's sockperf 3.7 with BOTH ends under libvma.so, across a veth pair
# between namespaces A (the server) and B (the client), made here and
# removed on exit (tx checksum offload off on both sides: each side's
# rings verify the other's checksums); no traffic leaves them. Needs root
# (exit 77 otherwise). The client modes: ping-pong, throughput and
# under-load against the server waiting in recvfrom; then ping-pong with
# the server's sockets in a feed file waiting in select, poll and epoll;
# then multicast: the server on two groups from a feed file, the client
# pinging one of them. Proof per run, beside sockperf's own summary:
#   the server's vmastat block says its socket(s) offloaded, with the
#     datagrams it took on the rings;
#   the client's log says its socket was offloaded;
#   A's kernel UDP InDatagrams and B's OutDatagrams move by a handful, far
#     fewer than the messages sockperf counted. A send whose next hop the
#     kernel is still resolving goes through the kernel, and a ping-pong
#     client sends hundreds in that time on a loaded machine: each case
#     first has B's kernel resolve A (known_neighbour).
#
# Run from the build directory: bash $srcdir/tests/ext/vma_sockperf.sh
set -u
name=vma_sockperf.sh
A=ss-sa-$$ Z=ss-sb-$$
IP4=10.223.0.1 IP4B=10.223.0.2 G4=239.223.0.7
. "$(dirname "$0")/vma_pair.sh"
command -v sockperf >/dev/null || skip "sockperf not installed (Debian: sockperf)"

vma_pair "$A" "$Z" sa sb "$IP4/24" "$IP4B/24"
ip netns exec "$A" ethtool -K sa tx off >/dev/null 2>&1 || skip "ethtool -K sa tx off failed"
ip -n "$A" route add 224.0.0.0/4 dev sa && ip -n "$Z" route add 224.0.0.0/4 dev sb
mkdir -m 1777 "$T/stats"
export VMA_STATS_SHMEM_DIR=$T/stats VMA_CONFIG_FILE=/dev/null

# ns_udp NETNS In|Out: that namespace's kernel count of UDP datagrams.
ns_udp() {
  ip netns exec "$1" awk -v f="$2Datagrams" '$1 == "Udp:" && $2 !~ /^[0-9]+$/ {
      for (i = 2; i <= NF; i++) if ($i == f) c = i }
    $1 == "Udp:" && $2 ~ /^[0-9]+$/ {print $c}' /proc/net/snmp
}
# known_neighbour: B's kernel knows A's Ethernet address (one datagram
# sent to the discard port, then up to 2 s for the entry).
known_neighbour() {
  ip netns exec "$Z" bash -c "echo >/dev/udp/$IP4/9" 2>/dev/null
  for _ in $(seq 40); do
    ip -n "$Z" neigh show "$IP4" | grep -qE 'REACHABLE|STALE|DELAY' && return 0
    sleep 0.05
  done
  echo "  B's kernel did not resolve $IP4"
}
wait_line() { for _ in $(seq 100); do grep -Eq "$2" "$1" && return 0; sleep 0.1; done; return 1; }
port=$((22000 + RANDOM % 8000))

# sockperf_case LABEL MESSAGES-REGEX "SERVER-ARGS" CLIENT-ARGS...: the
# server preloaded in A, then the client preloaded in B for 2 s; MESSAGES-
# REGEX pulls the count the client reports (sent or received) from its
# output. The server's arguments may name $port; "@FEED" stands for a
# feed file written by the caller.
sockperf_case() {
  local label=$1 count_re=$2 sargs=$3 spid a0 a1 b0 b1 rc msgs rx bad=0
  shift 3
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_TRACELEVEL=debug \
    sockperf server ${sargs//@FEED/$T/feed} >"$T/srv" 2>&1 &
  spid=$!
  pids+=($spid)
  wait_line "$T/srv" "offloaded on 1 netdev|no rings" || true
  known_neighbour
  a0=$(ns_udp "$A" In) b0=$(ns_udp "$Z" Out)
  ip netns exec "$Z" env LD_PRELOAD="$LIB" VMA_TRACELEVEL=debug timeout 60 \
    sockperf "$@" --time 2 >"$T/cli" 2>&1
  rc=$?
  a1=$(ns_udp "$A" In) b1=$(ns_udp "$Z" Out)
  block $spid >"$T/block"
  kill $spid 2>/dev/null
  wait $spid 2>/dev/null
  msgs=$(grep -Eo "$count_re" "$T/cli" | head -1 | grep -Eo '[0-9]+$')
  # The sockets' lines (the ring blocks' repeat them).
  rx=$(sed -n 's/^Rx Offload: [0-9]* KB \/ \([0-9]*\) \/.*eagains.*/\1/p' "$T/block" | awk '{s += $1} END {print s + 0}')
  echo "  sockperf: ${msgs:-?} messages; server took $rx on the rings; kernel UDP in A +$((a1 - a0)), out of B +$((b1 - b0))"
  [ $rc = 0 ] || { echo "  client exit $rc: $(tail -3 "$T/cli")"; bad=1; }
  has "$T/block" "^- UDP, Offloaded" && ! grep -q "^- UDP, Not offloaded" "$T/block" ||
    { echo "  the server's sockets were not all offloaded"; bad=1; }
  has "$T/cli" "DEBUG: fd [0-9]+ \(udp port [0-9]+\): offloaded on 1 netdev" ||
    { echo "  the client's socket was not offloaded"; bad=1; }
  [ "${msgs:-0}" -gt 100 ] && [ "$rx" -gt 100 ] ||
    { echo "  too few messages"; grep -v DEBUG "$T/cli" | tail -5; grep -v DEBUG "$T/srv" | tail -5; bad=1; }
  [ $((a1 - a0)) -le 4 ] && [ $((b1 - b0)) -le 4 ] ||
    { echo "  the kernels carried them"; bad=1; }
  check "$label" $bad
}

port=$((port + 1))
sockperf_case "ping-pong, both ends preloaded: offloaded" "ReceivedMessages=[0-9]+" \
  "-i $IP4 -p $port" ping-pong -i $IP4 -p $port -m 64
has "$T/cli" "Summary: Latency is"
check "ping-pong: sockperf's latency summary" $?

port=$((port + 1))
sockperf_case "throughput, both ends preloaded: offloaded" "Total of [0-9]+" \
  "-i $IP4 -p $port" throughput -i $IP4 -p $port -m 64
has "$T/cli" "Summary: Message Rate is"
check "throughput: sockperf's message rate" $?

port=$((port + 1))
sockperf_case "under-load, both ends preloaded: offloaded" "SentMessages=[0-9]+" \
  "-i $IP4 -p $port" under-load -i $IP4 -p $port -m 64 --mps 20000 --reply-every 50
grep -Eq "ReceivedMessages=[1-9]" "$T/cli" && has "$T/cli" "Summary: Latency is"
check "under-load: replies came back, sockperf's latency summary" $?

for mux in select poll epoll; do
  port=$((port + 1))
  printf 'U:%s:%s\nU:%s:%s\n' $IP4 $port $IP4 $((port + 1000)) >"$T/feed"
  sockperf_case "server waiting in $mux (two sockets of a feed file), both ends preloaded: offloaded" \
    "ReceivedMessages=[0-9]+" "-f @FEED -F $mux" ping-pong -i $IP4 -p $port -m 64
  has "$T/srv" "using $mux"
  check "server waiting in $mux: sockperf says so" $?
done

# Multicast: the server joins two groups from a feed file (select); the
# client pings the first (its replies come back unicast).
port=$((port + 1))
printf 'U:%s:%s\nU:239.223.0.8:%s\n' $G4 $port $port >"$T/feed"
sockperf_case "multicast feed file, both ends preloaded: offloaded" "ReceivedMessages=[0-9]+" \
  "-f @FEED -F select" ping-pong -i $G4 -p $port -m 64

echo "$name: $fails failure(s)"
[ $fails = 0 ]

#!/bin/bash
# libvma.so against the kernel with Debian's sockperf: UDP 64 B ping-pong
# (SOCKPERF_TCP=1: TCP, the preloaded ends with SLIPSTREAM_VMA_TCP=1;
# SOCKPERF_MODE=under-load: sockperf's under-load mode, whose client sends
# and receives on two threads: with both ends preloaded three threads
# busy-poll on a 2-core machine)
# across a veth pair between two network namespaces this script makes and
# removes (B's tx checksum offload off, as the offload needs; no traffic
# leaves them). Four runs in the same minute, each SOCKPERF_TIME seconds,
# the server blocking in recvfrom (sockperf's mode for one socket):
#   kernel      both ends plain sockets
#   busypoll    the same with the kernel's busy polling on
#               (net.core.busy_read and busy_poll 50 us, global sysctls:
#               set for this run only and put back), and on each veth end
#               our steering program with no flow (every frame to the
#               kernel): veth has NAPI to poll only with an XDP program,
#               without one the busy-polling receive sleeps
#   client      the ping-pong client under LD_PRELOAD=libvma.so (offloaded
#               in A), the server on the kernel in B
#   both        both ends under the preload
# Prints p50, p99, p99.9 and the average (us) per run and p50 as a ratio to
# the kernel's and to its busy polling's. Whether a preloaded socket
# really used the rings is printed from the library's own lines (UDP:
# "<netdev>: UDP offloaded on N rx queue(s)"; TCP: "connect fd N:
# offloaded", "listen fd N ... listener(s) of the rings", at debug); a run
# without it is marked NOT OFFLOADED.
#
#   cd build && sudo bash ../bench/vma_sockperf.sh      (root: namespaces, XDP)
set -u
B=$(pwd)
LIB=${1:-$B/.libs/libvma.so}
TIME=${SOCKPERF_TIME:-3}
TCP=${SOCKPERF_TCP:-0}
MODE=${SOCKPERF_MODE:-ping-pong}
PROTO=UDP
TCPARG=()
if [ "$TCP" = 1 ]; then PROTO=TCP; TCPARG=(--tcp); fi
[ -f "$LIB" ] || { echo "vma_sockperf.sh: $LIB not found (run from the build directory)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "vma_sockperf.sh: needs root (namespaces, XDP)" >&2; exit 2; }
command -v sockperf >/dev/null || { echo "vma_sockperf.sh: sockperf not found (Debian: sockperf)" >&2; exit 2; }
A=ss-bva-$$ Z=ss-bvb-$$ IPA=10.217.0.1 IPB=10.217.0.2 PORT=11211
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-vmabench.XXXXXX")
BR=$(sysctl -n net.core.busy_read 2>/dev/null) BP=$(sysctl -n net.core.busy_poll 2>/dev/null)
XDP_PASS=$B/src/core/prov/xdp/steer.bpf.o
busy() {  # busy on|off
  if [ "$1" = on ]; then
    ip -n "$A" link set dev va xdpdrv obj "$XDP_PASS" sec xdp.frags &&
      ip -n "$Z" link set dev vb xdpdrv obj "$XDP_PASS" sec xdp.frags ||
      echo "vma_sockperf.sh: no XDP program on veth: the busy-poll run sleeps" >&2
  else
    ip -n "$A" link set dev va xdp off 2>/dev/null
    ip -n "$Z" link set dev vb xdp off 2>/dev/null
  fi
  [ -n "$BR" ] && [ -n "$BP" ] || return 0
  if [ "$1" = on ]; then
    sysctl -qw net.core.busy_read=50 net.core.busy_poll=50
  else
    sysctl -qw net.core.busy_read="$BR" net.core.busy_poll="$BP"
  fi
}
cleanup() {
  busy off
  pkill -f "sockperf server -i $IPB -p $PORT" 2>/dev/null
  ip netns del "$A" 2>/dev/null
  ip netns del "$Z" 2>/dev/null
  [ -n "${KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
ip netns add "$A" && ip netns add "$Z" &&
  ip -n "$A" link add va type veth peer name vb netns "$Z" &&
  ip -n "$A" addr add $IPA/24 dev va && ip -n "$Z" addr add $IPB/24 dev vb &&
  ip -n "$A" link set va up && ip -n "$Z" link set vb up &&
  ip -n "$A" link set lo up && ip -n "$Z" link set lo up &&
  ip netns exec "$Z" ethtool -K vb tx off >/dev/null &&
  ip netns exec "$A" ethtool -K va tx off >/dev/null || { echo "vma_sockperf.sh: namespace set-up failed" >&2; exit 2; }
for _ in $(seq 50); do ip -n "$Z" link show vb | grep -q LOWER_UP && break; sleep 0.1; done
export VMA_STATS_SHMEM_DIR= VMA_CONFIG_FILE=/dev/null

# run NAME SERVER_PRELOAD CLIENT_PRELOAD -> "p50 p99 p999 avg offload-note"
run() {
  local name=$1 sp=$2 cp=$3
  local senv=() cenv=()
  local pre=(env LD_PRELOAD="$LIB")
  [ "$TCP" = 1 ] && pre+=(SLIPSTREAM_VMA_TCP=1 VMA_TRACELEVEL=debug)
  [ "$sp" = 1 ] && senv=("${pre[@]}")
  [ "$cp" = 1 ] && cenv=("${pre[@]}")
  [ "$name" = busypoll ] && busy on
  ip netns exec "$Z" timeout $((TIME + 20)) "${senv[@]}" sockperf server "${TCPARG[@]}" -i $IPB \
    -p $PORT >"$T/$name.server" 2>&1 &
  # The server's socket there first (a loaded machine starts it late).
  local ss_args=(-Hlun)
  [ "$TCP" = 1 ] && ss_args=(-Hltn)
  for _ in $(seq 100); do
    ip netns exec "$Z" ss "${ss_args[@]}" "sport = :$PORT" | grep -q . && break
    sleep 0.1
  done
  sleep 0.2  # its warm-up reply path (sockperf answers once bound)
  ip netns exec "$A" timeout $((TIME + 15)) "${cenv[@]}" sockperf "$MODE" "${TCPARG[@]}" \
    -i $IPB -p $PORT -m 64 --time "$TIME" >"$T/$name.client" 2>&1
  pkill -f "sockperf server -i $IPB -p $PORT" 2>/dev/null
  wait 2>/dev/null
  busy off
  local pct note=""
  pct() { sed -n "s/.*percentile $1 = *\([0-9.]*\).*/\1/p" "$T/$name.client" | head -1; }
  local avg
  avg=$(sed -n 's/.*Summary: Latency is *\([0-9.]*\).*/\1/p' "$T/$name.client" | head -1)
  for side in server client; do
    local want=$sp
    [ $side = client ] && want=$cp
    [ "$want" = 1 ] || continue
    local mark=": UDP offloaded on"
    if [ "$TCP" = 1 ]; then
      mark="connect fd [0-9]*: offloaded"
      [ $side = server ] && mark="listen fd [0-9]* (tcp port [0-9]*): on"
    fi
    grep -q "$mark" "$T/$name.$side" || note="$note NOT-OFFLOADED($side)"
  done
  local p50 p99 p999
  p50=$(pct 50.000) p99=$(pct 99.000) p999=$(pct 99.900)
  echo "${p50:-none} ${p99:-none} ${p999:-none} ${avg:-none} ${note:-offload-ok}"
}

printf "sockperf %s %s, 64 B, %s s each, across veth (A -> B)\n" "$PROTO" "$MODE" "$TIME"
printf "%-34s %8s %8s %9s %8s %9s %9s  %s\n" "" "p50" "p99" "p99.9" "avg" "p50 vs" "p50 vs" ""
printf "%-34s %8s %8s %9s %8s %9s %9s  %s\n" "" "(us)" "(us)" "(us)" "(us)" "kernel" "busypoll" ""
k50="" b50=""
for cfg in "kernel:0:0:kernel sockets both ends" "busypoll:0:0:kernel, busy_read/busy_poll 50" \
  "client:0:1:client under libvma.so" \
  "both:1:1:both ends under libvma.so"; do
  IFS=: read -r name sp cp label <<<"$cfg"
  read -r p50 p99 p999 avg note < <(run "$name" "$sp" "$cp")
  [ "$p50" = none ] && { printf "%-34s %8s  (sockperf failed: %s)\n" "$label" "fail" "$(tail -1 "$T/$name.client")"; continue; }
  [ "$name" = kernel ] && k50=$p50
  [ "$name" = busypoll ] && b50=$p50
  ratio=$(awk -v a="$p50" -v k="$k50" 'BEGIN { if (k > 0) printf "%.2fx", a / k; else print "-" }')
  bratio=$(awk -v a="$p50" -v k="$b50" 'BEGIN { if (k > 0) printf "%.2fx", a / k; else print "-" }')
  [ "$sp$cp" = 00 ] && note=""
  printf "%-34s %8s %8s %9s %8s %9s %9s  %s\n" "$label" "$p50" "$p99" "$p999" "$avg" "$ratio" "$bratio" "$note"
done

#!/bin/bash
# TCP throughput and request rate under libvma.so (SLIPSTREAM_VMA_TCP=1)
# against the kernel, in the same run, across a veth pair between two
# namespaces this script makes and removes (no traffic leaves them):
#   iperf3 -c     A sends one stream to iperf3 -s in B (Linux's TCP)
#   iperf3 -c -R  A receives one stream
#   redis         redis-server in A, redis-benchmark in B (8 clients,
#                 SET and GET; requests/s, their sum)
# each with A on the kernel and then under the preload, ROUNDS times in
# turn (default 3; each iperf3 run IPERF_TIME seconds, default 3), the
# medians and their ratio printed. A's checksum offload is off, so A's
# sends, the kernel's and ours (GSO packets through a packet socket,
# SLIPSTREAM_VMA_TCP_GSO), are cut and summed in software. Twice: with
# veth's offloads as they come (B's kernel takes its frames coalesced by
# GRO; A's rings receive frames of the MTU) and with TSO, GSO and GRO off
# on both ends (both sides move the same frames); then
# iperf3 -c again with LOSS percent (default 1) of A's segments dropped
# at random at B's input (nftables numgen; netem is not in this kernel;
# a drop in B's output would be reported to B's TCP, which sends again
# at once: no loss on the wire), offloads off: goodput under loss, with
# A's kernel on reno
# (what libvma.so's default, VMA_TCP_CC_ALGO=0, NewReno, is) and on its
# namespace's default (BBR on Debian 12's kernel: not loss-based, random
# loss does not shrink its window), then iperf3 -c with CUBIC on both
# sides (VMA_TCP_CC_ALGO=1); then the reno row with A on processor 0
# and B on 1, each veth end's receive steered to its own side's
# processor (RPS), as between two hosts (unpinned, B's receive runs
# inside A's sends: our sending thread carries it, where A's kernel
# sends from the softirq of B's ACK on B's processor); and iperf3 both
# ways at MTU 9000 (offloads on). A run under the preload whose A
# kernel moved 5 TCP segments or more is marked NOT-OFFLOADED.
# PARTS picks rows (default "offloads jumbo loss pinned").
#
#   cd build && sudo bash ../bench/vma_tcp_tput.sh      (root: namespaces, XDP)
set -u
name=vma_tcp_tput.sh
ROUNDS=${ROUNDS:-3} TIME=${IPERF_TIME:-3} LOSS=${LOSS:-1}
PARTS=${PARTS:-offloads jumbo loss pinned}
PIN_A=() PIN_B=()  # taskset prefixes of the pinned row
A=ss-bta-$$ Z=ss-btb-$$ IPA=10.219.0.1 IPB=10.219.0.2
# Root and tools checked, $T, $LIB, clean-up, vma_pair and kernel_tcp
# (exit 77: skipped).
top_builddir=$(pwd) . "$(dirname "$0")/../tests/ext/vma_pair.sh"
for p in iperf3 redis-server redis-benchmark python3 nft; do
  command -v $p >/dev/null || skip "$p not found"
done
vma_pair "$A" "$Z" va vb "$IPA/24" "$IPB/24"
ip netns exec "$A" ethtool -K va tx off >/dev/null || skip "ethtool -K va tx off failed"
# B's address resolved in A's kernel, where the rings read it.
mac=$(ip -n "$Z" -br link show vb | awk '{print $3}')
ip -n "$A" neigh replace $IPB lladdr "$mac" dev va nud permanent
export VMA_STATS_SHMEM_DIR= VMA_CONFIG_FILE=/dev/null

# in_a ON CMD...: CMD in A, on the kernel (0) or offloaded (1); sets
# $moved to A's kernel TCP segments meanwhile.
in_a() {
  local on=$1 before
  shift
  local pre=()
  [ "$on" = 1 ] && pre=(env LD_PRELOAD="$LIB" SLIPSTREAM_VMA_TCP=1 ${OURS_CC:+VMA_TCP_CC_ALGO=$OURS_CC})
  before=$(kernel_tcp)
  ip netns exec "$A" timeout 60 "${PIN_A[@]}" "${pre[@]}" "$@"
  local rc=$?
  moved=$(($(kernel_tcp) - before))
  return $rc
}
# One measurement: "VALUE NOTE" (Gbit/s or requests/s).
iperf() {  # iperf ON DIR
  local on=$1 dir=${2:-} v
  ip netns exec "$Z" "${PIN_B[@]}" iperf3 -s -1 -B $IPB -p 5201 >/dev/null 2>&1 &
  local srv=$!
  for _ in $(seq 50); do ip netns exec "$Z" ss -Hltn 'sport = :5201' | grep -q . && break; sleep 0.1; done
  local cc=()  # a kernel row's congestion control by socket option (root may set any)
  [ "$on" = 0 ] && [ -n "${KERNEL_CC:-}" ] && cc=(-C "$KERNEL_CC")
  in_a "$on" iperf3 -c $IPB -p 5201 -t "$TIME" $dir "${cc[@]}" -J >"$T/iperf.json" 2>/dev/null
  wait $srv 2>/dev/null
  v=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.2f" % (d["end"]["sum_received"]["bits_per_second"]/1e9))' "$T/iperf.json" 2>/dev/null)
  echo "${v:-0} $(note "$on")"
}
redis() {  # redis ON
  local on=$1 v
  (in_a "$on" redis-server --port 6390 --bind $IPA --protected-mode no --save '' --appendonly no >/dev/null 2>&1; echo "$moved" >"$T/moved") &
  for _ in $(seq 50); do ip netns exec "$A" ss -Hltn 'sport = :6390' | grep -q . && break; sleep 0.1; done
  v=$(ip netns exec "$Z" redis-benchmark -h $IPA -p 6390 -c 8 -n 40000 -t set,get -q 2>/dev/null |
    awk '/requests per second/ {for (i = 1; i <= NF; i++) if ($i == "requests") s += $(i - 1)} END {printf "%.0f", s}')
  ip netns exec "$A" pkill -f "redis-server.*6390" 2>/dev/null
  wait 2>/dev/null
  moved=$(cat "$T/moved" 2>/dev/null || echo 0)
  echo "${v:-0} $(note "$on")"
}
note() {
  if [ "$1" = 1 ] && [ "${moved:-0}" -ge 5 ]; then echo NOT-OFFLOADED; else echo ok; fi
}
median() { sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }

# One row: SETTING and "LABEL:FUNCTION:ARGUMENT", the kernel and the
# preload in turn ROUNDS times, the medians and their ratio.
row() {
  local setting=$1 label fn arg k o unit ratio notes=""
  IFS=: read -r label fn arg <<<"$2"
  : >"$T/k" && : >"$T/o"
  for _ in $(seq "$ROUNDS"); do
    read -r v n < <($fn 0 $arg) && echo "$v" >>"$T/k"
    read -r v n < <($fn 1 $arg) && echo "$v" >>"$T/o"
    [ "$n" = ok ] || notes=NOT-OFFLOADED
  done
  k=$(median <"$T/k") o=$(median <"$T/o")
  unit=Gbit/s
  [ "$fn" = redis ] && unit=req/s
  ratio=$(awk -v a="$o" -v b="$k" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
  printf "%-22s %-10s %12s %12s %8s  %s\n" "$setting" "$label" "$k" "$o" "$ratio" "$unit ${notes}"
}
offloads() {
  ip netns exec "$A" ethtool -K va tso $1 gso $1 gro $1 >/dev/null 2>&1
  ip netns exec "$Z" ethtool -K vb tso $1 gso $1 gro $1 >/dev/null 2>&1
}

part() { [[ " $PARTS " == *" $1 "* ]]; }
printf "TCP across veth (A -> B), %s rounds, medians; libvma.so's TCP against the kernel's\n" "$ROUNDS"
printf "%-22s %-10s %12s %12s %8s  %s\n" "veth offloads" "test" "kernel" "libvma.so" "ratio" ""
if part offloads; then
  for offl in on off; do
    offloads $offl
    for t in "iperf3 -c:iperf:" "iperf3 -c -R:iperf:-R" "redis:redis:"; do row "TSO/GSO/GRO $offl" "$t"; done
  done
fi
# Jumbo frames: both ends at MTU 9000, offloads on.
if part jumbo; then
  offloads on
  ip -n "$A" link set va mtu 9000 && ip -n "$Z" link set vb mtu 9000 || skip "MTU 9000 refused"
  for t in "iperf3 -c:iperf:" "iperf3 -c -R:iperf:-R"; do row "MTU 9000, offloads on" "$t"; done
  ip -n "$A" link set va mtu 1500 && ip -n "$Z" link set vb mtu 1500
fi
part loss || part pinned || exit 0
# Loss: B drops LOSS% of A's segments to iperf3 as they arrive.
offloads off
drop=$((LOSS * 10))  # of every 1000 segments
ip netns exec "$Z" nft -f - <<EOF || skip "nft refused the loss rules"
table inet ssloss {
  chain in { type filter hook input priority 0; tcp dport 5201 numgen random mod 1000 < $drop drop; }
}
EOF
own_cc=$(ip netns exec "$A" sysctl -n net.ipv4.tcp_congestion_control)
if part loss; then
  for cc in reno $own_cc; do
    ip netns exec "$A" sysctl -qw net.ipv4.tcp_congestion_control=$cc || continue
    row "$LOSS% loss, kernel $cc" "iperf3 -c:iperf:"
    [ "$own_cc" = reno ] && break
  done
  # CUBIC on both sides: A's kernel by TCP_CONGESTION (a namespace may not
  # make it its default), ours VMA_TCP_CC_ALGO=1. The namespace's default
  # stays reno meanwhile: a socket made under BBR keeps BBR's pacing once
  # switched (seen: 0.42 against 4.7 Gbit/s under 1% loss).
  ip netns exec "$A" sysctl -qw net.ipv4.tcp_congestion_control=reno
  KERNEL_CC=cubic OURS_CC=1
  row "$LOSS% loss, both cubic" "iperf3 -c:iperf:"
  unset KERNEL_CC OURS_CC
fi
if part pinned; then
  if [ "$(nproc)" -lt 2 ] || ! command -v taskset >/dev/null; then
    echo "$name: the pinned row needs 2 processors and taskset: left out"
  elif ! ip netns exec "$A" sh -c 'echo 1 >/sys/class/net/va/queues/rx-0/rps_cpus' 2>/dev/null ||
    ! ip netns exec "$Z" sh -c 'echo 2 >/sys/class/net/vb/queues/rx-0/rps_cpus' 2>/dev/null; then
    echo "$name: RPS refused (rps_cpus): the pinned row left out"
  else
    ip netns exec "$A" sysctl -qw net.ipv4.tcp_congestion_control=reno
    PIN_A=(taskset -c 0) PIN_B=(taskset -c 1)
    row "$LOSS% loss, reno, pinned" "iperf3 -c:iperf:"
    PIN_A=() PIN_B=()
  fi
fi
ip netns exec "$A" sysctl -qw net.ipv4.tcp_congestion_control="$own_cc"

#!/bin/bash
# The Extra API's zero-copy receive and receive callbacks under libvma.so
# (vma_extra(7)): namespaces A (the preloaded receiver) and B (a kernel
# sender) joined by veth (B's tx checksum offload off), made here and
# removed on exit; no traffic leaves them. Needs root (exit 77 otherwise).
# tests/ext/vma_zcopy_prog.c, built against the installed header only,
# receives COUNT datagrams (IPv4: 10000, IPv6: 1000) with recvfrom_zcopy
# (each MSG_VMA_ZCOPY, its payload intact and outside the program's memory,
# freed at once: the IPv4 case's rings are small, VMA_RX_WRE and
# VMA_TX_WRE 300, and COUNT is more than their frames, so they recycle),
# refuses bad frees with
# ENOENT losing nothing, counts a receive callback's DROP/RECV/HOLD
# verdicts, polls the socket's ring descriptors (get_socket_rings_fds:
# quiet, readable on a datagram, quiet once it is read), and shows the
# copy fallback (kernel-path data, a socket left to the kernel). The
# proof that the rings carried the datagrams: A's kernel UDP counter grows
# by the program's two kernel-path datagrams, not by COUNT. The rings'
# depth follows the settings: the kernel's own sizes of the receiver's
# AF_XDP rings (its ring mmaps) are VMA_RX_WRE's and VMA_TX_WRE's powers of
# two, for two pairs of values (the IPv6 case's 5000 and 1000), and the
# log line reports them with the pool's frames. Last, the bench's rate
# receiver (zcopy) started into a running sender (bench/udp_blast.c) still
# receives: what its timing calls take before "ready" is freed, not held
# until the fill ring starves. Namespaces, scratch and clean-up:
# tests/ext/vma_pair.sh.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_zcopy.sh
set -u
name=vma_zcopy.sh
A=ss-za-$$ Z=ss-zb-$$
IP4=10.220.0.1 IP4B=10.220.0.2 IP6=fd00:220::1 IP6B=fd00:220::2
. "$(dirname "$0")/vma_pair.sh"

# The program, against the installed header only.
header_prog vma_zcopy_prog.c -lpthread

vma_pair "$A" "$Z" za zb "$IP4/24 $IP6/64" "$IP4B/24 $IP6B/64"
# A's kernel count of UDP datagrams received, IPv4 and IPv6 together.
kernel_udp_in() { echo $(($(kernel_udp In 4) + $(kernel_udp In 6))); }

port=$((21000 + RANDOM % 8000))
# zcopy_case LABEL ADDR COUNT RX_WRE TX_WRE "RINGS" FRAMES: the program's
# receiver on ADDR in A with VMA_RX_WRE and VMA_TX_WRE, its sender in B;
# every check of the program, A's kernel counter, the receiver's rings as
# the kernel sized them (RINGS, as xsk_rings prints them) and its pool's
# FRAMES as logged.
zcopy_case() {
  local label=$1 addr=$2 count=$3 rx_wre=$4 tx_wre=$5 rings=$6 frames=$7 before after src rrc rpid
  local mapped=""
  port=$((port + 1))
  before=$(kernel_udp_in)
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_CONFIG_FILE=/dev/null VMA_STATS_SHMEM_DIR= \
    VMA_RX_WRE="$rx_wre" VMA_TX_WRE="$tx_wre" \
    VMA_TRACELEVEL=info timeout 90 "$PROG" recv "$addr" $port "$count" >"$T/out" 2>"$T/err" &
  rpid=$!
  pids+=($rpid)
  for _ in $(seq 100); do grep -q '^ready' "$T/out" && break; sleep 0.1; done
  # The program itself (timeout's child), while it waits for the sender.
  mapped=$(xsk_rings "$(pgrep -n -f "^$PROG recv $addr $port ")" 2>/dev/null)
  ip netns exec "$Z" timeout 90 "$PROG" send "$addr" $port "$count" >"$T/send" 2>&1
  src=$?
  wait $rpid
  rrc=$?
  after=$(kernel_udp_in)
  sed -n 's/^/  program: /p' "$T/out" | grep -v "program: ready"
  [ $src = 0 ] || echo "  sender (exit $src): $(cat "$T/send")"
  [ $rrc = 0 ] || echo "  receiver (exit $rrc): $(tail -5 "$T/err")"
  echo "  kernel UDP in A: $before -> $after"
  has "$T/err" "za: UDP offloaded on"
  check "$label: the receiver's netdev has rings" $?
  [ "$mapped" = "$rings" ]
  check "$label: VMA_RX_WRE=$rx_wre VMA_TX_WRE=$tx_wre: the kernel's rings are $rings (mapped: ${mapped:-none})" $?
  logged=$(ring_frames "$T/err")
  has "$T/err" "fill and rx rings $(echo "$rings" | cut -d' ' -f2), tx and completion $(echo "$rings" | cut -d' ' -f4), $frames frames of 2048 B"
  check "$label: the log line reports those rings and $frames frames (${logged:-none})" $?
  [ $src = 0 ] && [ $rrc = 0 ] && has "$T/out" "^PASS: 0 failure"
  check "$label: recvfrom_zcopy, free_packets, register_recv_callback, ring fds: every check of the program (exit $rrc)" $?
  local delta=$((after - before))
  [ $delta -le 2 ]
  check "$label: A's kernel received only the 2 kernel-path datagrams, not the $count + 120 of the rings ($delta)" $?
}

# 300 and 300: rings of 512, 512 + 512 + 256 frames -> 2048 (4 MiB);
# 5000 and 1000: 8192 and 1024, 8192 + 1024 + 4096 -> 16384 (32 MiB).
count4=${VMA_ZCOPY_COUNT:-10000}
zcopy_case IPv4 $IP4 "$count4" 300 300 "rx 512 tx 512 fill 512 completion 512" 2048
frames4=$(ring_frames "$T/err")
[ "$count4" -gt "${frames4:-$count4}" ]
check "IPv4: $count4 datagrams through a pool of ${frames4:-?} frames: its frames recycled" $?
zcopy_case IPv6 $IP6 1000 5000 1000 "rx 8192 tx 1024 fill 8192 completion 1024" 16384

# The bench's rate receiver (zcopy) started while a sender already sends:
# its timing calls before "ready" take datagrams with recvfrom_zcopy, and
# a frame never given back stays out of the fill ring for good. Before
# they freed what they took, a ring's worth of held frames (512 here)
# would starve the rings: nothing could arrive, and the first blocking
# recv would sleep until killed.
# The sender (bench/udp_blast.c, send mode) runs until the receiver has
# reported, so it covers the whole of the timing calls.
"$CC" -std=gnu11 -O2 "$here/../../bench/udp_blast.c" -o "$T/blast" >"$T/cc.log" 2>&1 ||
  { cat "$T/cc.log"; echo "ERROR: $name: bench/udp_blast.c did not build"; exit 99; }
port=$((port + 1))
ip netns exec "$Z" timeout 60 "$T/blast" $IP4 $port 60 send >/dev/null 2>&1 &
bpid=$!
pids+=($bpid)
ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_CONFIG_FILE=/dev/null VMA_STATS_SHMEM_DIR= \
  VMA_RX_WRE=300 VMA_TX_WRE=300 timeout 20 "$PROG" rate $IP4 $port 0.2 zcopy >"$T/rate" 2>"$T/err" &
rpid=$!
pids+=($rpid)
while kill -0 $rpid 2>/dev/null && ! grep -q '^received' "$T/rate"; do sleep 0.1; done
kill $bpid 2>/dev/null
wait $rpid
rrc=$?
sed -n 's/^/  program: /p' "$T/rate" | grep -v "program: ready"
early=$(sed -n 's/.* \([0-9]*\) before ready)$/\1/p' "$T/rate")
[ "${early:-0}" -gt 512 ]
check "rate, sender first: datagrams came during the timing calls (${early:-none}), more than the fill ring's 512" $?
[ $rrc = 0 ] && grep -q '^received [1-9]' "$T/rate"
check "rate, sender first: the zcopy receiver still receives (exit $rrc)" $?

# under_blast OUT MODE ARGS...: a sender in B blasting the next port while
# the program's MODE (preloaded, rings of 512) runs in A on it; its output
# in $T/OUT (printed), its log in $T/err, its exit in $rrc.
under_blast() {
  local out=$1 bpid
  shift
  port=$((port + 1))
  ip netns exec "$Z" timeout 60 "$T/blast" $IP4 $port 60 send >/dev/null 2>&1 &
  bpid=$!
  pids+=($bpid)
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_CONFIG_FILE=/dev/null VMA_STATS_SHMEM_DIR= \
    VMA_RX_WRE=300 VMA_TX_WRE=300 timeout 30 "$PROG" "$1" $IP4 $port "${@:2}" >"$T/$out" 2>"$T/err"
  rrc=$?
  kill $bpid 2>/dev/null
  sed -n 's/^/  program: /p' "$T/$out" | grep -v "program: ready"
}

# A program that holds its lent frames: past the fill ring's 512 the
# pool's spare frames keep the rings receiving (before, the 513th datagram
# never came and no line said why); when they too are held, one warning;
# once freed, datagrams arrive again.
under_blast hold hold 5000
held=$(sed -n 's/^held \([0-9]*\) .*/\1/p' "$T/hold")
pool=$(ring_frames "$T/err")
[ "${held:-0}" -gt 512 ] && [ "${held:-0}" -le $((${pool:-0} - 512 / 8)) ]
check "held frames: the rings kept receiving past the fill ring's 512 until the spares but an eighth of the fill ring ran out (${held:-none} held of a pool of ${pool:-?})" $?
warned=$(grep -c 'no free frame' "$T/err")
has "$T/err" "a receive ring has no free frame"
check "held frames: one warning said the program holds every frame ($warned line(s))" $?
[ "$(grep -c 'no free frame' "$T/err")" = 1 ]
check "held frames: the warning once" $?
[ $rrc = 0 ] && grep -q '^after freeing: [1-9]' "$T/hold"
check "held frames: after free_packets the rings receive again (exit $rrc)" $?

# fork with rings: the child gets no copy of their memory (pinned by the
# kernel, a fork copied it whole: 2 x 4 MiB here, 2 x 64 MiB by default),
# only its own copy of the frame its parent holds.
under_blast forked forked
[ $rrc = 0 ] && grep -q '^PASS: 0 failure' "$T/forked"
ok=$?
took=$(grep -o 'fork took.*' "$T/forked")
check "fork: the child reads its own copy of the parent's lent frame and has none of the rest of the rings' memory, the parent's frame and rings work on (exit $rrc; $took)" $ok

echo "$name: $fails failure(s)"
[ $fails = 0 ]

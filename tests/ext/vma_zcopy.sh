#!/bin/bash
# The Extra API's zero-copy receive and receive callbacks under libvma.so
# (vma_extra(7)): namespaces A (the preloaded receiver) and B (a kernel
# sender) joined by veth (B's tx checksum offload off), made here and
# removed on exit; no traffic leaves them. Needs root (exit 77 otherwise).
# tests/ext/vma_zcopy_prog.c, built against the installed header only,
# receives COUNT datagrams (IPv4: 10000, IPv6: 1000) with recvfrom_zcopy
# (each MSG_VMA_ZCOPY, its payload intact and outside the program's memory, freed at once: COUNT is
# more than the rings' frames, so they recycle), refuses bad frees with
# ENOENT losing nothing, counts a receive callback's DROP/RECV/HOLD
# verdicts, polls the socket's ring descriptors (get_socket_rings_fds:
# quiet, readable on a datagram, quiet once it is read), and shows the
# copy fallback (kernel-path data, a socket left to the kernel). The
# proof that the rings carried the datagrams: A's kernel UDP counter grows
# by the program's two kernel-path datagrams, not by COUNT. Namespaces,
# scratch and clean-up: tests/ext/vma_pair.sh.
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
# zcopy_case LABEL ADDR COUNT: the program's receiver on ADDR in A, its
# sender in B; every check of the program, and A's kernel counter.
zcopy_case() {
  local label=$1 addr=$2 count=$3 before after src rrc rpid
  port=$((port + 1))
  before=$(kernel_udp_in)
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_CONFIG_FILE=/dev/null VMA_STATS_SHMEM_DIR= \
    VMA_TRACELEVEL=info timeout 90 "$PROG" recv "$addr" $port "$count" >"$T/out" 2>"$T/err" &
  rpid=$!
  pids+=($rpid)
  for _ in $(seq 100); do grep -q '^ready' "$T/out" && break; sleep 0.1; done
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
  [ $src = 0 ] && [ $rrc = 0 ] && has "$T/out" "^PASS: 0 failure"
  check "$label: recvfrom_zcopy, free_packets, register_recv_callback, ring fds: every check of the program (exit $rrc)" $?
  local delta=$((after - before))
  [ $delta -le 2 ]
  check "$label: A's kernel received only the 2 kernel-path datagrams, not the $count + 120 of the rings ($delta)" $?
}

zcopy_case IPv4 $IP4 "${VMA_ZCOPY_COUNT:-10000}"
zcopy_case IPv6 $IP6 1000

echo "$name: $fails failure(s)"
[ $fails = 0 ]

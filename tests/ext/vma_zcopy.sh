#!/bin/bash
# The Extra API's zero-copy receive and receive callbacks under libvma.so
# (vma_extra(7)): namespaces A (the preloaded receiver) and B (a kernel
# sender) joined by veth (B's tx checksum offload off), made here and
# removed on exit; no traffic leaves them. Needs root (exit 77 otherwise).
# tests/ext/vma_zcopy_prog.c, built against the installed header only,
# receives COUNT datagrams (IPv4: 10000, IPv6: 1000) with recvfrom_zcopy (each MSG_VMA_ZCOPY, its
# payload intact and outside the program's memory, freed at once: COUNT is
# more than the rings' frames, so they recycle), refuses bad frees with
# ENOENT losing nothing, counts a receive callback's DROP/RECV/HOLD
# verdicts, polls the socket's ring descriptors (get_socket_rings_fds:
# quiet, readable on a datagram, quiet once it is read), and shows the
# copy fallback (kernel-path data, a socket left to the kernel). The proof that the rings carried the datagrams: A's
# kernel UDP counter grows by the program's two kernel-path datagrams, not
# by COUNT.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_zcopy.sh
set -u
name=vma_zcopy.sh
here=$(cd "$(dirname "$0")" && pwd) || exit 99
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
LIB=$B/.libs/libvma.so
[ -e "$LIB" ] || { echo "ERROR: $name: $LIB not built"; exit 99; }
. "$(dirname "$0")/vma_pair.sh"
vma_pair_needs
A=ss-za-$$ Z=ss-zb-$$
IP4=10.216.0.1 IP4B=10.216.0.2 IP6=fd00:216::1 IP6B=fd00:216::2
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-vmazcopy.XXXXXX") || exit 99
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  ip netns del "$A" 2>/dev/null
  ip netns del "$Z" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/check.sh"

# The program, against the installed header only.
if ! ${MAKE:-make} -s -C "$B" install-mellanoxincludeHEADERS DESTDIR="$T/root" >"$T/install.log" 2>&1; then
  cat "$T/install.log"
  echo "ERROR: $name: make install-mellanoxincludeHEADERS failed"
  exit 99
fi
HDR=$(find "$T/root" -path '*/mellanox/vma_extra.h' -type f)
[ -n "$HDR" ] || { echo "ERROR: $name: no header installed"; exit 99; }
INC=${HDR%/mellanox/vma_extra.h}
PROG=$T/prog
"$CC" -std=gnu11 -O2 -Wall -Wextra -Werror -I"$INC" "$here/vma_zcopy_prog.c" -o "$PROG" -lpthread \
  >"$T/cc.log" 2>&1 || { cat "$T/cc.log"; echo "ERROR: $name: the test program did not build"; exit 99; }

vma_pair_make "$A" "$Z" za zb $IP4/24 $IP4B/24 $IP6/64 $IP6B/64
# A's kernel count of UDP datagrams received, IPv4 and IPv6 together.
kernel_udp_in() {
  ip netns exec "$A" awk '($1 == "Udp:" && $2 ~ /^[0-9]+$/) || $1 == "Udp6InDatagrams" { n += $2 }
    END { print n + 0 }' /proc/net/snmp /proc/net/snmp6
}

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

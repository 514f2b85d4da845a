#!/bin/bash
# The Extra API's send flag and ring option under libvma.so (vma_extra(7)):
# namespaces A (tests/ext/vma_extras_prog.c, built against the installed
# header only, preloaded) and B (vma_calls.c's peer, a kernel socket that
# echoes) joined by veth, made here and removed on exit; no traffic leaves
# them. Needs root (exit 77 otherwise).
#  dummy: VMA_SND_FLAGS_DUMMY (IPv4 and IPv6) through send, sendto,
#         sendmsg and sendmmsg puts nothing on the wire: B's kernel
#         receives exactly the 3 real datagrams sent after 17 dummies, A's
#         kernel sends none of the dummies, the program sees each real
#         echo first, and dump_fd_stats shows each socket's dummies ("Tx
#         Dummy messages") apart from its real datagram; the errors (see
#         the program).
#  rings: SO_VMA_RING_ALLOC_LOGIC's errnos and accepted values, the value
#         kept (the debug line), the same ring fds for every logic.
#  lateerr: (IPv4 and IPv6) an error recvmmsg meets after a datagram of the
#         rings is the socket's until reported: POLLERR, then the next recv
#         or SO_ERROR, once (the kernel's order would report the error
#         before the datagram, so this case runs preloaded only).
#  stale: a socket on the rings closed by the syscall instruction (no
#         preload sees it), its number back from pipe, open, socketpair
#         and socket: the new descriptor's, and the port on the rings
#         again (the stale record dropped).
#  sigint: a SIGINT handler with SA_RESTART, a receive pestered by SIGINT:
#         restarted to its datagram; EINTR with VMA_HANDLE_SIGINTR=1.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_extras.sh
set -u
name=vma_extras.sh
A=ss-ea-$$ Z=ss-eb-$$
IP4=10.223.0.1 IP4B=10.223.0.2 IP6=fd00:223::1 IP6B=fd00:223::2
. "$(dirname "$0")/vma_pair.sh"

header_prog vma_extras_prog.c -lpthread
PEER=$T/peer-prog
"$CC" -std=gnu11 -O2 -Wall -Wextra -Werror "$here/vma_calls.c" -o "$PEER" >"$T/cc.log" 2>&1 ||
  { cat "$T/cc.log"; echo "ERROR: $name: the peer did not build"; exit 99; }

vma_pair "$A" "$Z" ea eb "$IP4/24 $IP6/64" "$IP4B/24 $IP6B/64"
PEERPORT=$((21000 + RANDOM % 8000))
ip netns exec "$Z" timeout 300 "$PEER" peer $PEERPORT >"$T/peer" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^ready' "$T/peer" && break; sleep 0.1; done
port=$((PEERPORT + 100))

# udp_count NETNS In|Out 4|6: the namespace's kernel count of UDP datagrams.
udp_count() { A=$1 kernel_udp "$2" "$3"; }

# dummies FD: the "Tx Dummy messages" of fd's block in the program's log
# (0 when the line is not there: libvma prints none for 0).
dummies() {
  awk -v fd="Fd=[$1]" 'index($0, "Fd=[") { on = index($0, fd) > 0 }
    on && /Tx Dummy messages:/ { sub(/.*Tx Dummy messages: */, ""); print $1 + 0; found = 1 }
    END { if (!found) print 0 }' "$T/err"
}
# sent FD "Offload"|"OS info": the packets of fd's "Tx Offload" or "Tx OS
# info" line.
sent() {
  awk -v fd="Fd=[$1]" -v what="Tx $2:" 'index($0, "Fd=[") { on = index($0, fd) > 0 }
    on && index($0, what) { sub(/.*Tx [^:]*: */, ""); print $4 + 0; found = 1 }
    END { if (!found) print 0 }' "$T/err"
}

# run MODE FAMILY LEVEL: the program in A, preloaded; the counters of both
# namespaces before and after in a_out0/1, b_in0/1.
run() {
  local mode=$1 fam=$2 level=$3 addr=$IP4 peer=$IP4B rc
  [ "$fam" = 6 ] && addr=$IP6 peer=$IP6B
  port=$((port + 4))
  a_out0=$(udp_count "$A" Out "$fam") b_in0=$(udp_count "$Z" In "$fam")
  ip netns exec "$A" env ${PRE_ENV:-} LD_PRELOAD="$LIB" VMA_CONFIG_FILE=/dev/null VMA_STATS_SHMEM_DIR= \
    VMA_TRACELEVEL="$level" timeout 60 "$PROG" "$mode" "$addr" $port "$peer" $PEERPORT \
    >"$T/out" 2>"$T/err"
  rc=$?
  a_out1=$(udp_count "$A" Out "$fam") b_in1=$(udp_count "$Z" In "$fam")
  grep -v '^dummy counts' "$T/out" | sed 's/^/  program: /'
  [ $rc = 0 ] || echo "  exit $rc: $(tail -5 "$T/err")"
  echo "  kernel UDP: A out $a_out0 -> $a_out1, B in $b_in0 -> $b_in1"
  [ $rc = 0 ] && has "$T/out" "^PASS: 0 failure"
  check "$mode IPv$fam${PRE_ENV:+ ($PRE_ENV)}: every check of the program" $?
  has "$T/err" "ea: UDP offloaded on"
  check "$mode IPv$fam: the netdev has rings" $?
}

for fam in 4 6; do
  run dummy $fam info
  [ $((b_in1 - b_in0)) = 3 ]
  check "dummy IPv$fam: B's kernel received only the 3 real datagrams of 20 sends ($((b_in1 - b_in0)))" $?
  [ $((a_out1 - a_out0)) -le 3 ]
  check "dummy IPv$fam: A's kernel sent no dummy (out +$((a_out1 - a_out0)) <= the 3 real ones)" $?
  read -r _ _ _ s c u < <(grep '^dummy counts fds' "$T/out")
  got="$(dummies "${s:--}") $(dummies "${c:--}") $(dummies "${u:--}")"
  [ "$got" = "12 4 1" ]
  check "dummy IPv$fam: the records count 12, 4 and 1 dummies ($got)" $?
  # The real ones: on the rings, or through the kernel while the next hop
  # resolved (libvma queues them then); the one to loopback was refused.
  off=0 os=0
  for fd in "${s:--}" "${c:--}" "${u:--}"; do
    off=$((off + $(sent "$fd" Offload))) os=$((os + $(sent "$fd" "OS info")))
  done
  [ $((off + os)) = 3 ]
  check "dummy IPv$fam: the records count the 3 real datagrams sent, apart ($off offloaded, $os by the kernel)" $?
done

for fam in 4 6; do
  run lateerr $fam info
done

run stale 4 info
run sigint 4 info
PRE_ENV=VMA_HANDLE_SIGINTR=1 run sigint 4 info

run rings 4 debug
[ $((b_in1 - b_in0)) = 3 ]
check "rings IPv4: B's kernel received the 3 datagrams ($((b_in1 - b_in0)))" $?
has "$T/err" "ring allocation logic rx 11 \(user id 42\), tx 11 \(user id 42\)"
check "rings IPv4: per user id kept for both sides, with its user id" $?
has "$T/err" "ring allocation logic rx 10 \(user id 0\), tx 20 \(user id 0\)"
check "rings IPv4: per socket (ingress) and per thread (engress) kept apart" $?

echo "$name: $fails failure(s)"
[ $fails = 0 ]

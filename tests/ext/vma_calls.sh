#!/bin/bash
# Socket calls on offloaded UDP sockets under libvma.so, each proven on the
# rings: namespaces A (the program) and B (a kernel peer, tests/ext/
# vma_calls.c's "peer") joined by veth (B's tx checksum offload off), made
# here and removed on exit; no traffic leaves them. Needs root (exit 77
# otherwise). Each case runs tests/ext/vma_calls.c in A twice: plain (the
# kernel's answers, which its checks encode; A's kernel UDP counters move
# by every datagram, so they are the right witness) and under the preload
# (the same checks pass, "UDP offloaded on" logged, and A's kernel UDP
# counters stay flat but for the few datagrams the kernel path must carry).
#  mmsg: recvmmsg and sendmmsg (vlen 0, a null vector, bad timeouts, a
#        blocking batch, MSG_TRUNC entries, MSG_WAITFORONE, the timeout
#        written back and ending the call, a kernel-socket datagram among
#        the rings', sendmmsg's msg_len and its count on a later error,
#        a TTL as ancillary data of sendmsg and sendmmsg honoured).
#  dup:  dup, fcntl F_DUPFD(_CLOEXEC), dup2, dup3 and close_range: every
#        number of a socket receives its datagrams (the first number
#        closed too), close-on-exec as asked, dup2 onto another socket's
#        number closes that socket (its port bound again and served on the
#        rings), the port stays taken until the last number is closed.
#  fork: a child's inherited offloaded socket, the parent keeping its
#        copy (a receive EAGAIN, a send whose replies the child receives:
#        it asked the parent to lend the port to the kernel socket, close,
#        exit) and a new socket of the child (the kernel's); the parent's
#        port back on the rings after the child exited; a child receiving
#        through its kernel socket once the parent closed its copy, and
#        once the parent exited without closing it; 70 children asking
#        at once, the last one's still lent once the other 69 are gone.
#  fork-group: a child's inherited offloaded socket that joined a group,
#        the parent keeping its copy: the group's datagrams the child asks
#        for reach the child (the parent lent the group's flow to the
#        kernel socket, as it lends the port), none the parent; the group
#        back on the rings after the child exited.
#  exits: 10 runs of the program whose main returns while two threads
#        dup, close, ask and receive on an offloaded socket: each exits 0
#        (nothing exit destroys is still in use; sockperf crashed so).
#  chk:  a program built with _FORTIFY_SOURCE receiving with recv,
#        recvfrom and read into buffers of known size (glibc's __recv_chk,
#        __recvfrom_chk, __read_chk): on the rings too.
#  efault: receives naming memory that cannot be used (address 8, a
#        read-only page; the buffer, the address and its length, the
#        message header, the iovec array, the recvmmsg vector and timeout):
#        EFAULT, never a crash, and the next receive gets a whole datagram.
#  vfork: a vfork child closing the socket leaves the parent's on the
#        rings (vfork is fork under the preload, as libvma makes it).
#  eintr: a blocking recv on an offloaded socket and a signal handler:
#        EINTR without SA_RESTART, restarted with it (and then gets the
#        datagram from the rings), EINTR with SA_RESTART and SO_RCVTIMEO;
#        preloaded also with VMA_RX_POLL=-1, where the handler runs while
#        the receive spins (the preload's sigaction counts it).
#  unbound: a UDP socket not bound yet, waited on in recv (then in poll)
#        by one thread while another's first send binds it: the reply
#        wakes the waiter (preloaded: it comes on the rings).
#  handlerio: a SIGALRM handler every 200 us sending and receiving on
#        one offloaded socket while the main thread asks for and receives
#        3000 datagrams on another (preloaded with VMA_RX_POLL=-1: it
#        spins inside the offload); every one arrives, nothing hangs.
#  handlerclose: a SIGALRM handler closes an offloaded socket and binds
#        and closes a new one every 1 ms while the main thread asks for
#        and receives datagrams on the rings (preloaded with
#        VMA_RX_POLL=-1: the ticks land inside the library's locks):
#        nothing hangs, every call succeeds, every datagram arrives.
#  tcphandler: a SIGALRM handler sends a byte on one TCP connection every
#        200 us while the main thread echoes messages on another: each
#        send succeeds or (preloaded, the connection out of the handler's
#        reach) fails with EAGAIN, never SIGPIPE; every byte comes back.
#  tcpsame: the same on the connection the main thread echoes on.
#  duphandler: a SIGALRM handler every 100 us dups and closes one
#        offloaded socket while the main thread dups and closes another
#        (ticks land around the library's bookkeeping of duplicates and
#        inside its table lookups): every call succeeds, nothing hangs.
#  muxintr: poll and epoll_wait with no timeout and a SA_RESTART handler:
#        EINTR (never restarted); preloaded with VMA_SELECT_POLL=-1, the
#        handler runs in the busy phase.
#  skipos: a readable offloaded socket and a readable pipe, 8 polls and 8
#        epoll_waits with timeout 0: the kernel reports the pipe every
#        time; libvma's VMA_SELECT_SKIP_OS (default 4) looks at the plain
#        kernel descriptors on the first pass of one call in 4 (2 of 8),
#        and VMA_SELECT_SKIP_OS=1 in every call.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_calls.sh
set -u
name=vma_calls.sh
A=ss-ca-$$ Z=ss-cb-$$
IP4=10.221.0.1 IP4B=10.221.0.2 IP6=fd00:221::1 IP6B=fd00:221::2
. "$(dirname "$0")/vma_pair.sh"
PROG=$T/calls
"$CC" -std=gnu11 -O2 -Wall -Wextra -Werror "$here/vma_calls.c" -o "$PROG" >"$T/cc.log" 2>&1 ||
  { cat "$T/cc.log"; echo "ERROR: $name: the test program did not build"; exit 99; }
# The same program built with _FORTIFY_SOURCE, for the "chk" case: it
# must call glibc's _chk receive variants, or the case proves nothing.
PROG_F=$T/calls-fortified
"$CC" -std=gnu11 -O2 -D_FORTIFY_SOURCE=2 -Wall -Wextra -Werror "$here/vma_calls.c" -o "$PROG_F" \
  >"$T/cc.log" 2>&1 || { cat "$T/cc.log"; echo "ERROR: $name: the fortified program did not build"; exit 99; }
for f in __recv_chk __recvfrom_chk __read_chk; do
  nm -D "$PROG_F" | grep -q " U $f" || { echo "ERROR: $name: the fortified program does not call $f"; exit 99; }
done
vma_pair "$A" "$Z" ca cb "$IP4/24 $IP6/64" "$IP4B/24 $IP6B/64"
# The peer's datagrams to a group (fork-group) leave by the pair.
ip -n "$Z" route add 224.0.0.0/4 dev cb || { echo "ERROR: $name: no multicast route in $Z"; exit 99; }
mkdir -m 1777 "$T/stats"
export VMA_STATS_SHMEM_DIR=$T/stats VMA_CONFIG_FILE=/dev/null

PEERPORT=$((21000 + RANDOM % 8000))
ip netns exec "$Z" timeout 600 "$PROG" peer $PEERPORT >"$T/peer" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^ready' "$T/peer" && break; sleep 0.1; done
port=$((PEERPORT + 100))

# run_case LABEL FAMILY PRELOADED(0|1) MIN-IN MIN-OUT MAX-IN MAX-OUT MODE
# ARGS...: the program in A; plain, A's kernel UDP counters must grow by
# at least MIN-IN/MIN-OUT (the datagrams the case sends and receives);
# preloaded, by at most MAX-IN/MAX-OUT (those the kernel path must carry;
# "-": no bound, the case is about the kernel path).
run_case() {
  local label=$1 fam=$2 pre=$3 min_in=$4 min_out=$5 max_in=$6 max_out=$7 in0 out0 in1 out1 rc how
  shift 7
  in0=$(kernel_udp In "$fam") out0=$(kernel_udp Out "$fam")
  if [ "$pre" = 1 ]; then
    how="preloaded"
    ip netns exec "$A" env ${PRE_ENV:-} LD_PRELOAD="$LIB" VMA_TRACELEVEL=info timeout 120 "$PROG" "$@" \
      >"$T/out" 2>"$T/err"
  else
    how="plain"
    ip netns exec "$A" timeout 120 "$PROG" "$@" >"$T/out" 2>"$T/err"
  fi
  rc=$?
  in1=$(kernel_udp In "$fam") out1=$(kernel_udp Out "$fam")
  sed 's/^/  program: /' "$T/out"
  [ $rc = 0 ] || echo "  exit $rc: $(tail -5 "$T/err")"
  echo "  kernel UDP in A: in $in0 -> $in1, out $out0 -> $out1"
  [ $rc = 0 ] && has "$T/out" "^done: 0 failure"
  check "$label ($how): every check of the program" $?
  if [ "$pre" = 1 ]; then
    has "$T/err" "ca: UDP offloaded on"
    check "$label (preloaded): the netdev has rings" $?
    if [ "$max_in" != - ]; then
      [ $((in1 - in0)) -le "$max_in" ] && [ $((out1 - out0)) -le "$max_out" ]
      check "$label (preloaded): the rings carried the datagrams (kernel in +$((in1 - in0)) <= $max_in, out +$((out1 - out0)) <= $max_out)" $?
    fi
  else
    [ $((in1 - in0)) -ge "$min_in" ] && [ $((out1 - out0)) -ge "$min_out" ]
    check "$label (plain): the kernel counted them (in +$((in1 - in0)) >= $min_in, out +$((out1 - out0)) >= $min_out)" $?
  fi
}

for pre in 0 1; do
  run_case "mmsg IPv4" 4 $pre 36 15 3 4 mmsg $IP4 $((port += 1)) $IP4B $PEERPORT
  run_case "mmsg IPv6" 6 $pre 36 15 3 4 mmsg $IP6 $((port += 1)) $IP6B $PEERPORT
  run_case "dup IPv4" 4 $pre 25 8 3 3 dup $IP4 $((port += 2)) $IP4B $PEERPORT
  run_case "dup IPv6" 6 $pre 25 8 3 3 dup $IP6 $((port += 2)) $IP6B $PEERPORT
  # The parent's 6 datagrams and three last Ys on the rings; the kernel's:
  # the children's 3 K, 2 N, 1 E, 1 M and 5 W, and a Y for each of at
  # most 3 x 9 looks before the port is back on the rings (about 4 each
  # seen); the children's 4 asks. That the parent's 9 took the rings the
  # program shows itself (the kernel socket read by the system call); this
  # bound only catches a fallback that also sent the Ys through the kernel.
  run_case "fork IPv4" 4 $pre 18 7 39 5 fork $IP4 $((port += 2)) $IP4B $PEERPORT
  run_case "fork IPv6" 6 $pre 18 7 39 5 fork $IP6 $((port += 2)) $IP6B $PEERPORT
  # The child's 3 M and its ask through the kernel, and a Y for each of at
  # most 10 looks before the group is back on the rings; the parent's 2 G
  # and asks on the rings (its last Y shown there by the program itself).
  run_case "fork, a group joined, IPv4" 4 $pre 5 2 13 1 fork-group $IP4 $((port += 1)) $IP4B \
    $PEERPORT
  run_case "fork, parent exits, IPv4" 4 $pre 8 3 - - fork-exit $IP4 $((port += 1)) $IP4B $PEERPORT
  run_case "exit while threads use the socket, IPv4" 4 $pre 10 10 - - exits $IP4 $((port += 1)) \
    $IP4B $PEERPORT
  PROG=$PROG_F run_case "fortified receives, IPv4" 4 $pre 3 1 0 1 chk $IP4 $((port += 1)) $IP4B $PEERPORT
  run_case "vfork, IPv4" 4 $pre 5 2 0 1 vfork $IP4 $((port += 1)) $IP4B $PEERPORT
  # 11 sockets, each E and K from the peer (E dropped by the kernel where
  # its copy failed) and two requests.
  run_case "bad pointers, IPv4" 4 $pre 11 22 2 2 efault $IP4 $((port += 11)) $IP4B $PEERPORT
  run_case "bad pointers, IPv6" 6 $pre 11 22 2 2 efault $IP6 $((port += 11)) $IP6B $PEERPORT
  # Two sockets: the first send of each through the kernel, its reply on the rings.
  run_case "waiting on a socket another thread binds, IPv4" 4 $pre 2 2 0 2 unbound $IP4 \
    $((port += 1)) $IP4B $PEERPORT
  run_case "signals, IPv4" 4 $pre 1 1 0 1 eintr $IP4 $((port += 1)) $IP4B $PEERPORT
  if [ $pre = 0 ]; then
    run_case "VMA_SELECT_SKIP_OS" 4 0 1 1 - - skipos $IP4 $((port += 1)) $IP4B $PEERPORT 8
    run_case "poll/epoll signals" 4 0 0 0 - - muxintr $IP4 $((port += 1)) $IP4B $PEERPORT
  else
    run_case "VMA_SELECT_SKIP_OS default (4)" 4 1 1 1 0 1 skipos $IP4 $((port += 1)) $IP4B $PEERPORT 2
    PRE_ENV=VMA_SELECT_SKIP_OS=1 run_case "VMA_SELECT_SKIP_OS=1" 4 1 1 1 0 1 \
      skipos $IP4 $((port += 1)) $IP4B $PEERPORT 8
    # The handlers run while the receive spins on the rings, never asleep.
    PRE_ENV=VMA_RX_POLL=-1 run_case "signals while spinning (VMA_RX_POLL=-1), IPv4" 4 1 1 1 0 1 \
      eintr $IP4 $((port += 1)) $IP4B $PEERPORT
    PRE_ENV=VMA_SELECT_POLL=-1 run_case "poll/epoll signals while spinning (VMA_SELECT_POLL=-1)" \
      4 1 0 0 0 0 muxintr $IP4 $((port += 1)) $IP4B $PEERPORT
    # The handler's sends leave by the kernel when it interrupted the
    # offload (no bound on out); the main thread's 3000 on the rings.
    PRE_ENV=VMA_RX_POLL=-1 run_case "a handler doing I/O while the receive spins, IPv4" 4 1 \
      3000 3000 2 1000000 handlerio $IP4 $((port += 2)) $IP4B $PEERPORT
  fi
  # The main thread's asks and datagrams (preloaded: on the rings); the
  # handler's new sockets are the kernel's but send nothing.
  PRE_ENV=VMA_RX_POLL=-1 run_case "a handler closing and binding, IPv4" 4 $pre 10 10 2 2 \
    handlerclose $IP4 $((port += 130)) $IP4B $PEERPORT
  # Two TCP connections to the peer's echo (preloaded: on the rings, A's
  # kernel moving a few TCP segments at most).
  tcp0=$(kernel_tcp)
  run_case "a handler sending on a TCP connection, IPv4" 4 $pre 0 0 - - tcphandler $IP4 \
    $((port += 1)) $IP4B $PEERPORT
  if [ $pre = 1 ]; then
    segs=$(($(kernel_tcp) - tcp0))
    [ $segs -lt 20 ]
    check "a handler sending on a TCP connection (preloaded): on the rings (A's kernel moved $segs TCP segments)" $?
  fi
  # The handler on the connection the main thread receives on; preloaded,
  # the receive sleeps at once (VMA_RX_POLL=0), where the handler's sends
  # go on the rings.
  tcp0=$(kernel_tcp)
  PRE_ENV=VMA_RX_POLL=0 run_case "a handler sending on the connection its thread receives on, IPv4" \
    4 $pre 0 0 - - tcpsame $IP4 $((port += 1)) $IP4B $PEERPORT
  if [ $pre = 1 ]; then
    segs=$(($(kernel_tcp) - tcp0))
    [ $segs -lt 20 ]
    check "a handler sending on the connection its thread receives on (preloaded): on the rings (A's kernel moved $segs TCP segments)" $?
  fi
  # One ask and one datagram for each socket.
  run_case "a handler duplicating and closing, IPv4" 4 $pre 2 2 0 2 duphandler $IP4 \
    $((port += 2)) $IP4B $PEERPORT
  [ $pre = 0 ] && run_case "a handler doing I/O, IPv4" 4 0 3000 3000 - - handlerio $IP4 \
    $((port += 2)) $IP4B $PEERPORT
done

echo "$name: $fails failure(s)"
[ $fails = 0 ]

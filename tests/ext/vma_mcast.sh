#!/bin/bash
# libvma.so and UDP multicast (docs/architecture.md, "Multicast in the VMA
# preload"): namespaces A (preloaded) and B (kernel) joined by veth (B's
# tx checksum offload off), made here and removed on exit; the groups are
# only ever sent over that pair. Needs root (exit 77 otherwise). The
# program is tests/ext/vma_mcast.c. Proof that the rings carried a
# datagram, as vma_netns.sh: the socket's vmastat block counts it
# offloaded and A's kernel UDP counter (InDatagrams for receive,
# OutDatagrams for send) did not move by the count.
#  (a) A kernel sender in B to a group, two sockets of one preloaded
#      process in A joined to it on one port: each gets every datagram,
#      intact and in order, offloaded; IPv4 (ip_mreq) and IPv6 (ipv6_mreq).
#  (b) After both leave, the group's datagrams reach a kernel socket in A
#      joined to it (the steering went with the last member) and none
#      reaches the preloaded sockets.
#  (c) A source-specific join (IPv4 ip_mreq_source, IPv6
#      MCAST_JOIN_SOURCE_GROUP, no interface named: the route's) in A: B
#      sends from two addresses, only the joined source's datagrams
#      arrive, offloaded.
#  (d) A preloaded sender in A to a group: a kernel receiver in B gets
#      every datagram with the TTL / hop limit set (IP_RECVTTL), and A's
#      kernel sent none of them; IPv4 and IPv6.
#  (e) IP_MULTICAST_LOOP with a member socket in the sender's process
#      (joined by MCAST_JOIN_GROUP):
#      on (set, or the default), the member gets each datagram exactly
#      once (our stack's loop, no kernel duplicate); off (set, or
#      VMA_TX_MC_LOOPBACK=0's default), none; A's kernel sent none of them.
#  (f) Without privileges (no XDP), and after IP_MSFILTER (whole source
#      lists are not mirrored: the socket is handed back), the kernel
#      carries the group: received, Not offloaded, the kernel counter moving.
#  (g) Debian's sockperf: its server preloaded in A on a group (-i GROUP,
#      then a feed file of two groups waiting in select), ping-pong to the
#      group from B's kernel: completes, the server's sockets offloaded and
#      A's kernel counter moving by fewer than the replies.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_mcast.sh
set -u
name=vma_mcast.sh
A=ss-ma-$$ Z=ss-mb-$$
IP4=10.216.0.1 IP4B=10.216.0.2 IP4C=10.216.0.3 IP6=fd00:216::1 IP6B=fd00:216::2 IP6C=fd00:216::3
G4=239.216.0.7 G6=ff0e::216:7
. "$(dirname "$0")/vma_pair.sh"
vma_pair "$A" "$Z" mca mcb "$IP4/24 $IP6/64" "$IP4B/24 $IP4C/24 $IP6B/64 $IP6C/64"
# IPv4 joins that name no interface follow the route to the group.
ip -n "$A" route add 224.0.0.0/4 dev mca || skip "no multicast route"

chmod 755 "$T"
"$CC" -O2 -Wall -o "$T/mc" "$here/vma_mcast.c" || { echo "ERROR: $name: build failed"; exit 99; }
mkdir -m 1777 "$T/stats"
export VMA_STATS_SHMEM_DIR=$T/stats VMA_CONFIG_FILE=/dev/null

# wait_line FILE REGEX: until the program printed it (10 s at most).
wait_line() { for _ in $(seq 100); do grep -Eq "$2" "$1" && return 0; sleep 0.1; done; return 1; }
# send_from_b FAM GROUP PORT [TTL [LOOP [SOURCE]]]: B's kernel sends COUNT.
send_from_b() {
  local fam=$1 group=$2 p=$3
  shift 3
  ip netns exec "$Z" timeout 30 "$T/mc" send "$fam" "$group" "$p" $COUNT mcb "$@" >"$T/bsend" 2>&1 ||
    { echo "  B's sender: $(cat "$T/bsend")"; return 1; }
}
# kernel_member NETNS IF FAM GROUP TTL: a kernel receiver of COUNT on
# $port ($kjob, $T/kout) started there and ready.
kernel_member() {
  : >"$T/kout"
  ip netns exec "$1" timeout 30 "$T/mc" krecv "$3" "$4" $port $COUNT "$2" "$5" >"$T/kout" 2>&1 &
  kjob=$!
  pids+=($kjob)
  wait_line "$T/kout" '^ready'
}
# offloaded_rx BLOCKFILE N: N sockets counted COUNT received offloaded.
offloaded_rx() {
  local n
  n=$(grep -Ec "^Rx Offload: [0-9]+ KB / $COUNT /" "$1")
  [ "$n" -ge "$2" ] || { echo "  $n socket(s) with $COUNT offloaded, want $2:"; sed 's/^/    /' "$1"; return 1; }
}

COUNT=200
port=$((24000 + RANDOM % 8000))

# preloaded_receiver FAM GROUP NSOCK [SOURCE] (env before: extra settings):
# started in A with stdin on fd 3, waits until it is ready; $rpid the
# program's pid ($T/rout, $T/rerr).
preloaded_receiver() {
  local fam=$1 group=$2 n=$3
  shift 3
  rm -f "$T/hold" && mkfifo "$T/hold"
  : >"$T/rout"
  ip netns exec "$A" ${RX_PREFIX:-} env MC_LEAVE=1 VMA_TRACELEVEL=debug LD_PRELOAD="$LIB" \
    timeout 60 "$T/mc" recv "$fam" "$group" $port $COUNT "$n" mca "$@" <"$T/hold" >"$T/rout" 2>"$T/rerr" &
  rjob=$!
  pids+=($rjob)
  exec 3>"$T/hold"
  wait_line "$T/rout" '^ready' || echo "  receiver not ready: $(tail -3 "$T/rerr")"
  rpid=$(awk '/^ready/ {print $2}' "$T/rout")
}
# finish_receiver: lets it check that nothing more came, and its status.
finish_receiver() {
  exec 3>&-
  wait $rjob || { echo "  receiver failed: $(grep -v DEBUG "$T/rerr" | tail -5)"; return 1; }
  has "$T/rout" '^ok$'
}

# (a) + (b): two members in one process, then leave; a kernel member then.
for fam in 4 6; do
  port=$((port + 1))
  group=$G4
  [ $fam = 6 ] && group=$G6
  bad=0
  preloaded_receiver $fam $group 2
  before=$(kernel_udp In $fam)
  send_from_b $fam $group $port 3 || bad=1
  wait_line "$T/rout" '^left' || { echo "  receiver: $(grep -v DEBUG "$T/rerr" | tail -5)"; bad=1; }
  after=$(kernel_udp In $fam)
  block "${rpid:-0}" >"$T/block"
  echo "  kernel UDP in A: $before -> $after"
  has "$T/rerr" "DEBUG: fd [0-9]+ \(udp port $port\): offloaded on 1 netdev" || bad=1
  offloaded_rx "$T/block" 2 || bad=1
  [ $((after - before)) -lt $COUNT ] || { echo "  the kernel received them"; bad=1; }
  check "IPv$fam group from B's kernel: two sockets of one process each got all $COUNT, offloaded" $bad

  # (b) the preloaded sockets left; a kernel socket in A joins and must
  # get the group's next datagrams (no steering left), the others none.
  bad=0
  kernel_member "$A" mca $fam $group 3 || bad=1
  before=$(kernel_udp In $fam)
  send_from_b $fam $group $port 3 || bad=1
  wait $kjob || { echo "  kernel member in A: $(cat "$T/kout")"; bad=1; }
  after=$(kernel_udp In $fam)
  finish_receiver || bad=1
  [ $((after - before)) -ge $COUNT ] || { echo "  the kernel counter did not move: $before -> $after"; bad=1; }
  check "IPv$fam after leaving: the kernel's member in A gets the group, the left sockets nothing" $bad
done

# (c) source-specific joins: B sends from C's address, then from B's.
for fam in 4 6; do
  port=$((port + 1))
  group=$G4 src=$IP4B other=$IP4C
  [ $fam = 6 ] && group=$G6 src=$IP6B other=$IP6C
  bad=0
  RX_PREFIX="env MC_ANY_IF=1" preloaded_receiver $fam $group 1 $src
  before=$(kernel_udp In $fam)
  send_from_b $fam $group $port 3 1 $other || bad=1
  send_from_b $fam $group $port 3 1 $src || bad=1
  wait_line "$T/rout" '^left' || { echo "  receiver: $(grep -v DEBUG "$T/rerr" | tail -5)"; bad=1; }
  after=$(kernel_udp In $fam)
  block "${rpid:-0}" >"$T/block"
  finish_receiver || bad=1
  offloaded_rx "$T/block" 1 || bad=1
  [ $((after - before)) -lt $COUNT ] || { echo "  the kernel received them"; bad=1; }
  check "IPv$fam source-specific join: only $src's $COUNT datagrams, offloaded" $bad
done

# (d) the preloaded sender in A, a kernel receiver in B checking the TTL.
for fam in 4 6; do
  port=$((port + 1))
  group=$G4
  [ $fam = 6 ] && group=$G6
  bad=0
  kernel_member "$Z" mcb $fam $group 7 || bad=1
  before=$(kernel_udp Out $fam)
  rm -f "$T/hold" && mkfifo "$T/hold"
  : >"$T/sout"
  ip netns exec "$A" env MC_HOLD=1 VMA_TRACELEVEL=debug LD_PRELOAD="$LIB" timeout 60 \
    "$T/mc" send $fam $group $port $COUNT mca 7 <"$T/hold" >"$T/sout" 2>"$T/serr" &
  sjob=$!
  pids+=($sjob)
  exec 3>"$T/hold"
  wait_line "$T/sout" '^sent' || bad=1
  after=$(kernel_udp Out $fam)
  block "$(awk '/^sent/ {print $2}' "$T/sout")" >"$T/block"
  exec 3>&-
  wait $sjob || { echo "  sender: $(grep -v DEBUG "$T/serr" | tail -5)"; bad=1; }
  wait $kjob || { echo "  B's receiver: $(cat "$T/kout")"; bad=1; }
  echo "  kernel UDP out in A: $before -> $after"
  has "$T/block" "^Tx Offload: [0-9]+ KB / $COUNT /" || bad=1
  [ $((after - before)) -lt $COUNT ] || { echo "  the kernel sent them"; bad=1; }
  check "IPv$fam preloaded sender to a group: B's kernel got all $COUNT with TTL 7, offloaded" $bad
done

# (e) IP_MULTICAST_LOOP with a member in the sender's process: set on, set
# off, the default (on), and VMA_TX_MC_LOOPBACK=0's default (off).
for how in "1 1" "0 0" "-1 1" "-1 0 VMA_TX_MC_LOOPBACK=0"; do
  read -r loop looped setting <<<"$how"
  port=$((port + 1))
  bad=0
  before=$(kernel_udp Out 4)
  ip netns exec "$A" env MC_MEMBER=1 MC_GROUP_REQ=1 MC_LOOPED=$looped ${setting:-} \
    VMA_TRACELEVEL=debug LD_PRELOAD="$LIB" timeout 60 \
    "$T/mc" send 4 $G4 $port $COUNT mca 1 $loop >"$T/sout" 2>"$T/serr" ||
    { echo "  sender: $(grep -v DEBUG "$T/serr" | tail -5)"; bad=1; }
  has "$T/sout" "^sent [0-9]+ ok" || bad=1
  after=$(kernel_udp Out 4)
  [ $((after - before)) -lt $COUNT ] || { echo "  the kernel sent them: $before -> $after"; bad=1; }
  [ "$(grep -c "offloaded on 1 netdev" "$T/serr")" = 2 ] ||
    { echo "  not both sockets offloaded:"; grep "offloaded\|kernel (" "$T/serr" | head; bad=1; }
  what="each datagram once"
  [ "$looped" = 0 ] && what="none"
  label="IP_MULTICAST_LOOP $loop"
  [ "$loop" = -1 ] && label="IP_MULTICAST_LOOP left at its default${setting:+ with $setting}"
  check "$label: the sender's own member socket gets $what" $bad
done

# (f) no XDP (an unprivileged receiver), and IP_MSFILTER: the kernel
# carries the group.
kernel_case() {
  local label=$1
  shift
  port=$((port + 1))
  bad=0
  RX_PREFIX="$*" preloaded_receiver 4 $G4 1
  before=$(kernel_udp In 4)
  send_from_b 4 $G4 $port 3 || bad=1
  wait_line "$T/rout" '^left' || bad=1
  after=$(kernel_udp In 4)
  block "${rpid:-0}" >"$T/block"
  finish_receiver || bad=1
  has "$T/block" "^- UDP, Not offloaded" || bad=1
  [ $((after - before)) -ge $COUNT ] || { echo "  the kernel counter did not move"; bad=1; }
  check "$label: the kernel carries the group, all $COUNT received" $bad
}
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  kernel_case "without privileges" setpriv --reuid=nobody --regid=nogroup --clear-groups
else
  echo "SKIP: setpriv or user nobody missing: the unprivileged fallback not run"
fi
kernel_case "IP_MSFILTER" env MC_MSFILTER=1
has "$T/rerr" "fd [0-9]+ handed back to the kernel \(source filter lists not offloaded\)"
check "IP_MSFILTER: one line says the socket was handed back" $?

# (g) sockperf's server on groups, preloaded in A; B's kernel pings.
if command -v sockperf >/dev/null; then
  ip -n "$Z" route add 224.0.0.0/4 dev mcb
  for how in "-i" "-f"; do
    port=$((port + 1))
    args=(-i $G4 -p $port)
    if [ "$how" = -f ]; then
      printf 'U:%s:%s\nU:239.216.0.8:%s\n' $G4 $port $port >"$T/feed"
      args=(-f "$T/feed" -F select)
    fi
    ip netns exec "$A" env VMA_TRACELEVEL=debug LD_PRELOAD="$LIB" \
      sockperf server "${args[@]}" >"$T/sp.server" 2>&1 &
    spid=$!
    pids+=($spid)
    wait_line "$T/sp.server" "offloaded on 1 netdev|no rings" || true
    before=$(kernel_udp In 4)
    ip netns exec "$Z" timeout 60 sockperf ping-pong -i $G4 -p $port --time 2 >"$T/sp.client" 2>&1
    rc=$?
    after=$(kernel_udp In 4)
    block $spid >"$T/block"
    kill $spid 2>/dev/null
    wait $spid 2>/dev/null
    got=$(sed -n 's/.*ReceivedMessages=\([0-9]*\).*/\1/p' "$T/sp.client" | head -1)
    echo "  kernel UDP in A: $before -> $after; sockperf received ${got:-?} replies"
    bad=0
    { [ $rc = 0 ] && has "$T/sp.client" "Summary: Latency is"; } || { echo "  client exit $rc"; bad=1; }
    has "$T/block" "^- UDP, Offloaded" || bad=1
    has "$T/block" "^Rx Offload: [0-9]+ KB / [1-9][0-9]* /" || bad=1
    [ "$how" = -i ] || has "$T/sp.server" "using select" || bad=1
    [ "${got:-0}" -gt 0 ] && [ $((after - before)) -lt "${got:-0}" ] ||
      { echo "  the kernel received them"; bad=1; }
    check "sockperf server preloaded in A on a group ($how), ping-pong from B: offloaded" $bad
  done
else
  echo "SKIP: sockperf not installed: part (g) not run"
fi

echo "$name: $fails failure(s)"
[ $fails = 0 ]

#!/bin/bash
# The Extra API on TCP connections of the rings under libvma.so
# (vma_extra(7), docs/status.md issue 30): namespaces A
# (tests/ext/vma_tcp_extra_prog.c, built against the installed header
# only, preloaded) and B (the same program's sender on Linux's TCP) joined
# by veth, made here and removed on exit. Needs root (exit 77 otherwise).
# The proof that a connection is ours: every receive with data set
# MSG_VMA_ZCOPY (the kernel's would be copied), and A's kernel TCP
# counters do not move.
#  zcopy: 8 MB read with recvfrom_zcopy, several packets a call, each
#         checked and freed at once; misuse gets its errno.
#  hold:  4 MB, every packet held until the sender stalls on the window
#         they shut; a fork child then reads them all in its own copies;
#         then freed: the stream ends whole.
#  callback: 4 MB through a receive callback answering DROP, RECV and HOLD
#         in turn: it sees every byte once in order, recv gets what it kept.
#  xtreme: a socketXtreme server that never calls accept (VMA_SOCKETXTREME=1)
#         echoes 8 Linux connections' 10 000 messages of 64 bytes each.
#  xlocal: the same server, 80 of its 84 clients on the same host (the
#         kernel's listener takes those: socketxtreme_poll serves them too);
#         and xhold's server with a same-host sender.
#  xhold: a socketXtreme server holding its packet completions until the
#         sender stalls, then freeing them: 4 MB whole; again with the
#         sender's window probes dropped (nftables in B).
#  xpush: a socketXtreme server sending 16 MB to a reader that waits
#         first (in B, then on the same host): each EAGAIN ends at an
#         EPOLLOUT completion; again on a duplicate, the first number closed.
#  xedge: a spinning server watching its ring edge-triggered sees a
#         same-host peer at the poll after its edge.
#  example: docs/examples/xtreme_echo.c, built here, echoes 4 x 1000.
#  xconnect: a socketXtreme client's connection to Linux's echo server.
#  xdead: a socketXtreme client asleep on the ring learns that its timer
#         gave the connection up (the link cut).
# Its minutes: about 20 s.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_tcp_extra.sh
set -u
name=vma_tcp_extra.sh
A=ss-xa-$$ Z=ss-xb-$$
IP4=10.224.0.1 IP4B=10.224.0.2
. "$(dirname "$0")/vma_pair.sh"

header_prog vma_tcp_extra_prog.c -lpthread
vma_pair "$A" "$Z" xa xb "$IP4/24" "$IP4B/24"
export VMA_STATS_SHMEM_DIR= VMA_CONFIG_FILE=/dev/null

# run_case MODE PORT BYTES: the program's MODE (or $A_PROG) in A under the preload, the
# sender in B (with $PEER set: that mode of the program, its arguments in
# $PEER_ARGS, and "echoed" for "sent"); its output in $T/out, the
# sender's in $T/snd, A's kernel segments meanwhile in $segs.
run_case() {
  local before rc a_prog=("$PROG" "$1")
  [ -n "${A_PROG:-}" ] && a_prog=("$A_PROG")
  before=$(kernel_tcp)
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_TRACELEVEL=debug ${XENV:-} \
    timeout 60 "${a_prog[@]}" "$IP4" "$2" ${A_ARGS:-} >"$T/out" 2>"$T/err" &
  local a=$!
  for _ in $(seq 100); do grep -q '^ready' "$T/out" && break; sleep 0.1; done
  ip netns exec "$Z" timeout 60 "$PROG" "${PEER:-send}" "$IP4" "$2" ${PEER_ARGS:-$3} >"$T/snd" 2>&1
  wait $a
  rc=$?
  segs=$(($(kernel_tcp) - before))
  grep '^FAIL' "$T/out" "$T/snd" | sed 's/^/  /'
  [ $rc = 0 ] || echo "  the program: exit $rc, $(grep -v INFO "$T/err" | tail -2); its peer: $(tail -2 "$T/snd")"
  [ "$segs" -lt 5 ] || echo "  A's kernel moved $segs TCP segments"
  [ $rc = 0 ] && [ "$segs" -lt 5 ] && has "$T/snd" "^(sent $3|echoed .*|drained $3)$"
}

# one MODE PORT BYTES LABEL PATTERN...: run_case, then each PATTERN in the
# program's output; the label ends with the lines it printed of its run.
one() {
  local mode=$1 port=$2 bytes=$3 label=$4 bad=0 p
  shift 4
  run_case "$mode" "$port" "$bytes" || bad=1
  for p in "$@"; do has "$T/out" "$p" || bad=1; done
  check "$label: $(grep -E "^($mode|stalled|forked) " "$T/out" | tr '\n' ' ')" $bad
}

one zcopy 7300 8000000 "recvfrom_zcopy on a connection of the rings, 8 MB in place, freed at once; misuse refused" \
  "^zcopy 8000000 calls [0-9]+ packets [0-9]+ most ([2-9]|[1-9][0-9]+)$"
one hold 7301 4000000 "recvfrom_zcopy holding its packets: the sender stalls on the window they shut (bytes held), a fork child reads them in its copies (bytes, ms), then 4 MB whole once freed" \
  "^stalled [1-9][0-9]+$" "^forked [1-9][0-9]+ [0-9.]+$" "^hold 4000000$"
one callback 7302 4000000 "register_recv_callback on a connection of the rings, DROP, RECV and HOLD in turn, unregistered from inside past 2 MB (bytes)" \
  "^callback [0-9]+ drop [1-9][0-9]* recv [1-9][0-9]* hold [1-9][0-9]* end 4000000$"
XENV=VMA_SOCKETXTREME=1 A_ARGS=8 PEER=echo PEER_ARGS="8 10000" \
  one xtreme 7303 0 "socketXtreme server without accept: 8 Linux connections' 10 000 echoed 64-byte messages each" \
  "^xtreme accepted 8 bytes 5120000 closed 8$"
# The same server with 4 clients in B (the rings) and 80 of the same host
# (in A, on its kernel: they reach the kernel's listener; two processes
# of 40), all at once: socketxtreme_poll accepts and serves both kinds
# (the preload's log names each one the kernel's listener gave). It
# sleeps on the ring without a timeout: a lost wake-up hangs it.
xlocal_case() {
  local bad=0 rc
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_TRACELEVEL=debug VMA_SOCKETXTREME=1 \
    timeout 60 "$PROG" xtreme "$IP4" 7307 84 forever >"$T/out" 2>"$T/err" &
  local a=$!
  for _ in $(seq 100); do grep -q '^ready' "$T/out" && break; sleep 0.1; done
  ip netns exec "$Z" timeout 60 "$PROG" echo "$IP4" 7307 4 10000 >"$T/snd" 2>&1 &
  local z=$!
  ip netns exec "$A" timeout 60 "$PROG" echo "$IP4" 7307 40 1000 >"$T/snd.l1" 2>&1 &
  local l1=$!
  ip netns exec "$A" timeout 60 "$PROG" echo "$IP4" 7307 40 1000 >"$T/snd.l2" 2>&1 || bad=1
  wait $z || bad=1
  wait $l1 || bad=1
  wait $a
  rc=$?
  grep '^FAIL' "$T/out" "$T/snd" "$T/snd.l1" "$T/snd.l2" | sed 's/^/  /'
  [ $rc = 0 ] || { bad=1; echo "  the program: exit $rc, $(grep -v INFO "$T/err" | tail -2)"; }
  has "$T/snd" "^echoed 4 x 10000$" || bad=1
  has "$T/snd.l1" "^echoed 40 x 1000$" || bad=1
  has "$T/snd.l2" "^echoed 40 x 1000$" || bad=1
  has "$T/out" "^xtreme accepted 84 bytes 7680000 closed 84$" || bad=1
  local kernel
  kernel=$(grep -c "accepted from the kernel's listener" "$T/err")
  [ "$kernel" = 80 ] || { echo "  $kernel connections from the kernel's listener, not 80"; bad=1; }
  check "socketXtreme server without accept: 4 clients from B on the rings (10 000 echoes each) and 80 of the same host through the kernel's listener (1000 each)" $bad
}
xlocal_case
# same_host MODE PEER PORT BYTES LABEL PATTERN...: MODE's server in A
# under the preload (its further arguments in $A_ARGS), PEER's end of
# BYTES in A too (the same host: the kernel's listener takes it), each
# PATTERN in the server's output; the label ends with the lines it printed.
same_host() {
  local mode=$1 peer=$2 port=$3 bytes=$4 label=$5 bad=0 rc p
  shift 5
  # shellcheck disable=SC2086 # A_ARGS: words
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_TRACELEVEL=debug VMA_SOCKETXTREME=1 \
    timeout 60 "$PROG" "$mode" "$IP4" "$port" ${A_ARGS:-} >"$T/out" 2>"$T/err" &
  local a=$!
  for _ in $(seq 100); do grep -q '^ready' "$T/out" && break; sleep 0.1; done
  ip netns exec "$A" timeout 60 "$PROG" "$peer" "$IP4" "$port" "$bytes" >"$T/snd" 2>&1 || bad=1
  wait $a
  rc=$?
  grep '^FAIL' "$T/out" "$T/snd" | sed 's/^/  /'
  [ $rc = 0 ] || { bad=1; echo "  the program: exit $rc, $(grep -v INFO "$T/err" | tail -2)"; }
  has "$T/snd" "^(sent|drained) $bytes$" || bad=1
  for p in "$@"; do has "$T/out" "$p" || bad=1; done
  has "$T/err" "accepted from the kernel's listener" || bad=1
  check "$label: $(grep -E "^(stalled|$mode) " "$T/out" | tr '\n' ' ')" $bad
}
# A same-host sender to a socketXtreme server holding its completions:
# reads from the kernel socket stop while the program holds a receive
# buffer's worth (no byte for a second: "stalled"), so the kernel's
# buffers fill and its window shuts on the sender as the rings' would.
same_host xhold send 7308 4000000 "socketXtreme holding a same-host sender's completions (through the kernel's listener): reads stop at a receive buffer's worth held (bytes held), then 4 MB whole once freed" \
  "^stalled [1-9][0-9]+$" "^xhold 4000000$"
XENV=VMA_SOCKETXTREME=1 \
  one xhold 7306 4000000 "socketXtreme holding its packet completions: the sender stalls on the window they shut (bytes held), then 4 MB whole once freed" \
  "^stalled [1-9][0-9]+$" "^xhold 4000000$"
# Again with B's short segments (its window probes, whatever they carry)
# dropped: only the program's free, which wakes it to give the bytes
# back, reopens the window. (B's full segments, its last and its FIN pass.)
ip netns exec "$Z" nft -f - <<'NFT'
table ip ss_noprobe {
  chain out {
    type filter hook output priority 0;
    tcp dport 7315 tcp flags & (fin | syn | rst) == 0 ip length < 100 drop
  }
}
NFT
XENV=VMA_SOCKETXTREME=1 \
  one xhold 7315 4000000 "socketXtreme holding its packet completions, the sender's window probes dropped: the free wakes the ring and reopens the window" \
  "^stalled [1-9][0-9]+$" "^xhold 4000000$"
ip netns exec "$Z" nft delete table ip ss_noprobe
# Sending until the buffers are full, asleep on the ring for EPOLLOUT:
# a reader in B (the rings), then one on the same host (the kernel's
# listener).
XENV=VMA_SOCKETXTREME=1 A_ARGS=16000000 PEER=drain \
  one xpush 7309 16000000 "socketXtreme sending to a reader that waits a second: its EAGAINs each end at the connection's EPOLLOUT completion (count), asleep on the ring between" \
  "^xpush 16000000 waits [1-9][0-9]* idle [01]$"
A_ARGS=16000000 \
  same_host xpush drain 7310 16000000 "socketXtreme sending to a same-host reader (through the kernel's listener): EAGAINs each end at an EPOLLOUT completion, asleep on the ring between" \
  "^xpush 16000000 waits [1-9][0-9]* idle [01]$"
# The same with the connection's first number closed, a duplicate left.
XENV=VMA_SOCKETXTREME=1 A_ARGS="16000000 dup" PEER=drain \
  one xpush 7311 16000000 "socketXtreme's EPOLLOUT completions on a duplicate of a connection of the rings, its first number closed" \
  "^xpush 16000000 waits [1-9][0-9]* idle [01]$"
A_ARGS="16000000 dup" \
  same_host xpush drain 7312 16000000 "socketXtreme's EPOLLOUT completions on a duplicate of a same-host connection, its first number closed" \
  "^xpush 16000000 waits [1-9][0-9]* idle [01]$"
# A program watching the ring edge-triggered, spinning: the edge of a
# same-host peer it took must bring the peer at its next poll. 20 peers
# one after the other, each arriving while the server spins alone.
xedge_case() {
  local bad=0 rc
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_TRACELEVEL=debug VMA_SOCKETXTREME=1 \
    timeout 60 "$PROG" xedge "$IP4" 7313 20 >"$T/out" 2>"$T/err" &
  local a=$!
  for _ in $(seq 100); do grep -q '^ready' "$T/out" && break; sleep 0.1; done
  : >"$T/snd"
  for _ in $(seq 20); do
    ip netns exec "$A" timeout 20 "$PROG" send "$IP4" 7313 1000 >>"$T/snd" 2>&1 || { bad=1; break; }
  done
  wait $a
  rc=$?
  grep '^FAIL' "$T/out" "$T/snd" | sed 's/^/  /'
  [ $rc = 0 ] || { bad=1; echo "  the program: exit $rc, $(grep -v INFO "$T/err" | tail -2)"; }
  [ "$(grep -c '^sent 1000$' "$T/snd")" = 20 ] || bad=1
  has "$T/out" "^xedge ended 20 bytes 20000 edges [0-9]+$" || bad=1
  check "socketXtreme watched edge-triggered by a spinning program: each of 20 same-host peers comes at the poll after its edge (edges taken): $(grep -E "^xedge " "$T/out")" $bad
}
xedge_case
EX=$T/xtreme_echo
if "$CC" -std=gnu11 -O2 -Wall -Wextra -Werror -I"$HDR_INC" "$here/../../docs/examples/xtreme_echo.c" \
  -o "$EX" >"$T/cc.log" 2>&1; then
  XENV=VMA_SOCKETXTREME=1 A_PROG=$EX A_ARGS=4 PEER=echo PEER_ARGS="4 1000" \
    one served 7304 0 "docs/examples/xtreme_echo.c: 4 Linux connections' 1000 echoed messages each" \
    "^served 4 connections$"
else
  cat "$T/cc.log"
  check "docs/examples/xtreme_echo.c builds against the installed header" 1
fi

# The client side: A connects to Linux's echo server in B.
xconnect_case() {
  local before rc bad=0
  ip netns exec "$Z" timeout 60 "$PROG" serve "$IP4B" 7305 >"$T/srv" 2>&1 &
  local z=$!
  for _ in $(seq 100); do grep -q '^ready' "$T/srv" && break; sleep 0.1; done
  before=$(kernel_tcp)
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_TRACELEVEL=debug VMA_SOCKETXTREME=1 \
    timeout 60 "$PROG" xconnect "$IP4B" 7305 1000 >"$T/out" 2>"$T/err"
  rc=$?
  wait $z || bad=1
  segs=$(($(kernel_tcp) - before))
  grep '^FAIL' "$T/out" | sed 's/^/  /'
  [ $rc = 0 ] || { bad=1; echo "  the program: exit $rc, $(grep -v INFO "$T/err" | tail -2)"; }
  [ "$segs" -lt 5 ] || { bad=1; echo "  A's kernel moved $segs TCP segments"; }
  has "$T/out" "^xconnect 1000$" || bad=1
  has "$T/srv" "^served 64000$" || bad=1
  check "socketXtreme client: a non-blocking connect's EPOLLOUT, 1000 echoes as packet completions, its EPOLLRDHUP" $bad
}
xconnect_case

# A connection the stack gives up (TCP_USER_TIMEOUT) while the program
# sleeps on the ring without a timeout: the link to B is cut after the
# connect, and the timer's EPOLLERR/EPOLLHUP must wake it.
xdead_case() {
  local rc bad=0 a
  ip netns exec "$Z" timeout 60 "$PROG" serve "$IP4B" 7314 >"$T/srv" 2>&1 &
  local z=$!
  for _ in $(seq 100); do grep -q '^ready' "$T/srv" && break; sleep 0.1; done
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_TRACELEVEL=debug VMA_SOCKETXTREME=1 \
    timeout 30 "$PROG" xdead "$IP4B" 7314 >"$T/out" 2>"$T/err" &
  a=$!
  for _ in $(seq 100); do grep -q '^up' "$T/out" && break; sleep 0.1; done
  ip -n "$Z" link set xb down
  wait $a
  rc=$?
  ip -n "$Z" link set xb up
  kill $z 2>/dev/null
  wait $z 2>/dev/null
  grep '^FAIL' "$T/out" | sed 's/^/  /'
  [ $rc = 0 ] || { bad=1; echo "  the program: exit $rc, $(grep -v INFO "$T/err" | tail -2)"; }
  has "$T/out" "^xdead( EPOLLERR)?( EPOLLHUP)?$" || bad=1
  grep -qE "^xdead .+" "$T/out" || bad=1
  check "socketXtreme: a connection given up by its timer (TCP_USER_TIMEOUT, the link cut) wakes the program asleep on the ring: $(grep -E "^xdead" "$T/out")" $bad
}
xdead_case

echo "$name: $fails failure(s)"
[ $fails = 0 ]

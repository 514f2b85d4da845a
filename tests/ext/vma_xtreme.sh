#!/bin/bash
# socketXtreme under libvma.so (vma_extra(7)): namespaces A (the preloaded
# receiver, VMA_SOCKETXTREME=1) and B (a kernel sender) joined by veth,
# made here and removed on exit; no traffic leaves them. Needs root (exit
# 77 otherwise). tests/ext/vma_xtreme_prog.c, built against the installed
# header only, loops socketxtreme_poll over its first socket's ring fds
# until COUNT datagrams came to its two sockets (more than the rings'
# frames, VMA_RX_WRE's 1024 in this mode: they recycle), each completion,
# user_data, source and payload
# checked, freed at once (again with a receive callback on the second
# socket: only what it lets through comes as completions); ref/free counts,
# double and bogus frees refused with EINVAL, EBADFD for a descriptor that
# is not a ring's, never more completions than asked. The proof that the
# rings carried them: A's kernel UDP counter does not move, the socket's
# vmastat block counts them received offloaded. Two member sockets of a
# multicast group get every datagram of a shared frame each. With
# VMA_SOCKETXTREME unset the four entries are -1/EOPNOTSUPP (bits set).
# Namespaces, scratch and clean-up: tests/ext/vma_pair.sh.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_xtreme.sh
set -u
name=vma_xtreme.sh
A=ss-xa-$$ Z=ss-xb-$$
IP4=10.221.0.1 IP4B=10.221.0.2 GROUP=239.22.1.1
. "$(dirname "$0")/vma_pair.sh"

# The program, against the installed header only.
header_prog vma_xtreme_prog.c -pthread

vma_pair "$A" "$Z" xa xb "$IP4/24" "$IP4B/24"
port=$((21000 + RANDOM % 8000))  # and port + 1
count=${VMA_XTREME_COUNT:-10000}

mkdir -m 1777 "$T/stats"
# xtreme_run "SENDER ARGS" RECEIVER ARGS...: the program's receiver
# preloaded in A with VMA_SOCKETXTREME=1 and XTREME_HOLD (its vmastat
# blocks read into $T/block before it exits), its sender in B; $src,
# $rrc, A's counter in $before and $after, the program's lines shown.
xtreme_run() {
  local send=$1
  shift
  rm -f "$T/hold" && mkfifo "$T/hold"
  before=$(kernel_udp In 4)
  ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_CONFIG_FILE=/dev/null VMA_STATS_SHMEM_DIR="$T/stats" \
    VMA_SOCKETXTREME=1 XTREME_HOLD=1 ${XTREME_CB:+XTREME_CB=1} ${XTREME_SLEEP:+XTREME_SLEEP=1} ${XTREME_STEAL:+XTREME_STEAL=1} \
    timeout 90 "$PROG" "$@" <"$T/hold" \
    >"$T/out" 2>"$T/err" &
  rpid=$!
  pids+=($rpid)
  exec 3>"$T/hold"
  for _ in $(seq 100); do grep -q '^ready' "$T/out" && break; sleep 0.1; done
  # shellcheck disable=SC2086  # the sender's arguments, split
  ip netns exec "$Z" timeout 90 "$PROG" send $send >"$T/send" 2>&1
  src=$?
  for _ in $(seq 100); do grep -q '^held' "$T/out" && break; sleep 0.1; done
  block "$(sed -n 's/^held //p' "$T/out")" >"$T/block"
  exec 3>&-
  wait $rpid
  rrc=$?
  after=$(kernel_udp In 4)
  sed -n 's/^/  program: /p' "$T/out" | grep -v "program: \(ready\|held\)"
  [ $src = 0 ] || echo "  sender (exit $src): $(cat "$T/send")"
  [ $rrc = 0 ] || echo "  receiver (exit $rrc): $(tail -5 "$T/err")"
  echo "  kernel UDP in A: $before -> $after; $(grep -E 'Offloaded|Rx Offload|Rx OS' "$T/block" | tr '\n' ' ')"
}

xtreme_run "$IP4 $port $count 2" recv $IP4 $port "$count" $IP4B
has "$T/err" "xa: UDP offloaded on"
check "the receiver's netdev has rings" $?
# VMA_SOCKETXTREME=1 makes VMA_RX_WRE 1024, as libvma does: rings of 1024
# and 1024 + 2048 + 512 frames -> 4096, fewer than COUNT, so they recycle.
frames=$(ring_frames "$T/err")
has "$T/err" "fill and rx rings 1024, tx and completion 2048, 4096 frames" &&
  [ "$count" -gt "${frames:-$count}" ]
check "socketXtreme's rings of 1024 (VMA_RX_WRE's default in that mode): $count datagrams through ${frames:-?} frames recycled them" $?
[ $src = 0 ] && [ $rrc = 0 ] && has "$T/out" "^PASS: 0 failure"
check "socketxtreme_poll: all $count datagrams from the ring fds, completions, sources, payloads, ref/free counts, refusals (exit $rrc)" $?
[ $((after - before)) -eq 0 ]
check "A's kernel received none of the $count datagrams ($before -> $after)" $?
[ "$(grep -c "^- UDP, Offloaded" "$T/block")" = 2 ] &&
  [ "$(grep -Ec "^Rx Offload: [0-9]+ KB / $((count / 2)) /" "$T/block")" = 2 ]
check "the sockets' vmastat blocks: offloaded, $((count / 2)) datagrams each received offloaded" $?

# A receive callback on the second socket (register_recv_callback): it
# sees each of that socket's datagrams, and only those it returns RECV
# for come as completions; the HOLD ones wait for free_packets.
port=$((port + 10))
XTREME_CB=1 xtreme_run "$IP4 $port $count 2" recv $IP4 $port "$count" $IP4B
[ $src = 0 ] && [ $rrc = 0 ] && has "$T/out" "^PASS: 0 failure" && [ "$after" = "$before" ]
check "a receive callback on a member: DROP, RECV and HOLD over $((count / 2)) datagrams, completions for the RECV ones only, in order; HOLD ones freed by free_packets; A's kernel counter flat ($before -> $after)" $?

# The same, asleep in poll(2) on the ring fds whenever a round of polls
# changed nothing: every datagram a poll took off the rings is reported
# by that poll or the next, so no sleep outlasts the sender's wait.
port=$((port + 2))
XTREME_CB=1 XTREME_SLEEP=1 xtreme_run "$IP4 $port $count 2" recv $IP4 $port "$count" $IP4B
slept=$(sed -n 's/^slept //p' "$T/out")
[ $src = 0 ] && [ $rrc = 0 ] && has "$T/out" "^PASS: 0 failure" && [ "${slept:-0}" -gt 0 ]
check "asleep on the ring fds between rounds that found nothing (${slept:-no} sleeps): none timed out, every datagram through" $?

# The same while another thread's receives on a third socket read the
# rings: what they queue for the two wakes the sleeper all the same.
port=$((port + 2))
XTREME_SLEEP=1 XTREME_STEAL=1 xtreme_run "$IP4 $port $count 2" recv $IP4 $port "$count" $IP4B
slept=$(sed -n 's/^slept //p' "$T/out")
stole=$(sed -n 's/^stole \([0-9]*\) .*/\1/p' "$T/out")
[ $src = 0 ] && [ $rrc = 0 ] && has "$T/out" "^PASS: 0 failure" && [ "${slept:-0}" -gt 0 ] && [ "${stole:-0}" -gt 0 ]
check "asleep on the ring fds while another thread's receives read the rings (${stole:-no} reads, ${slept:-no} sleeps): none timed out, every datagram through" $?

# Multicast: two member sockets of the process share each frame; the
# first lent is a copy, so neither's vma_buff_t lands in the other's.
ip -n "$Z" route add 224.0.0.0/4 dev xb || skip "no multicast route in B"
port=$((port + 2))
mcount=${VMA_XTREME_MCOUNT:-5000}
xtreme_run "$GROUP $port $mcount 1" mrecv $GROUP $port "$mcount" $IP4B $IP4
[ $src = 0 ] && [ $rrc = 0 ] && has "$T/out" "^PASS: 0 failure" && [ "$after" = "$before" ] &&
  [ "$(grep -Ec "^Rx Offload: [0-9]+ KB / $mcount /" "$T/block")" = 2 ]
check "multicast: two members each got all $mcount datagrams of a shared frame through socketxtreme_poll (vmastat: $mcount each), freed without a refusal; A's kernel counter flat ($before -> $after)" $?

port=$((port + 1))
ip netns exec "$A" env LD_PRELOAD="$LIB" VMA_CONFIG_FILE=/dev/null VMA_STATS_SHMEM_DIR= \
  timeout 30 "$PROG" off $IP4 $port >"$T/off" 2>"$T/off.err"
rc=$?
sed -n 's/^FAIL/  program: FAIL/p' "$T/off"
[ $rc = 0 ] && has "$T/off" "^PASS: 0 failure" &&
  [ "$(grep -c 'needs VMA_SOCKETXTREME=1 (EOPNOTSUPP)' "$T/off.err")" = 4 ]
check "VMA_SOCKETXTREME unset: bits set, the four entries -1/EOPNOTSUPP, one warning each (exit $rc)" $?

echo "$name: $fails failure(s)"
[ $fails = 0 ]

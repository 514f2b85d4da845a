#!/bin/bash
# librspreload between two network namespaces joined by a veth pair: the
# peer is another "host", which the preload does not yet reach over
# rsockets (docs/status.md, issue 14), so both ends preloaded must connect
# over kernel TCP, bytes intact, each process counting kernel TCP and no
# rsocket, whichever side speaks first. Creates ss-pa-PID (10.213.2.1,
# server) and ss-pb-PID (10.213.2.2, client) and removes them on exit;
# no traffic leaves them. Needs root; skipped otherwise.
set -u
name=preload_netns.sh
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
PRELOAD=$B/.libs/librspreload.so
[ -f "$PRELOAD" ] || { echo "ERROR: $name: $PRELOAD not found: build first"; exit 99; }
[ "$(id -u)" = 0 ] || { echo "SKIP: $name: needs root for network namespaces"; exit 77; }
for p in socat ip ss cmp timeout; do
  command -v $p >/dev/null || { echo "SKIP: $name: $p not found"; exit 77; }
done
A=ss-pa-$$ Z=ss-pb-$$ ADDR=10.213.2.1
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-pnetns.XXXXXX") || exit 99
spid=
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  ip netns del "$A" 2>/dev/null
  ip netns del "$Z" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
skip() { echo "SKIP: $name: $*"; exit 77; }
ip netns add "$A" && ip netns add "$Z" || skip "ip netns add failed"
ip -n "$A" link add veth-pa type veth peer name veth-pb netns "$Z" || skip "no veth pair"
ip -n "$A" addr add $ADDR/24 dev veth-pa && ip -n "$Z" addr add 10.213.2.2/24 dev veth-pb &&
  ip -n "$A" link set veth-pa up && ip -n "$Z" link set veth-pb up &&
  ip -n "$A" link set lo up && ip -n "$Z" link set lo up || skip "configuring the pair failed"
for i in $(seq 50); do
  ip -n "$Z" link show veth-pb | grep -q LOWER_UP && break
  sleep 0.1
done

head -c 2000000 /dev/urandom >"$T/in"
fails=0
port=$((20000 + RANDOM % 9000))
# run NS CMD...: becomes the command (exec; `&` makes $! the program),
# preloaded, counting into $T/st
run() {
  local ns=$1
  shift
  exec ip netns exec "$ns" env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$T/st" timeout 30 "$@"
}
for dir in up down; do
  case_name="both preloaded across namespaces, $([ $dir = up ] && echo client || echo server) speaks first"
  bad=0
  port=$((port + 1))
  rm -rf "$T/st" "$T/out" && mkdir "$T/st"
  if [ $dir = up ]; then
    run "$A" socat -u TCP-LISTEN:$port,bind=$ADDR,reuseaddr CREATE:"$T/out" &
  else
    run "$A" socat -u OPEN:"$T/in" TCP-LISTEN:$port,bind=$ADDR,reuseaddr &
  fi
  spid=$!
  for i in $(seq 100); do
    ip netns exec "$A" ss -Hltn "sport = :$port" | grep -q . && break
    sleep 0.1
  done
  if [ $dir = up ]; then
    (run "$Z" socat -u OPEN:"$T/in" TCP:$ADDR:$port) || bad=1
  else
    (run "$Z" socat -u TCP:$ADDR:$port CREATE:"$T/out") || bad=1
  fi
  wait "$spid" || bad=1
  spid=
  cmp -s "$T/in" "$T/out" || { echo "  bytes differ"; bad=1; }
  n=0
  for f in "$T"/st/rspreload.*; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    grep -q " rsockets=0 .* kernel_tcp=1$" "$f" || { echo "  counts: $(cat "$f")"; bad=1; }
  done
  [ "$n" = 2 ] || { echo "  $n count files, expected 2"; bad=1; }
  if [ $bad = 0 ]; then echo "PASS: $case_name"; else echo "FAIL: $case_name"; fails=$((fails + 1)); fi
done
[ "$fails" = 0 ]

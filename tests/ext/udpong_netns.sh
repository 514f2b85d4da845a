#!/bin/bash
# rdmacm-utils' udpong between two network namespaces joined by a veth
# pair, both ends with librsocket.so preloaded as in udpong.sh: the server
# (udpong -b) in one namespace, the clients (udpong -s) in the other, so
# the peer is another "host" and our datagrams travel the kernel's UDP
# (no shared memory: its rendezvous does not cross namespaces).  Latency
# (-T e) and bandwidth runs, 64 B and 1 KiB, blocking I/O (udpong.sh
# covers the other modes), over IPv4 and IPv6.
#
# The proof that both ends ran on our library: udp_tags.py captures the
# case's datagrams on the client's veth, and every one of them, both ways
# (at least one each way), must start with our header over UDP
# (docs/protocol.md: "SSDG", the version of its IP header, op 0, length
# 8), none with upstream's tag 0x55555555 and none bare.  Without the
# preload udpong finds no RDMA device and fails; with plain sockets the
# datagrams are bare: the first cases (-T s, no preload) check that the
# capture sees them and finds no header of ours in them.
#
# The test creates ss-ua-PID (10.213.3.1, fd00:5353:3::1: server) and
# ss-ub-PID (10.213.3.2, fd00:5353:3::2: clients) and removes them on
# exit; no traffic leaves them.  Needs root; skipped otherwise.
#
# Run from the build directory: bash $srcdir/tests/ext/udpong_netns.sh
set -u
. "$(dirname "$0")/common.sh" || { echo "ERROR: $0: common.sh not found"; exit 99; }
[ "$(id -u)" = 0 ] || ext_skip_all "needs root to create network namespaces"
for p in ip python3; do
  command -v "$p" >/dev/null 2>&1 || ext_skip_all "'$p' not found"
done
ext_init udpong

UDPONG_MODES=b
UDPONG_ECHO_COUNT=200
UDPONG_SIZES="64 1024"
UDPONG_BW_COUNT=2000
. "$(dirname "$0")/udpong_cases.sh" || ext_hard_error "udpong_cases.sh not found"
TAGS=$(cd "$(dirname "$0")" && pwd)/udp_tags.py

NS_A=ss-ua-$$
NS_B=ss-ub-$$
ADDR4=10.213.3.1
ADDR6=fd00:5353:3::1
ext_netns_pair "$NS_A" "$NS_B" "$ADDR4/24 $ADDR6/64" "10.213.3.2/24 fd00:5353:3::2/64"
echo "$ext_name: namespaces $NS_A ($ADDR4, $ADDR6: server) and $NS_B (clients)"
PFX_S=(ip netns exec "$NS_A")
PFX_C=(ip netns exec "$NS_B")

# WIRE: "ours" when every datagram must carry our header, "bare" when
# none may (plain sockets).
WIRE=ours
CAP_PID=

udpong_before_case() {
  rm -f "$CASE_DIR/cap.ready"
  (exec "${PFX_C[@]}" python3 "$TAGS" veth-b "$PORT" "$CASE_DIR/cap.ready" \
    >"$CASE_DIR/cap.out" 2>"$CASE_DIR/cap.err") &
  CAP_PID=$!
  ext_pids+=("$CAP_PID")
  for _ in $(seq 100); do
    if [ -e "$CASE_DIR/cap.ready" ] || ! kill -0 "$CAP_PID" 2>/dev/null; then break; fi
    sleep 0.05
  done
}

# count NAME : a number from the capture's line.
count() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" "$CASE_DIR/cap.out"; }

udpong_after_case() {
  local why='' to from
  ext_stop "$CAP_PID"
  if [ ! -e "$CASE_DIR/cap.ready" ] || [ -z "$(count to)" ]; then
    why="the capture failed: $(tail -n1 "$CASE_DIR/cap.err")"
  else
    to=$(count to) from=$(count from)
    if [ "$to" = 0 ] || [ "$from" = 0 ]; then
      why="no datagram captured one way (to $to, from $from)"
    elif [ "$WIRE" = ours ] && { [ "$(count ours_to)" != "$to" ] || [ "$(count ours_from)" != "$from" ]; }; then
      why="datagrams without our header on the wire: $(cat "$CASE_DIR/cap.out")"
    elif [ "$WIRE" = bare ] && [ "$(count ours_to)$(count ours_from)$(count upstream)" != 000 ]; then
      why="a header on plain sockets' datagrams: $(cat "$CASE_DIR/cap.out")"
    fi
  fi
  if [ -n "$why" ]; then
    WHY=${WHY:+$WHY; }$why
  elif [ -z "$WHY" ]; then
    echo "      wire: $(cat "$CASE_DIR/cap.out")"
  fi
}

echo "== plain kernel sockets (udpong -T s, no preload): harness and capture sanity"
WIRE=bare
run_env_plain
UDPONG_SIZES=64 udpong_family kernel "$ADDR4" -T s
n_sanity_fail=$n_fail

echo "== datagram rsockets (librsocket.so preloaded on both ends)"
WIRE=ours
run_env_preload
udpong_family rsocket "$ADDR4"
udpong_family rsocket "$ADDR6"

ext_finish

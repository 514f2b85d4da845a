#!/bin/bash
# Proves that the rxe guest gives real verbs, RoCE and iWARP; runs INSIDE it:
#   tests/rxe/rxe-vm.sh -- bash tests/rxe/smoke.sh
# rxe: ibv_devices lists $RXE_DEV, `rdma link` shows it ACTIVE, Debian's own
# rstream (no preload: rsockets of the guest's librdmacm) passes a verified
# blocking transfer over $RXE_IP, and the device's packet counters grow
# across that transfer.
# siw (Soft-iWARP): ibv_devices lists $SIW_DEV, `rdma link` shows it ACTIVE
# on $SIW_NETDEV, ibv_devinfo says iWARP, and stock rstream passes over
# $SIW_IP (64 B and 1 MiB, -T b and -T n) and $SIW_IP6 with its listening
# rdma_cm id on $SIW_DEV; siw has no counters, but it carries RDMA over
# kernel TCP (rxe over UDP, and nothing else in the guest speaks TCP), so
# the guest's TCP OutSegs must grow by at least the transfer count.  An
# empty SIW_IP (rxe-vm.sh could not build or start siw) fails.
# Prints what it sees; exits 1 on any failure.
set -u
: "${RXE_IP:?run me inside tests/rxe/rxe-vm.sh}" "${RXE_DEV:=rxe0}"
: "${SIW_DEV:=siw0}" "${SIW_NETDEV:=dummy1}" "${SIW_IP:=}" "${SIW_IP6:=}"
unset LD_PRELOAD
CNT=/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters
passes=0 fails=0 port=7471
ok() { echo "ok: $*"; passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
counters() { (cd "$CNT" && grep -H . sent_pkts rcvd_pkts rdma_sends rdma_recvs) | tr : = | tr '\n' ' '; }
count() { cat "$CNT/$1" 2>/dev/null || echo -1; }
tcp_out() { awk '/^Tcp:/ { if (h) print $12; h = 1 }' /proc/net/snmp; }   # OutSegs
srv=
trap '[ -z "$srv" ] || kill "$srv" 2>/dev/null' EXIT

# rstream_pair DEV ADDR ARGS... : stock rstream server bound to ADDR and a
# stock client, on a fresh port; ok when both exit 0 (and the server's
# rdma_cm id listened on DEV).  Sets $took (seconds).
rstream_pair() {
  local dev=$1 addr=$2 crc src listening=0 t0=$SECONDS start
  shift 2
  port=$((port + 1))
  echo "== rstream $* over $addr ($dev, port $port)"
  timeout 60 rstream -b "$addr" -p $port "$@" > /tmp/rstream-server.log 2>&1 &
  srv=$!
  # the server is up once its rdma_cm id listens (give it 20 s)
  while [ $((SECONDS - t0)) -lt 20 ] && kill -0 "$srv" 2>/dev/null; do
    case $(rdma resource show cm_id 2>/dev/null | grep ":$port ") in
      *"link $dev/"*"state LISTEN"*) listening=1; break ;;
    esac
    sleep 0.1
  done
  [ $listening = 1 ] || echo "warning: no rdma_cm id listening on $dev:$port seen; starting the client anyway"
  start=$EPOCHREALTIME
  timeout 60 rstream -s "$addr" -p $port "$@"
  crc=$?
  wait "$srv"
  src=$?
  srv=
  took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
  echo "client exit $crc, server exit $src, $took s"
  if [ $crc = 0 ] && [ $src = 0 ] && [ $listening = 1 ]; then
    ok "rstream $* over $addr on $dev: client and server exit 0"
  else
    bad "rstream $* over $addr: client exit $crc, server exit $src, listening on $dev: $listening"
    echo "--- server output"; cat /tmp/rstream-server.log
  fi
}

echo "== ibv_devices"
devs=$(ibv_devices 2>&1)
echo "$devs"
if echo "$devs" | grep -qw "$RXE_DEV"; then ok "ibv_devices lists $RXE_DEV"; else bad "ibv_devices has no $RXE_DEV"; fi

echo "== rdma link"
links=$(rdma link show 2>&1)
echo "$links"
if echo "$links" | grep -q "^link $RXE_DEV/1 state ACTIVE"; then ok "$RXE_DEV/1 ACTIVE"; else bad "$RXE_DEV/1 not ACTIVE"; fi

echo "== rstream's libraries"
LD_TRACE_LOADED_OBJECTS=1 rstream | grep -E 'librdmacm|libibverbs'
case $(LD_TRACE_LOADED_OBJECTS=1 rstream | grep librdmacm) in
  *"=> /usr/lib/"*|*"=> /lib/"*) ok "rstream loads Debian's librdmacm (no preload, not the build tree)" ;;
  *) bad "rstream does not load Debian's librdmacm from /usr/lib" ;;
esac

echo "== counters before"
rdma statistic show link "$RXE_DEV/1" 2>&1
counters
echo
sent0=$(count sent_pkts) rcvd0=$(count rcvd_pkts)

rstream_pair "$RXE_DEV" "$RXE_IP" -S 64 -C 100 -T b -T v

echo "== counters after"
rdma statistic show link "$RXE_DEV/1" 2>&1
counters
echo
sent1=$(count sent_pkts) rcvd1=$(count rcvd_pkts)
if [ "$sent0" -ge 0 ] && [ "$sent1" -gt "$sent0" ] && [ "$rcvd1" -gt "$rcvd0" ]; then
  ok "sent_pkts $sent0 -> $sent1, rcvd_pkts $rcvd0 -> $rcvd1"
else
  bad "rxe counters did not grow: sent_pkts $sent0 -> $sent1, rcvd_pkts $rcvd0 -> $rcvd1"
fi

echo "== siw"
if [ -z "$SIW_IP" ]; then
  bad "SIW_IP is empty: the guest has no $SIW_DEV (rxe-vm.sh said why: siw.ko not built or not up)"
else
  if echo "$devs" | grep -qw "$SIW_DEV"; then ok "ibv_devices lists $SIW_DEV"; else bad "ibv_devices has no $SIW_DEV"; fi
  if echo "$links" | grep -qE "^link $SIW_DEV/1 state ACTIVE .*netdev $SIW_NETDEV( |$)"; then
    ok "$SIW_DEV/1 ACTIVE on $SIW_NETDEV"
  else
    bad "$SIW_DEV/1 not ACTIVE on $SIW_NETDEV"
  fi
  info=$(ibv_devinfo -d "$SIW_DEV" 2>&1)
  echo "$info" | grep -E 'hca_id|transport|state|active_mtu'
  if echo "$info" | grep -q 'transport:.*iWARP'; then ok "$SIW_DEV transport iWARP"; else bad "ibv_devinfo -d $SIW_DEV shows no iWARP transport"; fi
  # ADDR COUNT SIZE ARGS...: a stock pair over siw, and siw's kernel TCP traffic
  siw_pair() {
    local addr=$1 n=$2 t0 t1
    shift 2
    t0=$(tcp_out)
    rstream_pair "$SIW_DEV" "$addr" -S "$1" -C "$n" "${@:2}"
    t1=$(tcp_out)
    if [ $((t1 - t0)) -ge "$n" ]; then
      ok "TCP OutSegs $t0 -> $t1: siw carried it"
    else
      bad "TCP OutSegs $t0 -> $t1, fewer than $n: not over siw?"
    fi
  }
  siw_pair "$SIW_IP" 100 64 -T b -T v
  siw_pair "$SIW_IP" 4 1048576 -T b -T v
  siw_pair "$SIW_IP" 100 64 -T n -T v
  siw_pair "$SIW_IP" 4 1048576 -T n -T v
  if [ -n "$SIW_IP6" ]; then
    siw_pair "$SIW_IP6" 100 64 -T b -T v
  else
    bad "SIW_IP6 is empty"
  fi
fi

echo "smoke: $passes passed, $fails failed"
[ $fails = 0 ]

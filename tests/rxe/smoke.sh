#!/bin/bash
# Proves that the rxe guest gives real verbs; runs INSIDE it:
#   tests/rxe/rxe-vm.sh -- bash tests/rxe/smoke.sh
# Checks: ibv_devices lists $RXE_DEV, `rdma link` shows it ACTIVE, Debian's
# own rstream (no preload: rsockets of the guest's librdmacm) passes a
# verified blocking transfer over $RXE_IP, and the device's packet counters
# grow across that transfer.  Prints what it sees; exits 1 on any failure.
set -u
: "${RXE_IP:?run me inside tests/rxe/rxe-vm.sh}" "${RXE_DEV:=rxe0}"
unset LD_PRELOAD
CNT=/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters
RSTREAM_OPTS=(-S 64 -C 100 -T b -T v)
passes=0 fails=0
ok() { echo "ok: $*"; passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
counters() { (cd "$CNT" && grep -H . sent_pkts rcvd_pkts rdma_sends rdma_recvs) | tr : = | tr '\n' ' '; }
count() { cat "$CNT/$1" 2>/dev/null || echo -1; }
srv=
trap '[ -z "$srv" ] || kill "$srv" 2>/dev/null' EXIT

echo "== ibv_devices"
out=$(ibv_devices 2>&1)
echo "$out"
if echo "$out" | grep -qw "$RXE_DEV"; then ok "ibv_devices lists $RXE_DEV"; else bad "ibv_devices has no $RXE_DEV"; fi

echo "== rdma link"
out=$(rdma link show 2>&1)
echo "$out"
if echo "$out" | grep -q "^link $RXE_DEV/1 state ACTIVE"; then ok "$RXE_DEV/1 ACTIVE"; else bad "$RXE_DEV/1 not ACTIVE"; fi

echo "== rstream's libraries"
LD_TRACE_LOADED_OBJECTS=1 rstream | grep -E 'librdmacm|libibverbs'
case $(LD_TRACE_LOADED_OBJECTS=1 rstream | grep librdmacm) in
  *"=> /usr/lib/"*|*"=> /lib/"*) ok "rstream loads Debian's librdmacm (no preload, not the build tree)" ;;
  *) bad "rstream does not load Debian's librdmacm from /usr/lib" ;;
esac

echo "== counters before"
rdma statistic show link "$RXE_DEV/1" 2>&1
before="$(counters)"
echo "$before"
sent0=$(count sent_pkts) rcvd0=$(count rcvd_pkts)

echo "== rstream ${RSTREAM_OPTS[*]} over $RXE_IP"
timeout 60 rstream -b "$RXE_IP" "${RSTREAM_OPTS[@]}" > /tmp/rstream-server.log 2>&1 &
srv=$!
# the server is up once its rdma_cm id listens (give it 20 s)
listening=0
SECONDS=0
for _ in {1..100}; do
  case $(rdma resource show cm_id 2>/dev/null) in *"state LISTEN"*) listening=1; break ;; esac
  kill -0 "$srv" 2>/dev/null || break
  [ $SECONDS -lt 20 ] || break
  sleep 0.1
done
[ $listening = 1 ] || echo "warning: no listening rdma_cm id seen; starting the client anyway"
start=$EPOCHREALTIME
timeout 60 rstream -s "$RXE_IP" "${RSTREAM_OPTS[@]}"
crc=$?
wait "$srv"
src=$?
srv=
echo "client exit $crc, server exit $src, $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f s", b - a }')"
if [ $crc = 0 ] && [ $src = 0 ]; then
  ok "rstream client and server exit 0"
else
  bad "rstream: client exit $crc, server exit $src"
  echo "--- server output"; cat /tmp/rstream-server.log
fi

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

echo "smoke: $passes passed, $fails failed"
[ $fails = 0 ]

#!/bin/bash
# Wire interoperability on real verbs; runs INSIDE the rxe guest:
#   tests/rxe/rxe-vm.sh -s BUILD -s SRC -- bash SRC/tests/rxe/interop.sh BUILD
# Debian's rstream and riostream on the guest's own librdmacm ("stock")
# against the same programs on BUILD/.libs/librsocket.so through LD_PRELOAD
# with SLIPSTREAM_PROVIDER=verbs ("ours"), over $RXE_IP (and $RXE_IP6):
#   * transfers, server:client = stock:ours, ours:stock, ours:ours; rstream
#     -T b/n/a and riostream -T b/n/a, all verified (-T v) in custom mode
#     (rstream's exit code means nothing otherwise), 64 B to 1 MiB; after
#     a failed case, the same case stock:stock (the control: upstream on
#     both ends) is printed under it, uncounted, to tell the guest's or
#     this harness's trouble from ours;
#   * rdma-used: ours:ours must move at least bytes/active_mtu packets
#     through rxe0's counters, so a silent fall-back to tcp cannot pass;
#   * log: at SLIPSTREAM_LOG_LEVEL=debug our ends say "verbs" somewhere; with
#     SLIPSTREAM_PROVIDER=auto the client says it connected over verbs to
#     rxe0's address and over shm to loopback;
#   * faults: one end is killed (SIGKILL) mid-transfer; the survivor, always
#     ours, must exit non-zero within FAULT_T seconds.  (No stock survivor:
#     upstream's blocking rsend waits on its CQ alone, so a peer that dies
#     while it waits for credits leaves it hanging; seen here with
#     stock:stock, the client still running 30 s after the kill.)
# Prints PASS/FAIL/SKIP per case (FAIL lines are followed by indented
# stderr tails; KNOWN lines, documented open failures, likewise) and
# "N passed, N failed, N skipped, N known"; exits 1 on a failure.
#
# Knobs: RXE_PROVIDER=tcp runs "ours" on another provider (mixed cases and
# rdma-used must then fail: shakes out the harness); RXE_SIZES_QUICK=1 (64 B
# and 1 MiB rstream, 64 KiB and 1 MiB riostream only); RXE_PAIRS (default
# "stock:ours ours:stock ours:ours"; add stock:stock to run the control
# on every case, counted); RXE_ONLY=REGEX runs the
# matching case names only; RXE_CMD_TIMEOUT (60), RXE_KEEP=1.
set -u
# shellcheck source=tests/rxe/common.sh
. "$(dirname "$0")/common.sh" || exit 2
rxe_init "${1:-}"

PAIRS=${RXE_PAIRS:-stock:ours ours:stock ours:ours}
FAULT_T=30   # seconds the survivor may take to notice its dead peer
RSTREAM_SIZES="64:100 4096:100 65536:20 1048576:4"   # size:count
RIO_SIZES="4096:100 65536:20 1048576:4"
if [ "${RXE_SIZES_QUICK:-0}" = 1 ]; then   # a second device: ends of the range
  RSTREAM_SIZES="64:100 1048576:4"
  RIO_SIZES="65536:20 1048576:4"
fi
# RACE: rstream -T a's client fails with rpoll's POLLHUP (exit 16) when
# the server's in-band DISCONNECT is processed before the client read the
# last data: upstream rpoll reports POLLHUP once disconnected, data or not,
# and rstream's do_poll gives up on it.  The server has then exited 0 and
# verified everything it received.  Only upstream's server provokes it
# (seen with stock:stock under TCG: 2 of 4 -T a sizes in one run; 1 of 20
# on siw): ours says SHUTDOWN and lingers until the client has closed
# (src/librsocket/close.cc), our client's rpoll reports the hang-up only once
# nothing is left to read.  So a stock:stock run is tried again, up to
# RACE_TRIES times, and one that hits it on every try, its server having
# verified everything and exited 0, is reported KNOWN (upstream's bug, in
# the control pair), not passed; with either end ours it is a FAIL. The
# same race may leave upstream's server waiting for bytes the client
# never sent once it gave up ("...; server left waiting", seen once in CI
# under load): handled alike.
RACE="client exit 16 (rpoll POLLHUP)"
RACE_TRIES=6
# STRANDED (common.sh, stranded_bytes): a client that hung while siw held
# bytes unread in the accepting side's TCP socket (siw's accept race;
# upstream's connecting side has no nudge for it). Seen once in CI, rstream
# ours:stock -T a 1 MiB over siw0 (0 of 360 in stress.sh runs); stock:stock
# is exposed alike. Any pair is tried again so, up to RACE_TRIES; KNOWN if
# every try shows it.

# transfer PROG SRV CLI ADDR ARGS... : one verified run, reported.
transfer() {
  local prog=$1 s=$2 c=$3 addr=$4 name try
  shift 4
  name="$prog $s:$c $addr $*"
  want "$name" || return 0
  local first=
  for ((try = 1; try <= RACE_TRIES; try++)); do
    pair "$s" "$c" "$prog" "$addr" "$@"
    verdict
    [ -n "$WHY" ] || [ -n "$(perf_line "$CASE_DIR/c.out")" ] || WHY="client printed no result line"
    [ -n "$WHY" ] && [ -z "$first" ] && first=$WHY
    [ "$s:$c $prog" = "stock:stock rstream" ] && [[ $WHY == "$RACE"* && " $* " == *" -T a "* ]] && continue
    [[ $WHY == *"$STRANDED"* ]] && continue
    break
  done
  [ "$try" -le "$RACE_TRIES" ] || try=$RACE_TRIES
  if [ "$s:$c" = "stock:stock" ] && [[ $WHY == "$RACE"* ]]; then
    known "$name" "$WHY on all $RACE_TRIES tries: the rstream -T a POLLHUP race, see interop.sh"
    return 0
  fi
  if [[ $WHY == *"$STRANDED"* ]]; then
    known "$name" "$WHY on all $RACE_TRIES tries: siw's accept race, see interop.sh"
    return 0
  fi
  report "$name"
  [ "$try" = 1 ] || [ -n "$WHY" ] || echo "    passed on try $try (first try: $first)"
  [ -z "$WHY" ] || [ "$s:$c" = stock:stock ] || control "$prog" "$addr" "$@"
}

# control PROG ADDR ARGS... : the failed case again with upstream on both
# ends; printed, not counted.
control() {
  local prog=$1 addr=$2
  shift 2
  pair stock stock "$prog" "$addr" "$@"
  verdict
  echo "    control stock:stock: ${WHY:-passed}"
  WHY=
}

# matrix ADDR : every pair, rstream and riostream, every mode and size.
matrix() {
  local addr=$1 p m sc
  for p in $PAIRS; do
    for m in b n a; do
      for sc in $RSTREAM_SIZES; do
        transfer rstream "${p%:*}" "${p#*:}" "$addr" -T $m -T v -S "${sc%:*}" -C "${sc#*:}"
      done
    done
    for m in b n a; do
      for sc in $RIO_SIZES; do
        transfer riostream "${p%:*}" "${p#*:}" "$addr" -T $m -T v -S "${sc%:*}" -C "${sc#*:}"
      done
    done
  done
}

# rdma_used PROG : ours:ours, and the device must have carried the bytes:
# both directions' data crosses the one device, each packet at most
# active_mtu (rxe0's counters).  A device without counters (siw0) goes to
# rdma_used_ids.
rdma_used() {
  local prog=$1 name="rdma-used $1 ours:ours" size=1048576 count=4 mtu need s0 r0 s1 r1
  want "$name" || return 0
  # (longer: siw is fast enough to finish between two samples)
  [ -e "$CNT" ] || { rdma_used_ids "$prog" "$name" $size $((count * 8)); return; }
  mtu=$(ibv_devinfo -d "$RXE_DEV" 2>/dev/null | awk '/active_mtu:/ {print $2; exit}')
  case $mtu in ''|*[!0-9]*) fail "$name" "no active_mtu from ibv_devinfo"; return ;; esac
  need=$((2 * size * count / mtu))
  s0=$(count sent_pkts) r0=$(count rcvd_pkts)
  pair ours ours "$prog" "$RXE_IP" -T b -T v -S $size -C $count
  s1=$(count sent_pkts) r1=$(count rcvd_pkts)
  verdict
  if [ "$s0" -lt 0 ]; then
    WHY+="${WHY:+; }no counters in $CNT"
  elif [ $((s1 - s0)) -lt $need ] || [ $((r1 - r0)) -lt $need ]; then
    WHY+="${WHY:+; }rxe0 carried too little: sent_pkts +$((s1 - s0)), rcvd_pkts +$((r1 - r0)), need >= $need ($((2 * size * count)) B / mtu $mtu)"
  fi
  report "$name"
  [ -n "$WHY" ] || echo "    sent_pkts +$((s1 - s0)), rcvd_pkts +$((r1 - r0)) (>= $need)"
}

# rdma_used_ids PROG NAME SIZE COUNT : for a device without packet counters
# (siw0, whose iWARP traffic rides kernel TCP): while ours:ours runs,
# rdma_cm must show connected ids of PROG on the device (siw lists no QPs),
# and kernel TCP must carry at least the bytes in 64 KiB segments (siw's,
# as nothing else runs).
rdma_used_ids() {
  local prog=$1 name=$2 size=$3 count=$4 seg0 seg1 need ids sampler
  seg0=$(tcp_out_segs)
  while :; do
    rdma resource show cm_id link "$RXE_DEV/1" 2>/dev/null |
      awk -v p="$prog" '/state CONNECT/ && $0 ~ ("comm " p "( |$)")' >>"$WORK/ids"
    sleep 0.2
  done &
  sampler=$!
  pair ours ours "$prog" "$RXE_IP" -T b -T v -S "$size" -C "$count"
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
  seg1=$(tcp_out_segs)
  verdict
  need=$((2 * size * count / 65536))
  ids=$(awk '{for (i = 1; i < NF; i++) if ($i == "cm-idn") print $(i + 1)}' "$WORK/ids" 2>/dev/null | sort -u | wc -l)
  rm -f "$WORK/ids"
  [ "$ids" -ge 2 ] || WHY+="${WHY:+; }rdma_cm never showed two connected $prog ids on $RXE_DEV ($ids)"
  [ $((seg1 - seg0)) -ge $need ] ||
    WHY+="${WHY:+; }kernel TCP sent only $((seg1 - seg0)) segments, need >= $need"
  report "$name"
  [ -n "$WHY" ] || echo "    $ids connected $prog ids on $RXE_DEV, TCP OutSegs +$((seg1 - seg0)) (>= $need)"
}

# log_names_verbs : ours:ours at debug level; each end's log mentions
# "verbs".  Lenient by design: the counters above are the proof.
log_names_verbs() {
  local name="log ours:ours SLIPSTREAM_LOG_LEVEL=debug says verbs" f who
  want "$name" || return 0
  EXTRA_ENV=(SLIPSTREAM_LOG_LEVEL=debug)
  pair ours ours rstream "$RXE_IP" -T b -T v -S 4096 -C 10
  EXTRA_ENV=()
  verdict
  for f in c s; do
    who=client
    [ $f = c ] || who=server
    grep -v 'not available' "$CASE_DIR/$f.err" | grep -qi verbs ||
      WHY+="${WHY:+; }the $who's log never says verbs"
  done
  report "$name"
}

# auto_picks ADDR KIND : ours:ours with SLIPSTREAM_PROVIDER=auto; the
# client's debug log must say it connected over KIND (verbs for rxe0's
# address, shm for loopback, where no RDMA device carries the traffic).
auto_picks() {
  local addr=$1 kind=$2 name="auto picks $2 for $1 (ours:ours)"
  want "$name" || return 0
  EXTRA_ENV=(SLIPSTREAM_PROVIDER=auto SLIPSTREAM_LOG_LEVEL=debug)
  pair ours ours rstream "$addr" -T b -T v -S 4096 -C 10
  EXTRA_ENV=()
  verdict
  grep -q "connected over $kind" "$CASE_DIR/c.err" ||
    WHY+="${WHY:+; }the client's log never says 'connected over $kind'"
  report "$name"
}

# traffic : a number that grows while a transfer runs: packets through
# rxe0 plus kernel TCP segments sent (the tcp provider, for
# RXE_PROVIDER=tcp; nothing else in the guest speaks TCP).
traffic() {
  local pkts
  pkts=$(count sent_pkts)
  [ "$pkts" -ge 0 ] || pkts=0   # siw0: no counters; its traffic is TCP
  echo $((pkts + $(tcp_out_segs)))
}

tcp_out_segs() {
  local segs
  segs=$(awk '$1 == "Tcp:" && !h {for (i = 1; i <= NF; i++) if ($i == "OutSegs") c = i; h = 1; next}
              $1 == "Tcp:" {print $c}' /proc/net/snmp)
  echo "${segs:-0}"
}

# fault SRV CLI VICTIM : a long rstream run; once traffic flows, SIGKILL
# VICTIM (server|client); the other end must exit non-zero within FAULT_T.
fault() {
  local s=$1 c=$2 victim=$3 name cpid cprog vprog spid survivor t0 t_case i rc
  name="fault rstream $s:$c, $victim killed mid-transfer"
  case " $PAIRS " in *" $s:$c "*) ;; *) return 0 ;; esac
  want "$name" || return 0
  new_case
  t_case=$SECONDS
  # far more than fits in CMD_T under TCG, so it is running when killed
  local args=(-T b -T v -S 65536 -C 1000000)
  start_server "$s" rstream -b "$RXE_IP" -p "$PORT" "${args[@]}"
  spid=$SPID
  t0=$(traffic)
  end_env "$c"
  timeout -k 5 $((CMD_T + FAULT_T)) env "${ENV[@]}" rstream -s "$RXE_IP" -p "$PORT" "${args[@]}" \
    >"$CASE_DIR/c.out" 2>"$CASE_DIR/c.err" </dev/null &
  cpid=$!
  BG+=("$cpid")
  WHY=
  for ((i = 0; i < 300; i++)); do   # 30 s for 500 units of traffic
    [ $(($(traffic) - t0)) -lt 500 ] || break
    kill -0 "$cpid" 2>/dev/null && kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
  done
  cprog=$(pgrep -P "$cpid" | head -n1)
  if [ $(($(traffic) - t0)) -lt 500 ]; then
    WHY="no transfer under way after 30 s"
  elif ! kill -0 "$cpid" 2>/dev/null || ! kill -0 "$spid" 2>/dev/null; then
    WHY="an end exited before the kill"
  fi
  if [ -z "$WHY" ]; then
    if [ "$victim" = server ]; then vprog=$SPROG; survivor=$cpid; else vprog=$cprog; survivor=$spid; fi
    if [ -z "$vprog" ] || ! kill -KILL "$vprog" 2>/dev/null; then
      WHY="could not kill the $victim"
    else
      for ((i = 0; i < FAULT_T * 10; i++)); do
        kill -0 "$survivor" 2>/dev/null || break
        sleep 0.1
      done
      if kill -0 "$survivor" 2>/dev/null; then
        WHY="the surviving end still runs ${FAULT_T}s after the kill"
        pkill -KILL -P "$survivor" 2>/dev/null
      else
        wait "$survivor" 2>/dev/null
        rc=$?
        case $rc in
          0) WHY="the surviving end exited 0 (claims success)" ;;
          124|137) WHY="the surviving end was killed by its timeout" ;;
        esac
        [ -n "$WHY" ] || echo "    survivor exit $rc, $((i / 10)).$((i % 10)) s after the kill" >"$CASE_DIR/note"
      fi
    fi
  fi
  pkill -KILL -P "$cpid" 2>/dev/null
  pkill -KILL -P "$spid" 2>/dev/null
  wait "$cpid" "$spid" 2>/dev/null
  CASE_TIMES="$((SECONDS - t_case)) s"
  report "$name"
  [ ! -s "$CASE_DIR/note" ] || cat "$CASE_DIR/note"
}

T_ALL=$SECONDS
echo "== interop: ours = $LIB, SLIPSTREAM_PROVIDER=$OURS_PROV; $RXE_DEV on $RXE_IP${RXE_IP6:+ and $RXE_IP6}"
[ -f "$LIB" ] || { fail "setup" "no $LIB: build first"; }
out=$(env -u LD_PRELOAD LD_TRACE_LOADED_OBJECTS=1 rstream 2>&1 | grep librdmacm)
case $out in
  *"=> /usr/lib/"*|*"=> /lib/"*) ;;
  *) fail "setup" "stock rstream does not load the guest's librdmacm: $out" ;;
esac

section "transfers over $RXE_IP"
matrix "$RXE_IP"

section "IPv6"
if [ -z "${RXE_IP6:-}" ]; then
  skip "IPv6 cases" "rxe-vm.sh exports no RXE_IP6"
elif ! ip -6 addr show dev "${RXE_NETDEV:-dummy0}" | grep -q "inet6 $RXE_IP6/"; then
  fail "IPv6 set-up" "$RXE_IP6 is not on ${RXE_NETDEV:-dummy0}"
else
  for p in $PAIRS; do
    transfer rstream "${p%:*}" "${p#*:}" "$RXE_IP6" -T b -T v -S 65536 -C 20
    transfer riostream "${p%:*}" "${p#*:}" "$RXE_IP6" -T n -T v -S 65536 -C 20
  done
fi

section "really RDMA"
rdma_used rstream
rdma_used riostream
log_names_verbs
auto_picks "$RXE_IP" verbs
auto_picks 127.0.0.1 shm

section "faults (SIGKILL mid-transfer; the survivor must exit non-zero within ${FAULT_T}s)"
quiet fault stock ours server
quiet fault ours stock client
quiet fault ours ours server
quiet fault ours ours client

[ "$n_filtered" = 0 ] || echo "($n_filtered cases not selected by RXE_ONLY)"
section
echo "interop: $((SECONDS - T_ALL)) s; the slowest cases:"
sort -rn "$WORK/times" 2>/dev/null | head -n 5 | cut -d' ' -f2- | sed 's/^/    /'
echo "$n_pass passed, $n_fail failed, $n_skip skipped, $n_known known (not passed; docs/status.md)"
[ "$n_fail" = 0 ]

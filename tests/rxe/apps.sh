#!/bin/bash
# Unmodified Debian benchmarks on librspreload over real verbs, against
# upstream's librspreload; runs INSIDE the rxe guest:
#   tests/rxe/rxe-vm.sh -s BUILD -s SRC -- bash SRC/tests/rxe/apps.sh BUILD
# iperf3 and sockperf over $RXE_IP (rxe0, RoCE), one end on our
# librspreload (SLIPSTREAM_PROVIDER=verbs), the other on the guest's
# librdmacm1 rsocket/librspreload.so ("rspre-stock"), both ways; and
# both ends ours, the same runs:
#   * iperf3 -n BYTES -J (and -R: the server sends): both exit 0, the
#     client's report has BYTES <= bytes sent <= BYTES + one 128 KiB block
#     and 0 < bytes received <=
#     sent: iperf3's receiver stops counting when the end message arrives
#     on the control connection, which can overtake the data's tail (seen
#     with an upstream client: 37 bytes and 64 KiB short; the same rule as
#     tests/ext/preload.sh on kernel TCP);
#   * sockperf ping-pong --tcp: the client exits 0 with round trips and no
#     dropped, duplicated or out-of-order message (sockperf's own sequence
#     checks); sockperf throughput --tcp: exit 0 and a bandwidth figure.
#     The server must still be running once its client is done; ours must
#     then stop on SIGINT, upstream's is killed (its rpoll does not return
#     on a signal). Upstream's preload has no epoll: its server
#     waits in poll (-F poll), ours in sockperf's default, epoll.
# Every case: our end's connections all counted on verbs and none on
# kernel TCP (SLIPSTREAM_PRELOAD_STATS), and rxe0's sent_pkts and
# rcvd_pkts grown by at least the bytes moved / active_mtu (ping-pong: by
# two packets a round trip), so a fall-back to kernel TCP fails.
# Prints PASS/FAIL per case and "N passed, N failed, ..."; exits 1 on a
# failure. Knobs: RXE_ONLY=REGEX, RXE_CMD_TIMEOUT (60), RXE_KEEP=1.
set -u
# shellcheck source=tests/rxe/common.sh
. "$(dirname "$0")/common.sh" || exit 2
rxe_init "${1:-}"
mkdir -p "$WORK/st"
IPERF_BYTES=${RXE_IPERF_BYTES:-4194304}

# iperf_case SRV CLI [ARGS...] : iperf3 -s -1 under SRV, iperf3 -c -n
# $IPERF_BYTES -J ARGS under CLI (ends as end_env names them), each under
# RXE_IPERF_TIMEOUT (20 s; a passing run takes a few).
# Upstream's preload cannot run iperf3 fully, for two reasons the cases
# check rather than assume:
#   * its rgetsockopt has no TCP_INFO (ENOTSUP): iperf3 calls it at each
#     report (save_tcpinfo) and logs "getsockopt - Operation not
#     supported", in -J mode as the report's "error", and goes on; under
#     an upstream client that exact error is tolerated, any other fails;
#   * an iperf3 server on it never reads its data connection: its select
#     (rpoll) never reports the data socket readable, the client stalls
#     once rsockets' buffer (128 KiB) is full. The upstream:upstream
#     control case shows whether that happens without us; if it does, an
#     upstream server's case whose client hangs is KNOWN (neither passed
#     nor failed), else FAIL.
STOCK_SERVER_STALLS=0
iperf_case() {
  # shellcheck disable=SC2034  # CMD_T: read by common.sh's start_server, run_client
  local s=$1 c=$2 name bytes ours=0 tolerate='' CMD_T=${RXE_IPERF_TIMEOUT:-20}
  shift 2
  name="iperf3 -n $IPERF_BYTES${*:+ $*} server $s, client $c"
  want "$name" || return 0
  [ "$s" = rspre ] && ours=$((ours + 2))   # control and data connection
  [ "$c" = rspre ] && ours=$((ours + 2))
  [ "$c" = rspre-stock ] && tolerate="getsockopt - Operation not supported"
  new_case
  rdma_mark
  start_server "$s" iperf3 -s -1 -B "$RXE_IP" -p "$PORT"
  run_client "$c" iperf3 -c "$RXE_IP" -p "$PORT" -n "$IPERF_BYTES" -J "$@"
  quiet reap_server
  verdict
  # sent = received, read from the client's JSON report (both ends' figures)
  bytes=$(python3 - "$CASE_DIR/c.out" "$tolerate" "$IPERF_BYTES" <<'PY' 2>&1
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit("no JSON report (%s)" % e)
if r.get("error", sys.argv[2]) != sys.argv[2]:
    sys.exit("iperf3: " + r["error"])
sent, rcvd = r["end"]["sum_sent"]["bytes"], r["end"]["sum_received"]["bytes"]
# iperf3 stops writing once -n is reached; after a short write (a
# non-blocking rsend that took part of a block) its last full block
# passes -n by up to one block (128 KiB: seen exactly so once).
want = int(sys.argv[3])
if not (want <= sent <= want + 131072 and 0 < rcvd <= sent):
    sys.exit("bytes sent %d, received %d" % (sent, rcvd))
print(sent, rcvd)
PY
  ) || { WHY+="${WHY:+; }$bytes"; bytes=0; }
  if [ -n "$WHY" ] && [ "$s" = rspre-stock ] && { [ "$C_RC" = 124 ] || [ "$C_RC" = 137 ]; }; then
    if [ "$c" = rspre-stock ]; then
      STOCK_SERVER_STALLS=1
      known "$name" "control: upstream's iperf3 server stalls with upstream's client: $WHY"
      return 0
    elif [ "$STOCK_SERVER_STALLS" = 1 ]; then
      known "$name" "upstream's iperf3 server stalls, as in the upstream:upstream control: $WHY"
      return 0
    fi
  fi
  [ "$ours" = 0 ] || rdma_check iperf3 "$ours" "$(mtu_pkts "${bytes% *}")"
  report "$name"
  if [ -z "$WHY" ]; then
    echo "    bytes sent, received: ${bytes/ /, }${tolerate:+ (upstream client: \"$tolerate\" logged, TCP_INFO)}${PROOF:+; $PROOF}"
  else
    sed 's/^/    client: /' "$CASE_DIR/c.out" | grep -a '"error"\|bytes' | tail -n 4
  fi
  PROOF=
}

# sp_field NAME FILE : the last NAME=N figure sockperf printed in FILE.
sp_field() { grep -ao "$1=[0-9.]*" "$2" | tail -n1 | cut -d= -f2; }

# sockperf_case SRV CLI MODE [ARGS...] : sockperf's server, and sockperf
# MODE --tcp -t 2 ARGS (one connection, blocking recvfrom). Our server
# waits in sockperf's default, epoll; upstream's preload has none, so its
# server waits in poll (-F poll, which sockperf takes only with a feed file).
# Upstream's end cannot send: sockperf sends TCP with sendto(fd, ...,
# &peer_addr) on its connected socket (the client each message, the
# server each ping-pong reply), which Linux allows (the address is
# ignored) and upstream's rsendto refuses for a stream socket given an
# address (EISCONN). So only throughput to an upstream server can work.
# The other cases still run: KNOWN when upstream's end failed on exactly
# that, FAIL otherwise.
sockperf_case() {
  local s=$1 c=$2 mode=$3 name ours=0 srv msgs size=14 bw need
  shift 3
  name="sockperf $mode --tcp${*:+ $*} server $s, client $c"
  want "$name" || return 0
  [ "$s" = rspre ] && ours=$((ours + 1))
  [ "$c" = rspre ] && ours=$((ours + 1))
  local a=("$@") i
  for ((i = 0; i < ${#a[@]}; i++)); do [ "${a[i]}" = -m ] && size=${a[i + 1]}; done
  new_case
  rdma_mark
  srv=(--tcp -i "$RXE_IP" -p "$PORT")
  if [ "$s" = rspre-stock ]; then
    echo "T:$RXE_IP:$PORT" >"$CASE_DIR/feed"
    srv=(-f "$CASE_DIR/feed" -F poll)
  fi
  start_server "$s" sockperf server "${srv[@]}"
  run_client "$c" sockperf "$mode" --tcp -i "$RXE_IP" -p "$PORT" -t 2 "$@"
  # the server runs until told: still there, then stopped
  if [ -n "$SPROG" ] && kill -0 "$SPROG" 2>/dev/null; then
    if [ "$s" = rspre ]; then kill -INT "$SPROG"; else kill -KILL "$SPROG"; fi
    quiet reap_server
    [ "$S_HUNG" = 1 ] || S_RC=0   # stopped as told; its status says nothing more
    verdict
  else
    quiet reap_server
    verdict
    WHY+="${WHY:+; }server gone before its client finished (exit $(rc_words "$S_RC"))"
  fi
  cat "$CASE_DIR/c.err" >>"$CASE_DIR/c.out"
  local eisconn='sendto() Failed .*errno=106 Transport endpoint is already connected' f
  for f in c s; do
    local who=client end=$c
    [ $f = c ] || who=server end=$s
    if [ -n "$WHY" ] && [ "$end" = rspre-stock ] && cat "$CASE_DIR/$f".* | grep -aq "$eisconn"; then
      known "$name" "upstream's rsendto: EISCONN for a stream socket given an address; the $who: $(cat "$CASE_DIR/$f".* | grep -ao 'sendto() Failed.*' | head -n1)"
      return 0
    fi
  done
  msgs=$(sp_field ReceivedMessages "$CASE_DIR/c.out")
  if [ "$mode" = ping-pong ]; then
    [ "${msgs:-0}" -gt 0 ] 2>/dev/null || WHY+="${WHY:+; }no round trips reported"
    grep -aqE 'dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0' "$CASE_DIR/c.out" ||
      WHY+="${WHY:+; }sockperf counted lost, duplicated or reordered messages (or no such line)"
    need=$((2 * ${msgs:-0}))
    bw="${msgs:-0} round trips, avg-latency $(sp_field avg-latency "$CASE_DIR/c.out") usec"
  else
    msgs=$(grep -ao 'Total of [0-9]* messages sent' "$CASE_DIR/c.out" | tail -n1 | awk '{print $3}')
    [ "${msgs:-0}" -gt 0 ] 2>/dev/null || WHY+="${WHY:+; }no messages sent"
    bw=$(grep -ao 'BandWidth is [0-9.]* MBps' "$CASE_DIR/c.out" | tail -n1)
    [ -n "$bw" ] || WHY+="${WHY:+; }no bandwidth figure"
    need=$(mtu_pkts $((${msgs:-0} * size)))
    bw="${msgs:-0} messages of $size B, $bw"
  fi
  rdma_check sockperf "$ours" "$need"
  report "$name"
  if [ -z "$WHY" ]; then echo "    $bw; $PROOF"; else
    grep -a 'sockperf' "$CASE_DIR/c.out" | tail -n 6 | sed 's/^/    client: /'
    cat "$CASE_DIR/s.err" "$CASE_DIR/s.out" | grep -a 'sockperf' | tail -n 6 | sed 's/^/    server: /'
  fi
}

T_ALL=$SECONDS
echo "== iperf3 and sockperf on $RXE_DEV ($RXE_IP): ours = $BUILD/.libs/librspreload.so, upstream's = $STOCK_RSPRELOAD"
[ -f "$BUILD/.libs/librspreload.so" ] || fail "setup" "no librspreload.so: build first"
[ -f "$STOCK_RSPRELOAD" ] || fail "setup" "no upstream librspreload at $STOCK_RSPRELOAD"
for p in iperf3 sockperf; do command -v $p >/dev/null || fail "setup" "no $p in the guest (rxe-vm.sh PKGS)"; done

section "iperf3"
iperf_case rspre-stock rspre-stock   # the control: upstream on both ends
for pair in "rspre rspre" "rspre-stock rspre" "rspre rspre-stock"; do
  # shellcheck disable=SC2086  # two words: server and client
  iperf_case $pair
  # shellcheck disable=SC2086
  iperf_case $pair -R
done

section "sockperf"
for pair in "rspre rspre" "rspre-stock rspre" "rspre rspre-stock"; do
  # shellcheck disable=SC2086
  sockperf_case $pair ping-pong
  # shellcheck disable=SC2086
  sockperf_case $pair throughput -m 16384
done

[ "$n_filtered" = 0 ] || echo "($n_filtered cases not selected by RXE_ONLY)"
section
echo "apps: $((SECONDS - T_ALL)) s"
echo "$n_pass passed, $n_fail failed, $n_known known (upstream's limits, above), $n_skip skipped"
[ "$n_fail" = 0 ]

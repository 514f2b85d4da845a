#!/bin/bash
# The 64 B UDP receive rate of libvma.so's recvfrom_zcopy (+ free_packets)
# against recvfrom through the same offload and against the kernel's
# recvfrom, in the same run: bench/udp_blast.c in namespace B sends 64 B
# datagrams over veth (B's tx checksum offload off) for RATE_TIME + 0.5
# seconds at a receiver in A that busy-loops (MSG_DONTWAIT) for RATE_TIME
# seconds from its first datagram with one of
#   kernel   recv on a plain socket (no preload)
#   copy     recv under LD_PRELOAD=libvma.so (offloaded: rings, copied)
#   zcopy    recvfrom_zcopy + free_packets under the preload
# (tests/ext/vma_zcopy_prog.c, built against the installed header), the
# three alternating RATE_RUNS times. RATE_SENDER picks the sender:
#   packet   prebuilt Ethernet/IPv4/UDP frames, checksums computed, 64
#            per sendmmsg on an AF_PACKET socket with PACKET_QDISC_BYPASS:
#            no UDP/IP stack on the sending side (about 0.5-1 M/s here:
#            the offloaded receivers take nearly all of it)
#   mmsg     one kernel UDP socket, 64 datagrams per sendmmsg
#   send     one kernel UDP socket, send() in a loop (the earlier sender)
#   xdp      (default) the packet sender's frame sent by the kernel's
#            XDP live-frames test run (XDP_TX out of B's veth, no socket,
#            no skb: about 2 M/s, twice the packet sender's), so no
#            receiver is bound by it: each is measured overloaded, as a
#            market-data burst would; A's veth then runs NAPI (GRO on for
#            the kernel's rounds), threaded and on CPU 0 with RATE_PIN=2
#            in every round, the kernel's too
# RATE_MODES lists the receivers to run (default: all three, in that
# order); copy@N or zcopy@N runs that receiver with VMA_RX_WRE=N, to set
# ring depths side by side (e.g. "kernel copy copy@1024"). RATE_PIN=2 (the default) pins the receiver to CPU 0 and the
# sender to CPU 1 and moves A's share of the kernel's receive work to CPU
# 0, where a NIC's interrupt would put it (see below); RATE_PIN=1 pins the
# two programs only, RATE_PIN=0 nothing: a veth then runs the receive's
# kernel part on the sender's CPU, so the sending core bounds every
# receiver (docs/performance.md, "Known limits") and the ratios measure
# it.
# Prints each run's received and sent rates and where the rest went (the
# kernel run: A's UDP receive-buffer and checksum errors; a preloaded run:
# its rings' XDP redirected/dropped and malformed counts, from vma_stats,
# counted to the process's exit, so the 0.5 s the sender outlives the
# receiver; every run: the veth's drops),
# and the best of each receiver as a ratio to the kernel's (marked
# "sender-bound" when that round took 90% or more of what was sent: the
# ratio is then a floor set by the sender). Each preloaded
# run must log its rings ("UDP offloaded on", their sizes, from VMA_RX_WRE
# and VMA_TX_WRE, shown at the end) and have dropped no frame as
# malformed, zcopy's must have copied nothing, else the row is marked.
# The sender starts once the receiver is ready, however long it takes
# (rows marked NOT READY: it died first; NO REPORT: it never reported;
# SENT BEFORE READY: datagrams reached its timing calls).
# "busy": the share of the receiver's time not spent in calls that found
# nothing (the cost of such a call measured before the sender starts);
# below 100%, the sender was the limit, and "own" (received per busy
# second) roughly estimates the receiver's own limit (noisy: the cost of
# an empty call varies).
#
#   cd build && sudo bash ../bench/vma_zcopy.sh      (root: namespaces, XDP)
set -u
name=vma_zcopy.sh
TIME=${RATE_TIME:-3}
RUNS=${RATE_RUNS:-3}
SENDER=${RATE_SENDER:-xdp}
MODES=${RATE_MODES:-kernel copy zcopy}
PIN=${RATE_PIN:-2}
A=ss-bza-$$ Z=ss-bzb-$$ IPA=10.218.0.1 IPB=10.218.0.2 PORT=11311
# Root and tools checked, $T, $LIB, clean-up and vma_pair (exit 77: skipped).
top_builddir=$(pwd) . "$(dirname "$0")/../tests/ext/vma_pair.sh"
here=$(cd "$(dirname "$0")" && pwd)
make -s -C "$B" install-mellanoxincludeHEADERS DESTDIR="$T/root" >/dev/null 2>&1 ||
  { echo "$name: installing the header failed" >&2; exit 2; }
HDR=$(find "$T/root" -path '*/mellanox/vma_extra.h' -type f)
"$CC" -std=gnu11 -O2 -I"${HDR%/mellanox/vma_extra.h}" "$here/../tests/ext/vma_zcopy_prog.c" \
  -o "$T/prog" -lpthread || { echo "$name: the program did not build" >&2; exit 2; }
"$CC" -std=gnu11 -O2 "$here/udp_blast.c" -o "$T/blast" ||
  { echo "$name: the sender did not build" >&2; exit 2; }
vma_pair "$A" "$Z" za zb "$IPA/24" "$IPB/24"
mkdir -p "$T/stats" && export VMA_STATS_SHMEM_DIR=$T/stats VMA_CONFIG_FILE=/dev/null
send_how=("$SENDER")
case $SENDER in packet|xdp) send_how+=(zb "$(ip netns exec "$A" cat /sys/class/net/za/address)") ;; esac
# The xdp sender's frames reach A only through its veth's NAPI: GRO gives
# the kernel's rounds one (XDP gives the preloaded rounds theirs).
if [ "$SENDER" = xdp ]; then
  ip netns exec "$A" ethtool -K za gro on >/dev/null || { echo "$name: RATE_SENDER=xdp: no GRO on za" >&2; exit 2; }
fi
rx_cpu=() tx_cpu=()
[ "$PIN" != 0 ] && rx_cpu=(taskset -c 0) tx_cpu=(taskset -c 1)
# RATE_PIN=2: A's share of the kernel's receive work on the receiver's CPU
# too, as a NIC's interrupt would put it (RPS for the kernel's stack; the
# veth's NAPI threaded and pinned for XDP), the sender's CPU only sending.
# The NAPI thread stays SCHED_OTHER unless RATE_NAPI_PRIO=N makes it
# SCHED_FIFO N (chrt). Neither is the kernel's own behaviour: RPS's
# softirq preempts the kernel receiver at once but gives way to
# ksoftirqd (SCHED_OTHER) under sustained load. SCHED_OTHER shares the
# CPU with a busy-polling receiver in slices, and the veth's own
# 256-entry ring in front of XDP overflows meanwhile (B's "veth drops
# tx"); SCHED_FIFO never gives way, so at high rates it starves the
# receiver and the AF_XDP ring overflows instead (receive livelock: the
# ring-depth row of docs/performance.md).
if [ "$PIN" = 2 ]; then
  ip netns exec "$A" sh -c 'echo 1 > /sys/class/net/za/queues/rx-0/rps_cpus' ||
    { echo "$name: RATE_PIN=2: no RPS" >&2; exit 2; }
fi
# A's kernel UDP counters: "RcvbufErrors InCsumErrors"
udp_errors() {
  ip netns exec "$A" awk '$1 == "Udp:" && $2 !~ /^[0-9]+$/ { for (i = 2; i <= NF; i++) c[$i] = i }
    $1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $c["RcvbufErrors"], $c["InCsumErrors"] }' /proc/net/snmp
}

# The veth's drops, B's transmit side and A's receive side (the second
# counts XDP's: a full AF_XDP ring): "TX RX"
veth_drops() {
  echo "$(ip netns exec "$Z" cat /sys/class/net/zb/statistics/tx_dropped)" \
    "$(ip netns exec "$A" cat /sys/class/net/za/statistics/rx_dropped)"
}

# one MODE -> "received/s sent/s where-the-rest-went note"
one() {
  local mode=${1%@*} pre=() how=copy
  [ "$mode" = kernel ] || pre=(env LD_PRELOAD="$LIB" VMA_TRACELEVEL=info)
  [ "$mode" = kernel ] || [ "$1" = "${1#*@}" ] || pre+=(VMA_RX_WRE="${1#*@}")
  [ "$mode" = zcopy ] && how=zcopy
  PORT=$((PORT + 1))
  local e0 e1 rb0 cs0 rb1 cs1 v0
  e0=$(udp_errors)
  v0=$(veth_drops)
  ip netns exec "$A" "${rx_cpu[@]}" "${pre[@]}" timeout $((TIME + 20)) "$T/prog" rate $IPA $PORT "$TIME" $how \
    >"$T/rx" 2>"$T/rx.err" &
  local rpid=$!
  # The sender starts only once the receiver is ready (its timing calls
  # done), however long that takes: bounded by the receiver's timeout.
  while ! grep -qs '^ready' "$T/rx" && kill -0 $rpid 2>/dev/null; do sleep 0.05; done
  # The veth has NAPI once XDP is on (or GRO, for the xdp sender).
  if [ "$PIN" = 2 ] && { [ "$mode" != kernel ] || [ "$SENDER" = xdp ]; }; then
    ip netns exec "$A" sh -c 'echo 1 > /sys/class/net/za/threaded' 2>/dev/null
    for p in $(pgrep '^napi/za-'); do
      taskset -pc 0 "$p" >/dev/null
      [ "${RATE_NAPI_PRIO:-0}" = 0 ] || chrt -f -p "${RATE_NAPI_PRIO:-0}" "$p"
    done
  fi
  ip netns exec "$Z" "${tx_cpu[@]}" timeout $((TIME + 20)) "$T/blast" $IPA $PORT "$TIME.5" "${send_how[@]}" \
    >"$T/tx" 2>&1
  # The receiver lingers 4 s after its report: its stats block, refreshed
  # once a second, is read after the sender stopped.
  local got sent note="" rest
  if [ "$mode" = kernel ]; then
    wait $rpid
    e1=$(udp_errors)
    read -r rb0 cs0 <<<"$e0"
    read -r rb1 cs1 <<<"$e1"
    rest="rcvbuf errors $((rb1 - rb0)), csum errors $((cs1 - cs0))"
    [ $((cs1 - cs0)) = 0 ] || note="BAD CHECKSUMS"
  else
    sleep 1.2
    # "XDP: R / D [redirected/dropped], malformed dropped M"
    rest=$(block "$(pgrep -n -f "^$T/prog rate")" | sed -n 's/^XDP: \([0-9]*\) \/ \([0-9]*\) .*malformed dropped \([0-9]*\).*/xdp redirected \1, dropped \2, malformed \3/p' | head -1)
    wait $rpid
    case $rest in
      *"malformed 0") ;;
      "") note="NO STATS" ;;
      *) note="MALFORMED" ;;
    esac
  fi
  got=$(sed -n 's/.*: \([0-9]*\)\/s.*/\1/p' "$T/rx")
  # busy: the share of the receiver's time not spent in calls that found
  # nothing; own: what it received per busy second (its own limit, roughly)
  local busy own
  read -r busy own < <(awk '/^received/ { gsub(/[(),]/, ""); n = $2; s = $4; e = $9; p = $11
    b = s - e * p / 1e9; if (b < 0.01 * s) b = 0.01 * s
    printf "%.0f%% %.0f\n", 100 * b / s, n / b }' "$T/rx")
  local tx0 rx0 tx1 rx1
  read -r tx0 rx0 <<<"$v0"
  read -r tx1 rx1 < <(veth_drops)
  rest="busy ${busy:-?}, own ${own:-?}/s; $rest; veth drops tx $((tx1 - tx0)), rx $((rx1 - rx0))"
  sent=$(sed -n 's/.*: \([0-9]*\)\/s.*/\1/p' "$T/tx")
  if [ "$mode" != kernel ] && ! grep -q "UDP offloaded on" "$T/rx.err"; then note="$note NOT OFFLOADED"; fi
  [ "$mode" = kernel ] || sed -n 's/.*UDP offloaded on [^;]*; each: //p' "$T/rx.err" | head -1 >>"$T/rings"
  if [ "$mode" = zcopy ] && ! grep -q "(0 copied" "$T/rx"; then note="$note COPIED"; fi
  if ! grep -q "^ready" "$T/rx"; then note="$note NOT READY"
  elif ! grep -q "^received" "$T/rx"; then note="$note NO REPORT"
  elif ! grep -q " 0 before ready)" "$T/rx"; then note="$note SENT BEFORE READY"; fi
  echo "${got:-0}|${sent:-0}|$rest|$note"
}

declare -A best best_sent
napi=""
[ "$PIN" = 2 ] && napi=", NAPI thread SCHED_FIFO ${RATE_NAPI_PRIO:-0}"
[ "$PIN" = 2 ] && [ "${RATE_NAPI_PRIO:-0}" = 0 ] && napi=", NAPI thread SCHED_OTHER"
echo "sender: $SENDER${rx_cpu:+, pinned (receiver CPU 0, sender CPU 1; RATE_PIN=$PIN$napi)}; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "run  receiver  received/s    sent/s  receiver busy, own limit; the rest; note"
for r in $(seq "$RUNS"); do
  for mode in $MODES; do
    IFS='|' read -r got sent rest note < <(one $mode)
    printf '%3s  %-8s  %10s  %8s  %s; %s\n' "$r" "$mode" "$got" "$sent" "$rest" "$note"
    [ "${best[$mode]:-0}" -ge "$got" ] || { best[$mode]=$got; best_sent[$mode]=$sent; }
  done
done
k=${best[kernel]:-0}
echo
[ -s "$T/rings" ] && echo "rings of the preloaded runs (VMA_RX_WRE, VMA_TX_WRE): $(sort -u "$T/rings" | paste -sd'|')"
echo "best of $RUNS (receive rate, ratio to the kernel's); load: $(cut -d' ' -f1-3 /proc/loadavg):"
# A best round that took 90% or more of what was sent was bound by the
# sender: its ratio is a floor, not the receiver's.
for mode in $MODES; do
  awk -v m=$mode -v g="${best[$mode]:-0}" -v k="$k" -v s="${best_sent[$mode]:-0}" \
    'BEGIN { printf "  %-8s %10d/s  %.2fx", m, g, k ? g / k : 0
      if (s > 0 && g >= 0.9 * s) printf "  (sender-bound: %.0f%% of the %d/s sent)", 100 * g / s, s
      printf "\n" }'
done

#!/bin/bash
# Our TCP against Linux's over a lossy, reordering wire (docs/status.md,
# issue 29): namespaces A (libvma.so), M (tests/ext/lossy_wire.py copying
# frames between its two veth ends, dropping and holding back TCP
# segments at random: this kernel has no netem) and B (Linux's TCP), made
# here and removed on exit. Needs root (exit 77 otherwise). Each case
# moves WIRE_MIB MiB (default 100) each way at once on one connection
# (tests/ext/both_ways.py), every byte checked:
#   v4-client: our client, Linux's server; 1% loss, 1% reordering each way
#   v6-server: Linux's client, our server; 5% loss, 2% reordering each way
#   v4-reorder: Linux's client, our server; 3% reordering, no loss
# A case passes when both ends read the other's bytes intact, A's kernel
# moved fewer than 5 TCP segments meanwhile (the connection was ours), the
# wire dropped and held back segments both ways as told, and our
# statistics (VMA_STATS_FILE) count SACK recoveries where it dropped,
# with retransmission timeouts under a tenth of them.
# WIRE_REFERENCE=CC runs each case again with A on its kernel's TCP
# (congestion control CC: reno is libvma.so's default, NewReno), printing
# the seconds, retransmissions, timeouts and SACK recoveries A's kernel
# counted, for comparison; nothing is asserted on them.
# Its minutes: 25-45 s (the wire is a Python program; 5% loss slows a
# loss-based sender). An end that has not finished in WIRE_END_S s (90)
# ends itself (A's statistics still written at its exit), and the
# case prints B's kernel's last view of the connection (ss, sampled every
# 2 s) and our connection's state: a stall shows where it stood.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_tcp_wire.sh
set -u
name=vma_tcp_wire.sh
A=ss-wa-$$ Z=ss-wb-$$ M=ss-wm-$$
IP4=10.226.0.1 IP4B=10.226.0.2 IP6=fd00:226::1 IP6B=fd00:226::2
MIB=${WIRE_MIB:-100} END_S=${WIRE_END_S:-90}
. "$(dirname "$0")/vma_pair.sh"
trap 'ip netns del "$M" 2>/dev/null; cleanup' EXIT
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || skip "python3 not found"
export PYTHONDONTWRITEBYTECODE=1 VMA_STATS_SHMEM_DIR= VMA_CONFIG_FILE=/dev/null

# A -- va | xa -- M -- xb | vb -- B; every end's offloads off, so frames
# are no longer than the MTU (A's GSO packets cut at va).
for ns in "$A" "$Z" "$M"; do ip netns add "$ns" || skip "ip netns add failed"; done
ip -n "$A" link add name va type veth peer name xa netns "$M" &&
  ip -n "$Z" link add name vb type veth peer name xb netns "$M" || skip "no veth pair"
for d in "$A va" "$M xa" "$M xb" "$Z vb"; do
  set -- $d
  ip netns exec "$1" ethtool -K "$2" tx off tso off gso off gro off >/dev/null 2>&1 ||
    skip "ethtool -K $2 failed"
  ip -n "$1" link set "$2" up && ip -n "$1" link set lo up || skip "configuring $2 failed"
done
pair_addr "$A" va "$IP4/24"
pair_addr "$A" va "$IP6/64"
pair_addr "$Z" vb "$IP4B/24"
pair_addr "$Z" vb "$IP6B/64"
mac_a=$(ip -n "$A" -br link show va | awk '{print $3}')
mac_b=$(ip -n "$Z" -br link show vb | awk '{print $3}')
for ip in $IP4B $IP6B; do ip -n "$A" neigh replace "$ip" lladdr "$mac_b" dev va nud permanent; done
for ip in $IP4 $IP6; do ip -n "$Z" neigh replace "$ip" lladdr "$mac_a" dev vb nud permanent; done
for _ in $(seq 50); do
  ip -n "$Z" link show vb | grep -q LOWER_UP && ip -n "$A" link show va | grep -q LOWER_UP && break
  sleep 0.1
done

# transfer OURS(client|server) ADDR PORT DROP REORDER PRELOAD: the two
# ends through the wire, A with PRELOAD in its environment; bad=1 when an
# end failed; A's kernel segments meanwhile in $segs.
transfer() {
  local ours=$1 addr=$2 port=$3 drop=$4 reorder=$5 preload=$6 theirs=server wire before
  [ "$ours" = server ] && theirs=client
  rm -f "$T"/sf.* "$T/a.out" "$T/b.out" "$T/wire" "$T/ss"
  ip netns exec "$M" python3 "$here/lossy_wire.py" xa xb "$drop" "$reorder" "$port" >"$T/wire" 2>&1 &
  wire=$!
  for _ in $(seq 50); do grep -q ready "$T/wire" && break; sleep 0.1; done
  before=$(kernel_tcp)
  local end=(timeout -k 5 $((END_S + 15)) python3 "$here/both_ways.py")
  local a_cmd=(ip netns exec "$A" env "$preload" SLIPSTREAM_VMA_TCP=1
    VMA_STATS_FILE="$T/sf.%d" "${end[@]}" "$ours" "$addr" "$port" "$MIB" "$port" "$END_S")
  local b_cmd=(ip netns exec "$Z" "${end[@]}" "$theirs" "$addr" "$port" "$MIB" "$port" "$END_S")
  # B's kernel's view of the connection, for a stall.
  while :; do
    ip netns exec "$Z" ss -tni "( sport = :$port or dport = :$port )" >"$T/ss.new" 2>&1 &&
      mv "$T/ss.new" "$T/ss"
    sleep 2
  done &
  local sampler=$!
  if [ "$ours" = server ]; then
    "${a_cmd[@]}" >"$T/a.out" 2>&1 &
    local srv=$!
    for _ in $(seq 100); do grep -q listening "$T/a.out" && break; sleep 0.1; done
    "${b_cmd[@]}" >"$T/b.out" 2>&1 || bad=1
    wait $srv || bad=1
  else
    "${b_cmd[@]}" >"$T/b.out" 2>&1 &
    local srv=$!
    for _ in $(seq 100); do grep -q listening "$T/b.out" && break; sleep 0.1; done
    "${a_cmd[@]}" >"$T/a.out" 2>&1 || bad=1
    wait $srv || bad=1
  fi
  segs=$(($(kernel_tcp) - before))
  kill -TERM $wire $sampler
  wait $wire $sampler 2>/dev/null
  echo "  A ($ours): $(grep -E 'sent|Error|error|timed out' "$T/a.out" | tail -1)"
  echo "  B (Linux, $theirs): $(grep -E 'sent|Error|error|timed out' "$T/b.out" | tail -1)"
  sed 's/^/  wire: /' "$T/wire" | grep forwarded
}

# run_case LABEL OURS(client|server) ADDR PORT DROP REORDER
run_case() {
  local label=$1 ours=$2 addr=$3 port=$4 drop=$5 reorder=$6 bad=0 segs sf
  transfer "$ours" "$addr" "$port" "$drop" "$reorder" LD_PRELOAD="$LIB"
  has "$T/a.out" " intact " && has "$T/b.out" " intact " || bad=1
  [ "$segs" -lt 5 ] || { echo "  A's kernel moved $segs TCP segments"; bad=1; }
  # Both ways, the wire did what it was told.
  awk -v d="$drop" -v r="$reorder" '/forwarded/ {
      if ((d > 0) != ($5 > 0) || (r > 0) != ($7 > 0)) bad = 1; n++ }
    END { exit (n == 2 && !bad) ? 0 : 1 }' "$T/wire" || { echo "  the wire did not do as told"; bad=1; }
  # Our connection's statistics: offloaded, and its loss recovery.
  sf=$(grep -l "^TCP loss:" "$T"/sf.* 2>/dev/null | head -1)
  if [ -z "$sf" ]; then
    echo "  no statistics with TCP lines"
    bad=1
  else
    grep -E "^- TCP|^TCP (loss|out of order)" "$sf" | sed 's/^/  ours: /'
    has "$sf" "^- TCP, Offloaded" || bad=1
    # Where the wire dropped: recoveries by SACK, a retransmission timeout
    # rare (a retransmission lost too).
    if [ "$drop" != 0 ]; then
      awk '/^TCP loss:/ { found = 1; if ($3 > 0 && $7 > 0 && 10 * $5 < $7) ok = 1 }
        END { exit ok ? 0 : 1 }' "$sf" || { echo "  not SACK's recoveries"; bad=1; }
    fi
  fi
  if [ "$bad" != 0 ]; then
    echo "  B's kernel's last view (ss -tni):"
    sed 's/^/    /' "$T/ss" 2>/dev/null
    [ -n "$sf" ] && grep -E "^TCP (state|rtt|window)" "$sf" | sed 's/^/  ours: /'
  fi
  check "$label: $MIB MiB each way at once, drop $drop and reorder $reorder each way: intact both ways, A's kernel moved $segs TCP segments" $bad
  [ -n "${WIRE_REFERENCE:-}" ] || return 0
  ip netns exec "$A" sysctl -qw net.ipv4.tcp_congestion_control="$WIRE_REFERENCE" ||
    { echo "  reference: A's kernel refused $WIRE_REFERENCE"; return 0; }
  echo "  reference, A on its kernel's TCP ($WIRE_REFERENCE):"
  a_counts >"$T/before"
  bad=0
  transfer "$ours" "$addr" "$port" "$drop" "$reorder" LD_PRELOAD=
  a_counts | awk 'NR == FNR { b[$1] = $2; next } { printf "%s %d  ", $1, $2 - b[$1] }
    END { print "" }' "$T/before" - | sed 's/^/  A\x27s kernel: /'
}
# A's kernel counters the reference reports, absolute (nstat -s: no
# history file written).
a_counts() {
  ip netns exec "$A" nstat -asz TcpRetransSegs TcpExtTCPTimeouts TcpExtTCPSackRecovery |
    awk 'NR > 1 { print $1, $2 }'
}

cases=${WIRE_CASES:-v4-client v6-server v4-reorder}  # a subset, to look at one
for c in $cases; do
  case $c in
    v4-client) run_case v4-client client "$IP4B" 7301 0.01 0.01 ;;
    v6-server) run_case v6-server server "$IP6" 7302 0.05 0.02 ;;
    v4-reorder) run_case v4-reorder server "$IP4" 7303 0 0.03 ;;
    *) check "unknown case $c" 1 ;;
  esac
done

echo "$name: $fails failure(s)"
[ "$fails" = 0 ]

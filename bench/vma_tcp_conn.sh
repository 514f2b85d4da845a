#!/bin/bash
# New TCP connections a second under libvma.so (SLIPSTREAM_VMA_TCP=1)
# against the kernel, in the same run, across a veth pair between two
# namespaces this script makes and removes (no traffic leaves them):
# nginx in A serving a 4 KB file, wrk in B (one thread, CONNS connections,
# default 10, each asking with `Connection: close`: a connection per
# request) for WRK_TIME seconds (default 3); requests/s, A on the kernel
# and then under the preload, ROUNDS times in turn (default 3), medians
# and their ratio. Two rows: nginx as one process (master_process off),
# and nginx's master forking 2 workers (each on rings of its own joined
# to the master's, libvma(7)). A run under the preload whose A kernel moved
# 5 TCP segments or more is marked NOT-OFFLOADED. Each measurement takes
# a port of its own: the connections of earlier ones wait in TIME-WAIT on
# either side (wrk often closes before libvma.so's nginx does), and B
# reuses its ports in TIME-WAIT (tcp_tw_reuse).
# A third row (2 processors or more) pins nginx to CPU 0 and wrk to CPU 1
# and steers each veth end's receive to its own side's processor (RPS):
# over veth, a segment's receive otherwise runs inside its sender's call,
# so B's TCP for what A sends lands on A's processor when A's TCP is ours
# (the packet socket's send), and A's kernel TCP answers SYNs and ACKs
# inside wrk's sends. Between two hosts each side pays its own receive.
#
#   cd build && sudo bash ../bench/vma_tcp_conn.sh      (root: namespaces, XDP)
set -u
name=vma_tcp_conn.sh
ROUNDS=${ROUNDS:-3} TIME=${WRK_TIME:-3} CONNS=${CONNS:-10}
A=ss-bca-$$ Z=ss-bcb-$$ IPA=10.219.1.1 IPB=10.219.1.2
# Root and tools checked, $T, $LIB, clean-up, vma_pair and kernel_tcp
# (exit 77: skipped).
top_builddir=$(pwd) . "$(dirname "$0")/../tests/ext/vma_pair.sh"
. "$here/nginx_conf.sh"
for p in nginx wrk; do
  command -v $p >/dev/null || skip "$p not found"
done
vma_pair "$A" "$Z" va vb "$IPA/24" "$IPB/24"
ip netns exec "$Z" sysctl -qw net.ipv4.tcp_tw_reuse=1 || skip "net.ipv4.tcp_tw_reuse refused"
mac=$(ip -n "$Z" -br link show vb | awk '{print $3}')
ip -n "$A" neigh replace $IPB lladdr "$mac" dev va nud permanent
export VMA_STATS_SHMEM_DIR= VMA_CONFIG_FILE=/dev/null
mkdir -p "$T/www" && head -c 4096 /dev/urandom >"$T/www/f"
chmod -R a+rX "$T"
: >"$T/ports"

# One measurement, "REQUESTS/S NOTE": nginx in A with WORKERS (0: one
# process), on the kernel (ON 0) or offloaded (1).
# SPLIT 1: the third row's pinning (steer_receive set it up).
nginx_rate() {  # nginx_rate ON WORKERS [SPLIT]
  local on=$1 workers=$2 split=${3:-0} pre=() cli=() before v moved port
  [ "$on" = 1 ] && pre=(env LD_PRELOAD="$LIB" SLIPSTREAM_VMA_TCP=1)
  [ "$split" = 1 ] && pre=(taskset -c 0 "${pre[@]}") cli=(taskset -c 1)
  port=$((8090 + $(wc -l <"$T/ports")))
  echo $port >>"$T/ports"
  rm -rf "$T/ngx"
  nginx_conf "$T/ngx" $port "$T/www" "$IPA" "$workers"
  ip netns exec "$A" "${pre[@]}" nginx -e "$T/ngx/error.log" -c "$T/ngx/nginx.conf" -p "$T/ngx" \
    >/dev/null 2>&1 &
  local srv=$!
  for _ in $(seq 50); do ip netns exec "$A" ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
  before=$(kernel_tcp)
  v=$(ip netns exec "$Z" "${cli[@]}" timeout 60 wrk -t 1 -c "$CONNS" -d "${TIME}s" -H 'Connection: close' \
    "http://$IPA:$port/f" 2>/dev/null | awk '/^Requests\/sec/ {printf "%.0f", $2}')
  moved=$(($(kernel_tcp) - before))
  kill "$srv" 2>/dev/null
  wait "$srv" 2>/dev/null
  local note=ok
  [ "$on" = 1 ] && [ "$moved" -ge 5 ] && note=NOT-OFFLOADED
  echo "${v:-0} $note"
}
# RPS masks: each end's receive on its own side's processor.
steer_receive() {
  ip netns exec "$A" sh -c 'echo 1 >/sys/class/net/va/queues/rx-0/rps_cpus' 2>/dev/null &&
    ip netns exec "$Z" sh -c 'echo 2 >/sys/class/net/vb/queues/rx-0/rps_cpus' 2>/dev/null
}
median() { sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }

printf "TCP connections over veth (wrk in B, %s connections, Connection: close), %s rounds, medians\n" \
  "$CONNS" "$ROUNDS"
printf "%-34s %12s %12s %8s\n" "server in A" "kernel" "libvma.so" "ratio"
rows="0 2"
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  rows="$rows split"
else
  echo "$name: the pinned row needs 2 processors and taskset: left out"
fi
for row in $rows; do
  workers=$row split=0
  [ "$row" = split ] && workers=0 split=1
  if [ "$split" = 1 ] && ! steer_receive; then
    echo "$name: RPS refused (rps_cpus): the pinned row left out"
    continue
  fi
  : >"$T/k" && : >"$T/o"
  notes=""
  for _ in $(seq "$ROUNDS"); do
    read -r v n < <(nginx_rate 0 $workers $split) && echo "$v" >>"$T/k"
    read -r v n < <(nginx_rate 1 $workers $split) && echo "$v" >>"$T/o"
    [ "$n" = ok ] || notes=NOT-OFFLOADED
  done
  k=$(median <"$T/k") o=$(median <"$T/o")
  ratio=$(awk -v a="$o" -v b="$k" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')
  label="nginx, one process"
  [ "$workers" = 0 ] || label="nginx, master and $workers workers"
  [ "$split" = 0 ] || label="one process, each side pinned"
  printf "%-34s %12s %12s %8s  %s\n" "$label" "$k" "$o" "$ratio" "conn/s $notes"
done

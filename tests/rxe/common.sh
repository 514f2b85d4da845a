# shellcheck shell=bash disable=SC2034  # globals set here are read by the sourcing script
# Helpers for the rxe guest scripts that pit Debian's rdmacm-utils on the
# guest's own librdmacm ("stock") against the same programs on Slipstream's
# librsocket.so through LD_PRELOAD ("ours"); sourced by interop.sh and
# figures.sh, runs INSIDE the guest (tests/rxe/rxe-vm.sh).
#
# Globals: BUILD LIB OURS_PROV WORK PORT SPID C_RC S_RC S_HUNG CASE_DIR
# CASE_TIMES (where a case's time went, for the caller's report).
# Knobs: RXE_PROVIDER (provider for "ours", default verbs), RXE_CMD_TIMEOUT
# (seconds one client may take, default 60), RXE_KEEP=1 (keep $WORK).

rxe_init() {
  BUILD=$(cd "${1:?usage: $0 BUILD_DIR}" 2>/dev/null && pwd) || { echo "no build directory $1"; exit 2; }
  : "${RXE_IP:?run me inside tests/rxe/rxe-vm.sh}" "${RXE_DEV:=rxe0}"
  LIB=$BUILD/.libs/librsocket.so
  STOCK_RSPRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
  OURS_PROV=${RXE_PROVIDER:-verbs}
  CMD_T=${RXE_CMD_TIMEOUT:-60}
  GRACE=10   # seconds a server may take to exit after its client (TCG is slow)
  CNT=/sys/class/infiniband/$RXE_DEV/ports/1/hw_counters
  unset LD_PRELOAD SLIPSTREAM_PROVIDER
  WORK=$(mktemp -d /tmp/rxe-interop.XXXXXX)
  PORT=$((20000 + RANDOM % 20000))
  CASE_N=0
  CASE_DIR=
  CASE_TIMES="0 s"
  BG=()
  trap rxe_cleanup EXIT
}

rxe_cleanup() {
  local p
  [ ! -s "$WORK/jobs.err" ] ||
    grep -vE 'line [0-9]+: +[0-9]+ (Killed|Terminated) ' "$WORK/jobs.err" | sed 's/^/harness stderr: /'
  # BG holds timeout(1) pids: their programs first, then them
  for p in ${BG[@]+"${BG[@]}"}; do
    kill -0 "$p" 2>/dev/null || continue   # pkill costs ~0.4 s under TCG
    pkill -KILL -P "$p" 2>/dev/null
    kill -KILL "$p" 2>/dev/null
  done
  if [ "${RXE_KEEP:-0}" = 1 ]; then echo "outputs kept in $WORK"; else rm -rf "$WORK"; fi
}

# end_env END : sets ENV to the env(1) arguments of an end: "stock" or
# "ours" (rdmacm-utils on librdmacm or on our librsocket), "rspre",
# "rspre-stock" or "plain" (a sockets program under a preload or none).
end_env() {
  case $1 in
    stock) ENV=(-u LD_PRELOAD -u SLIPSTREAM_PROVIDER) ;;
    # (info: a failed connection says why, on stderr, for show_stderr)
    ours) ENV=(LD_PRELOAD="$LIB" LD_LIBRARY_PATH="$BUILD/.libs" SLIPSTREAM_PROVIDER="$OURS_PROV"
               SLIPSTREAM_LOG_LEVEL=info ${EXTRA_ENV[@]+"${EXTRA_ENV[@]}"}) ;;
    # librspreload (tests/rxe/preload.sh): ours, and upstream's from the
    # guest's librdmacm1; "plain" is the program on kernel sockets.
    rspre) ENV=(LD_PRELOAD="$BUILD/.libs/librspreload.so" LD_LIBRARY_PATH="$BUILD/.libs"
                SLIPSTREAM_PROVIDER="$OURS_PROV" SLIPSTREAM_LOG_LEVEL=info
                SLIPSTREAM_PRELOAD_STATS="$WORK/st" ${EXTRA_ENV[@]+"${EXTRA_ENV[@]}"}) ;;
    rspre-stock) ENV=(-u SLIPSTREAM_PROVIDER LD_PRELOAD="$STOCK_RSPRELOAD") ;;
    plain) ENV=(-u LD_PRELOAD -u SLIPSTREAM_PROVIDER) ;;
    *) echo "bad end $1"; exit 2 ;;
  esac
}
EXTRA_ENV=()

# new_case : fresh output folder and port (every case its own port: no
# TIME-WAIT or lingering rdma_cm id can answer for a previous one).
new_case() {
  CASE_N=$((CASE_N + 1))
  CASE_DIR=$WORK/$CASE_N
  mkdir -p "$CASE_DIR"
  PORT=$((PORT + 1))
}

count() { cat "$CNT/$1" 2>/dev/null || echo -1; }

# Proof that a preloaded program's connections ran on verbs (preload.sh,
# apps.sh): rdma_mark before the case forgets the last counts and reads
# rxe0's packet counters; rdma_check after it.
rdma_mark() {
  rm -f "$WORK"/st/rspreload.*
  PK_S0=$(count sent_pkts) PK_R0=$(count rcvd_pkts)
}

# stats_sum FIELD COMM : FIELD summed over the counts
# (SLIPSTREAM_PRELOAD_STATS) of this case's processes named COMM.
stats_sum() {
  awk -v f="$1" -v c="comm=$2 " 'index($0, c) {for (i = 1; i <= NF; i++) if ($i ~ "^" f "=") {sub(f "=", "", $i); n += $i}}
                 END {print n + 0}' "$WORK"/st/rspreload.* 2>/dev/null || echo 0
}

# rdma_check COMM OURS NEED : adds to WHY unless COMM's processes counted
# OURS connections on verbs and none on kernel TCP, and rxe0's sent_pkts
# and rcvd_pkts each grew by at least NEED since rdma_mark (a fall-back to
# kernel TCP moves neither). Sets PROOF (what was seen, one line).
rdma_check() {
  local v k s r
  v=$(stats_sum verbs "$1") k=$(stats_sum kernel_tcp "$1")
  s=$(($(count sent_pkts) - PK_S0)) r=$(($(count rcvd_pkts) - PK_R0))
  [ "$v" = "$2" ] && [ "$k" = 0 ] ||
    WHY+="${WHY:+; }our ends counted verbs=$v kernel_tcp=$k, want verbs=$2 kernel_tcp=0"
  [ "$s" -ge "$3" ] && [ "$r" -ge "$3" ] ||
    WHY+="${WHY:+; }rxe0 carried too little: sent_pkts +$s, rcvd_pkts +$r, need >= $3"
  PROOF="verbs=$v kernel_tcp=$k; rxe0 sent_pkts +$s, rcvd_pkts +$r (need >= $3)"
}

# mtu_pkts BYTES : the fewest packets BYTES take on rxe0 (its active_mtu).
mtu_pkts() {
  local mtu
  mtu=$(ibv_devinfo -d "$RXE_DEV" 2>/dev/null | awk '/active_mtu:/ {print $2; exit}')
  echo $(($1 / ${mtu:-1024}))
}

# listening PORT : something listens on PORT, over rdma_cm or kernel TCP.
listening() {
  rdma resource show cm_id 2>/dev/null | grep -qE "state LISTEN .*src-addr [^ ]*:$1( |$)" ||
    [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

# start_server END PROG ARGS... : in the background, output in
# $CASE_DIR/s.{out,err}; returns once it listens on $PORT, exits, or 10 s
# passed.  SPID is timeout(1)'s pid, SPROG the program's; S_LISTENING 1
# when the listener was seen.
start_server() {
  local i
  end_env "$1"
  shift
  timeout -k 5 $((CMD_T + 2 * GRACE)) env "${ENV[@]}" "$@" \
    >"$CASE_DIR/s.out" 2>"$CASE_DIR/s.err" </dev/null &
  SPID=$!
  BG+=("$SPID")
  S_LISTENING=0
  for i in $(seq 100); do
    if listening "$PORT"; then S_LISTENING=1; break; fi
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.1
  done
  SPROG=$(pgrep -P "$SPID" | head -n1)
}

# run_client END PROG ARGS... : foreground under timeout; when the server
# was not seen listening, retried while refused and the server still runs
# (it may listen where we cannot see, or later).
# Sets C_RC (124 or 137: hung).
run_client() {
  local tries=0
  end_env "$1"
  shift
  : >"$CASE_DIR/c.err"
  while :; do
    # Just before a hung client is killed: what the accepting side's TCP
    # socket holds unread, twice a second apart (see stranded_bytes).
    (sleep $((CMD_T - 3)) && tcp_recvq "$PORT" >"$CASE_DIR/recvq.1" && sleep 1 &&
      tcp_recvq "$PORT" >"$CASE_DIR/recvq.2") 2>/dev/null &
    local watch=$!
    timeout -k 5 "$CMD_T" env "${ENV[@]}" "$@" >"$CASE_DIR/c.out" 2>"$CASE_DIR/c.err.1" </dev/null
    C_RC=$?
    kill "$watch" 2>/dev/null
    quiet wait "$watch"
    cat "$CASE_DIR/c.err.1" >>"$CASE_DIR/c.err"
    if [ $C_RC != 0 ] && [ $S_LISTENING = 0 ] && [ $tries -lt 10 ] && kill -0 "$SPID" 2>/dev/null &&
       grep -qi 'refused' "$CASE_DIR/c.err.1" "$CASE_DIR/c.out"; then
      tries=$((tries + 1))
      echo "(harness: refused, retry $tries)" >>"$CASE_DIR/c.err"
      sleep 0.3
      continue
    fi
    return 0
  done
}

# tcp_recvq PORT : Recv-Q of the established kernel TCP socket whose local
# port is PORT (an iWARP device's own socket on the accepting side), or
# nothing.
tcp_recvq() {
  ss -Htn state established "( sport = :$1 )" 2>/dev/null | awk 'NR == 1 {print $1}'
}

# stranded_bytes : after a hung client, the bytes siw left unread in the
# accepting side's socket (non-zero and unchanged over a second, while
# nothing moved), else empty. siw's accept sends the MPA reply before it
# takes over its TCP socket, and bytes arriving in between stay there
# until more bytes come: a connecting side whose first messages land
# there (upstream's, which has no nudge; docs/status.md) and then waits
# for an answer deadlocks with its peer. The kernel's doing, not ours:
# neither end's library ever reads that socket. Only on siw with our ends
# on verbs (with RXE_PROVIDER=tcp the socket on that port is our own).
stranded_bytes() {
  local a b
  [[ $RXE_DEV == siw* ]] && [ "$OURS_PROV" = verbs ] || return 0
  a=$(cat "$CASE_DIR/recvq.1" 2>/dev/null) b=$(cat "$CASE_DIR/recvq.2" 2>/dev/null)
  case $C_RC in 124|137) ;; *) return 0 ;; esac
  [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" -gt 0 ] 2>/dev/null && echo "$a"
}

# reap_server : wait for the server (GRACE s, 2 s after a failed client),
# kill it if still there.  Sets S_RC and S_HUNG.
reap_server() {
  local i n=$((GRACE * 10))
  [ "$C_RC" = 0 ] || n=20
  S_HUNG=0
  for ((i = 0; i < n; i++)); do
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$SPID" 2>/dev/null; then
    S_HUNG=1
    kill -KILL "$SPID" "$SPROG" 2>/dev/null
  fi
  wait "$SPID" 2>/dev/null
  S_RC=$?
}

# pair SRV_END CLI_END PROG ADDR ARGS... : one server/client run of rstream
# or riostream (-b/-s ADDR -p PORT ARGS).
pair() {
  local s=$1 c=$2 prog=$3 addr=$4
  shift 4
  local t0 t1 t2
  new_case
  t0=$EPOCHREALTIME
  start_server "$s" "$prog" -b "$addr" -p "$PORT" "$@"
  t1=$EPOCHREALTIME
  run_client "$c" "$prog" -s "$addr" -p "$PORT" "$@"
  t2=$EPOCHREALTIME
  quiet reap_server
  # where the time went: "start S, client C, server lag L" (seconds)
  CASE_TIMES=$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$EPOCHREALTIME" \
    'BEGIN { printf "%.1f s (server start %.1f, client %.1f, server exit lag %.1f)", d - a, b - a, c - b, d - c }')
}

# quiet CMD... : bash reports a background job killed by a signal ("line
# N: PID Killed ...") on its stderr when it reaps it; such reports go to
# $WORK/jobs.err, anything else there is shown at exit by rxe_cleanup.
quiet() { "$@" 2>>"$WORK/jobs.err"; }

# rc_words RC : rstream/riostream exit -1 (255) on errors, but rpoll's
# revents under -T a/n, and 128+N on signal N.
rc_words() {
  case $1 in
    8) echo "$1 (rpoll POLLERR)" ;; 16) echo "$1 (rpoll POLLHUP)" ;;
    24) echo "$1 (rpoll POLLERR|POLLHUP)" ;; 134) echo "$1 (SIGABRT)" ;;
    139) echo "$1 (SIGSEGV)" ;; *) echo "$1" ;;
  esac
}

# What verdict adds when stranded_bytes found some (interop.sh retries it).
STRANDED="siw left bytes unread in the accepting side's TCP socket"

# verdict : after pair, WHY holds the failure reasons ("" = pass).
verdict() {
  WHY=
  case $C_RC in
    0) ;;
    124|137)
      WHY+="client hung (killed after ${CMD_T}s); "
      local n
      n=$(stranded_bytes)
      [ -z "$n" ] || WHY+="$STRANDED: $n bytes; " ;;
    *) WHY+="client exit $(rc_words "$C_RC"); " ;;
  esac
  if [ "$S_HUNG" = 1 ]; then
    if [ "$C_RC" = 0 ]; then WHY+="server still running ${GRACE}s after its client (killed); "
    else WHY+="server left waiting (killed); "; fi
  elif [ "$S_RC" = 124 ] || [ "$S_RC" = 137 ]; then
    WHY+="server hung (killed by timeout); "
  elif [ "$S_RC" != 0 ]; then
    WHY+="server exit $(rc_words "$S_RC"); "
  fi
  if grep -qi 'verification failed' "$CASE_DIR"/*.out "$CASE_DIR"/*.err; then
    WHY+="$(grep -hi 'verification failed' "$CASE_DIR"/*.out "$CASE_DIR"/*.err | head -n1); "
  fi
  WHY=${WHY%; }
}

# show_stderr : the last lines each end wrote, indented under a FAIL line.
show_stderr() {
  local f who
  [ -n "$CASE_DIR" ] || return 0
  for f in c s; do
    who=client
    [ $f = c ] || who=server
    [ -s "$CASE_DIR/$f.err" ] && tail -n 3 "$CASE_DIR/$f.err" | sed "s/^/    $who stderr: /"
  done
  # The device's own account (siw reports a connection it terminated).
  dmesg 2>/dev/null | grep -iE 'siw|rxe|infiniband|rdma' | tail -n 5 | sed 's/^/    kernel: /'
  return 0
}

# perf_line FILE : rstream/riostream's result line (name bytes xfers iters
# total time Gb/sec usec/xfer) from FILE, empty when there is none.
perf_line() { awk '$1 == "custom" && NF == 8' "$1" | tail -n1; }

# Case bookkeeping of the guest scripts: PASS/FAIL/SKIP/KNOWN lines, their
# counts, RXE_ONLY filtering (ONLY) and timed sections.
ONLY=${RXE_ONLY:-}
n_pass=0 n_fail=0 n_skip=0 n_known=0 n_filtered=0

# want NAME : false (and counted) when RXE_ONLY filters the case out.
want() {
  [ -z "$ONLY" ] || echo "$1" | grep -qE -- "$ONLY" && return 0
  n_filtered=$((n_filtered + 1))
  return 1
}
pass() { echo "PASS $1"; n_pass=$((n_pass + 1)); }
fail() { echo "FAIL $1 ($2)"; n_fail=$((n_fail + 1)); show_stderr; }
skip() { echo "SKIP $1 ($2)"; n_skip=$((n_skip + 1)); }
# known NAME WHY : a failure documented as open (docs/status.md): neither
# passed nor failed, counted and printed with its stderr.
known() { echo "KNOWN $1 ($2)"; n_known=$((n_known + 1)); show_stderr; }
report() {
  if [ -z "$WHY" ]; then pass "$1"; else fail "$1" "$WHY"; fi
  echo "${CASE_TIMES%% *} $1: $CASE_TIMES" >>"$WORK/times"
}
T_SEC=$SECONDS SEC=
# section [TITLE] : close the running section (its time), open TITLE.
section() {
  [ -z "$SEC" ] || echo "-- $SEC: $((SECONDS - T_SEC)) s"
  SEC=${1:-} T_SEC=$SECONDS
  [ -z "$SEC" ] || echo "== $SEC"
}


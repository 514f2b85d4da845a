# shellcheck shell=bash
# Helpers shared by the external-program tests in tests/ext/ (sourced by
# rstream.sh, riostream.sh, rcopy.sh and netns.sh; not a test by itself).
#
# The programs come from Debian's rdmacm-utils and run on Slipstream's
# librsocket.so through LD_PRELOAD (both ends).  The library is found in the
# build directory: $top_builddir when automake's test environment sets it,
# else the current directory (automake runs tests from the build directory).
#
# Knobs (environment):
#   EXT_TIMEOUT    seconds one client command may take (default 20)
#   EXT_GRACE      seconds a server may take to exit after its client (5)
#   EXT_PORT_BASE  first TCP port to try (default: random in 17000..31900)
#   EXT_KEEP=1     keep the scratch directory with every command's output
#   EXT_VERBOSE=1  print each command before running it
#   EXT_GDB=1      save gdb stacks of a hung client or server
#
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
#
# Globals the helpers set: BUILDDIR LIB TMPD PORT CASE_DIR SPID C_RC (client
# exit code) S_RC (server exit code) SRV_HUNG WHY (failure reasons, empty
# for a pass); counters n_pass n_fail n_skip.

ext_name=${0##*/}
n_pass=0
n_fail=0
n_skip=0
n_sanity_fail=0
EXT_TIMEOUT=${EXT_TIMEOUT:-20}
EXT_GRACE=${EXT_GRACE:-5}
# Largest file any program may write (KiB; ulimit -f): bounds the output of
# a program that loops on an error (rcopy's server can), and rcopy copies.
EXT_FSIZE_KB=${EXT_FSIZE_KB:-65536}
# Hard limit for a background server (rcopy.sh raises it: one server there
# serves every case).
SRV_TIMEOUT=$((EXT_TIMEOUT * 3))
ext_pids=()
ext_case=0
ext_port_next=${EXT_PORT_BASE:-$((17000 + (RANDOM % 150) * 100))}
# Command prefixes for the server and the client (netns.sh sets them to
# "ip netns exec NS"), and the env(1) arguments both ends run with.
PFX_S=()
PFX_C=()
RUN_ENV=()
TMPD=

ext_hard_error() {
  echo "ERROR: $ext_name: $*"
  exit 99
}

ext_skip_all() {
  echo "SKIP: $ext_name: $*"
  exit 77
}

# ext_init PROGRAM... : locate the library, check the tools, make the
# scratch directory and install the cleanup trap.
ext_init() {
  local b=${top_builddir:-$(pwd)} p
  BUILDDIR=$(cd "$b" 2>/dev/null && pwd) || ext_hard_error "build directory '$b' does not exist"
  LIB=$BUILDDIR/.libs/librsocket.so
  [ -f "$LIB" ] || ext_hard_error "$LIB not found: build the project and run this from the build directory (or set top_builddir)"
  for p in "$@"; do
    command -v "$p" >/dev/null 2>&1 || ext_skip_all "'$p' not found (install Debian's rdmacm-utils)"
  done
  for p in timeout ss cmp; do
    command -v "$p" >/dev/null 2>&1 || ext_skip_all "'$p' not found"
  done
  TMPD=$(mktemp -d "${TMPDIR:-/tmp}/ss-ext.XXXXXX") || ext_hard_error "mktemp failed"
  trap ext_cleanup EXIT
  local sig
  for sig in INT TERM HUP; do
    # shellcheck disable=SC2064  # expand $sig now
    trap "echo \"ERROR: \$ext_name: killed by SIG$sig (not by a test case)\"; exit 99" "$sig"
  done
  # The preloaded environment: librsocket.so and, should the library lack
  # a run path, its libslipstream.so beside it.
  PRELOAD_ENV=(LD_PRELOAD="$LIB" LD_LIBRARY_PATH="$BUILDDIR/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  echo "$ext_name: library $LIB"
}

# ext_ipv6_loopback : sets IPV6_SKIP to why ::1 cannot be used on lo, or
# empty when it can.
ext_ipv6_loopback() {
  IPV6_SKIP=
  if [ "$(cat /proc/sys/net/ipv6/conf/lo/disable_ipv6 2>/dev/null || echo 1)" != 0 ]; then
    IPV6_SKIP="IPv6 is disabled on lo (or absent)"
  elif ! ip -6 addr show dev lo 2>/dev/null | grep -q 'inet6 ::1/'; then
    IPV6_SKIP="lo has no ::1 address"
  fi
}

# ext_wait PID : wait for a process this script started and forget it, so
# the EXIT trap never signals a PID that may since have been reused.
# Returns its exit code.
ext_wait() {
  local rc pid keep=()
  wait "$1" 2>/dev/null
  rc=$?
  for pid in ${ext_pids[@]+"${ext_pids[@]}"}; do
    [ "$pid" = "$1" ] || keep+=("$pid")
  done
  ext_pids=(${keep[@]+"${keep[@]}"})
  return "$rc"
}

# ext_stop PID : end a process this script started and has not yet waited
# for (SIGTERM; timeout(1) passes it on), then wait for it.
ext_stop() {
  local pid
  for pid in ${ext_pids[@]+"${ext_pids[@]}"}; do
    if [ "$pid" = "$1" ]; then
      kill -TERM "$1" 2>/dev/null
      ext_wait "$1"
      return
    fi
  done
  return 0
}

# Optional hook run by the EXIT trap.
ext_cleanup_hook() { :; }

# Namespaces ext_netns_pair made (removed by the EXIT trap).
ext_ns_made=()

# ext_netns_pair A Z "A's CIDRs" "Z's CIDRs" : network namespaces A and Z
# (lo up in each) joined by a veth pair, veth-a in A and veth-b in Z, with
# those addresses (IPv6 without duplicate detection), up and carrying.
# Set-up failures are the host's limits (no netns, no veth): the test is
# skipped.  Needs root.
ext_netns_pair() {
  local a=$1 z=$2 out ns cidr i nodad
  for ns in "$a" "$z"; do
    out=$(ip netns add "$ns" 2>&1) || ext_skip_all "ip netns add $ns failed: $out"
    ext_ns_made+=("$ns")
    out=$(ip -n "$ns" link set lo up 2>&1) || ext_skip_all "lo up in $ns failed: $out"
  done
  out=$(ip -n "$a" link add veth-a type veth peer name veth-b netns "$z" 2>&1) ||
    ext_skip_all "creating the veth pair failed: $out"
  for cidr in $3; do
    nodad=
    case $cidr in *:*) nodad=nodad ;; esac
    ip -n "$a" addr add "$cidr" dev veth-a $nodad || ext_skip_all "adding $cidr in $a failed"
  done
  for cidr in $4; do
    nodad=
    case $cidr in *:*) nodad=nodad ;; esac
    ip -n "$z" addr add "$cidr" dev veth-b $nodad || ext_skip_all "adding $cidr in $z failed"
  done
  ip -n "$a" link set veth-a up && ip -n "$z" link set veth-b up ||
    ext_skip_all "setting the veth pair up failed"
  for i in $(seq 50); do
    if ip -n "$a" link show veth-a | grep -q LOWER_UP &&
       ip -n "$z" link show veth-b | grep -q LOWER_UP; then
      return 0
    fi
    sleep 0.1
  done
  ext_skip_all "the veth pair did not come up"
}

ext_cleanup() {
  local rc=$? pid i ns
  for pid in ${ext_pids[@]+"${ext_pids[@]}"}; do
    kill -TERM "$pid" 2>/dev/null
  done
  for pid in ${ext_pids[@]+"${ext_pids[@]}"}; do
    for i in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  ext_cleanup_hook
  for ns in ${ext_ns_made[@]+"${ext_ns_made[@]}"}; do
    ip netns del "$ns" 2>/dev/null
  done
  if [ -n "$TMPD" ]; then
    if [ "${EXT_KEEP:-0}" = 1 ]; then
      echo "$ext_name: outputs kept in $TMPD"
    else
      rm -rf "$TMPD"
    fi
  fi
  exit "$rc"
}

# Sets PORT to a TCP port nobody on this host uses in any state (listening,
# connected or TIME-WAIT); each case takes a fresh one.
ext_next_port() {
  local p
  while :; do
    p=$ext_port_next
    ext_port_next=$((p + 1))
    [ "$p" -lt 65000 ] || ext_port_next=17000
    if [ -z "$(ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null)" ]; then
      PORT=$p
      return 0
    fi
  done
}

# run_env_preload [PROVIDER] : both ends preloaded; PROVIDER empty leaves
# SLIPSTREAM_PROVIDER unset (auto).  run_env_plain: no preload.
run_env_preload() {
  RUN_ENV=(-u SLIPSTREAM_PROVIDER "${PRELOAD_ENV[@]}")
  [ -z "${1:-}" ] || RUN_ENV+=(SLIPSTREAM_PROVIDER="$1")
}
run_env_plain() {
  RUN_ENV=(-u LD_PRELOAD -u SLIPSTREAM_PROVIDER)
}

# ext_start_server CMD... : start the server in the background (output in
# $CASE_DIR/s.out and s.err), then wait until something listens on $PORT
# (at most 2 s; a provider that listens elsewhere is covered by the
# client's retry on "Connection refused").  Sets SPID.
ext_start_server() {
  local i
  [ "${EXT_VERBOSE:-0}" != 1 ] || echo "  server: ${PFX_S[*]-} env ${RUN_ENV[*]} $*"
  (
    ulimit -f "$EXT_FSIZE_KB"
    exec ${PFX_S[@]+"${PFX_S[@]}"} timeout -k 5 "$SRV_TIMEOUT" env "${RUN_ENV[@]}" "$@" \
      >"$CASE_DIR/s.out" 2>"$CASE_DIR/s.err" </dev/null
  ) &
  SPID=$!
  ext_pids+=("$SPID")
  for i in $(seq 40); do
    kill -0 "$SPID" 2>/dev/null || return 0
    if [ -n "$(${PFX_S[@]+"${PFX_S[@]}"} ss -Hltn "sport = :$PORT" 2>/dev/null)" ]; then
      return 0
    fi
    sleep 0.05
  done
  return 0
}

# ext_run_client CMD... : run the client with a deadline of EXT_TIMEOUT
# seconds (timeout(1) is only the backstop); retried while it is refused
# and the server is still starting (each refused attempt's stderr is kept
# in c.err, marked, so a report shows the whole story).  A client still
# running EXT_GRACE seconds after its server exited is hung as well.  Sets
# C_RC (124 for a hang) and CLI_HUNG (0; 1 after the server exited; 2 at
# the deadline).
ext_run_client() {
  local tries=0 cpid dead_for start
  [ "${EXT_VERBOSE:-0}" != 1 ] || echo "  client: ${PFX_C[*]-} env ${RUN_ENV[*]} $*"
  : >"$CASE_DIR/c.err"
  while :; do
    CLI_HUNG=0
    start=$SECONDS
    (
      ulimit -f "$EXT_FSIZE_KB"
      exec ${PFX_C[@]+"${PFX_C[@]}"} timeout -k 5 $((EXT_TIMEOUT + 15)) env "${RUN_ENV[@]}" "$@" \
        >"$CASE_DIR/c.out" 2>"$CASE_DIR/c.err.now" </dev/null
    ) &
    cpid=$!
    ext_pids+=("$cpid")
    dead_for=0
    while kill -0 "$cpid" 2>/dev/null; do
      sleep 0.02
      if ! kill -0 "$SPID" 2>/dev/null; then
        dead_for=$((dead_for + 1))
        [ "$dead_for" -le $((EXT_GRACE * 50)) ] || CLI_HUNG=1
      fi
      [ $((SECONDS - start)) -lt "$EXT_TIMEOUT" ] || CLI_HUNG=2
      if [ "$CLI_HUNG" != 0 ] && kill -0 "$cpid" 2>/dev/null; then
        ext_debug_hang "$cpid" client
        ! kill -0 "$SPID" 2>/dev/null || ext_debug_hang "$SPID" server
        kill -TERM "$cpid" 2>/dev/null
        break
      fi
      CLI_HUNG=0
    done
    ext_wait "$cpid"
    C_RC=$?
    [ "$CLI_HUNG" = 0 ] || C_RC=124
    cat "$CASE_DIR/c.err.now" >>"$CASE_DIR/c.err"
    if [ "$C_RC" -ne 0 ] && [ "$tries" -lt 20 ] && kill -0 "$SPID" 2>/dev/null &&
       grep -q 'Connection refused' "$CASE_DIR/c.err.now"; then
      tries=$((tries + 1))
      echo "(harness: connection refused, retry $tries)" >>"$CASE_DIR/c.err"
      sleep 0.1
      continue
    fi
    rm -f "$CASE_DIR/c.err.now"
    return 0
  done
}

# ext_debug_hang PID WHO : with EXT_GDB=1, save the stacks of the program
# under the timeout process PID in $CASE_DIR/WHO.gdb.
ext_debug_hang() {
  local prog
  [ "${EXT_GDB:-0}" = 1 ] || return 0
  command -v gdb >/dev/null 2>&1 || return 0
  prog=$(pgrep -P "$1" | head -n1)
  [ -n "$prog" ] || return 0
  timeout 60 gdb -p "$prog" -batch -ex 'thread apply all bt' >"$CASE_DIR/$2.gdb" 2>&1
  echo "      ($2 stacks saved in $CASE_DIR/$2.gdb)"
}

# ext_reap_server : give the server EXT_GRACE seconds to exit (1 s when
# the client failed: the server may be waiting for a connection that never
# came), kill it otherwise.  Sets S_RC (its exit code) and SRV_HUNG (1 if
# it was killed).
ext_reap_server() {
  local i n=$((EXT_GRACE * 20))
  [ "$C_RC" = 0 ] || n=20
  SRV_HUNG=0
  for ((i = 0; i < n; i++)); do
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$SPID" 2>/dev/null; then
    SRV_HUNG=1
    [ "$C_RC" != 0 ] || ext_debug_hang "$SPID" server
    kill -TERM "$SPID" 2>/dev/null
  fi
  ext_wait "$SPID"
  S_RC=$?
}

ext_new_case() {
  ext_case=$((ext_case + 1))
  CASE_DIR=$TMPD/case$ext_case
  mkdir -p "$CASE_DIR"
}

# ext_pair SERVER_CMD... -- CLIENT_CMD... : one server/client run on a fresh
# port; every "@PORT@" argument is replaced by the port.  Sets CASE_DIR,
# C_RC, S_RC, SRV_HUNG.
ext_pair() {
  local -a srv=() cli=()
  local a
  ext_new_case
  ext_next_port
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    a=$1
    [ "$a" != @PORT@ ] || a=$PORT
    srv+=("$a")
    shift
  done
  shift
  for a in "$@"; do
    [ "$a" != @PORT@ ] || a=$PORT
    cli+=("$a")
  done
  ext_start_server "${srv[@]}"
  ext_run_client "${cli[@]}"
  ext_reap_server
}

# ext_timed_out RC : true for timeout(1)'s exit codes.
ext_timed_out() {
  [ "$1" -eq 124 ] || [ "$1" -eq 137 ]
}

# ext_explain_rc RC : words on an rstream/riostream exit code.  They exit
# with -1 (255) on errors, except that -T a returns rpoll's revents.
ext_explain_rc() {
  case $1 in
    8) echo " (rpoll revents POLLERR)" ;;
    16) echo " (rpoll revents POLLHUP)" ;;
    24) echo " (rpoll revents POLLHUP|POLLERR)" ;;
    143) echo " (SIGTERM from outside this test)" ;;
  esac
}

# ext_stream_verdict : after ext_pair with rstream/riostream in custom mode,
# sets WHY to the failure reasons (empty when the case passed).
ext_stream_verdict() {
  WHY=
  if [ "$CLI_HUNG" = 1 ]; then
    WHY+="client hung (still running ${EXT_GRACE}s after the server exited; killed); "
  elif [ "$CLI_HUNG" = 2 ]; then
    WHY+="client hung (killed after ${EXT_TIMEOUT}s); "
  elif ext_timed_out "$C_RC"; then
    WHY+="client hung (killed after ${EXT_TIMEOUT}s); "
  elif [ "$C_RC" -ne 0 ]; then
    WHY+="client exit $C_RC$(ext_explain_rc "$C_RC"); "
  fi
  if [ "$SRV_HUNG" = 1 ] && [ "$C_RC" = 0 ]; then
    WHY+="server still running ${EXT_GRACE}s after the client ended (killed); "
  elif [ "$SRV_HUNG" = 1 ]; then
    WHY+="server left waiting (killed); "
  elif ext_timed_out "$S_RC"; then
    WHY+="server hung (killed by timeout); "
  elif [ "$S_RC" -ne 0 ]; then
    WHY+="server exit $S_RC$(ext_explain_rc "$S_RC"); "
  fi
  if grep -qi 'verification failed' "$CASE_DIR"/*.out "$CASE_DIR"/*.err; then
    WHY+="$(grep -hi 'verification failed' "$CASE_DIR"/*.out "$CASE_DIR"/*.err | head -n1); "
  fi
  WHY=${WHY%; }
}

# ext_show_stderr : the last lines each end wrote to stderr, indented.
ext_show_stderr() {
  local f
  for f in c s; do
    [ -s "$CASE_DIR/$f.err" ] || continue
    tail -n 4 "$CASE_DIR/$f.err" | sed "s/^/      $([ $f = c ] && echo client || echo server) stderr: /"
  done
}

# ext_report LABEL : print PASS/FAIL for the case from $WHY and count it.
ext_report() {
  if [ -z "$WHY" ]; then
    echo "PASS: $1"
    n_pass=$((n_pass + 1))
  else
    echo "FAIL: $1: $WHY"
    ext_show_stderr
    n_fail=$((n_fail + 1))
  fi
}

# ext_unavailable : true when the last case failed because the provider is
# not there yet; sets WHY to the line that says so.
ext_unavailable() {
  local line
  line=$(grep -hiE 'Operation not supported|No such device|not available' \
    "$CASE_DIR/c.err" "$CASE_DIR/s.err" 2>/dev/null | head -n1)
  [ -n "$line" ] || return 1
  WHY=$line
  return 0
}

# ext_finish : summary line and exit code.
ext_finish() {
  echo "$n_pass passed, $n_fail failed, $n_skip skipped"
  if [ "$n_sanity_fail" -gt 0 ]; then
    echo "ERROR: $ext_name: $n_sanity_fail plain-socket sanity case(s) failed: the harness or the host is broken"
    exit 99
  fi
  [ "$n_fail" -eq 0 ] || exit 1
  [ "$n_pass" -gt 0 ] || exit 77
  exit 0
}

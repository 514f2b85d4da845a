# shellcheck shell=bash
# udpong's server and client runs, shared by udpong.sh (loopback) and
# udpong_netns.sh (two namespaces); sourced after common.sh, not a test by
# itself.  The server runs under PFX_S, the clients under PFX_C (empty on
# loopback), both with RUN_ENV.
#
# udpong's server never exits: one per family serves every case and is
# stopped at the end.  udpong takes one -T letter per option.
#
# udpong's echo test resends whenever an echo takes longer than 1 ms and
# then reads one datagram per send: after one such stall (another program
# holding the CPU) the extra echoes stay queued ahead of the one it waits
# for and it can go round for ever, on kernel sockets as on ours.  A case
# that hangs so is run once more, and the report says so.
#
# Knobs the including script may set first: UDPONG_MODES (-T letters),
# UDPONG_SIZES (-S), UDPONG_ECHO_COUNT and UDPONG_BW_COUNT (-C of a
# latency and of a bandwidth run).  Hooks the including script may
# redefine: udpong_before_case (before a case's first attempt) and
# udpong_after_case (after its last; may add to WHY).

UDPONG_MODES=${UDPONG_MODES:-"b n a"}
UDPONG_SIZES=${UDPONG_SIZES:-"64 256 1024"}
UDPONG_ECHO_COUNT=${UDPONG_ECHO_COUNT:-500}
UDPONG_BW_COUNT=${UDPONG_BW_COUNT:-5000}

udpong_before_case() { :; }
udpong_after_case() { :; }

# udpong_start_server ADDR ARGS... : one udpong server on a fresh port;
# sets SPID, PORT.
udpong_start_server() {
  local addr=$1
  shift
  ext_new_case
  ext_next_port
  (exec ${PFX_S[@]+"${PFX_S[@]}"} timeout -k 5 600 env "${RUN_ENV[@]}" udpong -b "$addr" -p "$PORT" "$@" \
    >"$CASE_DIR/s.out" 2>"$CASE_DIR/s.err" </dev/null) &
  SPID=$!
  ext_pids+=("$SPID")
  for _ in $(seq 40); do
    [ -z "$(${PFX_S[@]+"${PFX_S[@]}"} ss -Hlun "sport = :$PORT" 2>/dev/null)" ] || return 0
    sleep 0.05
  done
}

# udpong_case LABEL ADDR MODE SIZE ECHO EXTRA-ARGS... : one client run
# (ECHO "e": latency, empty: bandwidth), reported.
udpong_case() {
  local label=$1 addr=$2 m=$3 s=$4 e=$5 count=$UDPONG_BW_COUNT rc note='' attempt
  shift 5
  [ -z "$e" ] || count=$UDPONG_ECHO_COUNT
  udpong_before_case
  for attempt in 1 2; do
    # shellcheck disable=SC2046  # the optional "-T e" splits on purpose
    ${PFX_C[@]+"${PFX_C[@]}"} timeout -k 5 "$EXT_TIMEOUT" env "${RUN_ENV[@]}" \
      udpong -s "$addr" -p "$PORT" "$@" -T "$m" $([ -n "$e" ] && echo "-T e") -S "$s" -C "$count" \
      >"$CASE_DIR/c.out" 2>"$CASE_DIR/c.err" </dev/null
    rc=$?
    ext_timed_out "$rc" && [ -n "$e" ] && [ "$attempt" = 1 ] || break
    note=" (second attempt: the first hung in udpong's resend loop)"
  done
  WHY=
  if ext_timed_out "$rc"; then
    WHY="client hung (killed after ${EXT_TIMEOUT}s)"
  elif [ "$rc" != 0 ]; then
    WHY="client exit code $rc"
  elif ! grep -qE "^custom +[0-9]" "$CASE_DIR/c.out"; then
    WHY="no result line"
  fi
  udpong_after_case
  ext_report "$label: udpong -s $addr${*:+ $*} -T $m${e:+ -T e} -S $s -C $count$note$([ -z "$WHY" ] && echo ": $(tail -n1 "$CASE_DIR/c.out" | tr -s ' ')")"
}

# udpong_family LABEL ADDR EXTRA-ARGS... : a server on ADDR, then every
# mode, size, latency and bandwidth against it.
udpong_family() {
  local label=$1 addr=$2 m s e
  shift 2
  udpong_start_server "$addr" "$@"
  if ! kill -0 "$SPID" 2>/dev/null; then
    WHY="server exited at once: $(tail -n2 "$CASE_DIR/s.err" | tr '\n' ' ')"
    ext_report "$label: udpong -b $addr"
    return
  fi
  for m in $UDPONG_MODES; do
    for s in $UDPONG_SIZES; do
      for e in e ""; do
        udpong_case "$label" "$addr" "$m" "$s" "$e" "$@"
      done
    done
  done
  ext_stop "$SPID"
}

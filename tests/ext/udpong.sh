#!/bin/bash
# rdmacm-utils' udpong on Slipstream's datagram rsockets: a server
# (udpong -b) and clients (udpong -s) on loopback, both with librsocket.so
# preloaded (without it, udpong needs an RDMA device).  Latency (-T e: the
# server echoes every message) and bandwidth runs, 64 B to 1 KiB, with
# blocking (-T b), non-blocking (-T n) and rpoll (-T a) I/O, on 127.0.0.1
# and ::1.  udpong checks what it can itself (its control messages are
# request/reply with sequence numbers) and exits non-zero on an error; the
# case passes on exit 0 with its result line.  The same cases run first on
# plain kernel sockets (-T s, no preload) to validate the harness.
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
# Run from the build directory: bash $srcdir/tests/ext/udpong.sh
set -u
. "$(dirname "$0")/common.sh" || { echo "ERROR: $0: common.sh not found"; exit 99; }
ext_init udpong

SIZES="64 256 1024"
MODES="b n a"

ext_ipv6_loopback

# start_server ADDR ARGS... : one udpong server on a fresh port; sets SPID, PORT.
start_server() {
  local addr=$1 i
  shift
  ext_new_case
  ext_next_port
  (exec timeout -k 5 600 env "${RUN_ENV[@]}" udpong -b "$addr" -p "$PORT" "$@" \
    >"$CASE_DIR/s.out" 2>"$CASE_DIR/s.err" </dev/null) &
  SPID=$!
  ext_pids+=("$SPID")
  for i in $(seq 40); do
    [ -z "$(ss -Hlun "sport = :$PORT" 2>/dev/null)" ] || return 0
    sleep 0.05
  done
}

# run_cases LABEL ADDR EXTRA-ARGS... : every mode, size, latency and bandwidth.
run_cases() {
  local label=$1 addr=$2 m s e count rc note attempt
  shift 2
  for m in $MODES; do
    for s in $SIZES; do
      for e in e ""; do
        count=500
        [ -n "$e" ] || count=5000
        note=
        for attempt in 1 2; do
          # shellcheck disable=SC2046  # the optional "-T e" splits on purpose
          timeout -k 5 "$EXT_TIMEOUT" env "${RUN_ENV[@]}" udpong -s "$addr" -p "$PORT" "$@" \
            -T "$m" $([ -n "$e" ] && echo "-T e") -S "$s" -C "$count" \
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
        ext_report "$label: udpong -s $addr${*:+ $*} -T $m${e:+ -T e} -S $s -C $count$note$([ -z "$WHY" ] && echo ": $(tail -n1 "$CASE_DIR/c.out" | tr -s ' ')")"
      done
    done
  done
}

# family_run LABEL ADDR EXTRA-ARGS...
family_run() {
  local label=$1 addr=$2
  shift 2
  start_server "$addr" "$@"
  if ! kill -0 "$SPID" 2>/dev/null; then
    WHY="server exited at once: $(tail -n2 "$CASE_DIR/s.err" | tr '\n' ' ')"
    ext_report "$label: udpong -b $addr"
    return
  fi
  run_cases "$label" "$addr" "$@"
  ext_stop "$SPID"
}

echo "== plain kernel sockets (udpong -T s, no preload): harness sanity"
run_env_plain
family_run kernel 127.0.0.1 -T s
n_sanity_fail=$n_fail

echo "== datagram rsockets (librsocket.so preloaded on both ends)"
run_env_preload
family_run rsocket 127.0.0.1
if [ -n "$IPV6_SKIP" ]; then
  echo "SKIP: rsocket: udpong on ::1: $IPV6_SKIP"
  n_skip=$((n_skip + 1))
else
  family_run rsocket ::1
fi

ext_finish

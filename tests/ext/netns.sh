#!/bin/bash
# rstream, riostream and rcopy on Slipstream across two network namespaces
# joined by a veth pair: the peer is another "host", so the software provider
# must be tcp, and SLIPSTREAM_PROVIDER=auto (unset) must pick tcp too
# (checked in the library's debug log when it names the provider).
#
# For provider tcp and for auto: rstream in blocking (-T b), non-blocking
# (-T n) and rpoll (-T a: non-blocking, spinning rpoll; -T b -T a: blocking
# rpoll that sleeps) modes, always with data verification (-T v), sizes 1 B,
# 64 B, 64 KiB + 1 and 1 MiB; riostream (riowrite into riomap'ed memory) in
# the same modes with -T v at 64 KiB + 1 and 1 MiB; rcopy of a 1 MiB + 7 B
# file, compared byte for byte.  Custom mode only (-S/-C: rstream exits 0
# after data errors otherwise).  Each case fails on a non-zero exit of
# either end, a hang (EXT_TIMEOUT) or "verification failed" in the output;
# riostream's receiver busy-waits without a timeout, so after two hangs of
# one program with one provider, its remaining cases there are reported
# failed without running them.
#
# The test creates ss-a-PID and ss-b-PID, a veth pair between them with
# 10.213.1.1/24 (server, in ss-a) and 10.213.1.2/24 (client, in ss-b), and
# removes both namespaces on exit.  Nothing is configured, and no traffic
# is sent, outside those namespaces.  Needs root; skipped otherwise.
#
# Run from the build directory: bash $srcdir/tests/ext/netns.sh
set -u
. "$(dirname "$0")/common.sh" || { echo "ERROR: $0: common.sh not found"; exit 99; }
[ "$(id -u)" = 0 ] || ext_skip_all "needs root to create network namespaces"
command -v ip >/dev/null 2>&1 || ext_skip_all "'ip' (iproute2) not found"
ext_init rstream riostream rcopy

NS_A=ss-a-$$
NS_B=ss-b-$$
ADDR_A=10.213.1.1
ADDR_B=10.213.1.2
ext_netns_pair "$NS_A" "$NS_B" "$ADDR_A/24" "$ADDR_B/24"
echo "$ext_name: namespaces $NS_A ($ADDR_A, servers) and $NS_B ($ADDR_B, clients)"
PFX_S=(ip netns exec "$NS_A")
PFX_C=(ip netns exec "$NS_B")

# check_auto_kind : with provider auto, fail the case if the library logged
# a provider other than tcp.
check_auto_kind() {
  local kinds
  kinds=$(grep -ohE 'connected over [a-z]+' "$CASE_DIR/c.err" "$CASE_DIR/s.err" 2>/dev/null |
    awk '{print $3}' | sort -u | tr '\n' ' ')
  kinds=${kinds% }
  if [ -n "$kinds" ] && [ "$kinds" != tcp ]; then
    WHY="${WHY:+$WHY; }auto picked '$kinds', not tcp, for a peer in another namespace"
  elif [ -z "$kinds" ] && [ -z "$WHY" ]; then
    AUTO_NOTE=" (the library did not log which provider it used)"
  fi
}

# stream_case LABEL PROGRAM ARGS : PROGRAM (rstream or riostream) with its
# server (-b) in ss-a and its client (-s) in ss-b.  After MAX_HANGS hangs
# (counted in $hangs; the caller resets it for each program and provider)
# the case is reported failed without running.
MAX_HANGS=2
hangs=0
stream_case() {
  local label=$1 prog=$2 args=$3 what
  what="$label: $prog $ADDR_B -> $ADDR_A $args"
  if [ "$hangs" -ge "$MAX_HANGS" ]; then
    echo "FAIL: $what: not run: $prog already hung $hangs times with $label"
    n_fail=$((n_fail + 1))
    return
  fi
  # shellcheck disable=SC2086  # $args holds words without spaces
  ext_pair "$prog" -b "$ADDR_A" -p @PORT@ $args -- "$prog" -s "$ADDR_A" -p @PORT@ $args
  ext_stream_verdict
  # A hang: the client never ended, or it ended well and the server did not.
  if ext_timed_out "$C_RC" || { [ "$C_RC" = 0 ] && [ "$SRV_HUNG" = 1 ]; }; then
    hangs=$((hangs + 1))
  fi
  AUTO_NOTE=
  [ "$label" != auto ] || check_auto_kind
  ext_report "$what$AUTO_NOTE"
}

SRC_FILE=$TMPD/src
head -c 1048583 /dev/urandom >"$SRC_FILE" || ext_hard_error "cannot write $SRC_FILE"

rcopy_case() {
  local label=$1 dst
  ext_new_case
  ext_next_port
  dst=$TMPD/dst-$ext_case
  ext_start_server rcopy -p "$PORT"
  ext_run_client rcopy "$SRC_FILE" "$ADDR_A:$dst" -p "$PORT"
  WHY=
  if ext_timed_out "$C_RC"; then
    WHY="client hung (killed after ${EXT_TIMEOUT}s)"
  elif [ "$C_RC" -ne 0 ]; then
    WHY="client exit $C_RC"
  elif [ ! -f "$dst" ]; then
    WHY="no destination file"
  elif ! cmp -s "$SRC_FILE" "$dst"; then
    WHY="copy differs: $(cmp "$SRC_FILE" "$dst" 2>&1 | head -n1)"
  fi
  if ! kill -0 "$SPID" 2>/dev/null; then
    ext_wait "$SPID"
    WHY="${WHY:+$WHY; }server died (exit $?)"
  fi
  ext_stop "$SPID"
  AUTO_NOTE=
  [ "$label" != auto ] || check_auto_kind
  ext_report "$label: rcopy 1048583 B $ADDR_B -> $ADDR_A$AUTO_NOTE"
  rm -f "$dst"
}

# size:count (-S/-C); the client sends count messages, the server echoes
# them (rstream) or writes them back (riostream).
RSTREAM_SIZES="1:1000 64:1000 65537:100 1048576:20"
RIOSTREAM_SIZES="65537:100 1048576:20"

echo "== plain kernel sockets (rstream -T s, no preload): harness sanity"
run_env_plain
before=$n_fail
stream_case kernel rstream "-T s -T b -T v -S 65536 -C 100"
stream_case kernel rstream "-T s -T a -T v -S 1 -C 1000"
n_sanity_fail=$((n_fail - before))

for prov in tcp auto; do
  if [ "$prov" = auto ]; then
    echo "== provider auto (SLIPSTREAM_PROVIDER unset; debug log names the provider)"
    run_env_preload ""
    RUN_ENV+=(SLIPSTREAM_LOG_LEVEL=debug)
  else
    echo "== provider $prov (librsocket.so preloaded on both ends)"
    run_env_preload "$prov"
  fi
  for prog in rstream riostream; do
    hangs=0
    sizes=$RSTREAM_SIZES
    [ "$prog" = rstream ] || sizes=$RIOSTREAM_SIZES
    for m in "b" "n" "a" "b -T a"; do
      for sc in $sizes; do
        stream_case "$prov" "$prog" "-T $m -T v -S ${sc%%:*} -C ${sc##*:}"
      done
    done
  done
  rcopy_case "$prov"
done

ext_finish

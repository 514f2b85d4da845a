#!/bin/bash
# rdmacm-utils' rstream on Slipstream: a server (rstream -b) and a client
# (rstream -s) on loopback, both with librsocket.so preloaded, for each
# software provider.  Custom mode only (-S/-C): in the default mode rstream
# exits 0 even after data errors.  Blocking (-T b), non-blocking (-T n) and
# rpoll (-T a) I/O, each with and without verification (-T v), sizes from
# 1 B to 1 MiB; then small socket buffers (-B 4096: wrap and credit paths),
# keepalive (-k 1) and IPv6 loopback.  The same base matrix runs first on
# plain kernel sockets (-T s, no preload) to validate the harness.
#
# rstream takes one -T letter per option: "-T b -T v", not "-T bv".
#
# Run from the build directory: bash $srcdir/tests/ext/rstream.sh
# EXT_PROVIDERS overrides the provider list (default "tcp shm").
set -u
. "$(dirname "$0")/common.sh" || { echo "ERROR: $0: common.sh not found"; exit 99; }
ext_init rstream

PROVIDERS=${EXT_PROVIDERS:-tcp shm}
# size:count; the client sends count messages and the server echoes them.
SIZES="1:1000 64:1000 4096:1000 65536:200 1048576:20"

# Each case is "FAMILY ARGS...": FAMILY 4 runs on 127.0.0.1, 6 on ::1.
BASE=()
for m in b n a; do
  for v in "" v; do
    for sc in $SIZES; do
      BASE+=("4 -T $m${v:+ -T v} -S ${sc%%:*} -C ${sc##*:}")
    done
  done
done
IPV6=("6 -T b -T v -S 65536 -C 100" "6 -T n -T v -S 1048576 -C 10")
EXTRA=(
  "4 -T b -T v -B 4096 -S 65536 -C 100"
  "4 -T n -T v -B 4096 -S 1048576 -C 5"
  "4 -T a -T v -B 4096 -S 4096 -C 500"
  "4 -T b -T v -k 1 -S 4096 -C 1000"
)

# IPv6 loopback: skipped when the host has none.
ext_ipv6_loopback

# rstream_case LABEL "FAMILY ARGS..." : one server/client run; sets WHY.
rstream_case() {
  local label=$1 fam=${2%% *} args=${2#* } baddr=127.0.0.1 fargs=
  if [ "$fam" = 6 ]; then
    baddr=::1
    fargs="-f ipv6"
  fi
  # shellcheck disable=SC2086  # args are words without spaces
  ext_pair rstream $fargs -b $baddr -p @PORT@ $args -- \
    rstream $fargs -s $baddr -p @PORT@ $args
  ext_stream_verdict
  LABEL="$label: rstream $fargs${fargs:+ }-b/-s $baddr $args"
}

# run_list LABEL PROVIDER-OR-"" CASE... : run and report the cases; for shm,
# a first case that fails because the provider is missing skips the rest.
run_list() {
  local label=$1 prov=$2 c first=1 missing=
  shift 2
  for c in "$@"; do
    if [ -n "$missing" ]; then
      n_skip=$((n_skip + 1))
      continue
    fi
    if [ "${c%% *}" = 6 ] && [ -n "$IPV6_SKIP" ]; then
      echo "SKIP: $label: rstream ${c#* } on ::1: $IPV6_SKIP"
      n_skip=$((n_skip + 1))
      continue
    fi
    rstream_case "$label" "$c"
    if [ "$first" = 1 ] && [ "$prov" = shm ] && [ -n "$WHY" ] && ext_unavailable; then
      missing=$WHY
      n_skip=$((n_skip + 1))
      continue
    fi
    first=0
    ext_report "$LABEL"
  done
  [ -z "$missing" ] || echo "SKIP: $label: all $# cases: provider unavailable: $missing"
}

echo "== plain kernel sockets (rstream -T s, no preload): harness sanity"
run_env_plain
before=$n_fail
SANITY=()
for c in "${BASE[@]}" "${IPV6[0]}"; do SANITY+=("${c%% *} -T s ${c#* }"); done
run_list "kernel" sanity "${SANITY[@]}"
n_sanity_fail=$((n_fail - before))

for prov in $PROVIDERS; do
  echo "== provider $prov (librsocket.so preloaded on both ends)"
  run_env_preload "$prov"
  run_list "$prov" "$prov" "${BASE[@]}" "${EXTRA[@]}" "${IPV6[@]}"
  if [ "$prov" = tcp ]; then
    # Plain sockets with the library preloaded: it must not disturb them.
    run_list "$prov" "$prov" "4 -T s -T b -T v -S 65536 -C 100"
  fi
done

ext_finish

#!/bin/bash
# slipstream-config as an admin runs it: every component's table is listed
# (core's, librsocket's and libvmacompat's, each registering when its
# library loads), each value with its origin: the environment (the value converted from its
# unit), a file of the rsocket directory, the default; a bad value gives one
# warning naming the setting, the value and the default, which is listed.
#
# Run from the build directory: bash $srcdir/tests/ext/slipstream_config.sh
set -u
name=slipstream_config
b=${top_builddir:-$(pwd)}
TOOL=$(cd "$b" && pwd)/tools/slipstream-config
[ -x "$TOOL" ] || { echo "ERROR: $name: $TOOL not built"; exit 99; }
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-config.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh"
# The block of one setting: from "NAME = " to the blank line after it.
block() { awk -v n="$2 = " 'index($0, n) == 1 {p = 1} p && /^$/ {exit} p' "$1"; }

echo 5s >"$T/wake_up_interval"
env -u SLIPSTREAM_RS_WAKE_UP_INTERVAL SLIPSTREAM_RS_CONF_DIR="$T" \
  SLIPSTREAM_RS_MEM_DEFAULT=64k SLIPSTREAM_RS_POLLING_TIME=1x \
  timeout 30 "$TOOL" >"$T/out" 2>"$T/err"
rc=$?
check "exit 0 (got $rc)" "$rc"
grep -qx '\[core\]' "$T/out"
check "core's table is listed" $?
grep -qx '\[rsocket\]' "$T/out"
check "librsocket's table is listed" $?
grep -qx '\[preload\]' "$T/out"
check "librspreload's table is listed" $?
for s in provider log_level rs_conf_dir polling_time wake_up_interval inline_default \
         sqsize_default rqsize_default mem_default wmem_default iomap_size close_linger \
         enabled sq_size rq_size inline stats_dir; do
  grep -q "^$s = " "$T/out"
  check "setting $s is listed" $?
done
block "$T/out" mem_default | grep -q '^mem_default = 65536$'
check "64k from the environment is 65536 bytes" $?
block "$T/out" mem_default | grep -qx '    source:  env SLIPSTREAM_RS_MEM_DEFAULT'
check "its origin is the variable" $?
block "$T/out" wake_up_interval | grep -q '^wake_up_interval = 5000$'
check "5s from the file is 5000 ms" $?
block "$T/out" wake_up_interval | grep -qx "    source:  file $T/wake_up_interval"
check "its origin is the file" $?
block "$T/out" polling_time | grep -q '^polling_time = 10$'
check "a bad polling_time lists the default" $?
block "$T/out" sqsize_default | grep -qx '    source:  default'
check "an unset setting comes from the default" $?
n=$(grep -c 'WARN' "$T/err")
check "one warning (got $n)" "$([ "$n" = 1 ]; echo $?)"
grep -q 'polling_time: bad value "1x" from env SLIPSTREAM_RS_POLLING_TIME (unknown unit;.*using default 10us' "$T/err"
check "the warning names the setting, the value and the default" $?

# The VMA face's table (libvmacompat): libvma's variables, VMA_SPEC's
# profile as the origin of the values it changes, an explicit variable over
# the profile, and a bad value warned with the default.
env VMA_SPEC=latency VMA_SELECT_POLL=250 VMA_TX_BUFS=lots \
  timeout 30 "$TOOL" >"$T/vma.out" 2>"$T/vma.err"
rc=$?
check "vma: exit 0 (got $rc)" "$rc"
grep -qx '\[vma\]' "$T/vma.out"
check "libvmacompat's table is listed" $?
for v in VMA_TRACELEVEL VMA_LOG_FILE VMA_CONFIG_FILE VMA_APPLICATION_ID VMA_STATS_FILE \
         VMA_STATS_SHMEM_DIR VMA_STATS_FD_NUM VMA_SPEC VMA_OFFLOADED_SOCKETS VMA_RX_BUFS \
         VMA_TX_BUFS VMA_RX_POLL VMA_SELECT_POLL VMA_RX_UDP_POLL_OS_RATIO \
         VMA_SELECT_POLL_OS_RATIO VMA_RING_ALLOCATION_LOGIC_RX VMA_RING_ALLOCATION_LOGIC_TX \
         VMA_MTU VMA_MEM_ALLOC_TYPE VMA_FORK; do
  grep -qx "    env:     $v" "$T/vma.out"
  check "variable $v is listed" $?
done
block "$T/vma.out" rx_poll | grep -q '^rx_poll = -1$'
check "VMA_SPEC=latency makes rx_poll -1" $?
block "$T/vma.out" rx_poll | grep -qx '    source:  VMA_SPEC=latency'
check "its origin is the profile" $?
block "$T/vma.out" select_poll | grep -q '^select_poll = 250$'
check "an explicit VMA_SELECT_POLL wins over the profile" $?
block "$T/vma.out" tx_bufs | grep -q '^tx_bufs = 200000$'
check "a bad VMA_TX_BUFS lists the default" $?
n=$(grep -c 'WARN' "$T/vma.err")
check "vma: one warning (got $n)" "$([ "$n" = 1 ]; echo $?)"
grep -q 'tx_bufs: bad value "lots" from env VMA_TX_BUFS (.*using default 200000' "$T/vma.err"
check "the warning names the variable, the value and the default" $?
cat "$T/vma.err" >>"$T/err"
[ $fails = 0 ] || { cat "$T/err"; exit 1; }
exit 0

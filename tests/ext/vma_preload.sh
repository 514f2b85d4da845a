#!/bin/bash
# The VMA preload, libvma.so (libvma(7)), around its offload (which
# tests/ext/vma_netns.sh shows): here, on 127.0.0.1, the kernel serves
# every socket, and the face is alive.
#  (a) tests/ext/vma_preload_prog.c, built against the INSTALLED
#      <mellanox/vma_extra.h> only: vma_get_api() under the preload (exact
#      mask, every missing entry -1/EOPNOTSUPP and the socketXtreme ones
#      too with VMA_SOCKETXTREME unset (bits set, as libvma), add_conf_rule, thread_offload
#      and dump_fd_stats real, SO_VMA_USER_DATA and SO_VMA_RING_ALLOC_LOGIC
#      on a UDP socket, SO_VMA_*
#      on a kernel socket ENOPROTOOPT);
#      NULL/EBADF without it. The debug lines show each socket's decision
#      and its change by add_conf_rule, thread_offload and a libvma.conf
#      file; the banner appears at libvma's levels only.
#  (b) a preloaded program's vmastat.<pid> lists its UDP socket as not
#      offloaded, and vma_stats -p PID shows it.
#  (c) Debian's sockperf, server and UDP ping-pong on 127.0.0.1, both ends
#      preloaded: it works (through the kernel: nothing is offloaded yet)
#      and its report parses.
#  (d) fork + exec + threads under the preload: no crash.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_preload.sh
set -u
name=vma_preload
here=$(cd "$(dirname "$0")" && pwd) || exit 99
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
LIB=$B/.libs/libvma.so
TOOL=$B/tools/vma_stats
for f in "$LIB" "$TOOL" "$B/Makefile"; do
  [ -e "$f" ] || { echo "ERROR: $name: $f not built"; exit 99; }
done
unset CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH LD_PRELOAD VMA_TRACELEVEL VMA_SPEC \
  VMA_OFFLOADED_SOCKETS VMA_STATS_SHMEM_DIR VMA_APPLICATION_ID VMA_SOCKETXTREME
CC=$(command -v cc || command -v gcc || command -v clang) ||
  { echo "SKIP: $name: no C compiler"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/ss-vmapre.XXXXXX") || exit 99
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  exec 3>&- 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/check.sh"
# No host libvma.conf: an empty file unless a test names one.
: >"$T/empty.conf"
export VMA_CONFIG_FILE=$T/empty.conf VMA_STATS_SHMEM_DIR=

# (a) The program, built against the installed header only.
if ! ${MAKE:-make} -s -C "$B" install-mellanoxincludeHEADERS DESTDIR="$T/root" >"$T/install.log" 2>&1; then
  cat "$T/install.log"
  echo "ERROR: $name: make install-mellanoxincludeHEADERS failed"
  exit 99
fi
HDR=$(find "$T/root" -path '*/mellanox/vma_extra.h' -type f)
INC=${HDR%/mellanox/vma_extra.h}
[ -n "$HDR" ] || { echo "ERROR: $name: no header installed"; exit 99; }
PROG=$T/prog
"$CC" -std=gnu11 -Wall -Wextra -Werror -I"$INC" "$here/vma_preload_prog.c" -o "$PROG" -lpthread \
  >"$T/cc.log" 2>&1 || { cat "$T/cc.log"; echo "ERROR: $name: the test program did not build"; exit 99; }
"$CC" -M -I"$INC" "$here/vma_preload_prog.c" 2>/dev/null | grep -q "$INC/mellanox/vma_extra.h"
check "the program includes the installed $INC/mellanox/vma_extra.h" $?

pre() { LD_PRELOAD=$LIB timeout 60 "$@"; }

"$PROG" noapi >"$T/noapi.out" 2>&1
rc=$?
[ $rc = 0 ] && has "$T/noapi.out" "no api: errno Bad file descriptor"
check "without the preload vma_get_api() is NULL (EBADF)" $?

VMA_TRACELEVEL=debug pre "$PROG" api >"$T/api.out" 2>"$T/api.err"
rc=$?
sed -n 's/^FAIL/  program: FAIL/p' "$T/api.out"
[ $rc = 0 ] && has "$T/api.out" "^PASS: 0 failure"
check "Extra API under the preload: table, exact mask, 12 entries -1/EOPNOTSUPP (4 of them socketXtreme, off), add_conf_rule, thread_offload, SO_VMA_USER_DATA, SO_VMA_* ENOPROTOOPT (exit $rc)" $?
fd=$(sed -n 's/^udp fd //p' "$T/api.out")
rfd=$(sed -n 's/^rule fd //p' "$T/api.out")
tfd=$(sed -n 's/^thread fd //p' "$T/api.out")
bfd=$(sed -n 's/^back fd //p' "$T/api.out")
has "$T/api.err" "socket fd $fd \(AF_INET, udp\): kernel \(until bound; then rings where its netdev has them\)$"
check "debug line: the UDP socket is the kernel's until bound" $?
has "$T/api.err" "DUMPING FD $fd STATISTICS" && has "$T/api.err" "^slipstream\[[0-9]+\]: INFO: Fd number : $fd$" &&
  has "$T/api.err" "INFO: Protocol : PROTO_UDP$" && has "$T/api.err" "INFO: Is offloaded : false \(kernel: "
check "dump_fd_stats logged fd $fd's block at info" $?
pfd=$(sed -n 's/^port fd //p' "$T/api.out")
has "$T/api.err" "socket fd $pfd \(AF_INET, udp\): kernel \(until bound; then rings where its netdev has them\)$" &&
  has "$T/api.err" "bind fd $pfd: kernel \(libvma.conf rule: use os udp_receiver for its address\)$"
check "add_conf_rule(use os udp_receiver *:1234) decided the socket bound to port 1234" $?
has "$T/api.err" "socket fd $rfd \(AF_INET, udp\): kernel \(libvma.conf rule: use os for udp_receiver and udp_sender\)$"
check "add_conf_rule changed the next UDP socket's decision" $?
has "$T/api.err" "socket fd $tfd \(AF_INET, tcp\): kernel \(thread_offload\(0\) for this thread\)$" &&
  has "$T/api.err" "socket fd $bfd \(AF_INET, tcp\): kernel \(until connect or listen; then rings where its netdev has them\)$"
check "thread_offload(0) then (1) changed this thread's next TCP sockets' decisions" $?
grep -n 'not provided by this library' "$T/api.err" | grep -c . >"$T/nwarn"
nwarn=$(cat "$T/nwarn")
[ "$nwarn" = 8 ]
check "each missing entry warned once (8 warnings, got $nwarn)" $?
nwarn=$(grep -c 'needs VMA_SOCKETXTREME=1 (EOPNOTSUPP)' "$T/api.err")
[ "$nwarn" = 4 ]
check "each socketXtreme entry warned once while VMA_SOCKETXTREME is unset (4 warnings, got $nwarn)" $?

# libvma.conf from VMA_CONFIG_FILE decides too; VMA_OFFLOADED_SOCKETS=0.
printf 'use os udp_receiver *:*\nuse os udp_sender *:*\n' >"$T/os.conf"
VMA_CONFIG_FILE=$T/os.conf VMA_TRACELEVEL=debug pre "$PROG" child 2>"$T/conf.err"
has "$T/conf.err" "\(AF_INET, udp\): kernel \(libvma.conf rule: use os"
check "VMA_CONFIG_FILE's rules decide at socket()" $?
VMA_OFFLOADED_SOCKETS=0 VMA_TRACELEVEL=debug pre "$PROG" child 2>"$T/off.err"
has "$T/off.err" "\(AF_INET, udp\): kernel \(VMA_OFFLOADED_SOCKETS=0\)"
check "VMA_OFFLOADED_SOCKETS=0 decides at socket()" $?

# The banner at libvma's levels: version at info, settings at details.
pre "$PROG" child 2>"$T/b.info"
VMA_TRACELEVEL=warn pre "$PROG" child 2>"$T/b.warn"
VMA_TRACELEVEL=details pre "$PROG" child 2>"$T/b.details"
has "$T/b.info" "INFO: VMA_VERSION: " && has "$T/b.info" "INFO: Cmd Line: $PROG child$" &&
  ! grep -q 'DETAILS:\|DEBUG:' "$T/b.info" &&
  ! grep -q 'VMA_VERSION' "$T/b.warn" &&
  has "$T/b.details" "DETAILS: stats_fd_num +100 +\[VMA_STATS_FD_NUM\]$" &&
  ! grep -q 'DEBUG:' "$T/b.details"
check "banner: info by default, nothing at warn, the defaults at details" $?
VMA_STATS_FD_NUM=50 pre "$PROG" child 2>"$T/b.set"
has "$T/b.set" "INFO: stats_fd_num +50 +\[VMA_STATS_FD_NUM\]$"
check "banner: a setting differing from its default at info" $?
# Settings read but not acted on: a warning for each the user set (a
# profile's are not the user's), VMA_FORK=0 named as unsupported.
VMA_MTU=9000 VMA_MSS=9000 VMA_RX_BUFS=1000 VMA_THREAD_MODE=2 VMA_FORK=0 VMA_TRACELEVEL=warn pre "$PROG" child 2>"$T/inert"
VMA_SPEC=latency VMA_TRACELEVEL=warn pre "$PROG" child 2>"$T/inert.spec"
has "$T/inert" "WARN: VMA_RX_BUFS=1000 is read but not acted on in this release" &&
  ! grep -q 'VMA_MTU\|VMA_MSS' "$T/inert" &&
  has "$T/inert" "WARN: VMA_THREAD_MODE=2 is read but not acted on" &&
  has "$T/inert" "WARN: VMA_FORK=0 is not supported: handled as 1" &&
  [ "$(grep -c 'not acted on\|not supported' "$T/inert")" -le 6 ] &&
  ! grep -q 'not acted on' "$T/inert.spec"
check "settings not acted on: one warning each when set, none for a profile's" $?

# VMA_LOG_FILE: the lines go to the file (its %d the pid), none to
# stderr; a file that cannot be opened is named on stderr, which keeps
# the lines.
mkdir "$T/logs"
VMA_LOG_FILE=$T/logs/vma.%d.log VMA_TRACELEVEL=debug pre "$PROG" child 2>"$T/lf.err"
# (the program's child under the preload logs to a file of its own pid)
lf=$(ls "$T/logs" 2>/dev/null | paste -sd' ')
cat "$T"/logs/* >"$T/lf.all" 2>/dev/null
bad=0
for f in $lf; do [[ $f =~ ^vma\.[0-9]+\.log$ ]] || bad=1; done
[ -n "$lf" ] && [ $bad = 0 ] && has "$T/lf.all" "INFO: VMA_VERSION: " &&
  has "$T/lf.all" "DEBUG: socket fd [0-9]+ \(AF_INET, udp\)" && ! grep -q 'slipstream\[' "$T/lf.err"
check "VMA_LOG_FILE: every line in ${lf:-no file} (each process's pid in its name), none on stderr" $?
VMA_LOG_FILE=$T/none/vma.log pre "$PROG" child 2>"$T/lf2.err"
has "$T/lf2.err" "WARN: VMA_LOG_FILE $T/none/vma.log: No such file or directory; logging to stderr" &&
  has "$T/lf2.err" "INFO: VMA_VERSION: "
check "VMA_LOG_FILE that cannot be opened: named on stderr, the lines stay there" $?
VMA_STATS_FILE=$T/none/stats pre "$PROG" child 2>"$T/sf.err"
rc=$?
[ $rc = 0 ] && has "$T/sf.err" "WARN: VMA_STATS_FILE $T/none/stats: No such file or directory; no socket statistics are written"
check "VMA_STATS_FILE that cannot be opened: named in a warning, the program runs" $?

# (b) vmastat.<pid> and vma_stats.
mkdir "$T/stats"
mkfifo "$T/hold.in"
VMA_STATS_SHMEM_DIR=$T/stats VMA_TRACELEVEL=warn LD_PRELOAD=$LIB "$PROG" hold <"$T/hold.in" >"$T/hold.out" 2>&1 &
pids+=($!)
exec 3>"$T/hold.in"
for _ in $(seq 100); do grep -q '^ready' "$T/hold.out" && break; sleep 0.1; done
read -r _ hpid hfd <"$T/hold.out"
[ -n "${hpid:-}" ] && [ -f "$T/stats/vmastat.$hpid" ]
check "the preloaded program made vmastat.<pid> in VMA_STATS_SHMEM_DIR" $?
timeout 20 "$TOOL" -k "$T/stats" -p "${hpid:-0}" -v 5 -c 1 >"$T/v5" 2>&1
has "$T/v5" "^udp +No +127\.0\.0\.1:[1-9][0-9]* +.*${hpid:-x}/"
check "vma_stats -v 5: the UDP socket, bound to 127.0.0.1, not offloaded" $?
timeout 20 "$TOOL" -k "$T/stats" -p "${hpid:-0}" -v 3 -c 1 >"$T/v3" 2>&1
has "$T/v3" "Fd=\[${hfd:-x}\]" && has "$T/v3" "^- UDP, Not offloaded, Blocked"
check "vma_stats -v 3: fd ${hfd:-?} as a UDP socket, not offloaded" $?
exec 3>&-
wait "${pids[-1]}"
[ ! -e "$T/stats/vmastat.$hpid" ]
check "vmastat.<pid> removed at exit" $?

# (c) sockperf, both ends under the preload: the kernel path.
if command -v sockperf >/dev/null; then
  port=$((20000 + $$ % 20000))
  VMA_TRACELEVEL=debug LD_PRELOAD=$LIB timeout 30 sockperf server -i 127.0.0.1 -p $port \
    >"$T/sp.server" 2>&1 &
  spid=$!
  pids+=($spid)
  for _ in $(seq 100); do grep -q "0.0.0.0:$port\|127.0.0.1:$port" <(ss -uln 2>/dev/null) && break; sleep 0.1; done
  VMA_TRACELEVEL=debug pre sockperf ping-pong -i 127.0.0.1 -p $port --time 2 >"$T/sp.client" 2>&1
  rc=$?
  kill $spid 2>/dev/null
  wait $spid 2>/dev/null
  [ $rc = 0 ] && has "$T/sp.client" "Summary: Latency is [0-9.]+ usec" &&
    has "$T/sp.client" "\[Valid Duration\] RunTime=[0-9.]+ sec; SentMessages=[1-9][0-9]*; ReceivedMessages=[1-9][0-9]*"
  check "sockperf ping-pong over UDP 127.0.0.1 under the preload: report parsed (exit $rc)" $?
  has "$T/sp.client" "\(AF_INET, udp\): kernel \(until bound; then rings where its netdev has them\)" &&
    has "$T/sp.server" "\(AF_INET, udp\): kernel \(until bound; then rings where its netdev has them\)"
  check "sockperf: both ends were preloaded, their UDP sockets served by the kernel" $?
else
  echo "SKIP: sockperf not installed (scripts/install-deps.sh installs it); part (c) not run"
  fails=$((fails + 1))
fi

# (d) fork + exec + threads.
pre "$PROG" smoke >"$T/smoke.out" 2>&1
rc=$?
[ $rc = 0 ] && has "$T/smoke.out" "^PASS: smoke"
check "fork + exec + threads under the preload (exit $rc)" $?

[ $fails = 0 ] || { echo "$name: $fails failure(s)"; exit 1; }
echo "$name: all passed"

#!/bin/bash
# vma_stats against a live publisher (tests/vma/vma_stats_publisher: known
# counters on fds 7 and 9, fd 11 closed, one ring): each view shows the
# figures; a wrong pid, a dead process's file and an unsupported option
# give a clear error and a nonzero exit; the file is mode 0600 and is gone
# after the publisher exits normally; a killed process's file is stale and
# the default search removes it.
#
# Run from the build directory: bash $srcdir/tests/ext/vma_stats.sh
set -u
name=vma_stats
b=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
TOOL=$b/tools/vma_stats
PUB=$b/tests/vma/vma_stats_publisher
for f in "$TOOL" "$PUB"; do
  [ -x "$f" ] || { echo "ERROR: $name: $f not built"; exit 99; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-vmastat.XXXXXX") || exit 99
ppid_=
cleanup() {
  [ -n "$ppid_" ] && kill "$ppid_" 2>/dev/null
  exec 3>&- 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/check.sh"
vs() {  # vs OUT ARGS...: runs the tool, bounded, and returns its status
  local out=$1
  shift
  timeout 20 "$TOOL" "$@" >"$out" 2>&1
}

# The publisher runs until its standard input (fd 3 here) is closed.
start_publisher() {
  mkfifo "$T/in.$1"
  "$PUB" "$T/dir" <"$T/in.$1" >"$T/ready.$1" &
  ppid_=$!
  exec 3>"$T/in.$1"
  for _ in $(seq 100); do grep -q '^ready' "$T/ready.$1" && break; sleep 0.1; done
  read -r _ pid <"$T/ready.$1"
  [ "$pid" = "$ppid_" ] || { echo "ERROR: $name: publisher did not start"; exit 99; }
}

mkdir "$T/dir"
start_publisher 1
f=$T/dir/vmastat.$pid
[ "$(stat -c %a "$f")" = 600 ]
check "vmastat.$pid is mode 0600" $?

vs "$T/v1" -k "$T/dir" -p "$pid" -v 1 -c 1
check "-v 1 exits 0" $?
has "$T/v1" "^ 7 +Rx: +1234 +2000 +5 +2 +90\.0 +0 +0 +0 +0$" &&
  has "$T/v1" "^ +Tx: +4321 +500 +0 +3 +0 +0 +0 +0$" &&
  has "$T/v1" "^ 9 +Rx: +0 +0 +0 +0 +- +55 +55 +0 +0$" &&
  ! grep -q '^ 11 ' "$T/v1"
check "-v 1: fd 7's offloaded and fd 9's OS figures, closed fd 11 absent" $?
has "$T/v1" "process $pid \(vma_stats_publi\), .* 2 of 8 fd blocks in use"
check "-v 1: the process and its blocks in use" $?

vs "$T/v2" -k "$T/dir" -p "$pid" -v 2 -c 1
has "$T/v2" "^ 7 +Rx: +1234 +2000 +5 +2 +90\.0 +0 +42 +0 +0 +0 +0 +0$"
check "-v 2: the rx queue's max (42)" $?

vs "$T/v3" -k "$T/dir" -p "$pid" -v 3 -c 1
has "$T/v3" "Fd=\[7\]" && has "$T/v3" "^- UDP, Offloaded, Blocked, MC Loop Enabled$" &&
  has "$T/v3" "^- Local Address   = \[127\.0\.0\.1:5001\]$" &&
  has "$T/v3" "^- Foreign Address = \[127\.0\.0\.2:6001\]$" &&
  has "$T/v3" "^Rx Offload: 2000 KB / 1234 / 5 / 2 " &&
  has "$T/v3" "^Tx Offload: 500 KB / 4321 / 0 / 3 " &&
  has "$T/v3" "^Rx poll: 10 / 90 \(90\.0%\) \[miss/hit\]$" &&
  has "$T/v3" "^Rx OS info: 55 KB / 55 / 0 / 0 " &&
  has "$T/v3" "RING_XDP=\[0\] lo" && has "$T/v3" "^Rx Offload: 0 KB / 777 "
check "-v 3: full per-fd text and the ring" $?

vs "$T/v5" -k "$T/dir" -p "$pid" -v 5 -c 1
has "$T/v5" "^udp +Yes +127\.0\.0\.1:5001 +127\.0\.0\.2:6001 +$pid/" &&
  has "$T/v5" "^tcp +No "
check "-v 5: netstat-like lines" $?

vs "$T/s" -k "$T/dir" -p "$pid" -s 9 -c 1
has "$T/s" "^ 9 +Rx:" && ! grep -q "^ 7 " "$T/s"
check "-s 9 shows fd 9 only" $?

vs "$T/find" -k "$T/dir" -c 2 -i 0
has "$T/find" "process $pid " && [ "$(grep -Ec '^ 7 +Rx:' "$T/find")" = 2 ]
check "without -p: finds the one publisher, -c 2 prints twice" $?

vs "$T/name" -k "$T/dir" -n vma_stats_publi -c 1
has "$T/name" "process $pid "
check "-n finds the process by name" $?

vs "$T/d2" -k "$T/dir" -p "$pid" -d 2 -i 1 -c 1
has "$T/d2" "counters per second" && has "$T/d2" "^ 7 +Rx: +0 +0 +0 +0 " &&
  [ "$(grep -Ec '^ 7 +Rx:' "$T/d2")" = 1 ]
check "-d 2: one print of rates, zero for a quiet process" $?

bad=$((pid + 100000))
vs "$T/bad" -k "$T/dir" -p "$bad" -c 1
rc=$?
[ "$rc" -ne 0 ] && has "$T/bad" "no statistics of process $bad in "
check "wrong pid: clear error, exit $rc" $?

vs "$T/z" -k "$T/dir" -p "$pid" -z
rc=$?
[ "$rc" = 2 ] && has "$T/z" "-z is not supported"
check "-z: not supported, exit $rc" $?

vs "$T/v4" -k "$T/dir" -p "$pid" -v 4
rc=$?
[ "$rc" = 2 ] && has "$T/v4" "view 4 .* not supported"
check "-v 4: not supported, exit $rc" $?

head -c 100 "$f" >"$T/dir/vmastat.1"
vs "$T/trunc" -k "$T/dir" -p 1 -c 1
rc=$?
[ "$rc" = 1 ] && has "$T/trunc" "vmastat\.1: truncated: 100 bytes"
check "truncated file: clear error, exit $rc" $?
rm -f "$T/dir/vmastat.1"

exec 3>&-
wait "$ppid_"
check "publisher exits 0" $?
ppid_=
[ ! -e "$f" ]
check "vmastat.$pid removed at normal exit" $?

# A killed process leaves its file: stale for -p, removed by the search
# (kept with -F).
start_publisher 2
f=$T/dir/vmastat.$pid
{ kill -9 "$pid" && wait "$pid"; } 2>/dev/null
ppid_=
exec 3>&-
[ -e "$f" ]
check "a killed publisher leaves vmastat.$pid" $?
vs "$T/dead" -k "$T/dir" -p "$pid" -c 1
rc=$?
[ "$rc" = 1 ] && has "$T/dead" "process $pid is gone; .* is stale"
check "dead pid: stale, exit $rc" $?
vs "$T/keep" -k "$T/dir" -F -c 1
rc=$?
[ "$rc" = 1 ] && [ -e "$f" ] && has "$T/keep" "no running process publishes statistics"
check "-F keeps the stale file; no live process: exit $rc" $?
vs "$T/clean" -k "$T/dir" -c 1
[ ! -e "$f" ] && has "$T/clean" "removed .*vmastat\.$pid of process $pid, which is gone"
check "the search removes the stale file" $?

echo "$name: $fails failed"
[ "$fails" = 0 ]

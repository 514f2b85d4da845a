#!/bin/bash
# librspreload under a process that locks itself in, as OpenSSH's
# privilege-separated sshd does (issue 33): tests/ext/sandbox_prog.c
# accepts a connection and forks a child that sets RLIMIT_NOFILE 0 and
# installs a seccomp filter allowing only OpenSSH's pre-authentication
# calls (any other kills it), then echoes 1 MB with read and write.
# Both ends preloaded, on shm and on tcp:
#   the child is not killed, the bytes come back intact, the parent's
#   close then ends the stream (EOF, not a reset), and both processes
#   count the connection on rsockets (SLIPSTREAM_PRELOAD_STATS);
#   a second child forked after the first moved the connection on (sshd's
#   session process) carries it on from the state the first one left at
#   its exit (the hand-over), and the parent's close ends the stream.
# The same program without the preload is the reference. About 10 s.
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=preload_sandbox.sh
here=$(cd "$(dirname "$0")" && pwd) || exit 99
. "$here/check.sh"
[ "$(uname -m)" = x86_64 ] || { echo "SKIP: $name: the filter is written for x86_64"; exit 77; }
preload_prog sandbox_prog.c
port=$((20000 + RANDOM % 9000))
MB=1000000

# run TAG CHILDREN ROUNDS [ENV...]: the server and the client, each under
# ENV; their output in $T/TAG.srv and $T/TAG.cl, stats in $T/TAG.st.
run() {
  local tag=$1 children=$2 rounds=$3
  shift 3
  port=$((port + 1))
  mkdir -p "$T/$tag.st"
  env "$@" SLIPSTREAM_PRELOAD_STATS="$T/$tag.st" timeout 30 "$T/prog" serve $port $MB "$children" \
    >"$T/$tag.srv" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do grep -q ready "$T/$tag.srv" && break; sleep 0.1; done
  env "$@" SLIPSTREAM_PRELOAD_STATS="$T/$tag.st" timeout 30 "$T/prog" send $port $MB "$rounds" \
    >"$T/$tag.cl" 2>&1
  wait "${pids[-1]}"
}

# on_rsockets TAG PROV: every process that made or took a connection
# counted it on rsockets over PROV, none on kernel TCP.
on_rsockets() {
  local n
  n=$(cat "$T/$1.st"/rspreload.* 2>/dev/null | grep -c " rsockets=1 .*$2=1 .* kernel_tcp=0$")
  [ "$n" = 2 ] || { echo "  stats: $(cat "$T/$1.st"/rspreload.* 2>/dev/null)"; return 1; }
}

bad=0
run plain 1 1 || bad=1
has "$T/plain.srv" "^served$" && has "$T/plain.cl" "^echoed $MB, then the end$" || bad=1
check "without the preload: the sandboxed child echoes 1 MB, the parent's close ends the stream" $bad

for prov in shm tcp; do
  bad=0
  run "$prov" 1 1 LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov || bad=1
  has "$T/$prov.srv" "^served$" && has "$T/$prov.cl" "^echoed $MB, then the end$" || bad=1
  on_rsockets "$prov" "$prov" || bad=1
  check "$prov, both ends preloaded: the child locked in (RLIMIT_NOFILE 0, OpenSSH's seccomp list) echoes 1 MB, not killed; the parent's close ends the stream" $bad

  bad=0
  run "$prov-2" 2 2 LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov || bad=1
  has "$T/$prov-2.srv" "^served$" && has "$T/$prov-2.cl" "^echoed $((2 * MB)), then the end$" || bad=1
  on_rsockets "$prov-2" "$prov" || bad=1
  check "$prov: a second child, forked from the parent after the sandboxed one moved the connection, carries it on from the state that one left (1 MB more), the parent's close then ends the stream" $bad
done

exit $((fails > 0))

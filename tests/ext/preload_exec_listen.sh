#!/bin/bash
# librspreload: a listener across exec (issue 33). tests/ext/exec_listen.c
# listens, waits for its first client and execs a new program with the
# listener open (systemd's socket activation does the same); the new
# program accepts 3 connections one after another and echoes 256 KiB on
# each. The first client's connection is made before the exec and waits
# for accept across it, with its bytes on the way. Both ends preloaded:
#   tcp and shm: every connection echoed intact, and the new program
#     counts all three on rsockets over the provider, none on kernel TCP
#     (its statistics file, by its pid): the listener listens over
#     rsockets again there, and the connection queued before the exec was
#     carried and accepted there, not left to a kernel socket;
#   systemd-socket-activate (Debian's systemd; its program gets descriptor
#     3 and only the variables -E names) on shm: the same;
#   systemd-socket-activate preloaded, its program not (no -E LD_PRELOAD),
#     a plain client: the program's listener blocks as the program left it
#     (the preload keeps its own copy non-blocking).
# The same programs without the preload are the reference. About 5 s.
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=preload_exec_listen.sh
here=$(cd "$(dirname "$0")" && pwd) || exit 99
. "$here/check.sh"
preload_prog exec_listen.c
port=$((20000 + RANDOM % 9000))
N=3 BYTES=262144

# run TAG [ENV...] -- SERVER...: the server (its output in $T/TAG.srv) and
# the client (in $T/TAG.cl), each under ENV, statistics in $T/TAG.st.
run() {
  local tag=$1 e=()
  shift
  while [ "$1" != -- ]; do e+=("$1") && shift; done
  shift
  mkdir -p "$T/$tag.st"
  env "${e[@]}" SLIPSTREAM_PRELOAD_STATS="$T/$tag.st" timeout 30 "$@" >"$T/$tag.srv" 2>&1 &
  pids+=($!)
  # Listening over rsockets too: the server says so (systemd-socket-activate:
  # "Listening on").
  for _ in $(seq 50); do grep -Eq '^ready|Listening on' "$T/$tag.srv" && break; sleep 0.1; done
  env "${e[@]}" SLIPSTREAM_PRELOAD_STATS="$T/$tag.st" timeout 30 "$T/prog" send $port $N $BYTES \
    >"$T/$tag.cl" 2>&1
  wait "${pids[-1]}"
}

# served TAG: both ends say every connection went through intact.
served() {
  has "$T/$1.srv" "^served $N, pid [0-9]+$" && has "$T/$1.cl" "^echoed $N x $BYTES intact$"
}

# counted TAG PROV: the new program (its pid from its output) counted
# every connection on rsockets over PROV, none on kernel TCP.
counted() { stats_of "$T/$1.srv" "$T/$1.st" " rsockets=$N .*$2=$N .* kernel_tcp=0$"; }

bad=0
port=$((port + 1))
run plain -- "$T/prog" serve $port $N $BYTES || bad=1
served plain || bad=1
check "without the preload: the exec'd program accepts the waiting client and two more on the listener" $bad

for prov in tcp shm; do
  bad=0
  port=$((port + 1))
  run "$prov" LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov -- "$T/prog" serve $port $N $BYTES ||
    bad=1
  served "$prov" && counted "$prov" "$prov" || bad=1
  check "$prov, both ends preloaded: the listener crosses exec, the waiting connection with it, all three counted on rsockets in the new program" $bad
done

if command -v systemd-socket-activate >/dev/null; then
  bad=0
  port=$((port + 1))
  run activate LD_PRELOAD="$PRELOAD" -- systemd-socket-activate -l 127.0.0.1:$port \
    -E LD_PRELOAD -E SLIPSTREAM_PRELOAD_STATS "$T/prog" accept 3 $N $BYTES || bad=1
  served activate && counted activate shm || bad=1
  check "systemd-socket-activate, both ends preloaded: the program it starts accepts on descriptor 3 over rsockets" $bad

  bad=0
  port=$((port + 1))
  mkdir -p "$T/unloaded.st"
  LD_PRELOAD="$PRELOAD" SLIPSTREAM_PRELOAD_STATS="$T/unloaded.st" timeout 30 \
    systemd-socket-activate -l 127.0.0.1:$port "$T/prog" accept 3 $N $BYTES >"$T/unloaded.srv" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do grep -q 'Listening on' "$T/unloaded.srv" && break; sleep 0.1; done
  timeout 30 "$T/prog" send $port $N $BYTES >"$T/unloaded.cl" 2>&1
  wait "${pids[-1]}"
  served unloaded || bad=1
  check "systemd-socket-activate preloaded, its program not: the listener it gets blocks in accept as the program left it" $bad
else
  echo "SKIP: systemd-socket-activate not found"
fi
[ "$fails" = 0 ]

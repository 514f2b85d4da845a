#!/bin/bash
# librspreload across exec (issue 33): tests/ext/exec_prog.c accepts a
# connection, forks, and the child makes it its stdin and stdout, closes
# the number accept gave and execs a new program on it, as sshd's re-exec
# and inetd do; the client sends 1 MB and reads it back at once, so bytes
# are on the way while the exec runs. Both ends preloaded:
#   tcp and shm: the new program echoes 1 MB intact over the same
#     connection, and counts it on rsockets (its own statistics file, by
#     its pid): the connection was built back there, not left to a kernel
#     socket (shm's first goes to its stream alone, both ends);
#   an exec that fails leaves the connection working: the child echoes 1 MB
#     itself;
#   posix_spawn with dup2 actions onto stdin and stdout: the same; a
#     spawned (or vfork'd) child that only inherits it finds a socket of its family,
#     and the spawner goes on with the connection;
#   three execs in a row, the last program echoing (git daemon's);
#   a fork child's exec while its parent keeps its copy: the exec'd
#     program echoes half, the parent's copy then says ECONNRESET;
#   after an exec or a fork, a child that echoes half and exits, and its
#     parent that echoes the rest from the state it left;
#   shm with the peer stopped (it makes no call while the exec runs): the
#     connection crosses all the same, and the peer's byte, sent once it
#     is continued, comes back from the new program;
#   tcp and shm: a vfork child's exec (CPython's subprocess.Popen with
#     stdin and stdout the connection): cat echoes 1 MB, counted there.
# The same program without the preload is the reference. About 8 s.
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=preload_exec.sh
here=$(cd "$(dirname "$0")" && pwd) || exit 99
. "$here/check.sh"
preload_prog exec_prog.c
port=$((20000 + RANDOM % 9000))
MB=1000000

# run TAG HOW [ENV...]: the server and the client, each under ENV; their
# output in $T/TAG.srv and $T/TAG.cl, statistics in $T/TAG.st.
run() {
  local tag=$1 how=$2
  shift 2
  port=$((port + 1))
  mkdir -p "$T/$tag.st"
  env "$@" SLIPSTREAM_PRELOAD_STATS="$T/$tag.st" timeout 30 "$T/prog" serve $port $MB "$how" \
    >"$T/$tag.srv" 2>&1 &
  pids+=($!)
  # Its "ready" waited for as long as it may live: a loaded machine can
  # take seconds to start a preloaded program.
  for _ in $(seq 300); do grep -q ready "$T/$tag.srv" && break; sleep 0.1; done
  grep -q ready "$T/$tag.srv" || echo "  the server ($tag) never said ready: $(tail -3 "$T/$tag.srv")"
  env "$@" SLIPSTREAM_PRELOAD_STATS="$T/$tag.st" timeout 30 "$T/prog" send $port $MB \
    >"$T/$tag.cl" 2>&1
  wait "${pids[-1]}"
}

# exec_image_on TAG PROV: the exec'd program (its pid from its output)
# counted one connection on rsockets over PROV, none on kernel TCP.
exec_image_on() { stats_of "$T/$1.srv" "$T/$1.st" " rsockets=1 .*$2=1 .* kernel_tcp=0$"; }

bad=0
run plain exec || bad=1
has "$T/plain.srv" "^echoed $MB$" && has "$T/plain.srv" "^child exit 0$" &&
  has "$T/plain.cl" "^echoed $MB intact$" || bad=1
check "without the preload: the exec'd program echoes 1 MB over its stdin" $bad

for prov in tcp shm; do
  bad=0
  run "$prov" exec LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov || bad=1
  has "$T/$prov.srv" "^stdin: a socket of family 2, " && has "$T/$prov.srv" "^echoed $MB$" &&
    has "$T/$prov.srv" "^child exit 0$" && has "$T/$prov.cl" "^echoed $MB intact$" || bad=1
  exec_image_on "$prov" "$prov" || bad=1
  check "$prov, both ends preloaded: the connection crosses exec (sshd's re-exec): the new program echoes 1 MB on it, counted on rsockets" $bad

  bad=0
  run "spawn-$prov" spawn LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov || bad=1
  has "$T/spawn-$prov.srv" "^echoed $MB$" && has "$T/spawn-$prov.srv" "^child exit 0$" &&
    has "$T/spawn-$prov.cl" "^echoed $MB intact$" || bad=1
  exec_image_on "spawn-$prov" "$prov" || bad=1
  check "$prov, posix_spawn with dup2 actions onto stdin and stdout: the spawned program echoes 1 MB on the connection, counted on rsockets" $bad

  for how in spawninherit vforkinherit; do
    bad=0
    run "$how-$prov" $how LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov || bad=1
    has "$T/$how-$prov.srv" "^fd [0-9]+: a socket of family 2$" &&
      has "$T/$how-$prov.srv" "^looker exit 0$" && has "$T/$how-$prov.srv" "^echoed $MB$" &&
      has "$T/$how-$prov.cl" "^echoed $MB intact$" || bad=1
    by="posix_spawn"
    [ $how = vforkinherit ] && by=vfork
    check "$prov, a $by child that only inherits the connection finds a socket of its family there; the parent's goes on (its exec'd child echoes 1 MB)" $bad
  done

  bad=0
  run "badexec-$prov" badexec LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov || bad=1
  has "$T/badexec-$prov.srv" "^exec failed " && has "$T/badexec-$prov.srv" "^echoed $MB$" &&
    has "$T/badexec-$prov.cl" "^echoed $MB intact$" || bad=1
  check "$prov, an exec that fails: the connection goes on in the program that tried it" $bad
done

# A fork child that execs while its parent keeps its copy: the exec'd
# program takes the connection and echoes half; the parent's copy is then
# out of date: its echo of the rest fails with ECONNRESET (fork's rule),
# no byte of it reaching the peer.
for prov in tcp shm; do
  bad=0
  # The server's status is its echo's: the failure this case expects.
  run "keeps-$prov" parentkeeps EXEC_PROG_HALF=1 LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov
  has "$T/keeps-$prov.srv" "^echoed $((MB / 2))$" &&
    has "$T/keeps-$prov.srv" "^echo: (read|write): Connection reset by peer after 0$" &&
    has "$T/keeps-$prov.cl" "^got $((MB / 2)) then (the end|error|send error)" || bad=1
  check "$prov, a fork child's exec while the parent keeps its copy: the exec'd program echoes, the parent's copy then says ECONNRESET" $bad
done

# A C++ program on the connection carried as its stdin and stdout
# (tests/ext/exec_cxx_echo.cc): std::cin and std::cout go through the
# preload as stdin and stdout do, even when libstdc++ made them before the
# preload's constructor ran (as libstdc++ 13 and later do at its own
# load; here a C++ library preloaded after librspreload, initialised
# before it, makes them).
CXX=$(command -v c++ || command -v g++ || command -v clang++)
if [ -n "$CXX" ]; then
  echo '#include <iostream>' >"$T/streams.cc"
  { "$CXX" -O2 -Wall -Werror "$here/exec_cxx_echo.cc" -o "$T/cxx" &&
    "$CXX" -shared -fPIC "$T/streams.cc" -o "$T/libstreams.so"; } >"$T/cxx.log" 2>&1 ||
    echo "  C++ build: $(head -3 "$T/cxx.log")"
  for prov in tcp shm; do
    bad=0
    run "cxx-$prov" cxx EXEC_PROG_CXX="$T/cxx" LD_PRELOAD="$PRELOAD $T/libstreams.so" \
      SLIPSTREAM_PROVIDER=$prov || bad=1
    has "$T/cxx-$prov.srv" "^echoed $MB$" && has "$T/cxx-$prov.cl" "^echoed $MB intact$" || bad=1
    check "$prov, a C++ program exec'd on the connection echoes 1 MB by std::cin and std::cout" $bad
  done
else
  echo "SKIP: $name: no C++ compiler for exec_cxx_echo.cc"
fi

# git daemon's pattern: the exec'd program execs the next one at once,
# which echoes; the peer still writes by what the first image told it.
for prov in tcp shm; do
  bad=0
  run "again-$prov" exec EXEC_PROG_EXEC_AGAIN=2 LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov ||
    bad=1
  has "$T/again-$prov.srv" "^echoed $MB$" && has "$T/again-$prov.cl" "^echoed $MB intact$" || bad=1
  check "$prov, three execs in a row (git daemon's): the last program echoes 1 MB" $bad
done

# Processes taking turns after an exec or a fork (sshd's monitor and its
# child): a child echoes the first half and exits, its parent the rest
# from the state it left. The parent's first call must take that state
# over before it builds anything (a credit update built from its own copy
# gave the peer a half of the buffer still unread: byte 350000 differed).
for prov in tcp shm; do
  for how in exec noexec; do
    bad=0
    for round in 1 2 3; do
      run "turns-$prov-$how" "$how" EXEC_PROG_HALF_IN_CHILD=1 LD_PRELOAD="$PRELOAD" \
        SLIPSTREAM_PROVIDER=$prov || bad=1
      has "$T/turns-$prov-$how.cl" "^echoed $MB intact$" || { bad=1; break; }
    done
    check "$prov, $how then fork: a child echoes half and exits, its parent the rest (3 rounds)" $bad
  done
done

# A shm connection crosses once both ends left each other's memory: a
# peer stopped (SIGSTOP) makes no call meanwhile, and the ring's gate
# tells the end that execs it is not writing there (no answer needed);
# once continued, its byte reaches the new program over the stream and
# comes back.
bad=0
port=$((port + 1))
# The exec waits until the peer has stopped (EXEC_PROG_AFTER): a peer
# still running could answer the hand-over.
env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=shm EXEC_PROG_AFTER="$T/stopped.now" timeout 30 \
  "$T/prog" serve $port 1 exec >"$T/stopped.srv" 2>&1 &
spid=$!
pids+=($spid)
for _ in $(seq 50); do grep -q ready "$T/stopped.srv" && break; sleep 0.1; done
env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=shm timeout 30 "$T/prog" hold $port >"$T/stopped.cl" 2>&1 &
cpid=$!
pids+=($cpid)
# timeout's child, not timeout, and only once it stopped itself
for _ in $(seq 200); do
  hold=$(pgrep -f "^$T/prog hold $port")
  [ -n "$hold" ] && [ "$(ps -o stat= -p "$hold" | cut -c1)" = T ] && break
  sleep 0.05
done
touch "$T/stopped.now"
# Continued only once the new program runs (the exec went through).
for _ in $(seq 200); do grep -q "^stdin: " "$T/stopped.srv" && break; sleep 0.05; done
pkill -CONT -f "^$T/prog hold $port"
wait "$spid" || bad=1
wait "$cpid"
has "$T/stopped.cl" "^after the stop: echoed$" &&
  has "$T/stopped.srv" "^stdin: a socket of family 2, " &&
  has "$T/stopped.srv" "^echoed 1$" || bad=1
if grep -q "cannot cross exec" "$T/stopped.srv"; then bad=1; fi
check "shm, the peer stopped while the other end execs: the connection crosses; once continued, the peer's byte is echoed by the new program" $bad

# A vfork child's exec (CPython's subprocess: vfork, dup2 onto 0 and 1,
# close_range of the rest, then execve along PATH, failing several times):
# subprocess.Popen(["cat"], stdin=conn, stdout=conn), the parent closing
# its copy; cat echoes 1 MB on the connection, counted on rsockets there.
cat >"$T/popen.py" <<'PY'
import socket, subprocess, sys
l = socket.socket()
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(1)
print("ready", flush=True)
c, _ = l.accept()
p = subprocess.Popen(["cat"], stdin=c, stdout=c)
c.close()
print("cat exit %d, pid %d" % (p.wait(), p.pid), flush=True)
PY
for prov in tcp shm; do
  bad=0
  port=$((port + 1))
  mkdir -p "$T/popen-$prov.st"
  env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov SLIPSTREAM_PRELOAD_STATS="$T/popen-$prov.st" \
    timeout 30 python3 "$T/popen.py" $port >"$T/popen-$prov.srv" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do grep -q ready "$T/popen-$prov.srv" && break; sleep 0.1; done
  env LD_PRELOAD="$PRELOAD" SLIPSTREAM_PROVIDER=$prov timeout 30 "$T/prog" send $port $MB \
    >"$T/popen-$prov.cl" 2>&1
  wait "${pids[-1]}"
  has "$T/popen-$prov.srv" "^cat exit 0, pid " && has "$T/popen-$prov.cl" "^echoed $MB intact$" &&
    stats_of "$T/popen-$prov.srv" "$T/popen-$prov.st" "comm=cat rsockets=1 .*$prov=1 .* kernel_tcp=0$" ||
    bad=1
  check "$prov, a vfork child's exec (subprocess.Popen stdin=conn, stdout=conn): cat echoes 1 MB on the connection, counted on rsockets" $bad
done

echo "$name: $fails failed"
[ "$fails" = 0 ]

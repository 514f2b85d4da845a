#!/bin/bash
# librspreload with unmodified Debian programs on loopback (docs/status.md,
# issue 14). Every case checks the exit codes, the bytes (cmp), and each
# process's own count of where its connections went
# (SLIPSTREAM_PRELOAD_STATS), so a connection silently left on kernel TCP
# fails a case that expects rsockets, and one that reached rsockets fails a
# case that must fall back:
#   both ends preloaded: socat client-speaks-first and server-speaks-first,
#     python3 -m http.server + curl                       -> shm on both ends
#   redis-server + redis-cli/redis-benchmark, iperf3 (::1, 127.0.0.1;
#     -P 4, -R, --bidir)                                  -> shm
#   memcached + python3 client/memcslap, nginx (2 forked workers) + curl
#     (3 MB keep-alive, 100 MB) and wrk,
#     sockperf TCP ping-pong (recvfrom; epoll, poll, select), throughput, under-load -> shm
#   memcached, nginx, redis, iperf3, sockperf and PostgreSQL again with
#     one end preloaded, both ways                        -> kernel TCP
#   PostgreSQL (a backend forked per connection) + psql/pgbench, run as
#     the postgres user (root only, else skipped)           -> shm
#   Java's blocking and NIO servers and clients, Node.js's http server
#     and client (each a counted skip without them)           -> shm; one end -> kernel TCP
#   one end preloaded, both ways, both speaking orders    -> kernel TCP
#   a unix socket under the preload                       -> untouched
#   RS_SQ_SIZE/RS_RQ_SIZE/RS_INLINE set                   -> still shm
#   SLIPSTREAM_PRELOAD=0                                  -> untouched
#   SLIPSTREAM_PRELOAD_KERNEL_PORTS listing the port      -> kernel TCP
#   preload_config: a rule for another program / for socat -> untouched / shm
#   exec from a vfork child handing an rsocket on        -> the new program writes on it
#   an epoll (asyncio) server, preloaded client           -> shm
#   pre-forked workers accepting, preloaded clients       -> shm
#   fork after accept (a child per connection)            -> shm
#   an epoll set of kernel descriptors only               -> the kernel's syscalls
# The cases of programs also run across namespaces are in preload_cases.sh.
# Automake exit codes: 0 pass, 1 fail, 77 skip, 99 hard error.
set -u
name=preload.sh
B=$(cd "${top_builddir:-$(pwd)}" && pwd) || exit 99
PRELOAD=$B/.libs/librspreload.so
[ -f "$PRELOAD" ] || { echo "ERROR: $name: $PRELOAD not found: build first"; exit 99; }
for p in socat curl python3 ss cmp timeout redis-server redis-cli redis-benchmark iperf3 \
  memcached memcslap nginx wrk sockperf sha256sum; do
  command -v $p >/dev/null || { echo "SKIP: $name: $p not found (scripts/install-deps.sh)"; exit 77; }
done
. "$(dirname "$0")/nginx_conf.sh" || exit 99
T=$(mktemp -d "${TMPDIR:-/tmp}/ss-preload.XXXXXX") || exit 99
pids=()
pg_dirs=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$T" "${pg_dirs[@]}"
}
trap cleanup EXIT
port=$((20000 + RANDOM % 9000))
head -c 3000000 /dev/urandom >"$T/in"
mkdir -p "$T/www" && cp "$T/in" "$T/www/blob"

HOST=127.0.0.1 PROV=shm
. "$(dirname "$0")/preload_cases.sh" || exit 99

socat_case "socat both preloaded, client speaks first" 1 1 up
socat_case "socat both preloaded, server speaks first" 1 1 down
socat_case "preloaded socat client, plain server, client speaks first" 0 1 up
socat_case "preloaded socat client, plain server, server speaks first" 0 1 down
socat_case "plain socat client, preloaded server, client speaks first" 1 0 up
socat_case "plain socat client, preloaded server, server speaks first" 1 0 down

http_case "python3 http.server + curl, both preloaded" 1 1 3
http_case "python3 http.server + curl on ::1, both preloaded" 1 1 2 ::1
http_case "preloaded curl, plain http.server" 0 1 2
http_case "plain curl, preloaded http.server" 1 0 2

redis_case "redis-server with redis-cli and redis-benchmark, all preloaded" 1 1 2000
redis_case "preloaded redis-server, plain redis-cli and redis-benchmark" 1 0 2000
redis_case "plain redis-server, preloaded redis-cli and redis-benchmark" 0 1 2000

iperf_case 1 1 ::1 2
iperf_case 1 1 127.0.0.1 2
iperf_case 1 1 ::1 5 -P 4
iperf_case 1 1 ::1 2 -R
iperf_case 1 1 ::1 3 --bidir
iperf_case 1 0 127.0.0.1 3 --bidir
iperf_case 0 1 ::1 5 -P 4

memc_case "memcached with a python3 client and memcslap, all preloaded" 1 1
memc_case "preloaded python3 client, plain memcached" 0 1
memc_case "plain python3 client, preloaded memcached" 1 0

nginx_case "nginx (master, 2 workers, epoll, sendfile) + curl and wrk, all preloaded" 1 1 3
nginx_case "preloaded curl, plain nginx" 0 1 0 10
nginx_case "plain curl, preloaded nginx (2 workers)" 1 0 0 10

sockperf_cases 1 1
sockperf_case "sockperf TCP ping-pong, preloaded server, plain client" 1 0 ping-pong epoll
sockperf_case "sockperf TCP under-load, plain server, preloaded client" 0 1 under-load -

pg_case "PostgreSQL + psql and pgbench, all as postgres, all preloaded" 1 1

java_case "Java: a blocking server (a thread per connection) and its clients, both preloaded" 1 1 block
java_case "Java: an NIO server (one Selector) and its clients, both preloaded" 1 1 nio
java_case "Java: preloaded clients, plain NIO server" 0 1 nio
node_case "Node.js: http server and client, both preloaded" 1 1
node_case "Node.js: plain http client, preloaded server" 1 0
node_case "Node.js: cluster (the primary passes each connection to a worker) and client, both preloaded" 1 1 "$HOST" cluster
pg_case "PostgreSQL preloaded, psql and pgbench plain" 1 0
pg_case "PostgreSQL plain, psql and pgbench preloaded" 0 1

# Upstream's RS_SQ_SIZE/RS_RQ_SIZE/RS_INLINE (settings of the "preload"
# component) apply to the rsockets made; still on rsockets, bytes intact.
RUN_SIZES=(RS_SQ_SIZE=64 RS_RQ_SIZE=64 RS_INLINE=32)
export "${RUN_SIZES[@]}"
socat_case "socat both preloaded, RS_SQ_SIZE/RS_RQ_SIZE/RS_INLINE set" 1 1 up
unset RS_SQ_SIZE RS_RQ_SIZE RS_INLINE

# untracked_case NAME: socat both ends preloaded, yet the preload must
# leave every socket alone (nothing tracked, nothing counted).
untracked_case() {
  local spid
  begin "$1"
  bg_env 1 socat -u TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr CREATE:"$T/out" &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  run_env 1 socat -u OPEN:"$T/in" TCP:127.0.0.1:$port || fail "client failed"
  wait "$spid" || fail "server failed"
  cmp -s "$T/in" "$T/out" || fail "bytes differ"
  ls "$T"/st/rspreload.* >/dev/null 2>&1 && fail "sockets were tracked: $(cat "$T"/st/*)"
  end
}

# Upstream's preload_config rules (in the rsocket configuration
# directory): a rule for another program leaves socat's sockets to the
# kernel (nothing tracked); a case-insensitive prefix rule, after a
# comment and a line that is no rule, takes them.
mkdir -p "$T/conf"
export SLIPSTREAM_RS_CONF_DIR=$T/conf
printf '# only this one\nnginx inet stream tcp\n' >"$T/conf/preload_config"
untracked_case "preload_config naming another program: socat untouched"
printf '# socat only\nno rule here\nSOC * STREAM *\n' >"$T/conf/preload_config"
socat_case "preload_config with a prefix rule for socat: rsockets" 1 1 up
# A rule asking for UDP sockets, which this preload leaves to the kernel:
# a warning naming the line, and (the only rule) TCP untouched.
printf '# udp\nsocat inet dgram udp\n' >"$T/conf/preload_config"
untracked_case "preload_config with a UDP rule only: TCP untouched" 2>"$T/dgram.err"
begin "preload_config asking for UDP: warned, naming the line"
grep -q "preload_config:2: UDP and AF_IB sockets stay on the kernel" "$T/dgram.err" ||
  fail "no warning: $(cat "$T/dgram.err")"
end
unset SLIPSTREAM_RS_CONF_DIR

# SLIPSTREAM_PRELOAD_KERNEL_PORTS: a listed port (here inside a range
# and a list) stays on kernel TCP, both ends preloaded: the client's
# connect is counted kernel TCP, the listener is not tracked; a list
# without the port leaves rsockets; a bad list is a warning naming the
# setting, and rsockets (the default: no port).
kernel_ports_case() {
  local list=$1 want=$2 spid
  begin "SLIPSTREAM_PRELOAD_KERNEL_PORTS=\"${list//PORT/$((port + 1))}\": $want"
  export SLIPSTREAM_PRELOAD_KERNEL_PORTS=${list//PORT/$port}
  bg_env 1 socat -u TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr CREATE:"$T/out" 2>"$T/ports.err" &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  run_env 1 socat -u OPEN:"$T/in" TCP:127.0.0.1:$port 2>>"$T/ports.err" || fail "client failed"
  wait "$spid" || fail "server failed"
  unset SLIPSTREAM_PRELOAD_KERNEL_PORTS
  cmp -s "$T/in" "$T/out" || fail "bytes differ"
  case $want in
    kernel) expect_counts socat 0 1 ;;
    rsockets) expect_counts socat 2 0 ;;
    warning)
      expect_counts socat 2 0
      grep -q 'SLIPSTREAM_PRELOAD_KERNEL_PORTS="1-x"' "$T/ports.err" ||
        fail "no warning naming the setting: $(cat "$T/ports.err")"
      ;;
  esac
  end
}
kernel_ports_case "22, 100-200 ,PORT" kernel
kernel_ports_case "1-PORT" kernel
kernel_ports_case "22,1-1000" rsockets
kernel_ports_case "1-x" warning

# SLIPSTREAM_PRELOAD=0: the preload leaves every socket to the kernel
# (nothing is tracked, so nothing is counted).
export SLIPSTREAM_PRELOAD=0
untracked_case "SLIPSTREAM_PRELOAD=0 on both ends"
unset SLIPSTREAM_PRELOAD

# exec from a vfork child (CPython's subprocess, pass_fds) with an rsocket
# handed on: the new program gets the connection and writes on it (the
# parent's copy is then out of date; it only closes it). Before, the new
# program got EBADF.
begin "exec from a vfork child handing an rsocket on: the new program writes on it"
cat >"$T/exec_srv.py" <<'PY'
import socket, subprocess, sys
l = socket.socket()
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(1)
c, _ = l.accept()
child = subprocess.run([sys.executable, "-c",
                        "import os, sys; os.write(int(sys.argv[1]), b'from the exec\\'d child')",
                        str(c.fileno())], pass_fds=(c.fileno(),))
c.close()
sys.exit(child.returncode)
PY
bg_env 1 python3 "$T/exec_srv.py" $port &
spid=$!
pids+=("$spid")
wait_listening $port || fail "server never listened"
run_env 1 socat -u TCP:127.0.0.1:$port CREATE:"$T/out" || fail "client failed"
wait "$spid" || fail "server failed"
[ "$(cat "$T/out")" = "from the exec'd child" ] || fail "the exec'd child: $(cat "$T/out")"
expect_counts python3 2 0
expect_counts socat 1 0
end

# An epoll server (asyncio: its listener and each connection in one epoll
# set, waited on by epoll_wait): both ends on rsockets, bytes intact, each
# process's count proves it.
begin "asyncio (epoll) echo server and a preloaded client: shm"
cat >"$T/epoll_srv.py" <<'PY'
import asyncio, sys
async def echo(r, w):
    w.write(await r.read())
    await w.drain()
    w.close()
    done.set()
async def main():
    global done
    done = asyncio.Event()
    s = await asyncio.start_server(echo, "127.0.0.1", int(sys.argv[1]))
    await done.wait()
    s.close()
asyncio.run(main())
PY
bg_env 1 python3 "$T/epoll_srv.py" $port &
spid=$!
pids+=("$spid")
wait_listening $port || fail "server never listened"
run_env 1 socat TCP:127.0.0.1:$port - <"$T/in" >"$T/out" || fail "client failed"
wait "$spid" || fail "server failed"
cmp -s "$T/in" "$T/out" || fail "bytes differ"
expect_counts socat 1 0
expect_counts python3 1 0
end

# echo_case NAME SCRIPT CLIENTS: a preloaded python echo server SCRIPT
# (port as argument) and CLIENTS preloaded socat clients one after the
# other, each echoed back intact, every connection on rsockets.
echo_case() {
  local script=$2 n=$3 spid i
  begin "$1"
  bg_env 1 python3 "$script" $port &
  spid=$!
  pids+=("$spid")
  wait_listening $port || fail "server never listened"
  head -c 200000 "$T/in" >"$T/in.small"
  for i in $(seq "$n"); do
    run_env 1 socat TCP:127.0.0.1:$port - <"$T/in.small" >"$T/out" || fail "client $i failed"
    cmp -s "$T/in.small" "$T/out" || fail "client $i: bytes differ"
  done
  wait "$spid" || fail "server failed"
  expect_counts python3 "$n" 0
  expect_counts socat "$n" 0
  end
}

# Serves one connection on `c` in a fork child: echo until EOF.
cat >"$T/echo_child.py" <<'PY'
def echo(c):
    data = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        data += b
    c.sendall(data)
    c.close()
PY

# A pre-forking server: listen, fork two workers that accept, the parent
# closes its copy of the listener.
cat >"$T/prefork_srv.py" <<'PY'
import os, socket, sys
from echo_child import echo
l = socket.socket()
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(8)
kids = []
for i in range(2):
    pid = os.fork()
    if pid == 0:
        for j in range(2):
            echo(l.accept()[0])
        os._exit(0)
    kids.append(pid)
l.close()
sys.exit(0 if [os.waitpid(k, 0)[1] for k in kids] == [0, 0] else 1)
PY
echo_case "pre-forked workers accepting on an inherited listener" "$T/prefork_srv.py" 4

# The same with each worker's own epoll set holding the listener
# edge-triggered (as tokio, Go and libuv servers): every client an edge in
# the worker that accepts it; a lost one leaves the worker asleep (exit 3).
cat >"$T/prefork_et_srv.py" <<'PY'
import os, select, socket, sys
from echo_child import echo
l = socket.socket()
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(8)
l.setblocking(False)
kids = []
for i in range(2):
    pid = os.fork()
    if pid == 0:
        ep = select.epoll()
        ep.register(l.fileno(), select.EPOLLIN | select.EPOLLET)
        served = 0
        while served < 2:
            if not ep.poll(20):
                os._exit(3)
            while served < 2:
                try:
                    c = l.accept()[0]
                except BlockingIOError:
                    break
                c.setblocking(True)
                echo(c)
                served += 1
        os._exit(0)
    kids.append(pid)
l.close()
sys.exit(0 if [os.waitpid(k, 0)[1] for k in kids] == [0, 0] else 1)
PY
echo_case "pre-forked workers, each with the listener edge-triggered" "$T/prefork_et_srv.py" 4

# Fork after accept (a PostgreSQL-style backend per connection): the
# child serves the connection, the parent closes its copy.
cat >"$T/forkaccept_srv.py" <<'PY'
import os, socket, sys
from echo_child import echo
l = socket.socket()
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(8)
kids = []
for i in range(3):
    c, _ = l.accept()
    pid = os.fork()
    if pid == 0:
        l.close()
        echo(c)
        os._exit(0)
    c.close()
    kids.append(pid)
sys.exit(0 if [os.waitpid(k, 0)[1] for k in kids] == [0, 0, 0] else 1)
PY
echo_case "fork after accept: a child per connection" "$T/forkaccept_srv.py" 3

# A non-blocking connect as event loops make it (connect: EINPROGRESS;
# writable by poll, select or epoll (asyncio); SO_ERROR 0; then the
# bytes, echoed back; or made blocking at once, its send waiting for the
# connect) by a preloaded client, to a server that is
#  * plain: shm's rendezvous refuses at once, kernel TCP;
#  * preloaded, but stopped (SIGSTOP) while the client connects: the
#    kernel queues the rsocket connect on the listener's rendezvous, nobody
#    answers, it times out (connect_timeout 300 ms) after EINPROGRESS, and
#    the connect falls back to kernel TCP late (the client's debug line
#    says so). The program's wait sees the kernel connection writable, as
#    without the preload. Continued, the server accepts a second later
#    (both connections queued by then): its accept drops the rsocket
#    connection the client gave up (counted "abandoned", as TCP never
#    completes a connection whose client went away) and takes the
#    kernel one.
head -c 300000 "$T/in" >"$T/in.nb"
NB=$(cd "$(dirname "$0")/../preload" && pwd)
# nb_case HOW SERVER(plain|stopped)
nb_case() {
  local how=$1 srv=$2 spid cpid i rc
  begin "non-blocking connect ($how), preloaded client, $srv server: kernel TCP"
  rm -f "$T/srv.pid" "$T/nb.err"
  bg_env $([ "$srv" = plain ] && echo 0 || echo 1) python3 "$NB/nb_server.py" 127.0.0.1 $port "$T/srv.pid" \
    $([ "$srv" = stopped ] && echo after-stop) &
  spid=$!
  pids+=("$spid")
  for i in $(seq 100); do [ -s "$T/srv.pid" ] && break; sleep 0.1; done
  [ "$srv" = stopped ] && kill -STOP "$(cat "$T/srv.pid")"
  SLIPSTREAM_RS_CONNECT_TIMEOUT=300 SLIPSTREAM_LOG_LEVEL=debug \
    bg_env 1 python3 "$NB/nb_client.py" 127.0.0.1 $port "$how" <"$T/in.nb" >"$T/out" 2>"$T/nb.err" &
  cpid=$!
  pids+=("$cpid")
  if [ "$srv" = stopped ]; then
    for i in $(seq 100); do grep -q "after EINPROGRESS" "$T/nb.err" && break; sleep 0.1; done
    grep -q "after EINPROGRESS" "$T/nb.err" || fail "no late fallback logged"
    kill -CONT "$(cat "$T/srv.pid")"
  fi
  wait "$cpid"
  rc=$?
  [ "$rc" = 0 ] || fail "client exit $rc: $(grep -v DEBUG "$T/nb.err" | tail -3)"
  wait "$spid" || fail "server failed"
  cmp -s "$T/in.nb" "$T/out" || fail "bytes differ"
  if [ "$srv" = plain ]; then
    expect_counts python3 0 1
  else  # the server's own counts apart: kernel TCP for the connection it served
    mv "$T/st/rspreload.$(cat "$T/srv.pid")" "$T/srv.st" || fail "no server counts"
    grep -q " rsockets=0 .* abandoned=1 kernel_tcp=1$" "$T/srv.st" || fail "server: $(cat "$T/srv.st")"
    expect_counts python3 0 1
  fi
  end
}
for how in poll select epoll asyncio blocking; do
  nb_case $how plain
  nb_case $how stopped
done

# Not TCP: a unix socket passes through untouched (no rsocket, no count).
begin "unix socket under the preload"
bg_env 1 socat -u UNIX-LISTEN:"$T/sock" CREATE:"$T/out" &
spid=$!
pids+=("$spid")
for i in $(seq 100); do [ -S "$T/sock" ] && break; sleep 0.1; done
run_env 1 socat -u OPEN:"$T/in" UNIX-CONNECT:"$T/sock" || fail "client failed"
wait "$spid" || fail "server failed"
cmp -s "$T/in" "$T/out" || fail "bytes differ"
ls "$T"/st/rspreload.* >/dev/null 2>&1 && fail "a unix socket was counted: $(cat "$T"/st/*)"
end

# An epoll set of kernel descriptors only costs what the kernel's does:
# between two marks, the preloaded program makes the same syscalls as the
# plain one (strace), its epoll_waits (idle ones included) and nothing else.
cat >"$T/epoll_kernel.py" <<'PY'
import os, select
r, w = os.pipe()
ep = select.epoll()
ep.register(r, select.EPOLLIN)
os.write(2, b"MARK\n")
for _ in range(5):
    ep.poll(0.01)  # idle: the timeout ends each (a busy phase would show)
os.write(w, b"x")
ep.poll(-1)
os.write(2, b"END\n")
PY
# The syscalls between the marks, one name per line.
marked_syscalls() {
  strace -f -o "$T/strace" "$@" 2>/dev/null
  sed -n '/"MARK\\n"/,/"END\\n"/p' "$T/strace" | sed -e 's/^[0-9]* *//' -e 's/(.*//' |
    grep -v '^write$'
}
if command -v strace >/dev/null; then
  begin "epoll over kernel descriptors only: the kernel's syscalls, no more"
  plain=$(marked_syscalls python3 "$T/epoll_kernel.py")
  pre=$(marked_syscalls env LD_PRELOAD="$PRELOAD" python3 "$T/epoll_kernel.py")
  [ "$(grep -c '^epoll_wait$' <<<"$pre")" = 6 ] || fail "preloaded: $(tr '\n' ' ' <<<"$pre")"
  [ "$plain" = "$pre" ] || fail "plain: $(tr '\n' ' ' <<<"$plain") preloaded: $(tr '\n' ' ' <<<"$pre")"
  end
else
  echo "SKIP: epoll over kernel descriptors only (no strace)"
fi

[ "$fails" = 0 ] || { echo "$name: $fails case(s) failed"; exit 1; }
echo "$name: all cases passed"

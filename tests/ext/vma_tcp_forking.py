"""vma_tcp.sh's forking programs, whose fork child carries on a
connection the parent made on the rings.

ADDR PORT COUNT WHO, WHO "parent" or "child": an accept-then-fork server
(as PostgreSQL, inetd, sshd -r) on ADDR PORT. For each of COUNT
connections the parent reads and echoes the first bytes itself, then
forks a child that echoes the rest until the client half-closes. "parent":
the parent closes its copy at once and the child waits 0.5 s before its
first call ("late": 3.5 s; "gone": the parent exits at once, as soon as it
closed its copy); "child": the child starts at once and the parent keeps its
copy 1 s; "exec": so does the parent, and the child runs cat(1) on the
connection (its standard input and output, as inetd); "eof" and
"eof-child": the parent reads to the client's half-close before it forks
(the connection in CLOSE-WAIT), the child sends it all back, sees the end
of stream again and closes, the parent closing first ("eof") or 1 s after
("eof-child"). Exits 0 when every child did.

ADDR PORT 1 connect: connects to an echo server at ADDR PORT, exchanges
1000 bytes, forks, and closes its copy; the child sends 2 MB, half-closes
and checks the echo ("child ok"). ADDR PORT 1 connect-shut: after the
1000 bytes it sends 100 KB and half-closes before the fork (the
connection in FIN-WAIT); the child reads the echo to its end, the
parent closing its copy once the child's first read returned. ADDR PORT 1
connect-tw: the parent reads the echo to the server's FIN before the fork
(TIME-WAIT); the child's read finds the end of stream, and it prints
what a send and getpeername say. ADDR PORT 1 reexec: the same without
the fork: the process execs itself with the connection ("after exec ok").
ADDR PORT 1 spawn, system or popen: the new image is started by glibc's
posix_spawn, system or popen (its child runs no fork handler and execs
inside libc), the parent waits for it and closes its copy. ADDR PORT 1
spawn-dup2: posix_spawn with the connection left close-on-exec, passed
by a dup2 file action (to descriptor 9). ADDR PORT 1 clone-exit: a child
made by a raw clone system call (no fork handler runs) leaves at once by
_exit; the parent then sends 2 MB on the connection ("clone-exit ok").

ADDR PORT COUNT prefork: a server whose thread sleeps in accept while a
fork child accepts on the same listener (the child's first accept takes
the listener off the rings under the parent's sleeping accept); both
echo until COUNT connections were served, then each is sent "stop" from
here. Prints "prefork ok P C", the connections each served.

ADDR PORT COUNT double-fork: a daemon made by a double fork: the process
listens, forks and exits; its child starts a session, forks and exits;
the grandchild prints "daemon PID", waits 0.3 s (its parent's exit) and
echoes COUNT connections (waiting 30 s at most for each), then prints
"double-fork ok".

ADDR PORT COUNT held: the parent accepts a first connection and keeps it
(a thread echoes it to its end), then forks a child that accepts and
echoes COUNT more (its first accept takes the listener to the kernel
while the parent's connection still holds the port on the rings). Prints
"held ok" when the child served all and the first connection ended.

ADDR PORT 1 queued: the parent accepts and echoes a first client; a
second's handshake completes on the rings while nobody accepts; then a
fork child's first look (a select) takes the listener to the kernel, and
only then does the parent accept: it gets that connection, still on the
rings, and echoes it ("queued ok"). ADDR PORT 1 master: the same without
the first client, and the parent never accepts (a prefork master): the
waiting client is reset, not left waiting ("master ok" after 3 s)."""
import ctypes
import errno
import os
import select
import socket
import sys
import threading
import time

from vma_tcp_client import start_reader
from vma_tcp_echo import echo_until_eof

addr, port, count, who = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
family = socket.AF_INET6 if ":" in addr else socket.AF_INET


def send_and_check(c, n):
    data, got = os.urandom(n), bytearray()
    t = start_reader(c, got)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    t.join()
    return bytes(got) == data


if who == "after-exec":  # the descriptor's number in place of COUNT
    c = socket.socket(fileno=count)
    c.setblocking(True)  # the connect's timeout left the file non-blocking
    print("after exec", "ok" if send_and_check(c, 2000000) else "failed", flush=True)
    sys.exit(0)

def after_end(c):
    """What a connection past both ends answers (Linux: a send EPIPE, no
    peer name)."""
    said = []
    for name, call in (("send", lambda: c.send(b"x")), ("getpeername", c.getpeername)):
        try:
            call()
            said.append(name + " ok")
        except OSError as e:
            said.append(name + " " + errno.errorcode.get(e.errno, str(e.errno)))
    return ", ".join(said)


if who in ("connect", "connect-shut", "connect-tw", "reexec", "spawn", "spawn-dup2", "system", "popen",
           "clone-exit"):
    c = socket.create_connection((addr, port), timeout=30)
    c.sendall(b"x" * 1000)
    got = b""
    while len(got) < 1000:
        got += c.recv(4096)
    if who in ("connect-shut", "connect-tw"):
        data = os.urandom(100000)
        c.sendall(data)
        c.shutdown(socket.SHUT_WR)
        echo = bytearray()
        while who == "connect-tw" and (d := c.recv(65536)):  # to the server's FIN: TIME-WAIT
            echo.extend(d)
        first_read, said = os.pipe()
        pid = os.fork()
        if pid == 0:  # its first recv before the parent's close: it asks for the connection
            while d := c.recv(65536):
                echo.extend(d)
                if said >= 0:
                    os.close(said)
                    said = -1
            print("child", "ok" if echo == data else "failed (%d bytes)" % len(echo),
                  after_end(c) if who == "connect-tw" else "", flush=True)
            os._exit(0)
        os.close(said)
        os.read(first_read, 1)  # its end: the child's first read returned
        c.close()
        sys.exit(os.waitpid(pid, 0)[1] != 0)
    argv = [sys.executable, __file__, addr, str(port), str(c.fileno()), "after-exec"]
    if who == "clone-exit":  # clone(SIGCHLD): a copy of this process, as fork without its handlers
        pid = ctypes.CDLL(None, use_errno=True).syscall(56, 17, 0, 0, 0, 0)
        if pid == 0:
            os._exit(0)
        st = os.waitpid(pid, 0)[1] if pid > 0 else -1
        ok = st == 0 and send_and_check(c, 2000000)
        print("clone-exit", "ok" if ok else "failed (child status %d)" % st, flush=True)
        sys.exit(not ok)
    if who not in ("connect", "spawn-dup2"):
        os.set_inheritable(c.fileno(), True)
    if who == "reexec":
        os.execv(sys.executable, argv)
    if who in ("spawn", "spawn-dup2", "system", "popen"):
        libc = ctypes.CDLL(None, use_errno=True)
        if who == "spawn":  # glibc's posix_spawn (the os module's)
            _, st = os.waitpid(os.posix_spawn(sys.executable, argv, os.environ), 0)
            ok = st == 0
        elif who == "spawn-dup2":
            argv[4] = "9"
            moves = [(os.POSIX_SPAWN_DUP2, c.fileno(), 9)]
            pid = os.posix_spawn(sys.executable, argv, os.environ, file_actions=moves)
            ok = os.waitpid(pid, 0)[1] == 0
        elif who == "system":
            ok = libc.system(" ".join(argv).encode()) == 0
        else:
            libc.popen.restype = ctypes.c_void_p
            f = libc.popen(" ".join(argv).encode(), b"w")
            ok = bool(f) and libc.pclose(ctypes.c_void_p(f)) == 0
        c.close()
        sys.exit(not ok)
    pid = os.fork()
    if pid == 0:
        print("child", "ok" if send_and_check(c, 2000000) else "failed", flush=True)
        os._exit(0)
    c.close()
    _, st = os.waitpid(pid, 0)
    sys.exit(st != 0)

s = socket.socket(family, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port))
s.listen(4)


def serve(served):
    """Blocking accepts, each connection echoed, until one says "stop"."""
    while True:
        c, _ = s.accept()
        first = c.recv(4096)
        if first == b"stop":
            c.close()
            return
        c.sendall(first)
        echo_until_eof(c)
        served()


if who == "prefork":
    counts = [0, 0]
    r, w = os.pipe()

    def parent_served():
        counts[0] += 1
        os.write(w, b"p")

    t = threading.Thread(target=serve, args=(parent_served,))
    t.start()
    time.sleep(0.3)  # the thread asleep in accept before the fork
    pid = os.fork()
    if pid == 0:
        serve(lambda: os.write(w, b"c"))
        os._exit(0)
    print("ready", flush=True)
    while counts[1] + counts[0] < count:
        counts[1] += os.read(r, 1) == b"c"
    child_done = False
    for _ in range(20):  # a "stop" for each server; the kernel picks which
        if child_done and not t.is_alive():
            break
        with socket.create_connection((addr, port), timeout=5) as c:
            c.sendall(b"stop")
        time.sleep(0.1)
        child_done = child_done or os.waitpid(pid, os.WNOHANG)[0] == pid
    t.join(5)
    ok = child_done and not t.is_alive()
    print("prefork", "ok" if ok else "failed", counts[0], counts[1], flush=True)
    os._exit(not ok)

if who in ("queued", "master"):
    print("ready", flush=True)
    if who == "queued":
        echo_until_eof(s.accept()[0])
    select.select([s], [], [], 30)  # a completed handshake waits
    pid = os.fork()
    if pid == 0:  # its first look at the listener asks for it (not accept's O_NONBLOCK)
        select.select([s], [], [], 0.5)
        os._exit(0)
    os.waitpid(pid, 0)
    if who == "master":
        time.sleep(3)
        print("master ok", flush=True)
        sys.exit(0)
    time.sleep(0.5)  # the parent's answer to the child's ask (fork_share.h) comes first
    c, _ = s.accept()
    echo_until_eof(c)
    print("queued ok", flush=True)
    sys.exit(0)

if who == "double-fork":
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    print("daemon", os.getpid(), flush=True)
    time.sleep(0.3)
    s.settimeout(30)  # a daemon nobody waits for ends by itself
    for _ in range(count):
        c, _ = s.accept()
        c.sendall(c.recv(4096))
        echo_until_eof(c)
    print("double-fork ok", flush=True)
    os._exit(0)

if who == "held":
    print("ready", flush=True)
    first, _ = s.accept()
    t = threading.Thread(target=echo_until_eof, args=(first,))
    t.start()
    pid = os.fork()
    if pid == 0:  # never a call on the first connection
        for _ in range(count):
            echo_until_eof(s.accept()[0])
        os._exit(0)
    _, st = os.waitpid(pid, 0)
    t.join()
    print("held", "ok" if st == 0 else "failed", flush=True)
    sys.exit(st != 0)  # not _exit: the library's exit handler finishes the connection

print("ready", flush=True)
children = []
for _ in range(count):
    c, _ = s.accept()
    if who.startswith("eof"):
        got = bytearray()
        while d := c.recv(65536):
            got.extend(d)
        pid = os.fork()
        if pid == 0:
            if who == "eof":
                time.sleep(0.5)
            c.sendall(got)
            os._exit(0 if c.recv(1) == b"" else 1)
        children.append(pid)
        if who != "eof":
            time.sleep(1)
        c.close()
        continue
    c.sendall(c.recv(4096))
    pid = os.fork()
    if pid == 0:
        s.close()
        if who == "exec":
            os.dup2(c.fileno(), 0)
            os.dup2(c.fileno(), 1)
            os.execvp("cat", ["cat"])
        if who in ("parent", "late", "gone"):
            time.sleep(3.5 if who == "late" else 0.5)
        echo_until_eof(c)
        os._exit(0)
    children.append(pid)
    if who == "gone":  # the child's connection outlives this process
        c.close()
        print("gone ok", flush=True)
        sys.exit(0)
    if who not in ("parent", "late"):
        time.sleep(1)
    c.close()
bad = 0
for pid in children:
    _, st = os.waitpid(pid, 0)
    bad |= st != 0
print("children", "ok" if not bad else "failed", flush=True)
sys.exit(bad)

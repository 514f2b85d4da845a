"""vma_tcp.sh's forking programs, whose fork child carries on a
connection the parent made on the rings.

ADDR PORT COUNT WHO, WHO "parent" or "child": an accept-then-fork server
(as PostgreSQL, inetd, sshd -r) on ADDR PORT. For each of COUNT
connections the parent reads and echoes the first bytes itself, then
forks a child that echoes the rest until the client half-closes. "parent":
the parent closes its copy at once and the child waits 0.5 s before its
first call; "child": the child starts at once and the parent keeps its
copy 1 s; "exec": so does the parent, and the child runs cat(1) on the
connection (its standard input and output, as inetd). Exits 0 when every
child did.

ADDR PORT 1 connect: connects to an echo server at ADDR PORT, exchanges
1000 bytes, forks, and closes its copy; the child sends 2 MB, half-closes
and checks the echo ("child ok"). ADDR PORT 1 reexec: the same without
the fork: the process execs itself with the connection ("after exec ok")."""
import os
import socket
import sys
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

if who in ("connect", "reexec"):
    c = socket.create_connection((addr, port), timeout=30)
    c.sendall(b"x" * 1000)
    got = b""
    while len(got) < 1000:
        got += c.recv(4096)
    if who == "reexec":
        os.set_inheritable(c.fileno(), True)
        os.execv(sys.executable, [sys.executable, __file__, addr, str(port), str(c.fileno()),
                                  "after-exec"])
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
print("ready", flush=True)
children = []
for _ in range(count):
    c, _ = s.accept()
    c.sendall(c.recv(4096))
    pid = os.fork()
    if pid == 0:
        s.close()
        if who == "exec":
            os.dup2(c.fileno(), 0)
            os.dup2(c.fileno(), 1)
            os.execvp("cat", ["cat"])
        if who == "parent":
            time.sleep(0.5)
        echo_until_eof(c)
        os._exit(0)
    children.append(pid)
    if who != "parent":
        time.sleep(1)
    c.close()
bad = 0
for pid in children:
    _, st = os.waitpid(pid, 0)
    bad |= st != 0
print("children", "ok" if not bad else "failed", flush=True)
sys.exit(bad)

"""vma_tcp.sh's socket-semantics cases for an offloaded connection, against
the echo server (vma_tcp_echo.py) at HOST PORT, which serves COUNT
connections (7). Prints one "ok CASE" line per case that behaves as Linux's
TCP does, or exits non-zero saying which did not:
  shut_rd: a thread blocked in recv returns b"" when another thread calls
    shutdown(SHUT_RD) (the peer says nothing);
  port_held: after we close first (our side in TIME-WAIT), binding the
    connection's address and port again fails with EADDRINUSE;
  dup: a duplicate of the descriptor carries the connection, and goes on
    carrying it once the first is closed;
  sendfile: socket.sendfile (os.sendfile) of a 300 KB file, echoed whole,
    the file's position moved by what was sent;
  connect_again: a non-blocking connect gives EINPROGRESS, and once it
    is done the next connect 0, the one after EISCONN;
  connect_retry: a blocking connect refused (nobody on PORT+50) gives
    ECONNREFUSED, and the next on the same socket connects to the echo
    server; non-blocking and refused: EINPROGRESS, SO_ERROR ECONNREFUSED,
    connect ECONNABORTED (the error taken), then a new attempt:
    EINPROGRESS, ECONNREFUSED (Linux's answers);
  buffers: SO_SNDBUF and SO_RCVBUF set on the open connection read back
    doubled; SO_SNDBUF set small, one non-blocking send of 1 MB takes part
    of it, set to 1 MB it takes it whole (the send buffer grew at once);
  v6only: an IPv6 socket with IPV6_V6ONLY set cannot reach HOST by its
    IPv4-mapped address (ENETUNREACH, Linux's answer)."""
import errno
import os
import select
import socket
import sys
import tempfile
import threading
import time

host, port = sys.argv[1], int(sys.argv[2])

c = socket.create_connection((host, port), timeout=10)
got = []
t = threading.Thread(target=lambda: got.append(c.recv(100)))
t.start()
time.sleep(0.3)
c.shutdown(socket.SHUT_RD)
t.join(5)
if t.is_alive() or got != [b""]:
    sys.exit("shut_rd: the reader %s" % ("still blocked" if t.is_alive() else "got %r" % got))
c.close()
print("ok shut_rd", flush=True)

c = socket.create_connection((host, port), timeout=10)
local = c.getsockname()[:2]
c.sendall(b"x")
if c.recv(1) != b"x":
    sys.exit("port_held: no echo")
c.shutdown(socket.SHUT_WR)  # our FIN first: TIME-WAIT is ours
if c.recv(1) != b"":
    sys.exit("port_held: no end of stream")
c.close()
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try:
    s.bind(local)
    sys.exit("port_held: %s:%d bound again while its connection is in TIME-WAIT" % local)
except OSError as e:
    if e.errno != errno.EADDRINUSE:
        sys.exit("port_held: bind gave %s" % e)
print("ok port_held", flush=True)

# Blocking (no timeout: Python's timeout makes the shared file O_NONBLOCK).
c = socket.create_connection((host, port))
d = socket.socket(fileno=os.dup(c.fileno()))
d.sendall(b"through the duplicate")
if c.recv(100) != b"through the duplicate":
    sys.exit("dup: the echo did not come back on the first descriptor")
c.close()
d.sendall(b"again")
if d.recv(100) != b"again" or d.getpeername()[1] != port:
    sys.exit("dup: the duplicate lost the connection when the first was closed")
d.shutdown(socket.SHUT_WR)
if d.recv(10) != b"":
    sys.exit("dup: no end of stream")
d.close()
print("ok dup", flush=True)

c = socket.create_connection((host, port), timeout=10)
body = os.urandom(300000)
back = bytearray()
r = threading.Thread(target=lambda: [back.extend(d) for d in iter(lambda: c.recv(65536), b"")])
r.start()
with tempfile.TemporaryFile() as f:
    f.write(body)
    f.seek(0)
    sent = c.sendfile(f)
    if sent != len(body) or f.tell() != len(body):
        sys.exit("sendfile: sent %d of %d, file at %d" % (sent, len(body), f.tell()))
c.shutdown(socket.SHUT_WR)
r.join(10)
if bytes(back) != body:
    sys.exit("sendfile: echoed %d bytes of %d" % (len(back), len(body)))
c.close()
print("ok sendfile", flush=True)

# A non-blocking connect: EINPROGRESS, writable once done, then the next
# connect gives 0 once and EISCONN after (Linux's answers).
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
c.setblocking(False)
first = c.connect_ex((host, port))
select.select([], [c], [], 10)
again = c.connect_ex((host, port))
third = c.connect_ex((host, port))
if (first, again, third) != (errno.EINPROGRESS, 0, errno.EISCONN):
    sys.exit("connect: gave %s, %s, %s" % tuple(errno.errorcode.get(e, e) for e in (first, again, third)))
c.close()
print("ok connect_again", flush=True)

# connect again after a failed connect: Linux's socket is unconnected
# again and connects anew.
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
got = (c.connect_ex((host, port + 50)), c.connect_ex((host, port)))
if got != (errno.ECONNREFUSED, 0):
    sys.exit("connect retry: gave %s, %s" % tuple(errno.errorcode.get(e, e) for e in got))
c.sendall(b"retry")
if c.recv(5) != b"retry":
    sys.exit("connect retry: no echo")
c.close()
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
c.setblocking(False)
got = [c.connect_ex((host, port + 50))]
select.select([], [c], [], 10)
got += [c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR), c.connect_ex((host, port + 50)),
        c.connect_ex((host, port + 50))]
select.select([], [c], [], 10)
got.append(c.connect_ex((host, port + 50)))
want = [errno.EINPROGRESS, errno.ECONNREFUSED, errno.ECONNABORTED, errno.EINPROGRESS,
        errno.ECONNREFUSED]
if got != want:
    sys.exit("connect retry, non-blocking: gave %s" % ", ".join(errno.errorcode.get(e, str(e)) for e in got))
c.close()
print("ok connect_retry", flush=True)

# SO_SNDBUF and SO_RCVBUF on the open connection, as Linux's: the kernel
# keeps twice the value, and the send buffer holds no more than that.
c = socket.create_connection((host, port), timeout=10)
c.sendall(b"x")
if c.recv(1) != b"x":
    sys.exit("buffers: no echo")
c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
kept = c.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
rkept = c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
# MSG_DONTWAIT, not setblocking: that would turn the reader thread's
# recv below non-blocking too.
blob = bytes(1 << 20)
small = c.send(blob, socket.MSG_DONTWAIT)
c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
back = bytearray()
r = threading.Thread(target=lambda: [back.extend(d) for d in iter(lambda: c.recv(65536), b"")])
r.start()
time.sleep(0.2)  # the small buffer drains into the echo
try:
    large = c.send(blob, socket.MSG_DONTWAIT)
except BlockingIOError:
    large = 0
c.sendall(blob[large:])
c.shutdown(socket.SHUT_WR)
r.join(20)
if kept != 8192 or rkept != 131072 or not 0 < small < len(blob) or large != len(blob) or \
        len(back) != small + len(blob):
    sys.exit("buffers: kept %d/%d, sent %d then %d, echoed %d" % (kept, rkept, small, large, len(back)))
c.close()
print("ok buffers %d %d" % (small, large), flush=True)

s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
try:
    s.connect(("::ffff:" + host, port))
    sys.exit("v6only: connected to ::ffff:%s" % host)
except OSError as e:
    if e.errno != errno.ENETUNREACH:
        sys.exit("v6only: %s, want ENETUNREACH" % e)
s.close()
print("ok v6only", flush=True)

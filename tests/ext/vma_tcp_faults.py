"""vma_tcp.sh's faults, run on the kernel and offloaded, answers compared.
  server ADDR PORT PIDFILE: Linux's end: writes its pid, accepts, and
    neither reads nor writes until killed.
  client ADDR PORT PIDFILE CASE: connects, and while blocked in a call
  SIGKILLs the server (the same pid namespace), then prints what the
  call and the next ones gave, as Linux names them:
    send: blocked in send with the peer's window full (the killed peer's
      kernel resets: unread data), then another send;
    recv: blocked in recv (the killed peer's kernel sends a FIN: nothing
      unread), then two sends (the first lands, the peer resets).
    keepalive, user_timeout: PIDFILE.silent appears once Linux's end
      drops everything from us (vma_tcp.sh's rule); SO_KEEPALIVE (idle 1 s,
      1 s apart, 2 probes) set before a blocked recv, or TCP_USER_TIMEOUT
      (1.5 s) before a send then a recv: what the recv gives.
  survivor ADDR PORT MARK: Linux's client of an offloaded echo server:
    one echo, then MARK.echoed; once MARK.killed exists (the server was
    SIGKILLed), a send and a receive: prints what they gave."""
import errno
import os
import signal
import socket
import sys
import threading
import time

role, addr, port, pidfile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if role == "server":
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(4)
    with open(pidfile + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(pidfile + ".tmp", pidfile)
    conns = []
    while True:
        c, _ = s.accept()
        conns.append(c)


if role == "survivor":
    c = socket.create_connection((addr, port), timeout=10)
    c.sendall(b"x")
    if c.recv(1) != b"x":
        sys.exit("survivor: no echo")
    open(pidfile + ".echoed", "w").close()
    for _ in range(200):
        if os.path.exists(pidfile + ".killed"):
            break
        time.sleep(0.05)


def outcome(call):
    try:
        r = call()
        return "eof" if r == b"" else "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def kill_server():
    for _ in range(100):
        if os.path.exists(pidfile):
            break
        time.sleep(0.05)
    with open(pidfile) as f:
        os.kill(int(f.read()), signal.SIGKILL)


if role == "survivor":
    sent = outcome(lambda: c.send(b"y"))
    print("after kill: send %s, recv %s" % (sent, outcome(lambda: c.recv(1))), flush=True)
    sys.exit(0)

case = sys.argv[5]
c = socket.create_connection((addr, port))
c.settimeout(None)
got = []
if case == "send":
    block = b"z" * 65536
    def sender():
        while True:
            try:
                c.send(block)
            except OSError as e:
                got.append(errno.errorcode.get(e.errno, str(e.errno)))
                return
    t = threading.Thread(target=sender)
    t.start()
    time.sleep(1.0)  # the window is full by now: the sender blocks
    kill_server()
    t.join(20)
    print("send: %s" % (got[0] if got else "still blocked"))
    print("send again: %s" % outcome(lambda: c.send(b"a")))
elif case in ("keepalive", "user_timeout"):
    for _ in range(200):
        if os.path.exists(pidfile + ".silent"):
            break
        time.sleep(0.05)
    if case == "keepalive":
        for opt, v in ((socket.TCP_KEEPIDLE, 1), (socket.TCP_KEEPINTVL, 1), (socket.TCP_KEEPCNT, 2)):
            c.setsockopt(socket.IPPROTO_TCP, opt, v)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    else:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, 1500)
        print("send: %s" % outcome(lambda: c.send(b"u" * 1000)))
    start = time.monotonic()
    print("recv: %s" % outcome(lambda: c.recv(100)))
    print("within 10 s: %s" % (time.monotonic() - start < 10))
else:
    t = threading.Thread(target=lambda: got.append(outcome(lambda: c.recv(100))))
    t.start()
    time.sleep(0.5)
    kill_server()
    t.join(20)
    print("recv: %s" % (got[0] if got else "still blocked"))
    print("send after: %s" % outcome(lambda: c.send(b"a")))
    time.sleep(0.5)  # the peer's reset comes back
    print("send again: %s" % outcome(lambda: c.send(b"a")))
    print("recv after: %s" % outcome(lambda: c.recv(100)))
sys.stdout.flush()
os._exit(0)

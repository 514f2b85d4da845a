"""vma_tcp.sh's SO_LINGER cases, and a program's exit.
  server ADDR PORT COUNT [SECS [RATE]]: Linux's end: for each of COUNT
    connections, reads until the end of stream, a reset or 10 s of
    silence, prints "got N eof|reset|timeout" and closes SECS (0) later;
    with RATE, it reads RATE bytes a second at most through a 64 KiB
    receive buffer (its sender's data waits on it).
  client ADDR PORT rst: sends 1000 bytes, closes under SO_LINGER {1, 0}
    (a reset: no TIME-WAIT), then binds the connection's address and port
    again, which must work at once; prints "ok rst".
  client ADDR PORT timed: sends 4 MB, closes under SO_LINGER {1, 20} and
    leaves the process at once (os._exit): the close returned only once
    the peer had acknowledged everything, so every byte arrives.
  client ADDR PORT exit: sends 4 MB on a connection it leaves open
    (detached: the process's exit closes it; its SO_SNDBUF 2 MB, so up
    to 2 MB are still to go then), then 1000 bytes on a second
    that it closes, and exits at once (Python's own exit, its atexit and
    the libraries' destructors): both arrive whole, and end.
  client ADDR PORT _exit: the same, leaving by os._exit (libc's _exit: no
    exit handler, no destructor runs)."""
import os
import socket
import struct
import sys
import time

role, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if role == "server":
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rate = float(sys.argv[6]) if len(sys.argv) > 6 else 0
    if rate:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 15)  # Linux doubles it
    s.bind((addr, port))
    s.listen(4)
    print("ready", flush=True)
    for _ in range(int(sys.argv[4])):
        c, _ = s.accept()
        c.settimeout(10)
        n, end, t0 = 0, "eof", time.monotonic()
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                n += len(d)
                if rate:
                    time.sleep(max(0, t0 + n / rate - time.monotonic()))
        except ConnectionResetError:
            end = "reset"
        except socket.timeout:
            end = "timeout"
        print("got %d %s" % (n, end), flush=True)
        time.sleep(float(sys.argv[5]) if len(sys.argv) > 5 else 0)
        c.close()
    sys.exit(0)

c = socket.create_connection((addr, port), timeout=10)
if sys.argv[4] == "rst":
    local = c.getsockname()[:2]
    c.sendall(b"x" * 1000)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(local)  # no TIME-WAIT holds it: EADDRINUSE raises
    s.close()
    print("ok rst", flush=True)
elif sys.argv[4] in ("exit", "_exit"):
    c.settimeout(None)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 21)
    c.sendall(b"z" * 4000000)
    c.detach()  # open until the process ends
    d = socket.create_connection((addr, port), timeout=10)
    d.sendall(b"w" * 1000)
    d.close()
    print("leaving", flush=True)
    if sys.argv[4] == "_exit":
        os._exit(0)
    sys.exit(0)
else:
    c.settimeout(None)
    c.sendall(b"y" * 4000000)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 20))
    c.close()
    print("closed", flush=True)
    os._exit(0)

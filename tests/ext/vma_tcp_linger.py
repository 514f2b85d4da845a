"""vma_tcp.sh's SO_LINGER cases.
  server ADDR PORT COUNT: Linux's end: for each of COUNT connections,
    reads until the end of stream, a reset or 10 s of silence and prints
    "got N eof|reset|timeout".
  client ADDR PORT rst: sends 1000 bytes, closes under SO_LINGER {1, 0}
    (a reset: no TIME-WAIT), then binds the connection's address and port
    again, which must work at once; prints "ok rst".
  client ADDR PORT timed: sends 4 MB, closes under SO_LINGER {1, 20} and
    leaves the process at once (os._exit): the close returned only once
    the peer had acknowledged everything, so every byte arrives."""
import os
import socket
import struct
import sys

role, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if role == "server":
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(4)
    print("ready", flush=True)
    for _ in range(int(sys.argv[4])):
        c, _ = s.accept()
        c.settimeout(10)
        n, end = 0, "eof"
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                n += len(d)
        except ConnectionResetError:
            end = "reset"
        except socket.timeout:
            end = "timeout"
        print("got %d %s" % (n, end), flush=True)
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
else:
    c.settimeout(None)
    c.sendall(b"y" * 4000000)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 20))
    c.close()
    print("closed", flush=True)
    os._exit(0)

"""vma_tcp.sh's client: connects to HOST PORT, sends N random bytes while a
second thread reads the echo, half-closes, and checks that exactly the
bytes sent came back. Prints the socket's names and "echoed N ok"."""
import os
import socket
import sys
import threading

host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = os.urandom(n)
c = socket.create_connection((host, port), timeout=30)
print("names", c.getsockname()[:2], c.getpeername()[:2], flush=True)
got = bytearray()


def reader():
    while True:
        d = c.recv(65536)
        if not d:
            return
        got.extend(d)


t = threading.Thread(target=reader)
t.start()
c.sendall(data)
c.shutdown(socket.SHUT_WR)
t.join()
c.close()
if got != data:
    sys.exit("echoed %d bytes of %d, %s" % (len(got), n, "equal so far" if data.startswith(bytes(got)) else "different"))
print("echoed %d ok" % n, flush=True)

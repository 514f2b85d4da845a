"""vma_tcp.sh's client: connects to HOST PORT, sends N random bytes while a
second thread reads the echo, half-closes, and checks that exactly the
bytes sent came back. Prints the socket's names, what TCP_INFO says once
all is sent, and "echoed N ok". With a 4th argument PATH: after the first
half of the bytes, "half sent", and the rest once PATH exists (30 s at
most)."""
import os
import socket
import struct
import sys
import threading
import time


def start_reader(c, got):
    """A thread that appends what c receives to got until the end of stream."""
    def reader():
        while True:
            d = c.recv(65536)
            if not d:
                return
            got.extend(d)

    t = threading.Thread(target=reader)
    t.start()
    return t


if __name__ == "__main__":
    host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    data = os.urandom(n)
    c = socket.create_connection((host, port), timeout=30)
    print("names", c.getsockname()[:2], c.getpeername()[:2], flush=True)
    got = bytearray()
    t = start_reader(c, got)
    if len(sys.argv) > 4:
        c.sendall(data[:n // 2])
        print("half sent", flush=True)
        for _ in range(600):
            if os.path.exists(sys.argv[4]):
                break
            time.sleep(0.05)
        data_left = data[n // 2:]
    else:
        data_left = data
    c.sendall(data_left)
    # TCP_INFO (glibc's struct tcp_info, 104 bytes): state, MSS, RTT, cwnd,
    # the options (1 timestamps, 2 SACK, 4 window scale).
    f = struct.unpack("8B24I", c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104))
    print("tcp_info state %d snd_mss %d rtt %d snd_cwnd %d options %d" %
          (f[0], f[8 + 2], f[8 + 15], f[8 + 18], f[5]), flush=True)
    c.shutdown(socket.SHUT_WR)
    t.join()
    c.close()
    if got != data:
        sys.exit("echoed %d bytes of %d, %s" % (len(got), n, "equal so far" if data.startswith(bytes(got)) else "different"))
    print("echoed %d ok" % n, flush=True)

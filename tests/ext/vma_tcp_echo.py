"""vma_tcp.sh's kernel peer: listens on ADDR PORT, and for each of COUNT
connections echoes everything until the client half-closes. With a 4th
argument "options": TCP_NODELAY, SO_KEEPALIVE, TCP_KEEPIDLE 77 and
SO_LINGER {1, 3} set on the listener (the last after listen), and each
accepted connection's values printed (Linux's
accepted sockets take their listener's). With "edge MARK" (COUNT 2): the
listener in an edge-triggered epoll set; after the first connection's
event a second wait, then MARK.second is made (the second client
connects) and a third wait: prints "edges N N N", the events each wait
gave (Linux: 1 0 1, the unaccepted first connection raising no new
edge). With "late-close": each connection closed 1 s after its end."""
import socket
import struct
import sys
import time


def echo_until_eof(c, wait=0):
    """Echoes what c receives until the peer half-closes, then closes c
    (`wait` seconds later)."""
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    time.sleep(wait)
    c.close()


if __name__ == "__main__":
    addr, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    options = len(sys.argv) > 4 and sys.argv[4] == "options"
    if options:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 77)
    s.bind((addr, port))
    s.listen(4)
    if options:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 3))
    print("ready", flush=True)
    if len(sys.argv) > 5 and sys.argv[4] == "edge":
        import select
        ep = select.epoll()
        ep.register(s.fileno(), select.EPOLLIN | select.EPOLLET)
        edges = [len(ep.poll(10)), len(ep.poll(0.5))]
        open(sys.argv[5] + ".second", "w").close()
        edges.append(len(ep.poll(10)))
        print("edges %d %d %d" % tuple(edges), flush=True)
    for _ in range(count):
        c = s.accept()[0]
        if options:
            print("accepted nodelay %d keepalive %d keepidle %d linger %d %d" % ((
                c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY),
                c.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                c.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)) +
                struct.unpack("ii", c.getsockopt(socket.SOL_SOCKET, socket.SO_LINGER, 8))),
                flush=True)
        echo_until_eof(c, 1 if len(sys.argv) > 4 and sys.argv[4] == "late-close" else 0)

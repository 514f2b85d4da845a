"""vma_tcp.sh's kernel peer: listens on ADDR PORT, and for each of COUNT
connections echoes everything until the client half-closes."""
import socket
import sys


def echo_until_eof(c):
    """Echoes what c receives until the peer half-closes, then closes c."""
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()


if __name__ == "__main__":
    addr, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(4)
    print("ready", flush=True)
    for _ in range(count):
        echo_until_eof(s.accept()[0])

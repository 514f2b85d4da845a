"""vma_tcp.sh's listener edge-triggered in two epoll sets.
server ADDR PORT N: listens, each of two threads waits on a set of its
own holding the listener (EPOLLIN | EPOLLET) N times, 10 s at most each;
after both saw a connection's edge the main thread accepts it and sends
one byte. Prints "edges A B of N", the edges each thread saw (Linux: N
and N: every connection is an edge in each set, whichever looks first).
client ADDR PORT N: N connections one after the other, each read to its
byte and closed, a random pause of up to 300 us between them."""
import random
import select
import socket
import sys
import threading
import time

if __name__ == "__main__":
    role, addr, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    if role == "client":
        for _ in range(n):
            c = socket.create_connection((addr, port), timeout=30)
            if c.recv(1) != b"x":
                sys.exit("no byte")
            c.close()
            time.sleep(random.random() * 0.0003)
        sys.exit(0)
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)
    s.setblocking(False)
    edges = [0, 0]
    quiet = [False]  # a wait ran out: an edge missed

    def waiter(i):
        ep = select.epoll()
        ep.register(s.fileno(), select.EPOLLIN | select.EPOLLET)
        for _ in range(n):
            if not ep.poll(10):
                quiet[0] = True
                return
            edges[i] += 1

    threads = [threading.Thread(target=waiter, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    for k in range(n):
        while (edges[0] <= k or edges[1] <= k) and not quiet[0]:
            time.sleep(0.00005)
        if quiet[0]:
            break
        c = s.accept()[0]
        c.setblocking(True)
        c.sendall(b"x")
        c.close()
    for t in threads:
        t.join()
    print("edges %d %d of %d" % (edges[0], edges[1], n), flush=True)

#!/usr/bin/env python3
"""Many TCP connections at once, and many one after another
(vma_tcp.sh, case h).

  serve HOST PORT [first]
                        an epoll echo server (any number of connections),
                        "ready" once listening; with "first" it closes each
                        connection once it echoed 8 bytes (its end takes
                        TIME-WAIT, as an HTTP server's "Connection: close")
  hold HOST PORT N [SECS]
                        N connections open at once, each echoing 8 bytes;
                        prints the descriptors and memory they took, then
                        "held N", and closes them (SECS seconds later)
  churn HOST PORT SECS RATE [LHOST LPORT]
                        connect, echo 8 bytes, close, again and again for
                        SECS seconds, at most RATE a second and 64 under way
                        at once; prints "churned N in S s, R/s, failed F
                        (errnos), RSS +K KiB", how many took over 200 ms
                        and the slowest, and, when any failed, when the
                        first and the last did (s from the start);
                        with LHOST LPORT it serves there too (a thread;
                        "first"), "ready" once listening, and goes on
                        serving after its count until SIGTERM
"""
import errno
import os
import selectors
import signal
import socket
import sys
import threading
import time


MSG = b"01234567"


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def listener(host, port):
    lst = socket.socket(family(host), socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((host, port))
    lst.listen(4096)
    lst.setblocking(False)
    print("ready", flush=True)
    return lst


def serve(lst, first):
    sel = selectors.DefaultSelector()
    sel.register(lst, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            if key.fileobj is lst:
                while True:
                    try:
                        c, _ = lst.accept()
                    except BlockingIOError:
                        break
                    c.setblocking(False)
                    sel.register(c, selectors.EVENT_READ, [0])
                continue
            c = key.fileobj
            try:
                data = c.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data:
                c.send(data)  # at most 8 bytes: the socket has room
                key.data[0] += len(data)
                if not first or key.data[0] < len(MSG):
                    continue
            sel.unregister(c)
            c.close()


def fds():
    return len(os.listdir("/proc/self/fd"))


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Conn:
    """One connection's steps: connecting, echo awaited, done."""

    def __init__(self, host, port, sel):
        self.s = socket.socket(family(host), socket.SOCK_STREAM)
        self.s.setblocking(False)
        self.got = b""
        self.t0 = time.monotonic()
        err = self.s.connect_ex((host, port))
        if err not in (0, errno.EINPROGRESS):
            self.s.close()
            raise OSError(err, os.strerror(err))
        self.sent = False
        sel.register(self.s, selectors.EVENT_WRITE, self)

    def step(self, sel):
        """Returns True once the echo came back whole."""
        if not self.sent:
            err = self.s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, os.strerror(err))
            self.s.send(MSG)
            self.sent = True
            sel.modify(self.s, selectors.EVENT_READ, self)
            return False
        data = self.s.recv(64)
        if not data:
            raise OSError(errno.ECONNRESET, "end of stream before the echo")
        self.got += data
        if len(self.got) < len(MSG):
            return False
        if self.got != MSG:
            raise OSError(errno.EPROTO, "echo differs")
        return True


class Failures(dict):
    """Failed connections by errno, and when the first and last failed."""

    def __init__(self):
        super().__init__()
        self.first = self.last = None
        self.slow = 0  # finished connections that took over 200 ms
        self.slowest = 0.0

    def add(self, err, at, count=1):
        self[err] = self.get(err, 0) + count
        if self.first is None:
            self.first = at
        self.last = at

    def took(self, secs):
        self.slow += secs > 0.2
        self.slowest = max(self.slowest, secs)

    def summary(self):
        slow = f", {self.slow} over 200 ms, the slowest {self.slowest:.2f} s"
        if self.first is None:
            return slow
        return f"{slow}, failures from {self.first:.1f} s to {self.last:.1f} s"


def run(host, port, total, limit, in_flight, keep, rate=0):
    """Opens total connections, at most in_flight unfinished at once and
    rate (0: any) a second, until limit (a monotonic time) passes; keeps
    the finished ones open (keep) or closes them. Returns (finished,
    failed errnos with the first and last failure's time, kept)."""
    sel = selectors.DefaultSelector()
    started = finished = 0
    failed = Failures()
    kept = []
    busy = 0
    t0 = time.monotonic()
    while True:
        now = time.monotonic()
        allowed = total if not rate else min(total, int((now - t0) * rate) + 1)
        while busy < in_flight and started < allowed and now < limit:
            started += 1
            try:
                Conn(host, port, sel)
                busy += 1
            except OSError as e:
                failed.add(e.errno, now - t0)
        if busy == 0 and (started >= total or now >= limit):
            break
        for key, _ in sel.select(timeout=5 if not rate else 1 / rate):
            c = key.data
            try:
                if not c.step(sel):
                    continue
                finished += 1
                failed.took(time.monotonic() - c.t0)
                sel.unregister(c.s)
                if keep:
                    kept.append(c.s)
                else:
                    c.s.close()
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as e:
                failed.add(e.errno, time.monotonic() - t0)
                sel.unregister(c.s)
                c.s.close()
            busy -= 1
        if time.monotonic() > limit + 30:
            if busy:
                failed.add(errno.ETIMEDOUT, time.monotonic() - t0, busy)
            break
    return finished, failed, kept


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "serve":
        serve(listener(host, port), sys.argv[4:] == ["first"])
        return 0
    if mode == "hold":
        n = int(sys.argv[4])
        fds0, rss0 = fds(), rss_kib()
        done, failed, kept = run(host, port, n, float("inf"), 256, True)
        fds1, rss1 = fds(), rss_kib()
        per_fd = (fds1 - fds0) / max(done, 1)
        per_kib = (rss1 - rss0) / max(done, 1)
        print(f"descriptors per connection {per_fd:.2f}, memory per connection "
              f"{per_kib:.1f} KiB ({done} open, {fds1} descriptors, "
              f"RSS {rss1} KiB)", flush=True)
        bad = sum(failed.values())
        print(f"held {done} failed {bad} {sorted(failed.items())}", flush=True)
        time.sleep(float(sys.argv[5]) if len(sys.argv) > 5 else 0)
        for s in kept:
            s.close()
        return 0 if done == n and not bad else 1
    if mode == "churn":
        secs, rate = float(sys.argv[4]), int(sys.argv[5])
        if len(sys.argv) > 7:
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])  # the threads' too
            lst = listener(sys.argv[6], int(sys.argv[7]))
            threading.Thread(target=serve, args=(lst, True), daemon=True).start()
        t0, rss0 = time.monotonic(), rss_kib()
        done, failed, _ = run(host, port, 1 << 62, t0 + secs, 64, False, rate)
        took = time.monotonic() - t0
        bad = sum(failed.values())
        print(f"churned {done} in {took:.1f} s, {done / took:.0f}/s, failed {bad} "
              f"{sorted(failed.items())}, RSS +{rss_kib() - rss0} KiB{failed.summary()}", flush=True)
        if len(sys.argv) > 7:
            signal.sigwait([signal.SIGTERM])
        return 0 if done and not bad else 1
    return 2


if __name__ == "__main__":
    sys.exit(main())

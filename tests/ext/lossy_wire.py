#!/usr/bin/env python3
"""A lossy, reordering wire between two netdevs (this kernel has no netem).

    lossy_wire.py IF1 IF2 DROP REORDER SEED

Copies every Ethernet frame that arrives on one netdev out of the other,
as a cable would, except TCP segments: each is dropped with probability
DROP, or with probability REORDER held back and sent after the next three
frames that way (or 2 ms later, whichever comes first), both seeded by
SEED. Prints "ready" once both sockets are bound, and on SIGTERM one line
of counts per direction: "IF1>IF2 forwarded N dropped N reordered N".
Run as root in the namespace that holds both netdevs, their offloads off
(frames no longer than the MTU).
"""
import random
import select
import signal
import socket
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
HOLD_FRAMES, HOLD_S = 3, 0.002


def is_tcp(f):
    etype = int.from_bytes(f[12:14], "big")
    if etype == 0x0800 and len(f) >= 34:
        return f[23] == 6
    if etype == 0x86DD and len(f) >= 54:
        return f[20] == 6
    return False


class Direction:
    def __init__(self, src, dst, label):
        self.src, self.dst, self.label = src, dst, label
        self.held = []  # [frame, frames to let pass first, deadline]
        self.forwarded = self.dropped = self.reordered = 0

    def send(self, f):
        try:
            self.dst.send(f)
            self.forwarded += 1
        except OSError:
            self.dropped += 1  # the netdev's queue full: lost as on a wire

    def release(self, now, passed):
        keep = []
        for h in self.held:
            h[1] -= passed
            if h[1] <= 0 or now >= h[2]:
                self.send(h[0])
            else:
                keep.append(h)
        self.held = keep

    def report(self):
        return "%s forwarded %d dropped %d reordered %d" % (
            self.label, self.forwarded, self.dropped, self.reordered)


def main():
    if1, if2, drop, reorder, seed = sys.argv[1:6]
    drop, reorder = float(drop), float(reorder)
    rng = random.Random(int(seed))
    socks = []
    for name in (if1, if2):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((name, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        s.setblocking(False)
        socks.append(s)
    dirs = {socks[0]: Direction(socks[0], socks[1], if1 + ">" + if2),
            socks[1]: Direction(socks[1], socks[0], if2 + ">" + if1)}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", flush=True)
    while not stop:
        held = any(d.held for d in dirs.values())
        try:
            ready, _, _ = select.select(socks, [], [], HOLD_S if held else 0.2)
        except InterruptedError:
            continue
        now = time.monotonic()
        for s in ready:
            d = dirs[s]
            for _ in range(64):
                try:
                    f, addr = s.recvfrom(65536)
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue  # our own send, seen on the way out
                passed = 1
                if is_tcp(f):
                    r = rng.random()
                    if r < drop:
                        d.dropped += 1
                        d.release(now, 0)
                        continue
                    if r < drop + reorder:
                        d.reordered += 1
                        d.held.append([f, HOLD_FRAMES, now + HOLD_S])
                        continue
                d.send(f)
                d.release(now, passed)
        for d in dirs.values():
            if d.held:
                d.release(now, 0)
    for d in dirs.values():
        for h in d.held:
            d.send(h[0])
        print(d.report(), flush=True)


if __name__ == "__main__":
    main()

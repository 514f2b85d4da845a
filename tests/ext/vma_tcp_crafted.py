#!/usr/bin/python3
"""vma_tcp.sh's crafted segments (case i): a TCP peer written with Debian's
python3-scapy, in Linux's namespace, against an offloaded echo server
(vma_tcp_scale.py serve) at DST PORT. Frames go out and come in on IFACE
through a packet socket (the namespace's kernel must answer nothing: the
test drops its RSTs to PORT). Each case opens its own connection and
prints "ok CASE DETAIL", or exits non-zero saying what went wrong:
  echo: the handshake and 5 bytes echoed (the peer works);
  window_data: data far outside the window gets an ACK of what is
    expected and is not delivered; the stream goes on;
  window_rst: a RST outside the window is ignored;
  blind_rst: a RST inside the window but not at the next sequence number
    gets a challenge ACK (RFC 5961 §3) and the connection lives;
  blind_syn: a SYN on the open connection gets a challenge ACK (§4);
  overlap: a retransmission overlapping what arrived adds only its new
    bytes ("abcdef" then "defghi": "abcdefghi" echoed);
  checksum: a segment with a bad checksum is dropped, the same bytes with
    a good one delivered;
  options: a truncated option (MSS, length 8 in 4 bytes of options) on a
    data segment: never a crash, the stream intact after it;
  paws: with timestamps, a segment whose TSval is older than the last is
    dropped and answered with an ACK (RFC 7323 §5); newer, delivered;
  tiny_mss: a SYN announcing MSS 1: the echo comes in segments of at
    most 48 bytes (Linux's floor), whole;
  zero_window: our window closed, the server probes it instead of
    sending, and sends the echo once it opens.
Usage: vma_tcp_crafted.py IFACE SRC DST DST_MAC PORT"""
import random
import socket
import sys
import time

from scapy.all import IP, TCP, Ether, Raw  # Debian's python3-scapy

IFACE, SRC, DST, DST_MAC, PORT = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
with open("/sys/class/net/%s/address" % IFACE) as f:
    SRC_MAC = f.read().strip()
RAW = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
RAW.bind((IFACE, 0))
ports = random.sample(range(40000, 60000), 20)


def fail(case, why):
    sys.exit("%s: %s" % (case, why))


class Peer:
    """One connection to the server: what we sent (snd_nxt), what it sent
    (rcv_nxt), the bytes it echoed, every segment it sent us."""

    def __init__(self, case, mss=1460, ts=False):
        self.case = case
        self.sport = ports.pop()
        self.snd_nxt = random.randrange(1 << 32)
        self.ts_val = 1000 if ts else None
        self.ts_ecr = 0
        self.window = 65535
        self.got = b""
        self.seen = []
        opts = [("MSS", mss), ("SAckOK", b"")]
        if ts:
            opts.append(("Timestamp", (self.ts_val, 0)))
        self.send("S", options=opts, advance=1)
        synack = self.wait(lambda t: t.flags.S and t.flags.A, "no SYN-ACK")
        self.rcv_nxt = (synack.seq + 1) & 0xFFFFFFFF
        self.peer_ts = dict(synack.options).get("Timestamp")
        if ts and not self.peer_ts:
            fail(case, "timestamps not agreed")
        self.ack()

    def options(self, ts_val=None):
        if self.ts_val is None:
            return []
        return [("NOP", None), ("NOP", None), ("Timestamp", (ts_val or self.ts_val, self.ts_ecr))]

    def send(self, flags, data=b"", seq=None, options=None, advance=None, chksum=None, raw_opts=None,
             ack=True):
        tcp = TCP(sport=self.sport, dport=PORT, flags=flags + ("A" if ack and "S" not in flags else ""),
                  seq=self.snd_nxt if seq is None else seq, window=self.window,
                  options=self.options() if options is None else options)
        if "A" in str(tcp.flags):
            tcp.ack = self.rcv_nxt
        payload = data
        if raw_opts is not None:  # options of our own making: behind the header, counted in it
            tcp.dataofs = 5 + len(raw_opts) // 4
            payload = raw_opts + data
        if chksum is not None:
            tcp.chksum = chksum
        frame = Ether(src=SRC_MAC, dst=DST_MAC) / IP(src=SRC, dst=DST) / tcp
        if payload:
            frame = frame / Raw(payload)
        RAW.send(bytes(frame))
        if advance is None:
            advance = len(data) + (1 if "F" in flags else 0) if seq is None else 0
        self.snd_nxt = (self.snd_nxt + advance) & 0xFFFFFFFF

    def ack(self):
        self.send("")

    def segments(self, seconds):
        """The server's segments to us for `seconds`; in-order data taken
        and acknowledged (the echo)."""
        out = []
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return out
            RAW.settimeout(left)
            try:
                frame, addr = RAW.recvfrom(65535)
            except socket.timeout:
                return out
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            pkt = Ether(frame)
            if IP not in pkt or TCP not in pkt or pkt[IP].src != DST or pkt[TCP].dport != self.sport:
                continue
            t = pkt[TCP]
            out.append(t)
            self.seen.append(t)
            opts = dict(t.options)
            if "Timestamp" in opts:
                self.ts_ecr = opts["Timestamp"][0]
            data = bytes(t.payload)
            if data and t.seq == self.rcv_nxt and self.window:
                self.got += data
                self.rcv_nxt = (self.rcv_nxt + len(data)) & 0xFFFFFFFF
                self.ack()
            if t.flags.F and (t.seq + len(data)) & 0xFFFFFFFF == self.rcv_nxt:
                self.rcv_nxt = (self.rcv_nxt + 1) & 0xFFFFFFFF
                self.ack()

    def wait(self, pred, why, seconds=3):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for t in self.segments(min(0.2, end - time.monotonic())):
                if pred(t):
                    return t
        fail(self.case, why)

    def echoed(self, want, seconds=3):
        end = time.monotonic() + seconds
        while not self.got.endswith(want) and time.monotonic() < end:
            self.segments(0.1)
        if not self.got.endswith(want):
            fail(self.case, "echoed %r, not ending in %r" % (self.got[-40:], want))

    def close(self):
        """Our FIN; the server's echo loop ends and closes its end."""
        self.send("F")
        self.wait(lambda t: t.flags.F, "no FIN from the server")
        self.segments(0.1)
        if any(t.flags.R for t in self.seen):
            fail(self.case, "the server reset the connection")


def challenge(p, what):
    """An ACK of what the server expects, for `what` we just sent."""
    p.wait(lambda t: t.flags.A and not t.flags.S and t.ack == p.snd_nxt and not bytes(t.payload),
           "no ACK answered %s" % what, seconds=2)


p = Peer("echo")
p.send("P", b"hello")
p.echoed(b"hello")
p.close()
print("ok echo", flush=True)

p = Peer("window_data")
p.send("P", b"FARAWAY", seq=(p.snd_nxt + (1 << 30)) & 0xFFFFFFFF)
challenge(p, "data outside the window")
p.send("P", b"after")
p.echoed(b"after")
if b"FARAWAY" in p.got:
    fail("window_data", "data outside the window delivered")
p.close()
print("ok window_data", flush=True)

def lives_after(case, crafted, what=None):
    """crafted(p) sends what the connection must live through: answered by
    a challenge ACK when `what` names it, by nothing otherwise."""
    p = Peer(case)
    crafted(p)
    if what:
        challenge(p, what)
    p.send("P", b"alive")
    p.echoed(b"alive")
    p.close()
    print("ok " + case, flush=True)


lives_after("window_rst", lambda p: p.send("R", seq=(p.snd_nxt + (1 << 30)) & 0xFFFFFFFF, ack=False))
lives_after("blind_rst", lambda p: p.send("R", seq=(p.snd_nxt + 1) & 0xFFFFFFFF, ack=False),
            "a RST in the window")
lives_after("blind_syn", lambda p: p.send("S", seq=(p.snd_nxt + 5) & 0xFFFFFFFF, options=[("MSS", 1460)]),
            "a SYN on the open connection")

p = Peer("overlap")
start = p.snd_nxt
p.send("P", b"abcdef")
p.send("P", b"defghi", seq=(start + 3) & 0xFFFFFFFF)
p.snd_nxt = (start + 9) & 0xFFFFFFFF
p.echoed(b"abcdefghi")
if p.got != b"abcdefghi":
    fail("overlap", "echoed %r" % p.got)
p.close()
print("ok overlap", flush=True)

p = Peer("checksum")
p.send("P", b"zzzz", seq=p.snd_nxt, chksum=0x1234)
p.segments(0.3)
if p.got:
    fail("checksum", "a segment with a bad checksum delivered %r" % p.got)
p.send("P", b"good")
p.echoed(b"good")
p.close()
print("ok checksum", flush=True)

p = Peer("options")
p.send("P", b"opt", raw_opts=b"\x02\x08\x05\xb4")  # MSS: length 8, 4 bytes there
p.segments(0.3)
took = p.got == b"opt"
if not took:  # dropped: the same bytes again, without the broken option
    p.snd_nxt = (p.snd_nxt - 3) & 0xFFFFFFFF
    p.send("P", b"opt")
p.send("P", b"after")
p.echoed(b"optafter")
if p.got != b"optafter":
    fail("options", "echoed %r" % p.got)
p.close()
print("ok options %s" % ("taken" if took else "dropped"), flush=True)

p = Peer("paws", ts=True)
p.ts_val = 2000
p.send("P", b"t1")
p.echoed(b"t1")
p.send("P", b"t2", options=p.options(ts_val=10), advance=0)
challenge(p, "an old timestamp")
p.segments(0.2)
if p.got != b"t1":
    fail("paws", "a segment with an old timestamp delivered: %r" % p.got)
p.ts_val = 2001
p.send("P", b"t2")
p.echoed(b"t1t2")
p.close()
print("ok paws", flush=True)

p = Peer("tiny_mss", mss=1)
body = bytes(range(65, 65 + 50)) * 4
p.send("P", body)
p.echoed(body)
sizes = sorted({len(bytes(t.payload)) for t in p.seen if bytes(t.payload)})
if max(sizes) > 48:
    fail("tiny_mss", "segments of %s bytes" % sizes)
p.close()
print("ok tiny_mss %s" % sizes, flush=True)

p = Peer("zero_window")
p.window = 0
p.send("P", b"held back")
p.wait(lambda t: t.seq == (p.rcv_nxt - 1) & 0xFFFFFFFF and not bytes(t.payload),
       "no probe of our zero window", seconds=5)
if p.got:
    fail("zero_window", "data sent into a zero window: %r" % p.got)
p.window = 65535
p.ack()
p.echoed(b"held back")
p.close()
print("ok zero_window", flush=True)

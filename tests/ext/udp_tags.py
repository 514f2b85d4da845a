#!/usr/bin/env python3
"""Counts the UDP datagrams to and from one port on one interface by the
header their payload starts with (a helper of udpong_netns.sh).

usage: udp_tags.py IFACE PORT READY_FILE

Captures on IFACE (AF_PACKET: both directions; run it inside the
interface's namespace), creates READY_FILE once capturing, and on SIGTERM
prints one line:

  to=N from=N ours_to=N ours_from=N upstream=N other=N lost=N

to/from: datagrams to/from PORT; ours_*: those starting with librsocket's
datagram header over UDP (docs/protocol.md: tag "SSDG", a version that
matches the IP header's, op 0, length 8, reserved 0); upstream: those
starting with upstream librdmacm's tag 0x55555555; other: the rest;
lost: what the kernel dropped from the capture socket (not counted above).
"""
import signal
import socket
import struct
import sys

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
OURS_TAG = 0x53534447
UPSTREAM_TAG = 0x55555555


def udp_of(frame):
    """(IP version, source port, destination port, payload) or None."""
    if len(frame) < 14:
        return None
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    if ethertype == 0x0800 and len(frame) >= 34:
        ihl = (frame[14] & 0x0F) * 4
        frag = struct.unpack_from("!H", frame, 20)[0] & 0x1FFF
        if frame[23] != 17 or frag:
            return None
        version, udp = 4, 14 + ihl
    elif ethertype == 0x86DD and len(frame) >= 62:
        if frame[20] != 17:  # no extension headers on this path
            return None
        version, udp = 6, 54
    else:
        return None
    if len(frame) < udp + 8:
        return None
    sport, dport = struct.unpack_from("!HH", frame, udp)
    return version, sport, dport, frame[udp + 8:]


def main():
    iface, port, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE (root)
    s.bind((iface, 0))
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    open(ready, "w").close()
    c = dict.fromkeys(("to", "from", "ours_to", "ours_from", "upstream", "other"), 0)
    s.settimeout(0.1)
    while True:
        try:
            frame = s.recv(65536)
        except socket.timeout:
            if stop:
                break
            continue
        except InterruptedError:
            continue
        u = udp_of(frame)
        if not u or port not in (u[1], u[2]):
            continue
        version, sport, _, payload = u
        way = "from" if sport == port else "to"
        c[way] += 1
        tag = struct.unpack_from("!I", payload)[0] if len(payload) >= 4 else None
        if (tag == OURS_TAG and len(payload) >= 8 and payload[4] == version and
                payload[5] == 0 and payload[6] == 8 and payload[7] == 0):
            c["ours_" + way] += 1
        elif tag == UPSTREAM_TAG:
            c["upstream"] += 1
        else:
            c["other"] += 1
    _, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    print(" ".join(f"{k}={v}" for k, v in c.items()) + f" lost={drops}")


if __name__ == "__main__":
    main()

// The tcp provider's side channel, for a peer whose TCP port belongs to a
// program (librspreload: Peer::off_stream). Nothing may go on that port's
// stream unless the peer is known to speak rsockets, so the listening side
// also answers UDP probes on the same address and port number, telling
// the port of a second TCP listener of its own (the side listener) where
// rsocket connections go. A peer that answers nothing (an ICMP port
// unreachable, or silence until the timeout) is not ours: the program's
// connect goes to the kernel. docs/protocol.md, "Side channel".
#pragma once
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace ss::prov::tcp {

// Wire: 16 bytes (probe) or 20 (answer), fields in network order.
//   0  magic "SSXP"   4  version 1   5  kind (1 probe, 2 answer)
//   6  zero (2)       8  nonce (8, the prober's, echoed)
//   16 side port (2, answer only)    18 zero (2)
inline constexpr size_t kProbeSize = 16, kAnswerSize = 20;
inline constexpr uint8_t kSideVersion = 1, kKindProbe = 1, kKindAnswer = 2;

void encode_probe(uint8_t (&out)[kProbeSize], uint64_t nonce);
// The probe's nonce, or false for anything that is not a probe.
bool decode_probe(const uint8_t* in, size_t len, uint64_t* nonce);
void encode_answer(uint8_t (&out)[kAnswerSize], uint64_t nonce, uint16_t port);
// The side port of an answer to `nonce`, or false for anything else (another
// nonce, a zero port, a datagram of any other size or kind).
bool decode_answer(const uint8_t* in, size_t len, uint64_t nonce, uint16_t* port);

// Asks `dst` (its address and the program's port) for its side port,
// waiting at most `timeout_ms`: the port, or -ECONNREFUSED (nobody answers
// there: the peer is no rsocket listener), -ETIMEDOUT, or another -errno
// (no descriptor for the probe: -EMFILE). A signal does not cut it short.
int probe_side_port(const sockaddr* dst, socklen_t len, int timeout_ms);

// probe_side_port with what the core settings say (side_probe_timeout, 0:
// never probe) and a per-process memory of peers that did not answer
// (side_probe_memory), so a program connecting again and again to a plain
// server pays the probe once in that time.
int side_port_of(const sockaddr* dst, socklen_t len);

}  // namespace ss::prov::tcp

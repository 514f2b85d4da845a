// Parses and verifies one received frame (possibly hostile): Ethernet II,
// then IPv4 (options allowed) or IPv6 (no extension headers), then UDP,
// or, when the caller takes TCP, a TCP segment left whole for core/net/tcp
// (its header and checksum are the TCP stack's to check). Reads only
// inside `frame`.
#pragma once
#include <cstdint>
#include <span>

#include "core/net/frame_fields.h"
#include "core/net/frame_reason.h"
#include "core/net/ipv4.h"

namespace ss::net {

struct ParsedFrame {
  FrameFields fields;                // a TCP segment's ports stay 0
  uint8_t protocol = kIpProtoUdp;    // kIpProtoUdp, or kIpProtoTcp when taken
  std::span<const uint8_t> payload;  // inside the frame: the UDP payload, or the TCP segment
};

// kAccepted with *out filled, or why not (frame_verdict: to the kernel or
// drop); *out is unspecified then. take_tcp: a TCP segment is accepted
// too (else it is kNotUdp, for the kernel). linked: bytes of the packet
// in frames linked after this one (a multi-buffer ring's jumbo frame);
// then the IP length must end exactly there, and payload is the part in
// this frame.
FrameReason parse_frame(std::span<const uint8_t> frame, ParsedFrame* out, bool take_tcp = false,
                        size_t linked = 0);

}  // namespace ss::net

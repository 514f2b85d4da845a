// Parses and verifies one received frame (possibly hostile): Ethernet II,
// then IPv4 (options allowed) or IPv6 (no extension headers), then UDP.
// Reads only inside `frame`.
#pragma once
#include <cstdint>
#include <span>

#include "core/net/frame_fields.h"
#include "core/net/frame_reason.h"

namespace ss::net {

struct ParsedFrame {
  FrameFields fields;
  std::span<const uint8_t> payload;  // the UDP payload, inside the frame
};

// kAccepted with *out filled, or why not (frame_verdict: to the kernel or
// drop); *out is unspecified then.
FrameReason parse_frame(std::span<const uint8_t> frame, ParsedFrame* out);

}  // namespace ss::net

// TCP segments the rings' reader (UdpStack, which owns the rx queues)
// passes on to the TCP stack: each in its frame, the view on the segment
// (TCP header first), with the IP fields the parser read. Handed over
// after the reader let its own lock go.
#pragma once
#include <vector>

#include "core/mem/buffer.h"
#include "core/net/frame_fields.h"

namespace ss::net {

struct RxSegment {
  FrameFields ip;  // addresses, TTL, TOS; the ports are the segment's own
  mem::Buffer frame;
};

class SegmentInput {
 public:
  virtual ~SegmentInput() = default;
  // Takes the segments (the vector is left for the caller to clear).
  virtual void input(std::vector<RxSegment>& segs) = 0;
};

}  // namespace ss::net

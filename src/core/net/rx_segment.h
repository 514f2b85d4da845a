// TCP segments the rings' reader (UdpStack, which owns the rx queues)
// passes on to the TCP stack: each in its frame, the view on the segment
// (TCP header first), with the IP fields the parser read.
//
// In ring order whatever the threads: the reader enqueues each segment
// under its own lock as it takes it off the ring, and drains after that
// lock is let go; a drain takes everything enqueued so far, in order.
// Two threads each handing over what they read would otherwise race, and
// the later batch could overtake the earlier (reordering a fast sender
// takes for loss).
#pragma once
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
  // Under the reader's lock: keeps the segment, nothing more (a leaf lock).
  virtual void enqueue(RxSegment&& seg) = 0;
  // After it: processes what was enqueued, in order.
  virtual void drain() = 0;
};

}  // namespace ss::net

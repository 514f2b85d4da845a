// What a connection has received and the program has not read: the data
// in order (up to rcv_nxt) and the segments held out of order beyond it,
// each a view in the frame it arrived in (no copy until the program reads
// it, or none at all when it takes the buffers). The receive window is
// what the receive buffer has left after both.
//
// In-order segments under kCoalesceBelow bytes are copied behind the
// previous one when its frame has room. Out-of-order segments are kept
// sorted by sequence number (every one lies
// within the window ahead of rcv_nxt, so modulo-2^32 comparison orders
// them), without overlaps: of a segment that overlaps what is held, only
// the new bytes are kept. Their number is bounded so that a peer sending
// tiny segments cannot pin every frame of the ring.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "core/mem/buffer.h"
#include "core/net/tcp/seq_ranges.h"

namespace ss::net::tcp {

class ReceiveQueue {
 public:
  static constexpr size_t kMaxHeldSegments = 256;
  static constexpr size_t kCoalesceBelow = 512;  // bytes: copied, not held

  // In-order data (the caller advanced rcv_nxt past it).
  void push(mem::Buffer data);
  // Data at `seq`, beyond rcv_nxt. Returns the bytes newly held; 0 when
  // all of it was held already, or when there is no room for another
  // segment (refused: *refused set).
  size_t hold(uint32_t seq, mem::Buffer data, bool* refused);
  // Moves what is held and now in order (at or before rcv_nxt) to the
  // in-order queue; returns the new rcv_nxt.
  uint32_t promote(uint32_t rcv_nxt);
  // Copies up to out.size() in-order bytes; they are consumed unless peek.
  size_t copy_out(std::span<uint8_t> out, bool peek);
  // Drops everything (the connection was reset).
  void clear();

  size_t readable() const { return readable_; }
  size_t held_bytes() const { return held_bytes_; }
  const SeqRanges& held_ranges() const { return ranges_; }

 private:
  struct Held {
    uint32_t seq;
    mem::Buffer data;
  };
  void insert(uint32_t seq, mem::Buffer data);

  std::deque<mem::Buffer> in_order_;
  size_t readable_ = 0;
  std::vector<Held> held_;  // ascending, disjoint
  size_t held_bytes_ = 0;
  SeqRanges ranges_;
};

}  // namespace ss::net::tcp

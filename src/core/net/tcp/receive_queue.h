// What a connection has received and the program has not read: the data
// in order (up to rcv_nxt) and the segments held out of order beyond it,
// each a view in the frame it arrived in (no copy until the program reads
// it, or none at all when it takes the buffers). The receive window is
// what the receive buffer has left after both.
//
// A receive callback (the VMA face's register_recv_callback) sees each
// in-order view before the program's reads do: once offering began
// (next_offer), reads take only the bytes offered and kept.
//
// In-order segments under kCoalesceBelow bytes are copied behind the
// previous one when its frame has room. Out-of-order segments are kept
// sorted by sequence number (every one lies
// within the window ahead of rcv_nxt, so modulo-2^32 comparison orders
// them), without overlaps: of a segment that overlaps what is held, only
// the new bytes are kept. Their number is bounded by the caller (the
// window's worth of full segments): a peer sending tiny segments pins no
// more frames of the ring than one filling its window.
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
  static constexpr size_t kCoalesceBelow = 512;    // bytes: copied, not held
  static constexpr size_t kMinHeldSegments = 256;  // what any window may hold out of order

  // In-order data (the caller advanced rcv_nxt past it). Data over linked
  // frames (a multi-buffer ring's jumbo frame) is kept a frame at a time,
  // here and in hold().
  void push(mem::Buffer data);
  // Data at `seq`, beyond rcv_nxt. Returns the bytes newly held; 0 when
  // all of it was held already, or when max_held segments are held
  // already (*refused says so; the frames from there on are dropped).
  size_t hold(uint32_t seq, mem::Buffer data, size_t max_held, bool* refused);
  // Moves what is held and now in order (at or before rcv_nxt) to the
  // in-order queue; returns the new rcv_nxt.
  uint32_t promote(uint32_t rcv_nxt);
  // Copies up to out.size() readable bytes (readable_now(); every
  // in-order one with past_offer); they are consumed unless peek.
  size_t copy_out(std::span<uint8_t> out, bool peek, bool past_offer = false);
  // Moves up to `most` readable views out (the program reads them in
  // place): their bytes.
  size_t take(size_t most, std::vector<mem::Buffer>* out);

  // The receive callback's verdict on a view.
  enum class Offer : uint8_t { kKeep, kDrop, kTake };
  // The next in-order view not offered yet (sharing its frame), or an
  // empty one when there is none or another offer is out; settle() takes
  // the verdict on its `len` bytes: kept for the reads, or dropped or
  // taken (the caller keeps the view), out of the queue either way.
  mem::Buffer next_offer();
  void settle(Offer o, size_t len);
  // Offering ends (no callback any more): every in-order byte is readable
  // (once the view out, if any, is settled). Begun again (next_offer),
  // what is queued then counts as offered.
  void stop_offering();
  // Drops everything (the connection was reset).
  void clear();

  size_t readable() const { return readable_; }  // in order, offered or not
  size_t readable_now() const { return offering_ ? offered_ : readable_; }
  bool offered_all() const { return !offering_ || offered_ == readable_; }
  size_t held_bytes() const { return held_bytes_; }
  const SeqRanges& held_ranges() const { return ranges_; }

 private:
  void push_frame(mem::Buffer frame);
  size_t hold_frame(uint32_t seq, mem::Buffer frame, size_t max_held, bool* refused);
  struct Held {
    uint32_t seq;
    mem::Buffer data;
  };
  void insert(uint32_t seq, mem::Buffer data);

  // Takes n readable bytes off the front (read or taken).
  void consumed(size_t n);
  // settle()'s verdict on the view's bytes, still in the queue.
  void settle_out(Offer o, size_t len);

  std::deque<mem::Buffer> in_order_;
  size_t readable_ = 0;
  bool offering_ = false;      // a callback looks first
  bool offer_out_ = false;     // a view is with the callback
  bool stop_pending_ = false;  // stop_offering while a view was out
  bool stopped_ = false;       // offering ended once
  size_t offered_ = 0;         // the front bytes offered and kept
  std::deque<Held> held_;      // ascending, disjoint
  size_t held_bytes_ = 0;
  SeqRanges ranges_;
};

}  // namespace ss::net::tcp

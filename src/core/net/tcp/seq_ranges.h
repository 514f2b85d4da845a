// Disjoint ranges of sequence space, kept sorted and merged: what the
// peer has SACKed of our send queue (RFC 6675's scoreboard), and what we
// hold out of order beyond rcv_nxt (the SACK blocks we send, RFC 2018).
// Sequence numbers compare modulo 2^32 (seq.h): every range lies within
// 2^31 of the others, which the windows guarantee.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/net/tcp/options.h"

namespace ss::net::tcp {

class SeqRanges {
 public:
  struct Range {
    uint32_t left, right;  // [left, right), never empty
  };
  // Adds [left, right) (nothing when empty), merging what it touches.
  void add(uint32_t left, uint32_t right);
  // Forgets everything before `seq` (snd_una or rcv_nxt moved there).
  void trim_below(uint32_t seq);
  bool contains(uint32_t seq) const;
  // Bytes held at or after `seq`, and how many ranges (parts) lie
  // wholly at or after it: RFC 6675's IsLost() counts both.
  uint64_t bytes_from(uint32_t seq) const;
  size_t ranges_from(uint32_t seq) const;
  uint64_t bytes() const { return bytes_from(empty() ? 0 : ranges_[0].left); }
  bool empty() const { return ranges_.empty(); }
  size_t size() const { return ranges_.size(); }
  const Range& operator[](size_t i) const { return ranges_[i]; }
  // The end of the highest range (empty: `none`).
  uint32_t highest(uint32_t none) const { return empty() ? none : ranges_.back().right; }
  void clear() { ranges_.clear(); }

 private:
  std::vector<Range> ranges_;  // ascending, disjoint, not adjacent
};

// The SACK blocks a receiver reports (RFC 2018 §4): the block holding the
// segment that arrived last first, then the others that arrived most
// recently, up to kMaxSackBlocks; a D-SACK block (RFC 2883) for a
// duplicate goes before them all. `held` is the receiver's out-of-order
// ranges; `recent` the starts of the segments that made them, newest
// last (the receiver's own bookkeeping, trimmed here to what still
// exists).
struct SackReport {
  void arrived(uint32_t seq);
  // The blocks for the next ACK into o (o.sack_count set); a duplicate
  // [dup_left, dup_right) reported first when dup_right != dup_left.
  void fill(const SeqRanges& held, uint32_t dup_left, uint32_t dup_right, Options* o);

 private:
  std::vector<uint32_t> recent_;
};

}  // namespace ss::net::tcp

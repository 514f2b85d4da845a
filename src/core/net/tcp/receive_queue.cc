#include "core/net/tcp/receive_queue.h"

#include <algorithm>
#include <cstring>

#include "core/net/tcp/seq.h"

namespace ss::net::tcp {

namespace {

// A view of bytes [from, from + len) of `data`, whose first byte is at
// sequence number `seq`.
mem::Buffer slice(const mem::Buffer& data, uint32_t seq, uint32_t from, uint32_t len) {
  mem::Buffer part = data.share();
  part.pull_head(from - seq);
  part.set_size(len);
  return part;
}

}  // namespace

void ReceiveQueue::push(mem::Buffer data) {
  if (data.size() == 0) return;
  readable_ += data.size();
  // A small segment goes into the room after the last one's bytes, in a
  // frame only we hold, and its own frame goes back at once: a peer of
  // tiny segments cannot pin a frame per byte.
  if (data.size() < kCoalesceBelow && !in_order_.empty()) {
    mem::Buffer& tail = in_order_.back();
    if (tail.use_count() == 1 && tail.capacity() - tail.size() >= data.size()) {
      std::memcpy(static_cast<uint8_t*>(tail.data()) + tail.size(), data.data(), data.size());
      tail.set_size(tail.size() + data.size());
      return;
    }
  }
  in_order_.push_back(std::move(data));
}

size_t ReceiveQueue::hold(uint32_t seq, mem::Buffer data, bool* refused) {
  const uint32_t end = seq + static_cast<uint32_t>(data.size());
  size_t added = 0;
  uint32_t cur = seq;
  // The gaps of [seq, end) between the segments held already.
  std::vector<std::pair<uint32_t, uint32_t>> gaps;
  for (const Held& h : held_) {
    const uint32_t hend = h.seq + static_cast<uint32_t>(h.data.size());
    if (seq_le(end, h.seq)) break;
    if (seq_le(hend, cur)) continue;
    if (seq_lt(cur, h.seq)) gaps.emplace_back(cur, h.seq);
    cur = seq_max(cur, hend);
  }
  if (seq_lt(cur, end)) gaps.emplace_back(cur, end);
  if (held_.size() + gaps.size() > kMaxHeldSegments) {
    *refused = !gaps.empty();
    return 0;
  }
  for (auto [from, to] : gaps) {
    insert(from, slice(data, seq, from, to - from));
    added += to - from;
  }
  if (added) ranges_.add(seq, end);
  return added;
}

void ReceiveQueue::insert(uint32_t seq, mem::Buffer data) {
  auto at = std::find_if(held_.begin(), held_.end(),
                         [seq](const Held& h) { return seq_lt(seq, h.seq); });
  held_bytes_ += data.size();
  held_.insert(at, Held{seq, std::move(data)});
}

uint32_t ReceiveQueue::promote(uint32_t rcv_nxt) {
  size_t done = 0;
  for (; done < held_.size(); done++) {
    Held& h = held_[done];
    if (seq_gt(h.seq, rcv_nxt)) break;
    const uint32_t len = static_cast<uint32_t>(h.data.size());
    held_bytes_ -= len;
    const uint32_t end = h.seq + len;
    if (seq_le(end, rcv_nxt)) continue;  // no new byte
    h.data.pull_head(rcv_nxt - h.seq);
    rcv_nxt = end;
    push(std::move(h.data));
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<ptrdiff_t>(done));
  ranges_.trim_below(rcv_nxt);
  return rcv_nxt;
}

size_t ReceiveQueue::copy_out(std::span<uint8_t> out, bool peek) {
  size_t n = 0;
  for (auto it = in_order_.begin(); it != in_order_.end() && n < out.size();) {
    const size_t take = std::min(out.size() - n, it->size());
    std::memcpy(out.data() + n, it->data(), take);
    n += take;
    if (peek) {
      ++it;
    } else if (take == it->size()) {
      it = in_order_.erase(it);
    } else {
      it->pull_head(take);
    }
  }
  if (!peek) readable_ -= n;
  return n;
}

void ReceiveQueue::clear() {
  in_order_.clear();
  held_.clear();
  ranges_.clear();
  readable_ = held_bytes_ = 0;
}

}  // namespace ss::net::tcp

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
  for (mem::Buffer rest; data; data = std::move(rest)) {
    data.unchain(&rest);  // a ring's frames have one holder: cannot fail
    push_frame(std::move(data));
  }
}

size_t ReceiveQueue::hold(uint32_t seq, mem::Buffer data, size_t max_held, bool* refused) {
  size_t added = 0;
  *refused = false;
  for (mem::Buffer rest; data && !*refused; data = std::move(rest)) {
    data.unchain(&rest);
    const uint32_t n = static_cast<uint32_t>(data.size());
    added += hold_frame(seq, std::move(data), max_held, refused);
    seq += n;
  }
  return added;
}

void ReceiveQueue::push_frame(mem::Buffer data) {
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

size_t ReceiveQueue::hold_frame(uint32_t seq, mem::Buffer data, size_t max_held, bool* refused) {
  const uint32_t end = seq + static_cast<uint32_t>(data.size());
  size_t added = 0;
  uint32_t cur = seq;
  // The gaps of [seq, end) between the segments held already, from the
  // first that ends after seq (held_ is sorted: a search, not a walk).
  std::vector<std::pair<uint32_t, uint32_t>> gaps;
  auto it = std::partition_point(held_.begin(), held_.end(), [seq](const Held& h) {
    return seq_le(h.seq + static_cast<uint32_t>(h.data.size()), seq);
  });
  for (; it != held_.end() && seq_lt(it->seq, end); ++it) {
    if (seq_lt(cur, it->seq)) gaps.emplace_back(cur, it->seq);
    cur = seq_max(cur, it->seq + static_cast<uint32_t>(it->data.size()));
  }
  if (seq_lt(cur, end)) gaps.emplace_back(cur, end);
  if (held_.size() + gaps.size() > max_held) {
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
  auto at = std::partition_point(held_.begin(), held_.end(),
                                 [seq](const Held& h) { return seq_lt(h.seq, seq); });
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

size_t ReceiveQueue::copy_out(std::span<uint8_t> out, bool peek, bool past_offer) {
  if (!past_offer && out.size() > readable_now()) out = out.first(readable_now());
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
  if (!peek) consumed(n);
  return n;
}

void ReceiveQueue::consumed(size_t n) {
  readable_ -= n;
  if (offering_) offered_ -= std::min(n, offered_);
}

size_t ReceiveQueue::take(size_t most, std::vector<mem::Buffer>* out) {
  const size_t limit = readable_now();
  size_t n = 0;
  for (; most > 0 && n < limit && !in_order_.empty(); most--) {
    mem::Buffer& front = in_order_.front();
    if (front.size() > limit - n) {  // offered in part: that part only
      mem::Buffer part = front.share();
      part.set_size(limit - n);
      front.pull_head(limit - n);
      n = limit;
      out->push_back(std::move(part));
      break;
    }
    n += front.size();
    out->push_back(std::move(front));
    in_order_.pop_front();
  }
  consumed(n);
  return n;
}

mem::Buffer ReceiveQueue::next_offer() {
  if (!offering_) {
    // The first callback sees what is queued; a later one what comes
    // next (what was readable meanwhile, or kept by the last, stays so).
    offering_ = true;
    offered_ = stopped_ ? readable_ : 0;
  }
  if (offer_out_ || offered_ == readable_) return {};
  size_t skip = offered_;
  for (const mem::Buffer& b : in_order_) {
    if (skip < b.size()) {
      mem::Buffer view = b.share();
      view.pull_head(skip);
      offer_out_ = true;
      return view;
    }
    skip -= b.size();
  }
  return {};
}

void ReceiveQueue::settle(Offer o, size_t len) {
  offer_out_ = false;
  if (len <= readable_ - offered_) settle_out(o, len);  // else reset meanwhile (clear)
  if (stop_pending_) stop_offering();
}

void ReceiveQueue::settle_out(Offer o, size_t len) {
  if (o == Offer::kKeep) {
    offered_ += len;
    return;
  }
  // Out of the queue: bytes [offered_, offered_ + len), the tail of one
  // view (no small segment is gathered into a frame the callback shares).
  size_t skip = offered_;
  for (auto it = in_order_.begin(); it != in_order_.end(); ++it) {
    if (skip >= it->size()) {
      skip -= it->size();
      continue;
    }
    len = std::min(len, it->size() - skip);
    mem::Buffer rest = it->share();
    rest.pull_head(skip + len);
    if (skip == 0 && rest.size() == 0) {
      in_order_.erase(it);
    } else if (skip == 0) {
      *it = std::move(rest);
    } else {
      it->set_size(skip);
      if (rest.size()) in_order_.insert(it + 1, std::move(rest));
    }
    readable_ -= len;
    return;
  }
}

void ReceiveQueue::stop_offering() {
  stop_pending_ = offer_out_;
  if (stop_pending_) return;
  stopped_ = offering_ || stopped_;
  offering_ = false;
  offered_ = 0;
}

void ReceiveQueue::clear() {
  in_order_.clear();
  held_.clear();
  ranges_.clear();
  readable_ = held_bytes_ = offered_ = 0;
}

}  // namespace ss::net::tcp

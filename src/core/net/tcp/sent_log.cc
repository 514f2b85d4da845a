#include "core/net/tcp/sent_log.h"

#include <algorithm>

#include "core/net/tcp/seq.h"

namespace ss::net::tcp {

std::deque<SentSegment>::iterator SentLog::first_reaching(uint32_t seq) {
  return std::partition_point(entries_.begin(), entries_.end(),
                              [seq](const SentSegment& s) { return seq_le(s.end, seq); });
}

void SentLog::sent(uint32_t seq, uint32_t end, uint64_t now, uint32_t snd_max) {
  for (auto it = seq_lt(seq, snd_max) ? first_reaching(seq) : entries_.end(); it != entries_.end();
       ++it) {
    SentSegment& s = *it;
    if (seq_le(end, s.seq)) break;
    if (seq_lt(seq, s.end)) {
      if (s.lost) lost_bytes_ -= s.end - s.seq;
      s.lost = false;
      s.retransmitted = true;
      s.sent_us = now;
    }
  }
  const uint32_t fresh = seq_max(seq, snd_max);
  if (seq_lt(fresh, end)) entries_.push_back(SentSegment{fresh, end, now});
}

void SentLog::deliver(SentSegment& s, SentSegment* newest) {
  if (!newest->any() || s.sent_us >= newest->sent_us) *newest = s;
}

void SentLog::ack(uint32_t ack, SentSegment* newest) {
  while (!entries_.empty() && seq_le(entries_.front().end, ack)) {
    SentSegment& s = entries_.front();
    const uint32_t len = s.end - s.seq;
    if (s.sacked) {
      sacked_bytes_ -= len;
      sacked_count_--;
    } else {
      deliver(s, newest);
    }
    if (s.lost) lost_bytes_ -= len;
    entries_.pop_front();
  }
  if (!entries_.empty() && seq_lt(entries_.front().seq, ack)) {
    SentSegment& s = entries_.front();
    const uint32_t cut = ack - s.seq;
    if (s.sacked) sacked_bytes_ -= cut;
    if (s.lost) lost_bytes_ -= cut;
    if (!s.sacked) deliver(s, newest);
    s.seq = ack;
  }
}

uint32_t SentLog::sack(uint32_t left, uint32_t right, SentSegment* newest) {
  uint32_t added = 0;
  for (auto it = first_reaching(left); it != entries_.end(); ++it) {
    SentSegment& s = *it;
    if (seq_le(right, s.seq)) break;
    if (s.sacked || seq_lt(s.seq, left) || seq_gt(s.end, right)) continue;
    const uint32_t len = s.end - s.seq;
    s.sacked = true;
    sacked_bytes_ += len;
    sacked_count_++;
    if (s.lost) {
      s.lost = false;
      lost_bytes_ -= len;
    }
    added += len;
    deliver(s, newest);
  }
  return added;
}

void SentLog::mark_lost(SentSegment& s) {
  if (s.lost || s.sacked) return;
  s.lost = true;
  lost_bytes_ += s.end - s.seq;
}

void SentLog::mark_all_lost(bool forget_sacks) {
  for (SentSegment& s : entries_) {
    if (forget_sacks && s.sacked) {
      s.sacked = false;
      sacked_bytes_ -= s.end - s.seq;
      sacked_count_--;
    }
    mark_lost(s);
  }
}

void SentLog::clear() {
  entries_.clear();
  sacked_bytes_ = lost_bytes_ = sacked_count_ = 0;
}

}  // namespace ss::net::tcp

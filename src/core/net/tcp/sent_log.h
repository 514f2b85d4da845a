// Every range of sequence space a connection sent and the peer has not
// cumulatively acknowledged, one entry per segment as it went out: when
// it was last sent, whether it was sent again, SACKed, or judged lost.
// RFC 6675's scoreboard and RFC 8985's per-segment send times in one
// list: loss detection marks entries, the sender retransmits the lost
// ones first, and pipe (the bytes still in the network) follows from the
// byte counts kept here.
#pragma once
#include <cstdint>
#include <cstddef>
#include <deque>

namespace ss::net::tcp {

struct SentSegment {
  uint32_t seq, end;  // [seq, end): data, and the SYN or FIN it carried
  uint64_t sent_us;   // the last transmission
  bool retransmitted = false, sacked = false, lost = false;
  bool any() const { return seq != end; }  // a default one stands for none
};

class SentLog {
 public:
  // [seq, end) went out at now: a new entry at snd_max, or (below it) a
  // retransmission of the entries it covers, which are no longer lost.
  void sent(uint32_t seq, uint32_t end, uint64_t now, uint32_t snd_max);
  // The peer acknowledged everything before `ack`: entries wholly below
  // go, a partly acknowledged one is trimmed. The delivered entry sent
  // last is copied to *newest (left as it was when none is newer).
  void ack(uint32_t ack, SentSegment* newest);
  // A SACK block [left, right): marks the entries it covers wholly;
  // returns the bytes newly SACKed, *newest as for ack().
  uint32_t sack(uint32_t left, uint32_t right, SentSegment* newest);
  void mark_lost(SentSegment& s);
  // The retransmission timer expired: every entry not SACKed is lost,
  // and the SACKed ones too when forget_sacks (the peer may renege).
  void mark_all_lost(bool forget_sacks);
  uint32_t sacked_bytes() const { return sacked_bytes_; }
  uint32_t lost_bytes() const { return lost_bytes_; }
  uint32_t sacked_count() const { return sacked_count_; }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  std::deque<SentSegment>& entries() { return entries_; }
  void clear();

 private:
  void deliver(SentSegment& s, SentSegment* newest);
  // The first entry that ends after seq (entries are in order: a search).
  std::deque<SentSegment>::iterator first_reaching(uint32_t seq);
  std::deque<SentSegment> entries_;  // ascending, contiguous from snd_una
  uint32_t sacked_bytes_ = 0, lost_bytes_ = 0, sacked_count_ = 0;
};

}  // namespace ss::net::tcp

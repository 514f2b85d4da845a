#include "core/net/tcp/seq_ranges.h"

#include <algorithm>

#include "core/net/tcp/seq.h"

namespace ss::net::tcp {

void SeqRanges::add(uint32_t left, uint32_t right) {
  if (!seq_lt(left, right)) return;
  size_t i = 0;
  while (i < ranges_.size() && seq_lt(ranges_[i].right, left)) i++;  // wholly before, apart
  size_t j = i;
  while (j < ranges_.size() && seq_le(ranges_[j].left, right)) {  // touching or overlapping
    left = seq_min(left, ranges_[j].left);
    right = seq_max(right, ranges_[j].right);
    j++;
  }
  ranges_.erase(ranges_.begin() + static_cast<ptrdiff_t>(i),
                ranges_.begin() + static_cast<ptrdiff_t>(j));
  ranges_.insert(ranges_.begin() + static_cast<ptrdiff_t>(i), Range{left, right});
}

void SeqRanges::trim_below(uint32_t seq) {
  size_t gone = 0;
  while (gone < ranges_.size() && seq_le(ranges_[gone].right, seq)) gone++;
  ranges_.erase(ranges_.begin(), ranges_.begin() + static_cast<ptrdiff_t>(gone));
  if (!ranges_.empty() && seq_lt(ranges_[0].left, seq)) ranges_[0].left = seq;
}

bool SeqRanges::contains(uint32_t seq) const {
  for (const Range& r : ranges_)
    if (seq_le(r.left, seq) && seq_lt(seq, r.right)) return true;
  return false;
}

uint64_t SeqRanges::bytes_from(uint32_t seq) const {
  uint64_t n = 0;
  for (const Range& r : ranges_)
    if (seq_gt(r.right, seq)) n += r.right - seq_max(r.left, seq);
  return n;
}

size_t SeqRanges::ranges_from(uint32_t seq) const {
  size_t n = 0;
  for (const Range& r : ranges_)
    if (seq_ge(r.left, seq)) n++;
  return n;
}

void SackReport::arrived(uint32_t seq) {
  constexpr size_t kKeep = 4 * kMaxSackBlocks;
  if (recent_.size() >= 2 * kKeep) recent_.erase(recent_.begin(), recent_.end() - kKeep);
  recent_.push_back(seq);
}

void SackReport::fill(const SeqRanges& held, uint32_t dup_left, uint32_t dup_right, Options* o) {
  o->sack_count = 0;
  // The D-SACK block may repeat as the held block containing it (RFC
  // 2883 §4: that block comes second), so only the others are deduplicated.
  const size_t regular = dup_left != dup_right ? 1 : 0;
  auto put = [o, regular](uint32_t l, uint32_t r) {
    for (size_t k = regular; k < o->sack_count; k++)
      if (o->sack[k].left == l && o->sack[k].right == r) return;
    if (o->sack_count < kMaxSackBlocks) o->sack[o->sack_count++] = {l, r};
  };
  if (dup_left != dup_right) put(dup_left, dup_right);
  // Forget arrivals no held range covers any more (delivered in order).
  std::erase_if(recent_, [&held](uint32_t s) { return !held.contains(s); });
  constexpr size_t kKeep = 4 * kMaxSackBlocks;
  if (recent_.size() > kKeep) recent_.erase(recent_.begin(), recent_.end() - kKeep);
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it)
    for (size_t k = 0; k < held.size(); k++)
      if (seq_le(held[k].left, *it) && seq_lt(*it, held[k].right)) put(held[k].left, held[k].right);
  for (size_t k = held.size(); k-- > 0;) put(held[k].left, held[k].right);
}

}  // namespace ss::net::tcp

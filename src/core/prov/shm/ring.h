// The completion ring of the shm provider: one per direction, owned (and
// created) by the receiver, mapped by the sender. Single producer, single
// consumer; each entry carries its own sequence number, so the consumer
// polls one cache line per message. The receiver checks every entry: the
// producer is another process and may be broken or hostile.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ss::prov::shm {

struct RingEntry {
  std::atomic<uint32_t> seq;  // (position + 1) when the entry is valid
  uint32_t imm;
  uint32_t len;
  uint32_t stream_seq;  // stream frames the sender had queued before this entry
};
static_assert(sizeof(RingEntry) == 16);

struct RingControl {
  alignas(64) std::atomic<uint64_t> tail;      // consumer: entries consumed
  alignas(64) std::atomic<uint32_t> sleeping;  // consumer: about to block, wake me
  // The exec gate, in the padding of `sleeping`'s line (an older producer
  // leaves it zero): the consumer asks the producer to leave its memory,
  // and once no write is under way none comes; the producer sees the ask
  // at its next write, whenever it makes one (RingWriter::enter_write).
  std::atomic<uint32_t> gated;      // producer: it honours `leave`
  std::atomic<uint32_t> writing;    // producer: in a write into the consumer's memory
  std::atomic<uint32_t> leave;      // consumer: write no more into my memory
  alignas(64) RingEntry entries[];  // 2^n entries follow
};
// The layout both ends map (docs/protocol.md): older peers' offsets.
static_assert(offsetof(RingControl, sleeping) == 64 && offsetof(RingControl, gated) == 68 &&
                  offsetof(RingControl, writing) == 72 && offsetof(RingControl, leave) == 76 &&
                  offsetof(RingControl, entries) == 128,
              "the ring's layout");

constexpr size_t ring_bytes(uint32_t entries) {
  return sizeof(RingControl) + static_cast<size_t>(entries) * sizeof(RingEntry);
}

// Consumer view.
class RingReader {
 public:
  void attach(RingControl* ctl, uint32_t entries) {
    ctl_ = ctl;
    mask_ = entries - 1;
  }
  bool attached() const { return ctl_ != nullptr; }
  // The next entry, or nullptr when the producer has not published it.
  const RingEntry* peek() const {
    const RingEntry& e = ctl_->entries[tail_ & mask_];
    return e.seq.load(std::memory_order_acquire) == static_cast<uint32_t>(tail_ + 1) ? &e : nullptr;
  }
  void pop() {
    tail_++;
    ctl_->tail.store(tail_, std::memory_order_release);
  }
  // Announces sleep; true when an entry slipped in and the caller must not block.
  // Both sides store then load with seq_cst (the producer: entry, then
  // `sleeping`), so at least one sees the other: no lost wake-up.
  bool prepare_sleep() {
    announce_sleep();
    const RingEntry& e = ctl_->entries[tail_ & mask_];
    if (e.seq.load(std::memory_order_seq_cst) == static_cast<uint32_t>(tail_ + 1)) {
      ctl_->sleeping.store(0, std::memory_order_relaxed);
      return true;
    }
    return false;
  }
  // The flag alone (the producer clears it with each wake-up it sends).
  void announce_sleep() { ctl_->sleeping.store(1, std::memory_order_seq_cst); }
  // The exec gate: whether the producer honours it; the ask; whether a
  // write is under way (the ask stored first, seq_cst both sides: once
  // this says none, every later write of the producer sees the ask).
  bool gated() const { return ctl_->gated.load(std::memory_order_acquire) != 0; }
  void ask_leave() { ctl_->leave.store(1, std::memory_order_seq_cst); }
  bool writing() const { return ctl_->writing.load(std::memory_order_seq_cst) != 0; }
  void woke() { ctl_->sleeping.store(0, std::memory_order_relaxed); }
  uint64_t position() const { return tail_; }
  // A fork sibling's position, handed over (stream_handover.cc).
  void set_position(uint64_t tail) { tail_ = tail; }

 private:
  RingControl* ctl_ = nullptr;
  uint32_t mask_ = 0;
  uint64_t tail_ = 0;
};

// Producer view.
class RingWriter {
 public:
  void attach(RingControl* ctl, uint32_t entries) {
    ctl_ = ctl;
    mask_ = entries - 1;
    size_ = entries;
    ctl_->gated.store(1, std::memory_order_release);
  }
  // Around each write into the consumer's memory (its regions, this
  // ring): false when the consumer asked us to leave it.
  bool enter_write() {
    ctl_->writing.store(1, std::memory_order_seq_cst);
    if (ctl_->leave.load(std::memory_order_seq_cst) == 0) return true;
    exit_write();
    return false;
  }
  void exit_write() { ctl_->writing.store(0, std::memory_order_release); }
  bool attached() const { return ctl_ != nullptr; }
  // False when full. *wake says the consumer sleeps and needs a kick.
  bool push(uint32_t imm, uint32_t len, uint32_t stream_seq, bool* wake) {
    if (head_ - cached_tail_ >= size_) {
      cached_tail_ = ctl_->tail.load(std::memory_order_acquire);
      // A tail beyond the head is the consumer's bug or malice: treat as full.
      if (cached_tail_ > head_ || head_ - cached_tail_ >= size_) return false;
    }
    RingEntry& e = ctl_->entries[head_ & mask_];
    e.imm = imm;
    e.len = len;
    e.stream_seq = stream_seq;
    // One locked store (xchg on x86) publishes the entry and orders it
    // before the look at `sleeping`; cheaper than a release store + fence.
    e.seq.store(static_cast<uint32_t>(head_ + 1), std::memory_order_seq_cst);
    head_++;
    // One wake-up per announced sleep: taking the flag (only when set, so
    // the busy path stays a load) bounds the wake-ups a sleeper gets.
    *wake = ctl_->sleeping.load(std::memory_order_seq_cst) != 0 &&
            ctl_->sleeping.exchange(0, std::memory_order_acq_rel) != 0;
    return true;
  }
  uint64_t position() const { return head_; }
  uint32_t size() const { return size_; }
  // A fork sibling's position, handed over; the consumer's tail read anew.
  void set_position(uint64_t head) {
    head_ = head;
    cached_tail_ = ctl_ ? ctl_->tail.load(std::memory_order_acquire) : 0;
  }

 private:
  RingControl* ctl_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t size_ = 0;
  uint64_t head_ = 0;
  uint64_t cached_tail_ = 0;
};

}  // namespace ss::prov::shm

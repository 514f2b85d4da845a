// Datagrams between rsockets on one host through shared memory: each bound
// datagram rsocket listens on an abstract unix socket named after its
// address (the rendezvous, `slipstream/dgram/<addr>/<port>`); a sender
// dials it, both check SO_PEERCRED (our user or root), and the owner hands
// over its receive ring (a sealed memfd, dgram_ring.h) and its wake-up
// eventfd. The owner answers at its next receive or rpoll, so a
// destination's first datagrams travel over the kernel's UDP meanwhile.
#pragma once
#include <sys/socket.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "librsocket/dgram_ring.h"

namespace ss::rs {

// Whether SLIPSTREAM_PROVIDER lets datagrams use shared memory (auto, shm).
bool dgram_shm_enabled();
// SLIPSTREAM_PROVIDER as core's configuration holds it ("auto" unset).
std::string dgram_provider_setting();

// The owner's side: rendezvous, ring and wake-up.
class DgramShmReceiver {
 public:
  DgramShmReceiver() = default;
  ~DgramShmReceiver();
  DgramShmReceiver(const DgramShmReceiver&) = delete;
  DgramShmReceiver& operator=(const DgramShmReceiver&) = delete;

  // Listens at the rendezvous of the bound UDP socket; `slots` sizes the
  // ring made at the first sender. -errno (EADDRINUSE: another holds it).
  int open(int udp_fd, uint32_t slots);
  bool is_open() const { return listen_fd_ >= 0; }
  int listen_fd() const { return listen_fd_; }
  int event_fd() const { return event_fd_; }
  // Answers the senders waiting at the rendezvous; never sleeps.
  void serve();
  // Marks the ring closed for its senders (they fall back to UDP); not
  // from a fork child's copy: the ring is the parent's too.
  void close_ring();
  // In a fork child (its socket's fork_child).
  void fork_child() { forked_copy_ = true; }

  // The next published datagram, or null; release() gives it back.
  DgramSlot* peek() const { return ring_ ? dgram_ring_peek(ring_, slots_, head_) : nullptr; }
  void release(DgramSlot* s) {
    dgram_ring_release(s, slots_, head_);
    head_++;
  }
  uint64_t overflow() const;
  // Whether owner threads are about to sleep: senders then wake them.
  void set_sleeping(bool on);

 private:
  int make_ring();
  int listen_fd_ = -1;
  int memfd_ = -1;  // kept to hand to each new sender
  int event_fd_ = -1;
  void* ring_ = nullptr;
  size_t bytes_ = 0;
  uint32_t slots_ = 0;
  uint64_t head_ = 0;
  bool forked_copy_ = false;
};

// The senders' side: destinations' rings, found and mapped on demand.
class DgramShmSender {
 public:
  DgramShmSender() = default;
  ~DgramShmSender();
  DgramShmSender(const DgramShmSender&) = delete;
  DgramShmSender& operator=(const DgramShmSender&) = delete;

  // Puts one datagram into dst's ring: 1 when it went there (or was
  // dropped there, the ring full), 0 when it must go over UDP instead.
  // `src`: our own name, as the receiver reports it.
  int send(const sockaddr* dst, socklen_t dst_len, const sockaddr* src, const iovec* iov,
           size_t iovcnt, size_t len);
  // Destinations remembered (tests: the count stays bounded).
  size_t destinations() {
    std::lock_guard<std::mutex> g(mu_);
    return dests_.size();
  }
  // Owners' answers refused (not a sealed ring and an eventfd).
  uint64_t refused() {
    std::lock_guard<std::mutex> g(mu_);
    return refused_;
  }
  // In a fork child (its socket's fork_child): the lock a parent thread
  // held mid-send is made free; the destinations are as it left them.
  void fork_child() { new (&mu_) std::mutex(); }

 private:
  struct Dest {
    int ufd = -1;  // the rendezvous connection, until its answer came
    void* ring = nullptr;
    size_t bytes = 0;
    uint32_t slots = 0;
    int event_fd = -1;
    pid_t owner = 0;
    bool remote = false;  // another host's address: UDP for good
    uint32_t pushes = 0;
    std::chrono::steady_clock::time_point retry_at{};
  };
  void dial(const sockaddr* dst, socklen_t len, Dest* d);
  void take_answer(Dest* d);
  void forget(Dest* d);
  Dest& dest_of(const sockaddr* dst, socklen_t len);
  std::mutex mu_;
  std::map<std::string, Dest> dests_;  // bounded: dest_of
  // The destination of the last send, found again without a lookup (a
  // stream of datagrams to one peer is the common case).
  Dest* last_ = nullptr;
  socklen_t last_len_ = 0;
  sockaddr_storage last_dst_{};
  uint64_t refused_ = 0;
  bool warned_ = false;
};

}  // namespace ss::rs

// What the Extra API adds to a recorded UDP socket's receive path
// (zcopy.cc): the packets lent to the program and its receive callback,
// and SO_VMA_USER_DATA (extra_sockopts.h, reported by socketxtreme_poll).
// Kept by the socket's record (a callback may be registered before bind);
// its offloaded path runs the callback on what it takes off the rings.
#pragma once
#include <atomic>
#include <cstdint>

#include "libvmacompat/held_packets.h"
#include "libvmacompat/recv_callback.h"

namespace ss::vma::preload {

struct RxExtras {
  HeldPackets held;
  RecvCallback callback;

  // SO_VMA_USER_DATA (extra_sockopts.h): the value set, else the socket's fd.
  void set_user_data(uint64_t v) {
    user_data_.store(v, std::memory_order_relaxed);
    user_data_set_.store(true, std::memory_order_release);
  }
  uint64_t user_data(int fd) const {
    return user_data_set_.load(std::memory_order_acquire)
               ? user_data_.load(std::memory_order_relaxed)
               : static_cast<uint64_t>(fd);
  }

 private:
  std::atomic<uint64_t> user_data_{0};
  std::atomic<bool> user_data_set_{false};
};

}  // namespace ss::vma::preload

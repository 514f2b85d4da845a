// What the Extra API adds to a recorded UDP socket's receive path
// (zcopy.cc): the packets lent to the program and its receive callback.
// Kept by the socket's record (a callback may be registered before bind);
// its offloaded path runs the callback on what it takes off the rings.
#pragma once
#include "libvmacompat/held_packets.h"
#include "libvmacompat/recv_callback.h"

namespace ss::vma::preload {

struct RxExtras {
  HeldPackets held;
  RecvCallback callback;
};

}  // namespace ss::vma::preload

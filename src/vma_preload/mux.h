// What libvma.so's poll, select (poll_face.cc) and epoll (epoll_calls.cc)
// share: core's poll_mixed and EpollSet serve a set that holds an
// offloaded socket.
#pragma once
#include "core/base/mixed_poll.h"

namespace ss::vma::preload {

// VMA_SELECT_POLL's busy phase; the sleeps end only at a wake-up or the
// timeout (an offloaded socket's sleep wakes on its rings).
PollTiming mux_timing();

// Whether fd is an offloaded socket (its readiness is more than its
// kernel descriptor's), or one that may still be: decided "vma", not bound
// yet, so another thread's first send may put its port on the rings while
// this call waits (a wait left to libc would never see them).
bool offloaded_or_may_be(int fd);

}  // namespace ss::vma::preload

// A connect librsocket moved to kernel TCP after EINPROGRESS (fd-table
// kind kRsocketFallback at the rsocket's own number): the descriptor and
// its duplicates become the kernel's, in the program's epoll sets too.
// route() (route.h) calls finish_late_fallback at the program's first call
// on the descriptor since, on_rsocket at a duplicate's.
#pragma once

namespace ss::preload {

void finish_late_fallback(int fd);

// Whether rsocket `fd`'s connect fell back to kernel TCP (any of its
// numbers: a duplicate's entry stays kRsocket).
bool fell_back(int fd);

}  // namespace ss::preload

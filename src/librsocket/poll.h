// rpoll and rselect: core's poll over mixed descriptors (core/base/mixed_poll.h)
// with rsocket's polling_time and wake_up_interval.
#pragma once
#include <poll.h>
#include <sys/select.h>

namespace ss::rs {
// Both return a count or -errno.
int poll(pollfd* fds, nfds_t nfds, int timeout);
int select(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, timeval* tv);
}  // namespace ss::rs

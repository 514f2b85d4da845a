// An rsocket of either type as rpoll sees it: the stream Socket or the
// DgramSocket behind a descriptor, both with the same readiness and wait
// interface. (Until that interface has a common home.)
#pragma once
#include <poll.h>

#include <memory>

#include "core/base/fd_table.h"
#include "librsocket/dgram_socket.h"
#include "librsocket/socket.h"

namespace ss::rs {

inline std::shared_ptr<DgramSocket> lookup_dgram(int fd) {
  return FdTable::instance().get<DgramSocket>(fd, FdKind::kRsocketDgram);
}

class PollEntry {
 public:
  PollEntry() = default;
  static PollEntry lookup(int fd) {
    PollEntry e;
    e.stream_ = FdTable::instance().get<Socket>(fd, FdKind::kRsocket);
    if (!e.stream_) e.dgram_ = lookup_dgram(fd);
    return e;
  }
  explicit operator bool() const { return stream_ || dgram_; }
  short readiness(short events) {
    return stream_ ? stream_->readiness(events) : dgram_->readiness(events);
  }
  int wait_target(short want, int* fd, short* events, int* kick_fd, int* sleep_ms) {
    return stream_ ? stream_->wait_target(want, fd, events, kick_fd, sleep_ms)
                   : dgram_->wait_target(want, fd, events, kick_fd, sleep_ms);
  }
  void after_wait(const pollfd& kick) {
    if (stream_) stream_->after_wait(kick);
    else dgram_->after_wait(kick);
  }

 private:
  std::shared_ptr<Socket> stream_;
  std::shared_ptr<DgramSocket> dgram_;
};

}  // namespace ss::rs

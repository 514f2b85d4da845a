// The datagram rsocket behind a descriptor (api.cc's dispatch by socket
// type; rpoll reaches it as a Pollable through the fd table).
#pragma once
#include <memory>

#include "core/base/fd_table.h"
#include "librsocket/dgram_socket.h"

namespace ss::rs {

inline std::shared_ptr<DgramSocket> lookup_dgram(int fd) {
  return FdTable::instance().get<DgramSocket>(fd, FdKind::kRsocketDgram);
}

}  // namespace ss::rs

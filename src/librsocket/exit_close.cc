// The program's exit with rsockets still open. Linux's exit closes each
// socket: a FIN, or a reset when the program left data unread. An
// rsocket's peer would see only its transport end (read as a reset when
// its data may be unread: engine.cc). So, last of all (a destructor of
// this library: after the program's atexit handlers and static
// destructors, which may still close sockets), each connection the
// program left open ends as close() would at exit: a DISCONNECT once what
// it sent has left (bounded, as rshutdown's wait), or a reset when data
// is unread; no linger, and no more than kExitBudget for them all (the
// rest: their transports' end), as Linux's exit never waits. A
// connection shared with another process (fork) is left open, once what
// this process sent has left; a connection whose lock is held (a thread
// still in a call, or one a handler calling exit interrupted) is left to
// its transport's end (Socket::close_at_exit). The work runs on a thread
// of the library's own: under librspreload its calls on the library's
// kernel descriptors go to libc, not back into the preload.
#include <chrono>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/library_thread.h"
#include "core/base/sandbox.h"
#include "librsocket/socket.h"

namespace ss::rs {
namespace {

constexpr auto kExitBudget = std::chrono::seconds(2);

void close_all(const std::vector<std::pair<int, std::shared_ptr<void>>>& open) {
  mark_library_thread();
  const auto end = std::chrono::steady_clock::now() + kExitBudget;
  for (auto& [fd, object] : open) {
    if (std::chrono::steady_clock::now() > end) break;
    try {
      std::static_pointer_cast<Socket>(object)->close_at_exit();
    } catch (...) {  // out of memory: this one's transport just ends
    }
  }
}

__attribute__((destructor)) void close_connections_at_exit() {
  auto open = FdTable::instance().objects_of(FdKind::kRsocket);
  if (open.empty()) return;
  // Locked in (core/base/sandbox.h), a new thread may be a call the
  // filter kills: the exiting thread does it, the process's last work.
  if (sandbox::locked_in()) {
    close_all(open);
    return;
  }
  try {
    std::thread t([&open] { close_all(open); });
    t.join();
  } catch (...) {  // no thread (out of memory, of threads): the transports end as they are
  }
}

}  // namespace
}  // namespace ss::rs

// Keepalive: one thread, alive only while some rsocket has SO_KEEPALIVE,
// posts a zero-length write to each such connection every keepalive
// interval. The peer's CPU sees nothing; a dead peer turns into an error
// completion and the connection fails (EIO/ECONNRESET).
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/service_thread.h"

namespace ss::rs {

class Socket;

class KeepaliveService {
 public:
  static KeepaliveService& instance();
  // (Re)arms `s` to be probed every `interval_s` seconds. 0, or -errno
  // when the first socket cannot start the thread.
  int add(const std::shared_ptr<Socket>& s, unsigned interval_s);
  void remove(Socket* s);  // the thread stops when the last socket leaves
  // In a fork child: the thread is started again for inherited sockets.
  void resume() { thread_.wake(); }

 private:
  struct Entry {
    std::weak_ptr<Socket> sock;
    Socket* raw;
    std::chrono::seconds interval;
    std::chrono::steady_clock::time_point due;
  };
  KeepaliveService();
  void run(ServiceThread::Run& run);

  std::mutex mu_;
  std::vector<Entry> entries_;  // one user of thread_ each
  ServiceThread thread_;
};

// The default interval: /proc/sys/net/ipv4/tcp_keepalive_time, else 7200 s.
unsigned default_keepalive_seconds();

}  // namespace ss::rs

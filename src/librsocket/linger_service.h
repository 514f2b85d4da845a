// Linger: connections that rshutdown(SHUT_RDWR)/rclose left waiting for
// the peer to close its end (Socket::lingering). One thread ("ss-linger"),
// alive only while such connections exist, steps each until it is finished; at
// process exit the library waits for them, each bounded by its own linger
// time, since the kernel would tear them down with the process.
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/service_thread.h"

namespace ss::rs {

class Socket;

class LingerService {
 public:
  static LingerService& instance();
  // Steps `s` in the background; at exit, or when no thread can be
  // started, in the caller until it is finished.
  void add(std::shared_ptr<Socket> s);
  // Blocks until every lingering connection is finished (at exit).
  void drain();

 private:
  LingerService();
  void run(ServiceThread::Run& run);

  std::mutex mu_;
  std::condition_variable cv_;                  // socks_ emptied (drain)
  std::vector<std::shared_ptr<Socket>> socks_;  // one user of thread_ each
  // Finished connections whose last references the thread still holds:
  // drain waits for their teardown too.
  size_t in_hand_ = 0;
  bool exiting_ = false;
  ServiceThread thread_;  // ss-linger; a fork child starts with no users
};

}  // namespace ss::rs

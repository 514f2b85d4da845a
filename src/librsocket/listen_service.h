// The listen service: one thread per process, alive only while some rsocket
// listens. It completes connection handshakes so that a peer's connect
// finishes before the application calls raccept.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/service_thread.h"

namespace ss::rs {

class Socket;

class ListenService {
 public:
  static ListenService& instance();
  int add(std::shared_ptr<Socket> s);  // 0, or -errno: no thread to be had
  void remove(Socket* s);  // the thread stops when the last listener leaves

 private:
  ListenService();
  void run(ServiceThread::Run& run);

  std::mutex mu_;
  std::vector<std::shared_ptr<Socket>> listeners_;  // one user of thread_ each
  ServiceThread thread_;  // ss-listen
};

}  // namespace ss::rs

// The listen service: one thread per process, alive only while some rsocket
// listens. It completes connection handshakes so that a peer's connect
// finishes before the application calls raccept.
#pragma once
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ss::rs {

class Socket;

class ListenService {
 public:
  static ListenService& instance();
  int add(std::shared_ptr<Socket> s);
  void remove(Socket* s);  // joins the thread when the last listener leaves

 private:
  void run();
  void wake();

  std::mutex mu_;
  std::vector<std::shared_ptr<Socket>> listeners_;
  std::thread thread_;
  int wake_fd_ = -1;
  bool stop_ = false;
};

}  // namespace ss::rs

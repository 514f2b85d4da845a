// The listen service: one thread per process, alive only while some rsocket
// listens. It completes connection handshakes so that a peer's connect
// finishes before the application calls raccept.
#pragma once
#include <cstdint>
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
  void run(uint64_t generation, int wake_fd);
  void wake();

  std::mutex mu_;
  std::vector<std::shared_ptr<Socket>> listeners_;
  std::thread thread_;
  // The running thread's own wake-up (-1 when none runs): a stopping thread
  // reading a shared one could eat the wake-up meant for its successor.
  int wake_fd_ = -1;
  // Bumped when the thread is told to stop: each thread runs while the
  // generation it started with is current. (One shared stop flag would be
  // cleared by an add() that starts the next thread before the old one saw
  // it, and the old one, never stopping, would hang remove()'s join.)
  uint64_t generation_ = 0;
};

}  // namespace ss::rs

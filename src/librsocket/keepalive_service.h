// Keepalive: one thread, alive only while some rsocket has SO_KEEPALIVE,
// posts a zero-length write to each such connection every keepalive
// interval. The peer's CPU sees nothing; a dead peer turns into an error
// completion and the connection fails (EIO/ECONNRESET).
#pragma once
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ss::rs {

class Socket;

class KeepaliveService {
 public:
  static KeepaliveService& instance();
  // (Re)arms `s` to be probed every `interval_s` seconds.
  void add(const std::shared_ptr<Socket>& s, unsigned interval_s);
  void remove(Socket* s);  // joins the thread when the last socket leaves

 private:
  struct Entry {
    std::weak_ptr<Socket> sock;
    Socket* raw;
    std::chrono::seconds interval;
    std::chrono::steady_clock::time_point due;
  };
  void run(uint64_t generation);

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  std::thread thread_;  // named ss-keepalive
  // Bumped when the thread is told to stop: each thread runs while the
  // generation it started with is current. (A shared stop flag would be
  // cleared by an add() that starts the next thread before the old one saw
  // it; the old one would probe on, and remove()'s join never end.)
  uint64_t generation_ = 0;
};

// The default interval: /proc/sys/net/ipv4/tcp_keepalive_time, else 7200 s.
unsigned default_keepalive_seconds();

}  // namespace ss::rs

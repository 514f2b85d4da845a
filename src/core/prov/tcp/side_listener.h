// The listening half of the tcp provider's side channel (side_probe.h):
// beside a program's listening socket on port P, a TCP listener of our own
// on an ephemeral port Q (the rsocket connections) and a UDP socket on
// P's number answering probes with Q. Accepted endpoints name P as their
// local port, as the program's own socket would.
#pragma once
#include <cstdint>
#include <memory>

#include "core/base/api.h"
#include "core/base/service_thread.h"
#include "core/prov/connection.h"

namespace ss::prov::tcp {

// The program binds a UDP socket to a port a side listener of this process
// answers on (iperf3's UDP test binds its TCP port's number): the side
// listeners on that port give it up (no new probes answered; peers that
// probe later reach the program's port over kernel TCP). True when one
// did, so the program's bind is worth trying again.
SS_API bool yield_side_port(uint16_t port);

class SideListener final : public Listener {
 public:
  // Beside `sock` (bound, about to listen). 0 with *out empty when the
  // UDP port is another socket's (no side channel then, kernel TCP for
  // peers on other hosts); else -errno.
  static int create(int sock, int backlog, std::unique_ptr<Listener>* out);
  ~SideListener() override;
  int fd() const override { return epfd_; }
  // Answers the probes waiting, then hands out a connection if one is ready.
  int get_request(std::unique_ptr<Endpoint>* ep) override;
  // The UDP socket stays shared with the parent (whoever reads a probe
  // answers it, with the same port); the stream listener takes its part.
  int fork_child() override;
  // The body of the answering thread: a peer's connect waits for the
  // answer, so probes are answered by a thread of ours at once, not when
  // the program next looks at its listener (a busy worker, a fork child).
  static void answer_all(ServiceThread::Run& run);

 private:
  SideListener() = default;
  friend bool yield_side_port(uint16_t port);
  int watch();  // a fresh epfd_ over the stream listener and the UDP socket
  void answer_probes();

  std::unique_ptr<Listener> stream_;
  int udp_ = -1;
  bool yielded_ = false;  // udp_ is an unbound stand-in (under the registry's lock)
  int epfd_ = -1;
  uint16_t port_ = 0;               // P, the program's
  uint16_t side_port_ = 0;          // Q, ours
  bool thread_after_fork_ = false;  // a fork child starts the answering thread at its first look
};

}  // namespace ss::prov::tcp

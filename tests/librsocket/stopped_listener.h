// A listener that never answers: a helper child listening on loopback,
// stopped with SIGSTOP. The kernel still completes the transport's connect
// (TCP handshake, unix-socket connect into the backlog), so a connecting
// rsocket sends its hello and waits for an answer that does not come.
#pragma once
#include <sys/types.h>

#include "tests/librsocket/conformance.h"

namespace rsconf {

class StoppedListener {
 public:
  // Starts the child for the provider and family, stops it once it listens.
  // False (with a test failure recorded) when that did not work.
  bool start(const char* provider, int family);
  // SIGCONT: the child answers what waited (and accepts, and keeps, them).
  void resume();
  const Addr& addr() const { return addr_; }
  pid_t pid() const { return child_.pid; }

 private:
  Reaper child_;  // killed (stopped or not) and reaped at scope exit
  Addr addr_;
};

}  // namespace rsconf

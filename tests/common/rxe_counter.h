// A packet counter of the Soft-RoCE guest's device (tests/rxe/README.md):
// the proof that RDMA, not a socket, carried a test's traffic.
#pragma once
#include <cstdlib>
#include <fstream>
#include <string>

// hw_counters/`name` of $RXE_DEV (rxe0) port 1; -1 when unreadable.
inline long rxe_counter(const char* name) {
  const char* dev = getenv("RXE_DEV");
  std::ifstream f(std::string("/sys/class/infiniband/") + (dev ? dev : "rxe0") +
                  "/ports/1/hw_counters/" + name);
  long v = -1;
  f >> v;
  return f ? v : -1;
}

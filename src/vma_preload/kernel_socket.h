// A socket the VMA preload decided on and gave the kernel: the fd table's
// kVmaKernel object. It holds the decision and the socket's vmastat block
// (marked not offloaded: the kernel serves it), freed with the record when
// the program closes the socket or its number is reused.
#pragma once
#include <atomic>

#include "libvmacompat/stats_publisher.h"
#include "vma_preload/decision.h"

namespace ss::vma::preload {

struct KernelSocket {
  KernelSocket(int fd, int family, int type, int protocol, bool blocking, Decision decision);
  ~KernelSocket();
  KernelSocket(const KernelSocket&) = delete;
  KernelSocket& operator=(const KernelSocket&) = delete;

  // The decision, changed once by bind() (a udp_receiver port rule).
  Decision decision() const;
  void set_decision(Decision d);

  const int fd, family, type, protocol;  // type without SOCK_NONBLOCK/SOCK_CLOEXEC
  stats::SocketStats stats;  // empty when every block is taken

 private:
  std::atomic<Transport> wanted_;
  std::atomic<const char*> why_;  // a string literal
};

// Records a new UDP or TCP socket of AF_INET/AF_INET6 (any other socket is
// left alone), logging the decision at debug.
void track_socket(int fd, int domain, int type, int protocol);
// After a successful bind() of fd: the bound address into its block and,
// for UDP, the udp_receiver rules' decision (logged at debug).
void socket_bound(int fd);
// Drops fd's record, if any (close()).
void untrack_socket(int fd);
// The highest fd ever recorded (dump_fd_stats(0) walks up to it).
int highest_tracked_fd();

}  // namespace ss::vma::preload

// The listen service: one thread per process, alive only while some rsocket
// listens. It completes connection handshakes so that a peer's connect
// finishes before the application calls raccept.
//
// Fork: a listener inherited by a child is shared, as a kernel listening
// socket is (the tcp listening socket and the shm rendezvous are kernel
// sockets, shared by fork): new connections wait in their kernel backlog
// and must go to whichever process calls raccept. So at each fork every
// listener leaves this service in the parent and in the child, and is
// served from then on by the process calling raccept or rpoll on it
// (Socket::serve_requests). Connections this thread had already answered
// but not yet handed to raccept stay the parent's (its raccept returns
// them; its rclose of the listener ends them); a child drops its copies.
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
  void remove(Socket* s);              // the thread stops when the last listener leaves
  void wake();                         // a listener's descriptor to poll again (its queue has room)

 private:
  ListenService();
  void run(ServiceThread::Run& run);
  // Fork handlers: every listener becomes shared; the child takes its
  // copies over (Socket::listener_fork_child), of those shared before too.
  void before_fork();
  void parent_after_fork();
  void child_after_fork();

  std::mutex mu_;
  std::vector<std::shared_ptr<Socket>> listeners_;  // one user of thread_ each
  // Listeners a fork shared (served inline since): the child of every
  // later fork takes its copies over too, or it would keep the parent's
  // epoll set and half-read requests and could take one the parent began.
  std::vector<std::weak_ptr<Socket>> shared_;
  // Listeners this fork shares, and which of their locks before_fork got.
  struct Forked {
    Socket* s;
    bool serve, state;  // serve_mu_, mu_
  };
  std::vector<Forked> forked_;
  ServiceThread thread_;  // ss-listen
};

}  // namespace ss::rs

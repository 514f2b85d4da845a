#include "core/prov/tcp/side_listener.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/base/log.h"
#include "core/base/own_fd.h"
#include "core/prov/sock_addr.h"
#include "core/prov/tcp/side_probe.h"
#include "core/prov/tcp/tcp_endpoint.h"
#include "core/prov/util/stream_listener.h"

namespace ss::prov::tcp {

namespace {

constexpr int kProbesPerCall = 64;  // a flood of probes cannot hold a caller

// Every side listener of the process, for yield_side_port and the
// answering thread. Held briefly (at most one look at each socket) and
// across fork (pthread_atfork at load, so its prepare handler runs after
// every later one's), so a child never inherits it locked.
struct Registry {
  std::mutex mu;
  std::vector<SideListener*> all;
};
Registry* const g_registry = new Registry;  // never destroyed under a late caller
void lock_registry() { g_registry->mu.lock(); }
void unlock_registry() { g_registry->mu.unlock(); }
__attribute__((constructor)) void registry_across_fork() {
  pthread_atfork(lock_registry, unlock_registry, unlock_registry);
}
Registry& registry() { return *g_registry; }

// The answering thread, held by every side listener of the process; a fork
// child keeps its users and starts it again at its listeners' first look.
ServiceThread& answerer() {
  static ServiceThread* t =
      new ServiceThread({.name = "ss-side-answer", .child_keeps_users = true},
                        [](ServiceThread::Run& run) { SideListener::answer_all(run); });
  return *t;
}

// A socket of `type` on `name` (its port changed to `port`), with `like`'s
// IPV6_V6ONLY so a dual-stack listener's side channel is dual-stack too.
int bound_socket(int type, const sockaddr_storage& name, socklen_t len, uint16_t port, int like) {
  int s = ::socket(name.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  if (name.ss_family == AF_INET6) {
    int v6only = 0;
    socklen_t l = sizeof v6only;
    if (::getsockopt(like, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &l) == 0)
      ::setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  sockaddr_storage at = name;
  set_port(&at, port);
  if (::bind(s, reinterpret_cast<sockaddr*>(&at), len) == 0) return s;
  int err = errno;
  ::close(s);
  return -err;
}

}  // namespace

int SideListener::create(int sock, int backlog, std::unique_ptr<Listener>* out) {
  sockaddr_storage name{};
  socklen_t len = sizeof name;
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(&name), &len) < 0) return -errno;
  if (name.ss_family != AF_INET && name.ss_family != AF_INET6) return -EAFNOSUPPORT;
  std::unique_ptr<SideListener> l(new (std::nothrow) SideListener);
  if (!l) return -ENOMEM;
  l->port_ = port_of(name);
  l->udp_ = bound_socket(SOCK_DGRAM, name, len, l->port_, sock);
  if (l->udp_ == -EADDRINUSE) {
    SS_INFO(
        "tcp: UDP port %u is taken: no side channel, peers on other hosts reach port %u "
        "over kernel TCP",
        l->port_, l->port_);
    return 0;
  }
  if (l->udp_ < 0) return l->udp_;
  int side = bound_socket(SOCK_STREAM, name, len, 0, sock);
  if (side < 0) return side;
  sockaddr_storage side_name{};
  socklen_t side_len = sizeof side_name;
  if (::listen(side, backlog) < 0 ||
      ::getsockname(side, reinterpret_cast<sockaddr*>(&side_name), &side_len) < 0) {
    int err = errno;
    ::close(side);
    return -err;
  }
  l->side_port_ = port_of(side_name);
  if (int rc = util::StreamListener::create(side, kProto, &TcpEndpoint::make_passive, true,
                                            &l->stream_)) {
    ::close(side);
    return rc;
  }
  if (int rc = l->watch()) return rc;
  if (int rc = answerer().hold()) return rc;
  {
    std::lock_guard<std::mutex> g(registry().mu);
    registry().all.push_back(l.get());
  }
  answerer().wake();  // it watches the new socket from now on
  SS_DEBUG("tcp: side channel of port %u: UDP %u answers, TCP %u listens", l->port_, l->port_,
           l->side_port_);
  *out = std::move(l);
  return 0;
}

SideListener::~SideListener() {
  bool registered = false;
  {
    std::lock_guard<std::mutex> g(registry().mu);
    auto& all = registry().all;
    auto it = std::remove(all.begin(), all.end(), this);
    registered = it != all.end();
    all.erase(it, all.end());
  }
  // The thread reads only sockets still registered (checked under the
  // lock), so the number may go now; it looks again at its next wake-up.
  if (registered) answerer().release();
  stream_.reset();
  if (udp_ >= 0) ::close(udp_);
  if (epfd_ >= 0) ::close(epfd_);
}

int SideListener::watch() {
  if (epfd_ >= 0) ::close(epfd_);
  epfd_ = own_epoll();
  if (epfd_ < 0) return -errno;
  for (int fd : {stream_->fd(), udp_}) {
    if (fd == udp_ && yielded_) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) < 0) return -errno;
  }
  return 0;
}

int SideListener::fork_child() {
  thread_after_fork_ = true;  // never started inside fork itself
  if (int rc = stream_->fork_child()) return rc;
  return watch();  // ours is the parent's set too, and names the parent's stream set
}

void SideListener::answer_probes() {
  for (int i = 0; i < kProbesPerCall; i++) {
    uint8_t in[kProbeSize + 1];
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    ssize_t n = ::recvfrom(udp_, in, sizeof in, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from),
                           &from_len);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      continue;  // an ICMP error of an earlier answer: the next datagram
    }
    uint64_t nonce;
    if (!decode_probe(in, static_cast<size_t>(n), &nonce)) {
      SS_DEBUG("tcp: side channel of port %u: a datagram that is no probe dropped", port_);
      continue;
    }
    uint8_t out[kAnswerSize];
    encode_answer(out, nonce, side_port_);
    ::sendto(udp_, out, sizeof out, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&from),
             from_len);
  }
}

bool yield_side_port(uint16_t port) {
  bool yielded = false;
  std::lock_guard<std::mutex> g(registry().mu);
  for (SideListener* l : registry().all) {
    if (l->port_ != port || l->yielded_) continue;
    // An unbound socket takes the number's place (dup2 is atomic): the
    // port is free, the bound socket leaves the epoll set, and a thread
    // answering probes meanwhile reads an empty socket, never a number
    // reused by another.
    int unbound = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (unbound < 0 || ::dup3(unbound, l->udp_, O_CLOEXEC) < 0) {
      if (unbound >= 0) ::close(unbound);
      continue;
    }
    ::close(unbound);
    l->yielded_ = true;
    yielded = true;
    SS_INFO(
        "tcp: UDP port %u given to the program: peers that probe from now on reach "
        "port %u over kernel TCP",
        port, port);
  }
  return yielded;
}

void SideListener::answer_all(ServiceThread::Run& run) {
  // The sockets are watched through an epoll set of this thread's own,
  // which holds no reference to them: a poll(2) on them would keep a
  // yielded or closed socket's port bound while it sleeps. Made again at
  // each wake-up (a listener came) and in each thread a fork child starts.
  while (!run.stopping()) {
    const int ep = own_epoll();
    if (ep < 0) {
      run.sleep(1000);
      continue;
    }
    {
      std::lock_guard<std::mutex> g(registry().mu);
      for (SideListener* l : registry().all) {
        if (l->yielded_) continue;
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = l->udp_;
        epoll_ctl(ep, EPOLL_CTL_ADD, l->udp_, &ev);
      }
    }
    pollfd fds[2] = {{}, {ep, POLLIN, 0}};
    while (!run.stopping() && run.poll(fds, -1) >= 0 && !fds[0].revents) {
      epoll_event evs[16];
      const int n = epoll_wait(ep, evs, 16, 0);
      std::lock_guard<std::mutex> g(registry().mu);  // the sockets are valid under it
      for (int i = 0; i < n; i++)
        for (SideListener* l : registry().all)
          if (l->udp_ == evs[i].data.fd && !l->yielded_) l->answer_probes();
    }
    ::close(ep);
  }
}

int SideListener::get_request(std::unique_ptr<Endpoint>* ep) {
  if (thread_after_fork_) {
    thread_after_fork_ = false;
    answerer().wake();
  }
  answer_probes();
  int rc = stream_->get_request(ep);
  // Made by TcpEndpoint::make_passive (the stream listener's factory).
  if (rc == 0) static_cast<TcpEndpoint&>(**ep).show_port(port_);
  return rc;
}

}  // namespace ss::prov::tcp

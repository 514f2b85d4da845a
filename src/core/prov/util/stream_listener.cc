#include "core/prov/util/stream_listener.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/fd_spare.h"
#include "core/base/log.h"
#include "core/base/own_fd.h"

namespace ss::prov::util {

namespace {
// A peer gets this long to send its hello.
constexpr std::chrono::seconds kHelloTimeout{10};
constexpr size_t kMaxPendingHellos = 1024;
// What answering one request may make at once: the rsocket's number,
// the peer's memfds (shm) and a spare.
constexpr int kDescriptorsPerRequest = 4;
}  // namespace

namespace {
// A new epoll set watching the listening socket `sock`: the fd or -errno.
int watch_source(int sock) {
  int ep = own_epoll();
  if (ep < 0) return -errno;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = sock;
  if (epoll_ctl(ep, EPOLL_CTL_ADD, sock, &ev) == 0) return ep;
  int err = errno;
  ::close(ep);
  return -err;
}
}  // namespace

int StreamListener::create(int sock, const StreamProto& proto, PassiveFactory factory, bool owned,
                           std::unique_ptr<Listener>* out) {
  std::unique_ptr<StreamListener> l(new StreamListener());
  l->epfd_ = watch_source(sock);
  if (l->epfd_ < 0) return l->epfd_;
  l->source_ = {sock, &proto, factory, owned};
  *out = std::move(l);
  return 0;
}

int StreamListener::fork_child() {
  // The epoll set is the parent's too: no epoll_ctl on it here (that
  // would change the parent's), only our copies of its descriptors go.
  // Hellos being read are the parent's: it answers them.
  for (Pending& p : pending_) ::close(p.fd);
  pending_.clear();
  ::close(epfd_);
  epfd_ = watch_source(source_.fd);
  return epfd_ < 0 ? epfd_ : 0;
}

StreamListener::~StreamListener() {
  for (Pending& p : pending_) ::close(p.fd);
  if (source_.owned) ::close(source_.fd);
  if (epfd_ >= 0) ::close(epfd_);
}

int StreamListener::accept_new() {
  while (pending_.size() < kMaxPendingHellos) {
    int fd = accept4(source_.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return errno == EMFILE || errno == ENFILE ? -errno : 0;
    Pending p{};
    p.fd = fd;
    p.deadline = std::chrono::steady_clock::now() + kHelloTimeout;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) < 0) {
      ::close(fd);
      continue;
    }
    pending_.push_back(p);
  }
  return 0;
}

int StreamListener::read_hello(Pending& p) {
  size_t want = kFrameHeaderSize;
  FrameHeader h{};
  for (;;) {
    if (p.got >= kFrameHeaderSize) {
      decode_frame(p.buf, &h);
      if (h.type != FrameType::kHello || h.imm != kHelloMagic || h.rkey != kHelloVersion ||
          h.length > kMaxPrivateData || h.flags != source_.proto->hello_tag) {
        SS_WARN("listener: malformed connection request dropped");
        return -1;
      }
      want = kFrameHeaderSize + h.length;
      if (p.got == want) return 1;
    }
    // Read exactly the hello: what follows belongs to the endpoint.
    ssize_t n = ::recv(p.fd, p.buf + p.got, want - p.got, MSG_DONTWAIT);
    if (n > 0) {
      p.got += n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    return -1;
  }
}

void StreamListener::drop(size_t i) {
  epoll_ctl(epfd_, EPOLL_CTL_DEL, pending_[i].fd, nullptr);
  release_number(pending_[i].fd);
  pending_.erase(pending_.begin() + i);
  // Its number was taken from the program's table: a process out of
  // descriptors stays out, as when a peer leaves a kernel backlog.
  reserve_free();
}

int StreamListener::get_request(std::unique_ptr<Endpoint>* ep) {
  const int starved = accept_new();  // a connection waits that no descriptor is left for
  auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < pending_.size();) {
    Pending& p = pending_[i];
    int rc = read_hello(p);
    if (rc < 0 || (rc == 0 && now > p.deadline)) {
      drop(i);
      continue;
    }
    if (rc == 0) {
      i++;
      continue;
    }
    // Answering it makes more descriptors (the rsocket's number, the
    // peer's memfds on shm): short of them it stays pending, its peer
    // waiting as in a kernel backlog, and the caller hears EMFILE, as
    // from accept(2). A failure half-way puts the numbers it freed in
    // the reserve (fd_spare.h), and so does a drop.
    if (int short_rc = descriptor_shortage(kDescriptorsPerRequest, true)) return short_rc;
    epoll_ctl(epfd_, EPOLL_CTL_DEL, p.fd, nullptr);
    *ep = source_.factory(p.fd, p.buf + kFrameHeaderSize, p.got - kFrameHeaderSize);
    if (!*ep) {
      release_number(p.fd);
      pending_.erase(pending_.begin() + i);
      reserve_free();  // as drop
      continue;
    }
    pending_.erase(pending_.begin() + i);
    return 0;
  }
  return starved ? starved : -EAGAIN;
}

}  // namespace ss::prov::util

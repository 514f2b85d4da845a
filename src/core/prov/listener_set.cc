#include "core/prov/listener_set.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

#include "core/base/own_fd.h"

namespace ss::prov {

int ListenerSet::create(std::unique_ptr<ListenerSet>* out) {
  std::unique_ptr<ListenerSet> s(new (std::nothrow) ListenerSet);
  if (!s) return -ENOMEM;
  if ((s->epfd_ = own_epoll()) < 0) return -errno;
  *out = std::move(s);
  return 0;
}

ListenerSet::~ListenerSet() {
  members_.clear();
  if (epfd_ >= 0) ::close(epfd_);
}

int ListenerSet::add(std::unique_ptr<Listener> member) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, member->fd(), &ev)) return -errno;
  members_.push_back(std::move(member));
  return 0;
}

int ListenerSet::fork_child() {
  own_close(epfd_);  // shared with the parent: a set of our own replaces it
  epfd_ = own_epoll();
  if (epfd_ < 0) return -errno;
  std::vector<std::unique_ptr<Listener>> kept;
  bool parents = false;
  for (auto& m : members_) {
    int rc = m->fork_child();
    if (rc == -ENOTSUP) {
      (void)m.release();  // the parent's objects (rdma_cm ids): not ours to destroy
      parents = true;
      continue;
    }
    if (rc) return rc;
    kept.push_back(std::move(m));
  }
  members_.clear();
  next_ = 0;
  // Peers of a member left to the parent reach the parent only (its
  // raccept or rpoll serves them, as any listener shared by fork); the
  // child serves the rest. With nothing left, the set holds nothing,
  // whoever forgets it.
  if (kept.empty()) {
    own_close(epfd_);
    epfd_ = -1;
    return parents ? -ENOTSUP : 0;
  }
  for (auto& m : kept)
    if (int rc = add(std::move(m))) return rc;
  return parents ? 1 : 0;
}

int ListenerSet::get_request(std::unique_ptr<Endpoint>* ep) {
  int starved = 0;
  for (size_t i = 0; i < members_.size(); i++) {
    Listener& m = *members_[(next_ + i) % members_.size()];
    int rc = m.get_request(ep);
    if (rc == 0) {
      next_ = (next_ + i + 1) % members_.size();
      return 0;
    }
    if (rc == -EMFILE || rc == -ENFILE) starved = rc;
  }
  return starved ? starved : -EAGAIN;
}

}  // namespace ss::prov

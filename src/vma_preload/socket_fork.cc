// A record across fork: what a child finds of its parent's sockets (a
// listener joins the parent's rings, or asks for its kernel socket), and
// what the parent lends a child that asks (fork_share.h carries the
// asking).
#include <sys/socket.h>

#include <cstring>
#include <mutex>

#include "core/base/errno_guard.h"
#include "core/base/log.h"
#include "interpose/edge.h"
#include "libvmacompat/settings.h"
#include "vma_preload/fork_share.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/tcp_repair.h"
#include "vma_preload/tcp_service.h"
#include "core/net/tcp/handover_codec.h"
#include "vma_preload/fork_join.h"

namespace ss::vma::preload {

void SocketRecord::start_in_fork_child() {
  settle_kick_.fork_child();  // the parent's sleepers (a stray kick to them is harmless)
  fork_asked_.store(false, std::memory_order_relaxed);
  fork_answered_.store(false, std::memory_order_relaxed);
  // A parent thread may have held these at the fork: the child's anew.
  new (&ask_mu_) std::mutex;
  new (&child_tcp_mu_) std::mutex;
  listen_left_.store(false, std::memory_order_relaxed);  // this process's listener's, none yet
  // A listener the process that forked us joined with is that one's (its
  // stack's locks, its packet socket): kept, never used here.
  (void)child_listen_owner_.release();
  child_listen_.store(nullptr, std::memory_order_relaxed);
  // So is a connection it took from its own parent (its rings).
  (void)child_tcp_owner_.release();
  child_tcp_.store(nullptr, std::memory_order_relaxed);
  child_join_tried_.store(false, std::memory_order_relaxed);
}

namespace {

// The child's lock for joining (records_fork_child makes it anew).
std::mutex* g_join_mu = new std::mutex;

}  // namespace

void records_fork_child() { g_join_mu = new std::mutex; }

TcpListen* SocketRecord::child_listening() const {
  if (interpose::handler_over_busy()) return nullptr;
  if (TcpListen* l = child_listen_.load(std::memory_order_acquire)) return l;
  if (!fork_asked_.load(std::memory_order_relaxed)) ask_parent();  // joins first
  return child_listen_.load(std::memory_order_acquire);
}

void SocketRecord::join_in_child() {
  ErrnoGuard keep;            // inside the program's call
  interpose::BusyScope busy;  // the stacks' locks
  std::lock_guard<std::mutex> lock(*g_join_mu);
  if (child_join_tried_.exchange(true, std::memory_order_relaxed) ||
      !settings::get(settings::Id::kTcpForkJoin))
    return;
  // The parent that owned the rings is gone (a daemon's first process
  // exits after its fork), or this process took them over for another
  // listener: it owns rings from now on, and its own children join it
  // (fork_child.cc).
  bool take_over = fork_share_owner_here() || fork_share_parent_gone();
  auto open = [&] {
    t_joining = !take_over;
    t_taking_over = take_over;
    t_making_rings = true;
    // The parent's backlog is not known here: the kernel's bound.
    std::unique_ptr<TcpListen> l = TcpListen::open(fd, family, SOMAXCONN);
    t_joining = t_taking_over = false;
    t_making_rings = false;
    return l;
  };
  std::unique_ptr<TcpListen> l = open();
  // No answer: the parent may have been exiting (a double fork's middle
  // process, which took the rings over and leaves): this one takes over.
  if (!l && !take_over && (take_over = fork_share_parent_gone())) l = open();
  if (!l) return;
  if (take_over) {
    if (fork_share_take_over() < 0) return;  // children could not ask: its listeners close
    wake_rings_service();                    // to poll the new request socket from now on
    SS_INFO("listen fd %d: fork child: its parent gone, on rings this process owns", fd);
  } else if (const int err = l->join_groups(); err < 0) {
    SS_INFO("listen fd %d: fork child: no share of the parent's rings (%s); the kernel serves it",
            fd, std::strerror(-err));
    return;  // its listeners close: nothing reached them
  } else {
    SS_INFO("listen fd %d: fork child: on rings of its own beside its parent's", fd);
  }
  child_listen_owner_ = std::move(l);
  child_listen_.store(child_listen_owner_.get(), std::memory_order_release);
}

void SocketRecord::ask_parent(bool may_take) const {
  // A handler that interrupted the asking thread (inside the library)
  // does not wait for it: the kernel socket serves it.
  if (interpose::handler_over_busy()) return;
  interpose::BusyScope busy;
  std::lock_guard<std::mutex> lock(ask_mu_);
  if (fork_answered_.load(std::memory_order_relaxed)) return;
  ask_parent_locked(may_take);
  fork_answered_.store(true, std::memory_order_release);
}

void SocketRecord::ask_parent_locked(bool may_take) const {
  // A listener joins the parent's rings rather than ask for the kernel's.
  if (listen_.load(std::memory_order_relaxed) && !interpose::handler_over_busy()) {
    const_cast<SocketRecord*>(this)->join_in_child();
    if (child_listen_.load(std::memory_order_acquire)) {
      fork_asked_.store(true, std::memory_order_relaxed);  // nothing more to ask
      return;
    }
  }
  // Offloaded in the parent when it forked: its copy of the pointer says
  // so. Nobody to ask once this process answers its own children (its
  // parent is gone).
  if ((!offload_.load(std::memory_order_relaxed) && !listen_.load(std::memory_order_relaxed) &&
       !tcp_.load(std::memory_order_relaxed)) ||
      fork_asked_.exchange(true) || fork_share_owner_here())
    return;
  // A connection the parent closed and left for a child comes onto rings
  // of this one's own; any other goes to the kernel socket.
  if (may_take && tcp_.load(std::memory_order_relaxed) &&
      tcp_.load(std::memory_order_relaxed)->accepted() && !interpose::handler_over_busy() &&
      settings::get(settings::Id::kTcpForkJoin) &&
      const_cast<SocketRecord*>(this)->take_from_parent())
    return;
  fork_share_ask(id);
}

bool SocketRecord::take_from_parent() {
  ErrnoGuard keep;            // inside the program's call
  interpose::BusyScope busy;  // the stacks' locks
  // The rings first (the parent's netdev, read from its copy of the
  // connection): the parent drops the connection's segments from the
  // take until this process owns them, so that wait is short.
  std::lock_guard<std::mutex> join(*g_join_mu);
  const std::string parent_ifname = tcp_.load(std::memory_order_relaxed)->rings()->ifname;
  t_joining = true;
  t_making_rings = true;
  NetdevRings* r = netdev_rings(parent_ifname);
  t_joining = false;
  t_making_rings = false;
  if (!r) return false;  // the kernel's, as before (netdev_rings said why)
  std::string ifname;
  std::vector<uint8_t> bytes;
  if (const int err = fork_join_take(id, &ifname, &bytes); err < 0) {
    SS_DEBUG("fd %d: fork child: the parent left no connection to take (%s)", fd,
             std::strerror(-err));
    return false;
  }
  // Ours from here: on rings of this process's, or else its kernel socket.
  net::tcp::FourTuple t;
  net::tcp::Handover h;
  int err = net::tcp::decode_handover(bytes, &t, &h);
  const bool decoded = err == 0;
  if (err == 0 && ifname != parent_ifname) err = -EPROTO;
  std::unique_ptr<TcpOffload> taken;
  if (err == 0) err = TcpOffload::take(r, fd, family, t, h, &taken);
  if (err == 0) {
    std::lock_guard<std::mutex> lock(child_tcp_mu_);
    child_tcp_owner_ = std::move(taken);
    child_tcp_owner_->attach(&stats, fd, &rx_extras);
    child_tcp_forks_ = forks_so_far();
    child_tcp_.store(child_tcp_owner_.get(), std::memory_order_release);
    stats.set_flags(/*offloaded=*/true, created_blocking, /*mc_loop=*/true);
    SS_INFO("fd %d: fork child: the connection its parent left, on rings of its own", fd);
    return true;
  }
  const int in_kernel = decoded ? repair_into_kernel(fd, family, t, h) : err;
  if (in_kernel == 0)
    SS_INFO("fd %d: fork child: the connection its parent left handed to the kernel (%s)", fd,
            std::strerror(-err));
  else
    SS_WARN("fd %d: fork child: the connection its parent left is lost (%s, then %s)", fd,
            std::strerror(-err), std::strerror(-in_kernel));
  return true;  // asked: the kernel socket serves it (or fails as a dead one)
}

void SocketRecord::close_child_tcp() {
  std::unique_ptr<TcpOffload> t;
  {
    std::lock_guard<std::mutex> lock(child_tcp_mu_);
    if (!child_tcp_owner_) return;
    interpose::BusyScope busy;
    child_tcp_.store(nullptr, std::memory_order_release);
    // Forked again since: a child of ours may hold it (as the parent's rule).
    if (child_tcp_forks_ != forks_so_far() && child_tcp_owner_->hand_to_kernel(fd) == 0) {
      SS_INFO("fd %d: connection handed to the kernel (closed here after a fork)", fd);
    } else {
      child_tcp_owner_->keep_port(fd);
      child_tcp_owner_->begin_close(fd);
    }
    t = std::move(child_tcp_owner_);
  }
  // The record stays (inherited): the connection goes once no call is in
  // it (tcp_service.h).
  tcp_retire(std::move(t));
}

bool SocketRecord::lend_to_fork_child(bool lend, int pid) {
  std::lock_guard<std::mutex> lock(offload_mu_);
  // In a process that took its gone parent's rings over (fork_child.cc),
  // its own listener is all it can lend: the rest is the parent's.
  if (inherited()) return lend_listener_locked(lend, pid);
  if (tcp_owner_) {
    if (lend && !tcp_closed_) {
      char why[48];
      snprintf(why, sizeof why, "fork child %d uses it", pid);
      hand_tcp_locked(why);
    }
    return false;
  }
  if (listen_owner_) return lend_listener_locked(lend, pid);
  if (!offload_owner_) return false;
  // The first child to ask lends the port; the last one gone takes it back.
  if (lend ? fork_sharers_++ > 0 : fork_sharers_ == 0 || --fork_sharers_ > 0) return true;
  // A flow another socket here also holds (a shared bind, a group it
  // joined too) does not move (logged: none).
  if (!offload_owner_->lend_to_kernel(lend)) return true;
  if (lend)
    SS_INFO(
        "fd %d: fork child %d receives on it: its port and groups go to the kernel "
        "socket, shared, until that child is gone",
        fd, pid);
  else
    SS_INFO("fd %d: fork child %d gone: its port and groups back on the rings", fd, pid);
  return true;
}

bool SocketRecord::lend_listener_locked(bool lend, int pid) {
  // A TCP listener: new clients are the kernel's from now on; the
  // connections it gave out, and those it completed and the process
  // accepts next, stay on the rings (TcpListen::leave_rings).
  std::atomic<TcpListen*>& own = own_listen();
  TcpListen* l = own.load(std::memory_order_acquire);
  if (!l || !lend || listen_left_.exchange(true)) return false;
  // Nothing kept: the kernel's listener serves every call from now on.
  if (!l->leave_rings()) own.store(nullptr, std::memory_order_release);
  SS_INFO("listen fd %d: fork child %d accepts on it: the kernel listens for both from now on", fd,
          pid);
  return true;
}

}  // namespace ss::vma::preload

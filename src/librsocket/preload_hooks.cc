// librspreload's private hooks (preload_hooks.h).
#include "librsocket/preload_hooks.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <memory>
#include <new>
#include <vector>

#include "core/base/fd_table.h"
#include "core/prov/sock_addr.h"
#include "core/prov/tcp/side_listener.h"
#include "librsocket/fork.h"
#include "librsocket/socket.h"

#define SS_EXPORT extern "C" __attribute__((visibility("default")))

using ss::FdKind;
using ss::FdTable;
using ss::rs::Socket;

namespace {
int fail(int err) {
  errno = err;
  return -1;
}
}  // namespace

const char* Socket::provider_name() {
  std::lock_guard<ss::FutexMutex> g(mu_);
  return ep_ ? ep_->provider_name() : nullptr;
}

bool Socket::fell_back() {
  std::lock_guard<ss::FutexMutex> g(mu_);
  return has(kFellBack);
}

SS_EXPORT int ss_rspreload_adopt(int fd, int domain) {
  if (domain != AF_INET && domain != AF_INET6) return fail(EAFNOSUPPORT);
  const int fl = ::fcntl(fd, F_GETFL);
  const int fdfl = ::fcntl(fd, F_GETFD);
  if (fl < 0 || fdfl < 0) return -1;
  std::shared_ptr<Socket> s;
  try {
    s = std::make_shared<Socket>(fd, domain);
  } catch (const std::bad_alloc&) {
    return fail(ENOMEM);
  }
  s->set_off_stream();
  if (fl & O_NONBLOCK) s->fcntl(F_SETFL, O_NONBLOCK);
  if (int rc = s->fcntl(F_SETFD, fdfl & FD_CLOEXEC)) return fail(-rc);
  // The rsocket's kernel socket never blocks (Peer::sock); the program's
  // view of O_NONBLOCK is the rsocket's own flag from now on.
  if (::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
  if (int rc = FdTable::instance().insert(fd, FdKind::kRsocket, std::move(s))) {
    ::fcntl(fd, F_SETFL, fl);
    return fail(-rc);
  }
  return 0;
}

namespace {
// fd's adopted rsocket: connected or connecting, or moved to kernel TCP
// after a late failure (kRsocketFallback).
std::shared_ptr<Socket> adopted(int fd) {
  auto s = FdTable::instance().get<Socket>(fd, FdKind::kRsocket);
  return s ? s : FdTable::instance().get<Socket>(fd, FdKind::kRsocketFallback);
}
}  // namespace

SS_EXPORT int ss_rspreload_release(int fd) {
  std::shared_ptr<Socket> s;
  {
    ss::rs::fork::TableGuard table;  // as rclose: out of the table and the process count together
    s = FdTable::instance().remove<Socket>(fd, FdKind::kRsocket);
    if (!s) s = FdTable::instance().remove<Socket>(fd, FdKind::kRsocketFallback);
    if (s) s->leave_processes();  // a connect that got as far as the peer joined
  }
  if (!s) return fail(EBADF);
  const bool nonblock = s->fcntl(F_GETFL, 0) & O_NONBLOCK;
  const int fd_flags = s->fcntl(F_GETFD, 0);
  // The Socket goes without close(): its provider resources go with the
  // object (a connect that failed holds no connection), and the
  // descriptor stays the program's.
  s.reset();
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, nonblock ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0) return -1;
  return ::fcntl(fd, F_SETFD, fd_flags < 0 ? 0 : fd_flags);
}

SS_EXPORT int ss_rspreload_yield_udp_port(const sockaddr* addr, unsigned len) {
  sockaddr_storage a{};
  if (!addr || len > sizeof a) return 0;
  memcpy(&a, addr, len);
  const uint16_t port = ss::prov::port_of(a);
  return port && ss::prov::tcp::yield_side_port(port) ? 1 : 0;
}

SS_EXPORT int ss_rspreload_fell_back(int fd) {
  auto s = adopted(fd);
  return s && s->fell_back() ? 1 : 0;
}

namespace {
// The connections an exec, or a send passing them (SCM_RIGHTS), is
// carrying, locked until the image goes or the send went (given away),
// or the exec or send failed (ss_rspreload_exec_abandon). Sends on
// several threads share the map: carried_mu guards it, never held
// across a connection's own lock.
struct Carried {
  std::shared_ptr<Socket> socket;
  std::vector<uint8_t> state;
};
std::map<int, Carried>& carried = *new std::map<int, Carried>;  // by descriptor
std::mutex carried_mu;

// The entry of fd taken out of the map (no socket: none).
Carried take_carried(int fd) {
  std::lock_guard<std::mutex> g(carried_mu);
  auto it = carried.find(fd);
  if (it == carried.end()) return {};
  Carried c = std::move(it->second);
  carried.erase(it);
  return c;
}
}  // namespace

SS_EXPORT long ss_rspreload_exec_save(int fd, const void** state, int* own, int* domain, int* keep,
                                      int* nkeep) {
  auto s = FdTable::instance().get<Socket>(fd, FdKind::kRsocket);
  if (!s) return fail(EBADF);
  *own = s->fd();
  *domain = s->domain();
  Carried c{s, {}};
  std::vector<int> fds;
  const int rc = s->exec_save(&c.state, &fds);
  if (rc || fds.size() > static_cast<size_t>(*nkeep)) {
    if (!rc) s->exec_abandon();
    return fail(rc ? -rc : EOPNOTSUPP);
  }
  const size_t len = c.state.size();
  try {
    std::lock_guard<std::mutex> g(carried_mu);
    Carried& in = carried[fd];  // none there: the rsocket was not locked
    in = std::move(c);
    *state = in.state.data();  // a map entry and its vector's bytes stay put
  } catch (const std::bad_alloc&) {
    s->exec_abandon();
    return fail(ENOMEM);
  }
  *nkeep = static_cast<int>(fds.size());
  std::copy(fds.begin(), fds.end(), keep);
  return static_cast<long>(len);
}

SS_EXPORT void ss_rspreload_exec_give_away(int fd) {
  if (Carried c = take_carried(fd); c.socket) c.socket->exec_give_away();
}

SS_EXPORT void ss_rspreload_exec_take_back(int fd) {
  if (auto s = FdTable::instance().get<Socket>(fd, FdKind::kRsocket)) s->exec_take_back();
}

SS_EXPORT int ss_rspreload_transports(int fd, int* out, int room) {
  auto s = FdTable::instance().get<Socket>(fd, FdKind::kRsocket);
  if (!s) return fail(EBADF);
  int n = 0;
  for (int t : {s->fd(), s->stream_fd()})
    if (t >= 0 && n < room && (n == 0 || out[0] != t)) out[n++] = t;
  return n;
}

SS_EXPORT void ss_rspreload_exec_abandon(int fd) {
  if (Carried c = take_carried(fd); c.socket) c.socket->exec_abandon();
}

namespace {
// A Socket for descriptor `fd` the exec left open, in the fd table once
// `build` made it what it is.
template <class Build>
int rebuilt(int fd, int domain, const Build& build) {
  if (domain != AF_INET && domain != AF_INET6) return fail(EAFNOSUPPORT);
  std::shared_ptr<Socket> s;
  try {
    s = std::make_shared<Socket>(fd, domain);
    if (int rc = build(*s)) return fail(-rc);
  } catch (const std::bad_alloc&) {
    return fail(ENOMEM);
  }
  // The rsocket's kernel descriptor never blocks; the program's
  // O_NONBLOCK is the rsocket's own flag (as ss_rspreload_adopt).
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  if (int rc = FdTable::instance().insert(fd, FdKind::kRsocket, std::move(s))) return fail(-rc);
  return 0;
}
}  // namespace

SS_EXPORT int ss_rspreload_exec_restore(int fd, int domain, const void* state, unsigned long len,
                                        const int* from, const int* to, int n) {
  return rebuilt(fd, domain, [&](Socket& s) {
    return s.exec_restore(static_cast<const uint8_t*>(state), len, ss::prov::Renumber{from, to, n});
  });
}

SS_EXPORT int ss_rspreload_exec_lost(int fd, int domain, const struct sockaddr* name, unsigned len,
                                     int aside) {
  return rebuilt(fd, domain, [&](Socket& s) {
    if (aside)
      s.exec_aside_lost(name, len);
    else
      s.exec_lost(name, len);
    return 0;
  });
}

SS_EXPORT int ss_rspreload_exec_aside(int fd, long long until_ms) {
  auto s = FdTable::instance().get<Socket>(fd, FdKind::kRsocket);
  // steady_clock is CLOCK_MONOTONIC.
  const std::chrono::steady_clock::time_point until{std::chrono::milliseconds(until_ms)};
  return s && s->exec_aside(until) ? 1 : 0;
}

SS_EXPORT void ss_rspreload_exec_unaside(int fd) {
  if (auto s = FdTable::instance().get<Socket>(fd, FdKind::kRsocket)) s->exec_unaside();
}

namespace {
// Listeners whose queued connections an exec is carrying, by descriptor.
std::map<int, std::vector<std::shared_ptr<Socket>>>& held =
    *new std::map<int, std::vector<std::shared_ptr<Socket>>>;

// A connection out of the fd table and of the process count, as if
// never accepted (raccept puts it back in both).
std::shared_ptr<Socket> unaccept(int fd) {
  ss::rs::fork::TableGuard table;
  auto s = FdTable::instance().remove<Socket>(fd, FdKind::kRsocket);
  if (s) s->leave_processes();
  return s;
}
}  // namespace

SS_EXPORT int ss_rspreload_exec_hold(int listener, int* fds, int room) {
  auto l = FdTable::instance().get<Socket>(listener, FdKind::kRsocket);
  if (!l) return fail(EBADF);
  std::vector<std::shared_ptr<Socket>>* out;
  try {
    out = &held[listener];
  } catch (const std::bad_alloc&) {
    return fail(ENOMEM);
  }
  out->clear();
  if (int rc = l->exec_hold(out)) {
    held.erase(listener);
    return fail(-rc);
  }
  int n = 0;
  for (auto it = out->begin(); it != out->end();) {
    auto& s = *it;
    int rc = n < room ? 0 : -ENOSPC;
    if (!rc) {
      ss::rs::fork::TableGuard table;  // as raccept: in the table and counted, or neither
      rc = FdTable::instance().insert(s->fd(), FdKind::kRsocket, s);
      if (!rc) s->join_processes();
    }
    if (rc) {
      s->close();
      it = out->erase(it);
      continue;
    }
    fds[n++] = s->fd();
    ++it;
  }
  return n;
}

SS_EXPORT void ss_rspreload_exec_unhold(int listener) {
  auto it = held.find(listener);
  if (it == held.end()) return;
  for (auto& s : it->second) unaccept(s->fd());
  if (auto l = FdTable::instance().get<Socket>(listener, FdKind::kRsocket))
    l->exec_unhold(&it->second);
  held.erase(it);
}

SS_EXPORT int ss_rspreload_requeue(int listener, int fd) {
  auto l = FdTable::instance().get<Socket>(listener, FdKind::kRsocket);
  if (!l || FdTable::instance().kind(fd) != FdKind::kRsocket) return fail(EBADF);
  auto s = unaccept(fd);
  if (!s) return fail(EBADF);
  l->requeue(std::move(s), false);
  return 0;
}

SS_EXPORT int ss_rspreload_failed(int fd) {
  auto s = FdTable::instance().get<Socket>(fd, FdKind::kRsocket);
  return s && s->failed_unread() ? 1 : 0;
}

SS_EXPORT const char* ss_rspreload_provider(int fd) {
  auto s = adopted(fd);
  return s ? s->provider_name() : nullptr;
}

SS_EXPORT int ss_rspreload_options_fd(int fd) {
  auto s = FdTable::instance().get<Socket>(fd, FdKind::kRsocket);
  return s ? s->options_fd() : fail(EBADF);
}

SS_EXPORT int ss_rspreload_queued(int fd, int in) {
  auto s = FdTable::instance().get<Socket>(fd, FdKind::kRsocket);
  if (!s) return fail(EBADF);
  int n = s->queued_bytes(in != 0);
  return n < 0 ? fail(-n) : n;
}

// Socket lifecycle: buffers, connection data, connect/listen/accept and
// shutdown. The protocol engine proper is in engine.cc.
#include "librsocket/socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <utility>

#include "librsocket/settings.h"
#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "core/base/sandbox.h"
#include "core/base/own_fd.h"
#include "core/base/proc_sys.h"
#include "core/prov/selection.h"
#include "core/prov/sock_addr.h"
#include "librsocket/fork.h"
#include "core/base/fd_spare.h"
#include "core/base/interruptible_poll.h"
#include "librsocket/keepalive_service.h"
#include "librsocket/listen_service.h"

namespace ss::rs {

using settings::Id;

namespace {
uint32_t clamp_qp(uint32_t v) { return std::clamp(v, kQpMinSize, kQpMaxSize); }

// The descriptor of an accepted connection whose provider has none (verbs):
// a kernel socket of the connection's family, so fd-based calls behave as
// on an active rsocket. An AF_INET6 listener's connections are AF_INET6,
// IPv4 peers included (a dual-stack listener, as the kernel's).
int name_accepted(const prov::Endpoint& ep, int listener_domain) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  int family = listener_domain == AF_INET6 ||
                       (ep.local_name(&local, &len) == 0 && local.ss_family == AF_INET6)
                   ? AF_INET6
                   : AF_INET;
  return ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
}
}  // namespace

Socket::Socket(int fd, int domain) : fd_(fd), domain_(domain) {
  opt_.sq_size = static_cast<uint32_t>(settings::get(Id::kSqsizeDefault));
  opt_.rq_size = static_cast<uint32_t>(settings::get(Id::kRqsizeDefault));
  opt_.inline_size = static_cast<uint32_t>(settings::get(Id::kInlineDefault));
  opt_.sbuf_size = static_cast<uint32_t>(settings::get(Id::kWmemDefault));
  opt_.rbuf_size = static_cast<uint32_t>(settings::get(Id::kMemDefault));
  opt_.iomap_size = static_cast<uint32_t>(settings::get(Id::kIomapSize));
}

Socket::~Socket() {
  if (tracked_) fork::untrack(this);
  // A connection dropped without rclose (a fallback, an abandoned accept)
  // must not stay on the fork registry's list of shares.
  if (share_.is_open()) fork::leave(&share_);
  free_buffers();
  if (accept_efd_ >= 0) ::close(accept_efd_);
  if (kernel_events_ep_ >= 0) ::close(kernel_events_ep_);
  if (options_fd_ >= 0) ::close(options_fd_);
}

int Socket::options_fd() {
  std::lock_guard<FutexMutex> g(mu_);
  if (options_fd_ != -2) return options_fd_ >= 0 ? options_fd_ : fd_;
  int proto = 0;
  socklen_t n = sizeof proto;
  if ((::getsockopt(fd_, SOL_SOCKET, SO_PROTOCOL, &proto, &n) == 0 && proto == IPPROTO_TCP) ||
      sandbox::locked_in()) {
    options_fd_ = -1;
    return fd_;
  }
  const int k = ::socket(domain_, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (k < 0) return fd_;  // asked again next time
  const int carried[][3] = {{SOL_SOCKET, SO_REUSEADDR, opt_.reuseaddr},
                            {SOL_SOCKET, SO_KEEPALIVE, opt_.keepalive},
                            {SOL_SOCKET, SO_OOBINLINE, opt_.oobinline},
                            {IPPROTO_TCP, TCP_NODELAY, opt_.nodelay},
                            {IPPROTO_TCP, TCP_KEEPIDLE, static_cast<int>(opt_.keepidle)},
                            {domain_ == AF_INET6 ? IPPROTO_IPV6 : -1, IPV6_V6ONLY, opt_.v6only},
                            {domain_ == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP,
                             domain_ == AF_INET6 ? IPV6_TCLASS : IP_TOS, opt_.tos}};
  for (const auto& c : carried)
    if (c[2] && c[0] >= 0) ::setsockopt(k, c[0], c[1], &c[2], sizeof c[2]);
  options_fd_ = k;
  return k;
}

void Socket::inherit_from(const Socket& l) {
  opt_ = l.opt_;
  // Linux accept() semantics: O_NONBLOCK and FD_CLOEXEC are not inherited
  // (accept4 flags decide). The timeouts are, and getsockopt reads them
  // from the kernel socket: give ours the listener's.
  if (opt_.rcvtimeo_us || opt_.sndtimeo_us)
    for (int name : {SO_RCVTIMEO, SO_SNDTIMEO}) {
      timeval tv{};
      socklen_t n = sizeof tv;
      if (::getsockopt(l.fd_, SOL_SOCKET, name, &tv, &n) == 0)
        ::setsockopt(fd_, SOL_SOCKET, name, &tv, n);
    }
}

int Socket::alloc_buffers() {
  // rbuf and sbuf sizes must be even (two halves) and at least a page.
  opt_.rbuf_size = std::max<uint32_t>((opt_.rbuf_size + 1) & ~1u, 2 * kSndLowat);
  opt_.sbuf_size = std::max<uint32_t>(opt_.sbuf_size, 2 * kSndLowat);
  const size_t target_len = kSglSize * sizeof(RsSge) + opt_.iomap_size * kIomapEntrySize;
  int rc = rbuf_mem_.alloc(opt_.rbuf_size, "rsocket-rbuf", ep_.get());
  if (!rc) rc = sbuf_mem_.alloc(opt_.sbuf_size, "rsocket-sbuf", ep_.get());
  if (!rc) rc = target_mem_.alloc(target_len, "rsocket-target", ep_.get());
  if (rc) return rc;
  rbuf_ = rbuf_mem_.data();
  sbuf_ = sbuf_mem_.data();
  target_sgl_ = reinterpret_cast<RsSge*>(target_mem_.data());
  target_iomap_ = reinterpret_cast<uint8_t*>(target_sgl_ + kSglSize);
  rbuf_rkey_ = rbuf_mem_.rkey();
  sbuf_lkey_ = sbuf_mem_.lkey();

  peer_iomaps_.assign(opt_.iomap_size, RsIomap{});
  sbuf_bytes_avail_ = opt_.sbuf_size;
  sbuf_head_ = 0;
  rbuf_bytes_avail_ = opt_.rbuf_size / 2;
  rbuf_free_offset_ = opt_.rbuf_size / 2;
  rbuf_offset_ = 0;
  sqe_avail_ = opt_.sq_size - kQpCtrlSize;
  ctrl_avail_ = kQpCtrlSize;
  rseq_comp_ = static_cast<uint16_t>(opt_.rq_size / 2);
  return 0;
}

void Socket::free_buffers() {
  for (Iomap& m : iomaps_)
    if (ep_) ep_->dereg_mr(&m.mr);
  iomaps_.clear();
  for (ConnBuffer* b : {&rbuf_mem_, &sbuf_mem_, &target_mem_}) b->free(ep_ != nullptr);
  ep_.reset();
  rbuf_ = sbuf_ = nullptr;
  rbuf_rkey_ = sbuf_lkey_ = 0;
  target_sgl_ = nullptr;
  target_iomap_ = nullptr;
}

void Socket::build_conn_data(ConnData* cd) {
  cd->version = kProtocolVersion;
  cd->flags = kConnFlagIomap | (host_is_big_endian() ? kConnFlagNet : 0);
  cd->credits = static_cast<uint16_t>(opt_.rq_size);
  cd->target_iomap_size = encode_iomap_size(opt_.iomap_size);
  cd->target_sgl = {reinterpret_cast<uint64_t>(target_sgl_), target_mem_.rkey(), kSglSize};
  cd->data_buf = {reinterpret_cast<uint64_t>(rbuf_), rbuf_rkey_, opt_.rbuf_size / 2};
}

// Takes in the peer's connection data; anything malformed fails the connection.
int Socket::save_conn_data(const uint8_t* pdata, size_t len) {
  if (len < kConnDataSize) return -EPROTO;
  ConnData cd;
  cd.decode(pdata);
  if (cd.version != kProtocolVersion) return -ENOTSUP;
  if (cd.target_sgl.length != kSglSize || cd.credits == 0 || cd.data_buf.length == 0)
    return -EPROTO;
  swap_sgl_ = ((cd.flags & kConnFlagNet) != 0) != host_is_big_endian();
  remote_sgl_ = cd.target_sgl;
  remote_sge_ = 1;
  if (cd.flags & kConnFlagIomap) {
    remote_iomap_ = {remote_sgl_.addr + sizeof(RsSge) * remote_sgl_.length, remote_sgl_.key, 0};
    remote_iomap_size_ = decode_iomap_size(cd.target_iomap_size);
  }
  remote_slots_used_.assign(remote_iomap_size_, false);
  target_[0] = cd.data_buf;
  target_[1] = {};
  target_sge_ = 0;
  sgl_slot_ = 1;
  sseq_comp_ = cd.credits;
  peer_credits_ = cd.credits;
  return 0;
}

int Socket::bind(const sockaddr* addr, socklen_t len) {
  std::lock_guard<FutexMutex> g(mu_);
  if (phase() != kInit) return -EINVAL;
  if (!addr || len < sizeof(sa_family_t)) return -EINVAL;
  if (addr->sa_family != domain_) return -EAFNOSUPPORT;
  if (::bind(fd_, addr, len) < 0) return -errno;
  set_phase(kBound);
  return 0;
}

int Socket::listen(int backlog) {
  {
    std::lock_guard<FutexMutex> g(mu_);
    if (phase() == kListening) {
      backlog_ = accept_queue_limit(backlog);
      return 0;
    }
    if (phase() != kInit && phase() != kBound) return -EINVAL;
    int rc = prov::create_listener(fd_, &listener_, backlog, off_stream_);
    if (rc) {
      // It may have bound an ephemeral port first, as listen(2) would:
      // the socket is bound now, so rbind must say so.
      if (phase() == kInit && prov::has_local_port(fd_)) set_phase(kBound);
      return rc;
    }
    accept_efd_ = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
    if (accept_efd_ < 0) return -errno;
    backlog_ = accept_queue_limit(backlog);
    set_phase(kListening);
  }
  reserve_prepare();  // its steps' closes never hand a process that ran out a number
  return ListenService::instance().add(shared_from_this());
}

int Socket::listener_fd() {
  std::lock_guard<FutexMutex> g(mu_);
  return listener_ && !has(kAcceptStarved | kAcceptFull) ? listener_->fd() : -1;
}

void Socket::note_accept_error(int err) {
  if (accept_err_) return;
  accept_err_ = err;
  uint64_t one = 1;  // a blocked raccept wakes to report it
  if (::write(accept_efd_, &one, sizeof one) < 0) SS_DEBUG("accept queue signal failed");
}

int Socket::take_accept_error() {
  if (!accept_err_) return 0;
  uint64_t v;
  if (::read(accept_efd_, &v, sizeof v) < 0) SS_DEBUG("accept queue drain failed");
  return -std::exchange(accept_err_, 0);
}

// Each complete request gets its endpoint, buffers and reply, so the
// peer's connect finishes before the application calls raccept (a single
// thread may connect to itself). The listen service's thread does this
// ahead of raccept; for a listener shared by fork, whichever process calls
// raccept or rpoll does it, one connection at a time, so each request goes
// to a process that asked (as the kernel hands a connection to one accept).
// raccept also runs it while the listener is out of descriptors.
void Socket::serve_requests(bool inline_caller) {
  for (;;) {
    // However the try ends, what the listener's probe gave from the
    // reserve is taken back (fd_spare.h), outside our locks.
    struct Settle {
      ~Settle() { reserve_again(); }
    } settle;
    std::lock_guard<std::mutex> serving(serve_mu_);
    std::unique_ptr<prov::Endpoint> ep;
    {
      std::lock_guard<FutexMutex> g(mu_);
      if (!listener_ || fork_err_ || listen_shared_ != inline_caller) return;
      // As Linux's accept queue: backlog + 1 connections made and not
      // accepted; the next wait in the provider's backlog, their connects
      // unanswered, until raccept makes room.
      set(kAcceptFull, accept_queue_.size() >= backlog_);
      if (has(kAcceptFull)) return;
      int rc = 0;
      if (starved_ep_)
        ep = std::move(starved_ep_);
      else
        rc = listener_->get_request(&ep);
      set(kAcceptStarved, rc == -EMFILE || rc == -ENFILE);
      if (has(kAcceptStarved)) note_accept_error(-rc);
      if (rc) return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    int fd = ep->descriptor_fd();
    if (fd < 0 && (fd = name_accepted(*ep, domain_)) < 0) {
      const int err = errno;
      if (err == EMFILE || err == ENFILE) {
        std::lock_guard<FutexMutex> g(mu_);
        starved_ep_ = std::move(ep);
        set(kAcceptStarved);
        note_accept_error(err);
        return;
      }
      ep->reject();
      continue;
    }
    answering_fd_ = fd;
    auto s = std::make_shared<Socket>(fd, domain_);
    {
      std::lock_guard<FutexMutex> g(mu_);
      s->inherit_from(*this);
    }
    s->ep_ = std::move(ep);
    s->made_in_ = getpid();
    size_t plen = 0;
    const uint8_t* pdata = s->ep_->peer_private_data(&plen);
    int rc = s->start_endpoint();
    const auto t1 = std::chrono::steady_clock::now();
    s->set(kAwaitPeerFirst, s->caps_ & prov::kCapActiveSpeaksFirst);
    if (!rc) rc = s->save_conn_data(pdata, plen);
    if (!rc) {
      ConnData cd;
      s->build_conn_data(&cd);
      uint8_t buf[kConnDataSize];
      cd.encode(buf);
      rc = s->ep_->accept(buf, sizeof buf);
    }
    // A peer's connect waits on this thread: a slow step is worth a line
    // (a stall here looks like a connect that never reaches raccept).
    using ms = std::chrono::milliseconds;
    const auto t2 = std::chrono::steady_clock::now();
    if (t2 - t0 > std::chrono::seconds(1))
      SS_WARN("rsocket: fd %d: answering a connection request took %lld ms (set-up %lld ms)", fd_,
              static_cast<long long>(std::chrono::duration_cast<ms>(t2 - t0).count()),
              static_cast<long long>(std::chrono::duration_cast<ms>(t1 - t0).count()));
    if (rc) {
      SS_WARN("rsocket: connection request on fd %d refused: %s", fd_, strerror(-rc));
      s->ep_->reject();
      s->free_buffers();
      answering_fd_ = -1;  // first: a child must never close a number reused meanwhile
      release_number(fd);
      reserve_free();  // what it made stays taken while the process is out
      if (rc == -EMFILE || rc == -ENFILE) {
        std::lock_guard<FutexMutex> g(mu_);
        note_accept_error(-rc);
      }
      continue;
    }
    s->set_phase(kConnecting);
    std::lock_guard<FutexMutex> g(mu_);
    answering_fd_ = -1;  // the queue's now
    accept_queue_.push_back(std::move(s));
    uint64_t one = 1;
    if (accept_efd_ >= 0 && ::write(accept_efd_, &one, sizeof one) < 0)
      SS_DEBUG("accept queue signal failed");
    if (inline_caller) return;
  }
}

bool Socket::room_again() {
  const bool was_full = has(kAcceptFull);
  set(kAcceptFull, false);
  return was_full && !listen_shared_;
}

bool Socket::take_queued(std::shared_ptr<Socket>* out) {
  if (accept_queue_.empty()) return false;
  uint64_t v;
  if (accept_efd_ >= 0 && ::read(accept_efd_, &v, sizeof v) < 0)
    SS_DEBUG("accept queue drain failed");
  *out = std::move(accept_queue_.front());
  accept_queue_.pop_front();
  return true;
}

void Socket::listener_fork_child() {
  // The parent's: handshaken before the fork, not yet raccepted. Our
  // copies go quietly; the parent's raccept still returns them.
  for (auto& s : accept_queue_) s->drop_copy();
  accept_queue_.clear();
  starved_ep_.reset();                         // the parent's to answer
  if (accept_efd_ >= 0) ::close(accept_efd_);  // the parent's counter
  accept_efd_ = -1;
  int rc = listener_ ? listener_->fork_child() : 0;
  if (rc == 1) {
    fork_part_untold_ = true;  // raccept says so (not here: a fork handler)
  } else if (rc == -ENOTSUP) {
    // Its rdma_cm id is the parent's (rsocket(7), Fork): never used nor
    // destroyed here. raccept says so, once it is asked.
    (void)listener_.release();
    fork_err_ = EOPNOTSUPP;
  } else if (rc) {
    SS_WARN("rsocket: fd %d: a fork child cannot serve this listener: %s", fd_, strerror(-rc));
    fork_err_ = -rc;
  }
}

int Socket::accept(std::shared_ptr<Socket>* out, sockaddr* addr, socklen_t* len, int flags) {
  bool refill = false;
  for (;;) {
    bool shared, starved;
    {
      std::lock_guard<FutexMutex> g(mu_);
      if (phase() != kListening) return -EINVAL;
      if (fork_err_) {
        if (fork_err_ == EOPNOTSUPP && !fork_err_told_)
          SS_WARN(
              "rsocket: fd %d: a fork child cannot accept on a verbs listener: its rdma_cm "
              "id stays with the process that made it (rsocket(7), Fork)",
              fd_);
        fork_err_told_ = true;
        return -fork_err_;
      }
      if (std::exchange(fork_part_untold_, false))
        SS_WARN(
            "rsocket: fd %d: a fork child accepts this listener's tcp and shm peers only: "
            "its verbs peers go to the process that made it (rsocket(7), Fork)",
            fd_);
      if (take_queued(out)) {
        refill = room_again();
        break;
      }
      shared = listen_shared_;
      starved = has(kAcceptStarved);
    }
    // Shared by fork: this process takes and answers a request itself; a
    // half-read one stays parked in the listener for the next call. Out of
    // descriptors: the listen thread only retries now and then, so try now,
    // as accept(2) does.
    if (shared || starved) serve_requests(shared);
    int wait_fd;
    {
      std::lock_guard<FutexMutex> g(mu_);
      if (phase() == kListening && take_queued(out)) {
        refill = room_again();
        break;
      }
      if (int rc = take_accept_error()) return rc;
      if (nonblock_) return -EAGAIN;
      wait_fd = shared ? (listener_ ? listener_->fd() : -1) : accept_efd_;
    }
    pollfd p{wait_fd, POLLIN, 0};
    int wake = static_cast<int>(settings::get(Id::kWakeUpInterval));
    if (int rc = interruptible_poll(&p, 1, wake > 0 ? wake : -1); rc < 0) return rc;
  }
  // The next connection waiting in the provider's backlog: the listen
  // thread answers it now, polling the listener again.
  if (refill) ListenService::instance().wake();
  Socket& s = **out;
  if (int rc = s.settle_accepted()) {
    s.close();
    out->reset();
    return rc;
  }
  {
    Lock lk(s.mu_);
    s.nonblock_ = (flags & SOCK_NONBLOCK) != 0;
    s.fd_flags_ = (flags & SOCK_CLOEXEC) ? FD_CLOEXEC : 0;
  }
  if (addr && len) s.getpeername(addr, len);
  // SO_KEEPALIVE came from the listener (as Linux's accept): probe it too.
  if (s.opt_.keepalive) KeepaliveService::instance().add(*out, s.keepalive_interval());
  return 0;
}

int Socket::settle_accepted() {
  Lock lk(mu_);
  // The reply is on its way; the provider may still be reading the
  // peer's announcements that follow its hello. Give it a moment (a
  // silent peer only leaves the socket connecting, it cannot block us).
  for (int i = 0; i < 200 && phase() == kConnecting; i++) {
    progress_connect(lk);
    if (phase() != kConnecting) break;
    pollfd p{ep_->event_fd(), POLLIN, 0};
    lk.unlock();
    ::poll(&p, 1, 5);
    lk.lock();
  }
  // Its set-up failed for want of a descriptor of this process's (shm
  // passes the peer's memory as descriptors): lost, and the program
  // hears EMFILE, as from accept(2) out of descriptors.
  if (failed_unread(lk) && (err_ == EMFILE || err_ == ENFILE)) return -err_;
  return 0;
}

// Queue sizes and buffers for a connection whose peer is known.
int Socket::start_endpoint() {
  prov::EndpointAttr attr{clamp_qp(opt_.sq_size), clamp_qp(opt_.rq_size), opt_.inline_size};
  int rc = ep_->setup(&attr);
  if (rc) return rc;
  // Final once setup() knows the device (verbs on iWARP adds kCapNoWriteLen);
  // read once: a virtual call the data path would pay per message.
  caps_ = ep_->caps();
  opt_.sq_size = attr.sq_size;
  opt_.rq_size = attr.rq_size;
  max_inline_ = attr.max_inline;
  opt_.inline_size = attr.max_inline;
  rc = alloc_buffers();
  if (rc) return rc;
  if (caps_ & prov::kCapRecvWr)
    for (uint32_t i = 0; i < opt_.rq_size; i++)
      if ((rc = ep_->post_recv(0)) != 0) return rc;
  return 0;
}

int Socket::connect(const sockaddr* addr, socklen_t len) {
  Lock lk(mu_);
  if (!addr || len < sizeof(sa_family_t)) return -EINVAL;
  if (phase() == kConnecting) return nonblock_ ? -EALREADY : wait_connected(lk, false);
  if (state_ & kConnected) return -EISCONN;
  if (phase() == kListening) return -EINVAL;
  if (state_ & (kConnectError | kDisconnected | kError)) return -EISCONN;
  if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) return -EAFNOSUPPORT;
  if (addr->sa_family != domain_) return -EAFNOSUPPORT;
  if ((addr->sa_family == AF_INET && len < sizeof(sockaddr_in)) ||
      (addr->sa_family == AF_INET6 && len < sizeof(sockaddr_in6)))
    return -EINVAL;
  int rc;
  {
    fork::TableGuard table;  // a fork sees the connection counted, or not made
    rc = prov::create_active({fd_, addr, len, opt_.route.empty() ? nullptr : opt_.route.data(),
                              opt_.route.size(), off_stream_},
                             &ep_);
    if (!rc) join_processes();
  }
  if (!rc) {
    made_in_ = getpid();
    // Resolution (verbs) goes on in the background; progress_connect
    // finishes the connect once the peer is found.
    rc = ep_->resolve_progress();
    set(kResolving, rc == -EAGAIN);
    if (!rc) rc = begin_connect();
    if (has(kResolving)) rc = 0;
  }
  if (rc) {
    free_buffers();
    return rc;
  }
  memcpy(&peer_addr_, addr, std::min<size_t>(len, sizeof peer_addr_));
  peer_len_ = len;
  connect_deadline_ = std::chrono::steady_clock::now() +
                      std::chrono::milliseconds(settings::get(Id::kConnectTimeout));
  set_phase(kConnecting);
  set(kReplyPending);
  rc = wait_connected(lk, nonblock_);
  // Still connecting when the caller goes: a later failure of an
  // off-stream connect falls back to kernel TCP (librspreload).
  set(kLateFallback, off_stream_ && phase() == kConnecting);
  return rc;
}

// Queue pair, buffers and the connect request, once the peer is resolved.
int Socket::begin_connect() {
  int rc = start_endpoint();
  if (rc) return rc;
  ConnData cd;
  build_conn_data(&cd);
  uint8_t buf[kConnDataSize];
  cd.encode(buf);
  return ep_->connect(buf, sizeof buf);
}

// A blocking wait ends at SO_SNDTIMEO with EINPROGRESS, as connect(2)'s.
int Socket::wait_connected(Lock& lk, bool nonblock) {
  int rc = wait_for(
      lk, nonblock, [this] { return phase() != kConnecting; }, deadline_after_us(opt_.sndtimeo_us));
  if (rc == -EAGAIN) return -EINPROGRESS;
  if (rc) return rc;
  if (state_ & kConnected) return 0;
  // Moved to kernel TCP while this call waited (fall_back_to_kernel):
  // librspreload repeats the call on the kernel socket, by the program's
  // own descriptor, which waits for the kernel's connect (SO_SNDTIMEO,
  // signals) or answers EALREADY or EISCONN as the kernel does.
  if (has(kFellBack)) return -ENOTCONN;
  int e = err_ ? err_ : ECONNREFUSED;
  err_ = 0;  // reported here rather than through SO_ERROR
  return -e;
}

int Socket::connect_sleep_ms(int ms) const {
  if (connect_deadline_ == std::chrono::steady_clock::time_point{}) return ms;
  return sleep_ms_until(connect_deadline_, ms);
}

// Drives a pending connect one step; 0 while still connecting.
int Socket::progress_connect(Lock& lk) {
  int rc = progress_connect_step(lk);
  if (has(kLateFallback) && phase() != kConnecting) {
    if (phase() == kConnectError) fall_back_to_kernel();
    set(kLateFallback, false);
  }
  return rc;
}

void Socket::fall_back_to_kernel() {
  auto& table = FdTable::instance();
  if (table.get_object(fd_, FdKind::kRsocket).get() != this) return;  // being closed
  const int rsocket_err = err_;
  prov::disconnect_stream(fd_);  // tcp's side channel may have connected it elsewhere
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&peer_addr_), peer_len_) &&
      errno != EINPROGRESS) {
    err_ = errno;  // the kernel refused as well: SO_ERROR says so
    return;
  }
  SS_DEBUG("rsocket: fd %d: no rsocket peer after all (%s): kernel TCP", fd_,
           strerror(rsocket_err));
  err_ = 0;
  set(kFellBack);
  watch_kernel_events();
  // Only while the entry is still ours: an rclose racing this (it removes
  // the entry before it waits for mu_) must not find it back.
  const int rc = table.replace(fd_, FdKind::kRsocket, FdKind::kRsocketFallback, shared_from_this());
  if (rc && rc != -ESTALE)
    SS_WARN("rsocket: fd %d: kernel TCP fallback not recorded: %s", fd_, strerror(-rc));
  // rpoll and epoll look at the kernel socket from now on. Not an event
  // of its own (changes_ stays): the look that made the switch already
  // answered from the kernel socket, and another set's member finds its
  // bits risen since it last reported.
  kick_.wake();
}

void Socket::watch_kernel_events() {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP | EPOLLET, {}};
  if (ep >= 0 && ::epoll_ctl(ep, EPOLL_CTL_ADD, fd_, &ev) == 0) {
    // The state as it is now is what the caller's look reports: not an event.
    ::epoll_wait(ep, &ev, 1, 0);
    kernel_events_ep_ = ep;
    return;
  }
  SS_WARN(
      "rsocket: fd %d: kernel events not counted (%s): EPOLLET reports level-triggered until "
      "the descriptor is the kernel's",
      fd_, strerror(errno));
  if (ep >= 0) ::close(ep);
}

int Socket::progress_connect_step(Lock&) {
  if (phase() != kConnecting) return 0;
  if (connect_deadline_ != std::chrono::steady_clock::time_point{} &&
      std::chrono::steady_clock::now() >= connect_deadline_) {
    // The peer took the transport's connection but never answered (a
    // stopped or overloaded process): as TCP's unanswered SYNs.
    SS_INFO("rsocket: fd %d: connect timed out", fd_);
    ep_->disconnect();
    err_ = ETIMEDOUT;
    set_phase(kConnectError);
    set(kResolving | kReplyPending, false);
    return 0;
  }
  if (has(kResolving)) {
    int rc = ep_->resolve_progress();
    if (rc == -EAGAIN) return 0;
    set(kResolving, false);
    if (!rc) rc = begin_connect();
    if (rc) {
      // Reported as a failed connect (rconnect's errno or SO_ERROR);
      // ENODEV: no RDMA device leads to the peer.
      err_ = -rc;
      set_phase(kConnectError);
      set(kReplyPending, false);
    }
    return 0;
  }
  prov::CmEvent ev;
  if (ep_->cm_progress(&ev) != 0) return 0;
  set(kReplyPending, false);  // whatever the outcome, completions may now be processed
  switch (ev) {
    case prov::CmEvent::kEstablished: {
      size_t plen = 0;
      const uint8_t* pdata = ep_->peer_private_data(&plen);
      // The passive side validated our data already; the active side checks the reply.
      int rc = ep_->descriptor_fd() >= 0 ? 0 : save_conn_data(pdata, plen);
      if (rc) {
        SS_WARN("rsocket: fd %d: malformed connection data from peer", fd_);
        ep_->disconnect();
        err_ = -rc == ENOTSUP ? ENOTSUP : ECONNREFUSED;
        set_phase(kConnectError);
        return 0;
      }
      finish_established();
      return 0;
    }
    case prov::CmEvent::kRejected:
      err_ = ECONNREFUSED;
      break;
    default:
      err_ = ep_->cm_error() ? ep_->cm_error() : ECONNREFUSED;
      if (err_ == EPROTO || err_ == ECONNRESET || err_ == EPIPE) err_ = ECONNREFUSED;
      break;
  }
  set_phase(kConnectError);
  return 0;
}

void Socket::finish_established() {
  set_phase(kConnectRdwr);
  // The connecting side's first message, which frees the accepting side
  // to send (kCapActiveSpeaksFirst): a credit update, due anyway.
  if ((caps_ & prov::kCapActiveSpeaksFirst) && ctrl_ready() && send_credits() == 0)
    ep_->confirm_first_message();
  SS_DEBUG("rsocket: fd %d connected over %s", fd_, ep_->provider_name());
}

void Socket::join_processes() {
  if (!ep_) return;
  if (ep_->caps() & prov::kCapForkCopies) {
    want_handover();
    fork::join(&share_);
  } else {
    fork::track(weak_from_this());
    tracked_ = true;
  }
}

void Socket::leave_processes() {
  if (std::exchange(tracked_, false)) fork::untrack(this);
  // Under mu_, as every call that reads the turn.
  std::lock_guard<FutexMutex> g(mu_);
  if (share_.is_open()) {
    if (share_.holders() > 1) {
      // Another process goes on with it: what this one moved is left.
      if (share_.holds_turn()) hand_over_locked();
    } else if (!share_.current() && !take_over_locked()) {
      // The last holder ends it; its copy must be the latest, else
      // nothing of it may reach the peer (the transport just ends).
      went_stale();
    }
  }
  set(kSharedElsewhere, !fork::leave(&share_));
}

bool Socket::leave_to_maker() {
  tracked_ = false;  // fork::resume_services_slow took it off the list
  std::unique_lock<FutexMutex> g(mu_, std::try_to_lock);
  // Locked by a thread of the parent's (none here): unusable anyway.
  if (!g.owns_lock() || !ep_) return false;
  (void)ep_.release();  // the maker's objects: never used nor destroyed here
  free_buffers();       // our copies; their registrations are let go of, not undone
  set_phase(kError);
  err_ = EOPNOTSUPP;
  set(kResolving | kReplyPending, false);
  kick_waiters();
  return true;
}

void Socket::fork_child() {
  const pid_t me = getpid();
  if (std::exchange(forked_for_, me) == me) return;  // the listen service's second call
  mu_.reset_in_fork_child();
  sending_ = receiving_ = Direction{};
  shutting_ = 0;
  kick_.fork_child();
  // A verbs endpoint is never called in a child (leave_to_maker).
  if (ep_ && (ep_->caps() & prov::kCapForkCopies)) ep_->fork_child();
  new (&serve_mu_) std::mutex();
  // Set only while a thread answers under serve_mu_, and the forking
  // thread answers none: a parent thread's request, the parent's.
  if (answering_fd_ >= 0) own_close(std::exchange(answering_fd_, -1));
}

void Socket::send_keepalive() {
  Lock lk(mu_);
  if (!(state_ & kConnected) || !ep_ || !ctrl_ready() || given_away_) return;
  // Held by several processes (after fork), it is not ours alone to speak
  // on: the last holder probes.
  if (share_.holders() > 1) return;
  // A zero-length plain write: nothing for the peer to process, but a
  // dead peer makes it fail.
  prov::SendWr wr;
  wr.op = prov::Op::kWrite;
  wr.wr_id = make_imm(kOpCtrl, kCtrlKeepalive);
  post_ctrl(wr);  // a lost transport shows in process_cq
  process_cq(lk);
}

}  // namespace ss::rs

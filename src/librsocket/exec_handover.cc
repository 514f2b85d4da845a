// A connection carried across exec (librspreload's exec hand-over,
// preload_hooks.h): the image that execs writes the connection's state,
// with mu_ kept locked so no thread of it moves the connection after;
// the new image builds the Socket back on the same descriptor, which the
// exec left open. Its buffers are new memory there: their bytes are
// copied in, and the peer's writes by the keys and addresses it was told
// before land in them (Endpoint::alias_mr). Only a quiet connection of a
// provider whose endpoint can be built back (ConnectionOps::restore: tcp,
// shm) crosses; any other is reset in the new image (exec_lost), as Linux
// would give a connection whose process died.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "core/base/log.h"
#include "core/prov/registry.h"
#include "librsocket/handover_state.h"
#include "librsocket/keepalive_service.h"

namespace ss::rs {

struct Socket::ExecHeader {
  char stamp[24];  // kStamp: the same library on both sides of the exec
  int domain;
  char provider[16];
  uint32_t sq_size, rq_size, inline_size, sbuf_size, rbuf_size, iomap_size;
  bool reuseaddr, linger, v6only, nonblock;
  int linger_s;
  sockaddr_storage peer_addr;
  socklen_t peer_len;
  uint32_t target_len;
  uint32_t wire_names;  // Socket::WireName entries that follow the header
};

namespace {
constexpr char kStamp[24] = "slipstream-exec-v2";
// The names of rbuf and the target table the peer may still write by,
// from the images before: rbuf's latest, and the target table's from the
// connection's start.
constexpr size_t kMaxWireNames = 16;

uint32_t target_bytes(uint32_t iomap_size) {
  return static_cast<uint32_t>(kSglSize * sizeof(RsSge) + iomap_size * kIomapEntrySize);
}
}  // namespace

// The state, written once the connection is quiet and its endpoint
// between frames. First what the endpoint must do with its peer (shm:
// both ends leave each other's memory); the completions that come
// meanwhile are taken in, for 2 s at most (a peer stopped in a write, an
// older peer that makes no call for that long, or a frame that never
// ends, keeps us waiting).
int Socket::exec_save(std::vector<uint8_t>* out, std::vector<int>* keep) {
  // Bounded: an exec from a signal handler whose thread holds mu_, or a
  // call that never lets go, must not hang the exec.
  Lock lk(mu_, std::defer_lock);
  for (int i = 0; !lk.try_lock(); i++) {
    if (i == 200) return -EBUSY;
    ::usleep(1000);
  }
  // Another process may hold it too (fork): the exec takes it, as a fork
  // sibling's first move does (may_move below). The spawners that close
  // their copy only once the exec went through (git daemon, subprocess
  // modules) need that; a parent that goes on using its copy finds it
  // out of date (rsocket(7), Fork).
  const prov::Descriptor* d =
      ep_ ? prov::find_provider(ep_->provider_name(), prov::Family::kConnection) : nullptr;
  if (!d || !d->connection->restore || !opt_.route.empty()) {
    SS_DEBUG("rsocket: fd %d: cannot cross exec: %s", fd_,
             ep_ ? "its provider's connections cannot" : "no connection");
    return -EOPNOTSUPP;
  }
  // The current copy of a fork-shared connection (may_move takes the
  // turn, or the state another process left).
  if (!may_move()) {
    SS_DEBUG("rsocket: fd %d: cannot cross exec: another process moved it on", fd_);
    return -EOPNOTSUPP;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    const int rc = ep_->prepare_exec();
    process_cq(lk);
    if (rc == 0 && quiet_locked() && exec_state(out, keep)) {
      lk.release();  // mu_ stays locked: the image goes with it
      return 0;
    }
    // Another thread's call, or riomap's mappings, cannot end while this
    // holds mu_: waiting for them would only cost the 2 s.
    const bool held = sending_.busy || receiving_.busy || !iomaps_.empty() || !peer_iomaps_.empty();
    if ((rc && rc != -EAGAIN) || !ep_ || held || std::chrono::steady_clock::now() > until) {
      SS_DEBUG(
          "rsocket: fd %d: cannot cross exec: %s (state %#x, sends %s, %s)", fd_,
          rc && rc != -EAGAIN ? strerror(-rc) : "never quiet", state_,
          sends_drained() ? "done" : "under way",
          has(kReplyPending) || sending_.busy || receiving_.busy ? "a call under way" : "no call");
      return -EOPNOTSUPP;
    }
    pollfd p{ep_->event_fd(), ep_->event_mask(), 0};
    ::poll(&p, 1, 1);
  }
}

// The options and flags that cross beside the engine's state (which
// carries the rest: engine_fields), the same list both ways.
void Socket::exec_fields(ExecHeader* h, bool save) {
  field(save, opt_.sq_size, h->sq_size);
  field(save, opt_.rq_size, h->rq_size);
  field(save, opt_.inline_size, h->inline_size);
  field(save, opt_.sbuf_size, h->sbuf_size);
  field(save, opt_.rbuf_size, h->rbuf_size);
  field(save, opt_.iomap_size, h->iomap_size);
  field(save, opt_.reuseaddr, h->reuseaddr);
  field(save, opt_.linger, h->linger);
  field(save, opt_.v6only, h->v6only);
  field(save, opt_.linger_s, h->linger_s);
  field(save, nonblock_, h->nonblock);
  field(save, peer_addr_, h->peer_addr);
  field(save, peer_len_, h->peer_len);
}

bool Socket::exec_state(std::vector<uint8_t>* out, std::vector<int>* keep) {
  ExecHeader h{};
  memcpy(h.stamp, kStamp, sizeof kStamp);
  h.domain = domain_;
  snprintf(h.provider, sizeof h.provider, "%s", ep_->provider_name());
  exec_fields(&h, true);
  h.target_len = target_bytes(opt_.iomap_size);
  // Every name the peer may write by: this image's and those it was told
  // by the images before.
  std::vector<WireName> names = wire_names_;
  names.push_back({false, rbuf_rkey_, reinterpret_cast<uint64_t>(rbuf_)});
  // The target table's name is the one the peer got at the connection's
  // start (build_conn_data): only the first image's, kept for good.
  const bool first_image =
      std::none_of(names.begin(), names.end(), [](const WireName& n) { return n.target; });
  if (first_image)
    names.push_back({true, target_mem_.rkey(), reinterpret_cast<uint64_t>(target_sgl_)});
  // The oldest rbuf names go (the peer holds two grants at most).
  for (auto it = names.begin(); names.size() > kMaxWireNames && it != names.end();)
    it = it->target ? it + 1 : names.erase(it);
  h.wire_names = static_cast<uint32_t>(names.size());
  try {
    out->clear();
    keep->clear();
    put_pod(out, h);
    for (const WireName& n : names) put_pod(out, n);
    out->insert(out->end(), rbuf_, rbuf_ + opt_.rbuf_size);
    const auto* target = reinterpret_cast<const uint8_t*>(target_sgl_);
    out->insert(out->end(), target, target + h.target_len);
    put_engine(out);
    return ep_->save_for_exec(out, keep);
  } catch (const std::bad_alloc&) {
    return false;
  }
}

void Socket::exec_abandon() { mu_.unlock(); }

int Socket::exec_restore(const uint8_t* in, size_t len, const prov::Renumber& renumber) {
  PodReader r(in, len);
  ExecHeader h{};
  if (!r.get(&h) || memcmp(h.stamp, kStamp, sizeof kStamp) != 0 || h.domain != domain_ ||
      h.target_len != target_bytes(h.iomap_size) || h.wire_names > kMaxWireNames)
    return -EPROTO;
  std::vector<WireName> names(h.wire_names);
  for (WireName& n : names)
    if (!r.get(&n)) return -EPROTO;
  const uint8_t* rbuf = r.take(h.rbuf_size);
  const uint8_t* target = r.take(h.target_len);
  EngineState st{};
  std::vector<uint32_t> lens;
  if (!rbuf || !target || !get_engine(&r, &st, &lens)) return -EPROTO;
  size_t ep_len = 0;
  const uint8_t* ep_state = r.rest(&ep_len);
  Lock lk(mu_);
  wire_names_ = std::move(names);
  return exec_rebuild(h, rbuf, target, &st, lens, ep_state, ep_len, renumber);
}

int Socket::exec_rebuild(ExecHeader& h, const uint8_t* rbuf, const uint8_t* target, EngineState* st,
                         const std::vector<uint32_t>& lens, const uint8_t* ep_state, size_t ep_len,
                         const prov::Renumber& renumber) {
  uint32_t last_key = 0;
  for (const WireName& n : wire_names_) last_key = std::max(last_key, n.key);
  char provider[sizeof h.provider];
  memcpy(provider, h.provider, sizeof provider);
  provider[sizeof provider - 1] = '\0';
  const prov::Descriptor* d = prov::find_provider(provider, prov::Family::kConnection);
  if (!d || !d->connection->restore) return -EPROTO;
  if (int rc = d->connection->restore(fd_, ep_state, ep_len, renumber, &ep_)) return rc;
  exec_fields(&h, false);
  prov::EndpointAttr attr{opt_.sq_size, opt_.rq_size, opt_.inline_size};
  int rc = ep_->setup(&attr);
  if (!rc) rc = ep_->reserve_keys(last_key);
  if (!rc) rc = alloc_buffers();
  // Sizes the engine's positions were taken against: they must not change.
  if (!rc &&
      (attr.sq_size != h.sq_size || attr.rq_size != h.rq_size || opt_.rbuf_size != h.rbuf_size))
    rc = -EPROTO;
  if (rc) {
    free_buffers();
    return rc;
  }
  caps_ = ep_->caps();
  memcpy(rbuf_, rbuf, h.rbuf_size);
  memcpy(target_sgl_, target, h.target_len);
  // The peer writes by what it was told before.
  auto alias = [&](void* at, uint32_t len, const ConnBuffer& b, uint32_t key, uint64_t addr) {
    prov::MemoryRegion now;
    now.addr = at;
    now.length = len;
    now.lkey = b.lkey();
    now.rkey = b.rkey();
    return ep_->alias_mr(now, key, addr, len);
  };
  for (const WireName& n : wire_names_) {
    if (rc) break;
    rc = n.target ? alias(target_sgl_, h.target_len, target_mem_, n.key, n.addr)
                  : alias(rbuf_, h.rbuf_size, rbuf_mem_, n.key, n.addr);
  }
  if (rc) {
    free_buffers();
    return rc;
  }
  apply_engine(st, lens);
  made_in_ = getpid();
  join_processes();
  if (opt_.keepalive) KeepaliveService::instance().add(shared_from_this(), keepalive_interval());
  SS_DEBUG("rsocket: fd %d: built back over %s", fd_, ep_->provider_name());
  return 0;
}

bool Socket::exec_aside(std::chrono::steady_clock::time_point until) {
  for (;;) {
    {
      std::lock_guard<FutexMutex> g(mu_);
      if (!share_.is_open() || share_.holders() <= 1 || share_.holds_turn()) return false;
      if (std::chrono::steady_clock::now() > until) {
        share_.remove_holder();
        return true;
      }
    }
    ::usleep(1000);
  }
}

void Socket::exec_unaside() {
  std::lock_guard<FutexMutex> g(mu_);
  share_.add_holder();
}

void Socket::exec_aside_lost(const sockaddr* name, socklen_t len) {
  exec_lost(name, len);
  std::lock_guard<FutexMutex> g(mu_);
  set(kSharedElsewhere);
}

void Socket::exec_give_away() {
  given_state_ = state_;
  given_err_ = err_;
  given_away_ = true;
  set(kStale);
  set_phase(kError);
  err_ = ECONNRESET;
  kick_waiters();
  mu_.unlock();  // exec_save's
  // Its probes are the new holder's. Outside mu_: the service's thread
  // takes it (service_thread.h), and the last user's remove joins it.
  KeepaliveService::instance().remove(this);
}

void Socket::exec_take_back() {
  {
    std::lock_guard<FutexMutex> g(mu_);
    state_ = given_state_;
    err_ = given_err_;
    given_away_ = false;
    kick_waiters();
  }
  if (opt_.keepalive) KeepaliveService::instance().add(shared_from_this(), keepalive_interval());
}

int Socket::stream_fd() {
  std::lock_guard<FutexMutex> g(mu_);
  return ep_ ? ep_->stream_fd() : -1;
}

void Socket::exec_lost(const sockaddr* name, socklen_t len) {
  Lock lk(mu_);
  if (name && len <= sizeof exec_name_) {
    memcpy(&exec_name_, name, len);
    exec_name_len_ = len;
  }
  set_phase(kError);
  err_ = ECONNRESET;
  set(kExecLost);
  kick_waiters();
}

}  // namespace ss::rs

#include "core/prov/verbs/verbs_endpoint.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <cstring>

#include "core/base/log.h"
#include "core/base/own_fd.h"
#include "core/prov/verbs/cm_events.h"
#include "core/prov/verbs/cm_reaper.h"
#include "core/res/verbs_manager.h"

namespace ss::prov::verbs {

namespace {
// Receives are tagged so their completions are known even when flushed
// (a failed completion carries no valid opcode).
constexpr uint64_t kRecvTag = 1ull << 63;
constexpr int kResolveMs = 2000;
constexpr int kResolveTries = 3;  // on ETIMEDOUT, as upstream
// Control messages (16-byte SGL updates) are always posted inline.
constexpr uint32_t kMinQpInline = 16;
constexpr uint32_t kQpMaxSize = 0xFFFE;
constexpr uint32_t kCtrlSpares = 4;  // shutdown, disconnect and slack
constexpr uint32_t kMinQueue = 16;
// A live peer answers the delivery fence within a round trip; a silent
// one must not hold up close for long.
constexpr int kFenceMs = 1000;
// Soft-iWARP's vendor id (ASCII "bmt"): its read responses need care (MsgSend::post_fence).
constexpr uint32_t kSiwVendorId = 0x626d74;

// A post's result as -errno. libibverbs returns a positive errno, some
// providers a negative one, and some -1 with nothing more (which would
// read as EPERM): that is an I/O error.
int post_errno(int rc) {
  if (rc == 0) return 0;
  if (rc == -1) return -EIO;
  return -std::abs(rc);
}

socklen_t addr_len(const sockaddr* a) {
  return a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

bool is_bound(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    return in->sin_port != 0 || in->sin_addr.s_addr != htonl(INADDR_ANY);
  }
  if (ss.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    return in6->sin6_port != 0 || !IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
  }
  return false;
}

int copy_name(const sockaddr* a, sockaddr_storage* out, socklen_t* len) {
  if (!a || (a->sa_family != AF_INET && a->sa_family != AF_INET6)) return -ENOTCONN;
  *len = addr_len(a);
  memcpy(out, a, *len);
  return 0;
}

}  // namespace

int VerbsEndpoint::open_channel() {
  ch_ = rdma_create_event_channel();
  if (!ch_) return errno == ENOENT || errno == ENODEV || !errno ? -ENODEV : -errno;
  if (int rc = set_nonblocking(ch_->fd)) return rc;
  // One fd to wait on: CM events now, completions once setup() adds its channel.
  if ((epfd_ = own_epoll()) < 0) return -errno;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = ch_->fd;
  return epoll_ctl(epfd_, EPOLL_CTL_ADD, ch_->fd, &ev) ? -errno : 0;
}

int VerbsEndpoint::make_active(int sock, const sockaddr* dst, socklen_t len, const void* route,
                               size_t route_len, bool off_stream, std::unique_ptr<Endpoint>* out) {
  if (int n = res::device_count(); n <= 0) return n < 0 ? n : -ENODEV;
  if (len > sizeof(sockaddr_storage)) return -EINVAL;
  std::unique_ptr<VerbsEndpoint> ep(new (std::nothrow) VerbsEndpoint);
  if (!ep) return -ENOMEM;
  int rc = ep->open_channel();
  if (rc) return rc;
  if (rdma_create_id(ep->ch_, &ep->id_, ep.get(), RDMA_PS_TCP)) return -errno;
  socklen_t local_len = sizeof ep->src_;
  ep->has_src_ = ::getsockname(sock, reinterpret_cast<sockaddr*>(&ep->src_), &local_len) == 0 &&
                 is_bound(ep->src_);
  ep->off_stream_ = off_stream;
  if (ep->has_src_ && !off_stream && res::any_iwarp_device()) {
    // An iWARP device binds its own kernel TCP socket (SO_REUSEADDR) to the
    // source address and port: the rsocket's socket must share it.
    int on = 1;
    if (setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on)) return -errno;
  }
  memcpy(&ep->dst_, dst, len);
  if (route)
    ep->route_.assign(static_cast<const uint8_t*>(route),
                      static_cast<const uint8_t*>(route) + route_len);
  ep->phase_ = Phase::kAddr;
  if ((rc = ep->start_resolve_step())) return rc;
  *out = std::move(ep);
  return 0;
}

int VerbsEndpoint::start_resolve_step() {
  int rc = phase_ == Phase::kAddr
               ? rdma_resolve_addr(id_, has_src_ ? reinterpret_cast<sockaddr*>(&src_) : nullptr,
                                   reinterpret_cast<sockaddr*>(&dst_), kResolveMs)
               : rdma_resolve_route(id_, kResolveMs);
  return rc ? -errno : 0;
}

int VerbsEndpoint::on_resolve_event(const rdma_cm_event* e) {
  switch (e->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (phase_ != Phase::kAddr) return 0;
      if (!id_->verbs) return -ENODEV;
      if (off_stream_ && id_->verbs->device->transport_type == IBV_TRANSPORT_IWARP) {
        SS_DEBUG("verbs: %s is iWARP: its connect would be a TCP connection to the port",
                 ibv_get_device_name(id_->verbs->device));
        return -ENOTSUP;
      }
      resolve_tries_ = 0;
      if (!route_.empty()) {
        // Path records given with RDMA_ROUTE replace route resolution.
        if (rdma_set_option(id_, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, route_.data(), route_.size()))
          return -errno;
        phase_ = Phase::kReady;
        return 0;
      }
      phase_ = Phase::kRoute;
      return start_resolve_step();
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
      if (phase_ == Phase::kRoute) phase_ = Phase::kReady;
      return 0;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR: {
      int err = cm_event_errno(e);
      // Resolution packets may be lost: retry a timed-out step, as upstream.
      if (err == ETIMEDOUT && ++resolve_tries_ < kResolveTries) return start_resolve_step();
      return err == EADDRNOTAVAIL || err == ENODEV ? -ENODEV : -err;
    }
    default:
      return 0;
  }
}

int VerbsEndpoint::resolve_progress() {
  std::lock_guard<std::mutex> lk(mu_);
  rdma_cm_event* e = nullptr;
  while (phase_ != Phase::kReady && !resolve_err_ && rdma_get_cm_event(ch_, &e) == 0) {
    int rc = on_resolve_event(e);
    rdma_ack_cm_event(e);
    if (rc) resolve_err_ = -rc;
  }
  if (resolve_err_) return -resolve_err_;
  return phase_ == Phase::kReady ? 0 : -EAGAIN;
}

std::unique_ptr<Endpoint> VerbsEndpoint::make_passive(rdma_cm_id* id, const void* pdata, size_t len,
                                                      uint8_t peer_ird) {
  std::unique_ptr<VerbsEndpoint> ep(new (std::nothrow) VerbsEndpoint);
  if (!ep || ep->open_channel() != 0 || rdma_migrate_id(id, ep->ch_) != 0) {
    const int err = ep ? errno : ENOMEM;
    SS_WARN("verbs: cannot take a connection request: %s", strerror(err));
    rdma_destroy_id(id);
    errno = err;  // the listener tells a shortage apart
    return nullptr;
  }
  ep->id_ = id;
  ep->passive_ = true;
  ep->peer_ird_ = peer_ird;
  id->context = ep.get();
  ep->peer_len_ = std::min(len, sizeof ep->peer_pdata_);
  if (pdata) memcpy(ep->peer_pdata_, pdata, ep->peer_len_);
  return ep;
}

VerbsEndpoint::~VerbsEndpoint() {
  const CmObjects objs{id_, qp_, cq_, comp_, ch_};
  if (id_ && reply_awaited_) {
    // No placement into our buffers while the objects wait for the
    // connect's reply (the program frees the buffers meanwhile).
    if (qp_) {
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_ERR;
      ibv_modify_qp(id_->qp, &a, IBV_QP_STATE);
    }
    for (HeldMr& h : mrs_) res::mr_cache().release(h.entry);
    destroy_cm_objects_later(objs);  // the wait is not the closing caller's
  } else {
    destroy_cm_objects(objs);
    for (HeldMr& h : mrs_) res::mr_cache().release(h.entry);
  }
  if (epfd_ >= 0) ::close(epfd_);
  if (holds_async_) res::release_async_events();
}

uint32_t VerbsEndpoint::caps() const {
  return kCapWrite | kCapWriteImm | kCapInline | kCapRoute | kCapRecvWr | kCapAsyncPlace |
         (msg_send_ ? uint32_t{kCapNoWriteLen | kCapActiveSpeaksFirst} : 0u);
}

int VerbsEndpoint::setup(EndpointAttr* attr) {
  if (phase_ != Phase::kReady) return -EINVAL;
  ibv_context* ctx = id_->verbs;
  if (!ctx) return -ENODEV;
  if (!(pd_ = res::pd_for(ctx))) return -errno;
  ibv_device_attr dev{};
  if (int e = ibv_query_device(ctx, &dev)) return -e;
  const uint32_t max_wr = std::min<uint32_t>(static_cast<uint32_t>(dev.max_qp_wr), kQpMaxSize);
  const bool iwarp = ctx->device->transport_type == IBV_TRANSPORT_IWARP;
  // On iWARP a message takes two send WQEs; the engine counts messages.
  const uint32_t wqes_per_msg = iwarp ? 2 : 1;
  // The fence and its nudges (MsgSend) come on top of the messages.
  const uint32_t extra_wrs = iwarp ? MsgSend::kExtraSendWrs : 0;
  const uint32_t sq_max = max_wr > extra_wrs ? (max_wr - extra_wrs) / wqes_per_msg : 0;
  if (sq_max < kMinQueue) return -ENOTSUP;
  attr->sq_size = std::clamp<uint32_t>(attr->sq_size, kMinQueue, sq_max);
  // iWARP has no RNR retry: a send that finds no receive breaks the
  // connection. Control messages take no credit, so beyond the rq_size
  // receives the peer gets credits for, spares wait for them (one control
  // message per data message at most, plus shutdown and disconnect).
  const uint32_t rq_max = iwarp ? (max_wr - kCtrlSpares) / 2 : max_wr;
  if (rq_max < kMinQueue) return -ENOTSUP;
  attr->rq_size = std::clamp<uint32_t>(attr->rq_size, kMinQueue, rq_max);
  const uint32_t spare_recvs = iwarp ? attr->rq_size + kCtrlSpares : 0;

  if (!(comp_ = ibv_create_comp_channel(ctx))) return -errno;
  if (int rc = set_nonblocking(comp_->fd)) return rc;
  const uint32_t recvs = attr->rq_size + spare_recvs;
  const int cqe = static_cast<int>(attr->sq_size * wqes_per_msg + extra_wrs + recvs);
  if (!(cq_ = ibv_create_cq(ctx, std::min(cqe, dev.max_cqe), this, comp_, 0))) return -errno;

  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq_;
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 1;
  qa.cap.max_send_wr = attr->sq_size * wqes_per_msg + extra_wrs;
  qa.cap.max_recv_wr = recvs;
  qa.cap.max_send_sge = 2;
  qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = std::max(attr->max_inline, kMinQpInline);
  if (rdma_create_qp(id_, pd_, &qa)) return -errno;
  qp_ = true;
  qp_inline_ = qa.cap.max_inline_data;
  if (iwarp) {
    // The 4-byte message goes inline (upstream refuses a device that can't).
    if (qp_inline_ < sizeof(uint32_t)) return -ENOTSUP;
    msg_send_ = std::make_unique<MsgSend>();
    if (int rc = msg_send_->init(pd_, recvs, dev.vendor_id == kSiwVendorId)) return rc;
    // The engine keeps its rq_size posted (one again per completion); the
    // spares are posted once here and replaced the same way.
    for (uint32_t i = 0; i < spare_recvs; i++)
      if (int rc = msg_send_->post_recv(id_->qp, kRecvTag)) return post_errno(rc);
  }
  // The engine puts user data inline up to what the application asked for.
  attr->max_inline = std::min(attr->max_inline, qp_inline_);

  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = comp_->fd;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, comp_->fd, &ev)) return -errno;
  res::hold_async_events(ctx);
  holds_async_ = true;
  return 0;
}

int VerbsEndpoint::reg_mr(void* addr, size_t len, int access, MemoryRegion* mr) {
  if (!pd_) return -EINVAL;
  int flags = IBV_ACCESS_LOCAL_WRITE | (access & kAccessRemoteWrite ? IBV_ACCESS_REMOTE_WRITE : 0);
  res::MrCache::Entry* e = nullptr;
  int rc = res::mr_cache().acquire(pd_, addr, len, flags, &e);
  if (rc) return rc;
  *mr = {addr, len, e->mr->lkey, e->mr->rkey};
  std::lock_guard<std::mutex> lk(mr_mu_);
  mrs_.push_back({*mr, e});
  return 0;
}

void VerbsEndpoint::dereg_mr(MemoryRegion* mr) {
  res::MrCache::Entry* e = nullptr;
  {
    std::lock_guard<std::mutex> lk(mr_mu_);
    auto it = std::find_if(mrs_.begin(), mrs_.end(), [&](const HeldMr& h) {
      return h.mr.addr == mr->addr && h.mr.length == mr->length && h.mr.lkey == mr->lkey;
    });
    if (it == mrs_.end()) return;
    e = it->entry;
    mrs_.erase(it);
  }
  res::mr_cache().release(e);
  *mr = {};
}

int VerbsEndpoint::conn_param(const void* pdata, size_t len, rdma_conn_param* p) {
  if (len > kMaxPrivateData) return -EINVAL;
  *p = {};
  p->private_data = pdata;
  p->private_data_len = static_cast<uint8_t>(len);
  // iWARP connections start with an RDMA read (MPA's ready-to-receive):
  // the active side may issue one, the passive side answers one, as
  // upstream's connect and its accept (which mirrors the request) do.
  // Beyond upstream, each side answers one read and issues one when the
  // peer answers: the delivery fence at disconnect (a stock active peer
  // answers none, so our passive side then closes without it).
  p->responder_resources = msg_send_ ? 1 : 0;
  p->initiator_depth = msg_send_ && (!passive_ || peer_ird_ > 0) ? 1 : 0;
  can_fence_ = p->initiator_depth > 0;
  p->flow_control = 1;
  p->retry_count = 7;
  // Control messages take no credit and may meet an empty receive queue:
  // the protocol relies on infinite RNR retry.
  p->rnr_retry_count = 7;
  return 0;
}

int VerbsEndpoint::connect(const void* pdata, size_t len) {
  rdma_conn_param p;
  if (int rc = conn_param(pdata, len, &p)) return rc;
  if (rdma_connect(id_, &p)) return -errno;
  std::lock_guard<std::mutex> lk(mu_);
  reply_awaited_ = msg_send_ != nullptr;  // iWARP
  return 0;
}

int VerbsEndpoint::accept(const void* pdata, size_t len) {
  rdma_conn_param p;
  if (int rc = conn_param(pdata, len, &p)) return rc;
  return rdma_accept(id_, &p) ? -errno : 0;
}

int VerbsEndpoint::reject() { return rdma_reject(id_, nullptr, 0) ? -errno : 0; }

void VerbsEndpoint::save_private_data(const rdma_cm_event* ev) {
  const auto& c = ev->param.conn;
  peer_len_ = std::min<size_t>(c.private_data_len, sizeof peer_pdata_);
  if (c.private_data && peer_len_)
    memcpy(peer_pdata_, c.private_data, peer_len_);
  else
    peer_len_ = 0;
}

const uint8_t* VerbsEndpoint::peer_private_data(size_t* len) const {
  *len = peer_len_;
  return peer_pdata_;
}

CmEvent VerbsEndpoint::on_cm_event_locked(const rdma_cm_event* e) {
  if (e->event == RDMA_CM_EVENT_ESTABLISHED || e->event == RDMA_CM_EVENT_REJECTED ||
      e->event == RDMA_CM_EVENT_CONNECT_ERROR || e->event == RDMA_CM_EVENT_UNREACHABLE)
    reply_awaited_ = false;  // the connect has its answer
  switch (e->event) {
    case RDMA_CM_EVENT_ESTABLISHED:
      // The passive side got the peer's data with the request.
      if (!passive_) save_private_data(e);
      established_ = true;
      // iWARP reports the negotiated ORD here (the kernel's iw_cm puts
      // it in responder_resources): no reads of ours, no fence.
      if (e->param.conn.responder_resources == 0) can_fence_ = false;
      return CmEvent::kEstablished;
    case RDMA_CM_EVENT_REJECTED:
      cm_err_ = ECONNREFUSED;
      return CmEvent::kRejected;
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      if (held_event_ == CmEvent::kNone) {
        cm_err_ = cm_event_errno(e);
        held_event_ = CmEvent::kError;
      }
      return CmEvent::kNone;
    case RDMA_CM_EVENT_DISCONNECTED:
      // Completes the exchange (and flushes our queue pair).
      rdma_disconnect(id_);
      disconnected_ = true;
      if (held_event_ == CmEvent::kNone) held_event_ = CmEvent::kDisconnected;
      return CmEvent::kNone;
    default:  // TIMEWAIT_EXIT, ADDR_CHANGE...: nothing for the engine
      return CmEvent::kNone;
  }
}

int VerbsEndpoint::cm_progress(CmEvent* ev) {
  std::lock_guard<std::mutex> lk(mu_);
  *ev = CmEvent::kNone;
  // Every event is read and acknowledged, even after a loss is held: one
  // left in the channel would keep event_fd() readable for ever.
  rdma_cm_event* e = nullptr;
  while (rdma_get_cm_event(ch_, &e) == 0) {
    const CmEvent now = on_cm_event_locked(e);
    rdma_ack_cm_event(e);
    if (now != CmEvent::kNone) {
      *ev = now;
      return 0;
    }
  }
  if (held_event_ == CmEvent::kNone) return -EAGAIN;
  // What arrived before the connection went away is delivered first.
  if (cq_ && (stashed_.load(std::memory_order_relaxed) || poll_into_stash_locked())) return -EAGAIN;
  *ev = held_event_;
  return 0;
}

void VerbsEndpoint::disconnect() {
  std::lock_guard<std::mutex> lk(mu_);
  if (disconnected_) return;
  if (reply_awaited_) {
    // A connect given up before its reply (connect_timeout, rshutdown):
    // nothing to flush, and iWARP would block here until the reply.
    disconnected_ = true;
    return;
  }
  if (can_fence_ && established_) fence_delivery_locked();
  if (disconnected_) return;  // the peer's disconnect came during the fence
  disconnected_ = true;
  rdma_disconnect(id_);  // moves the QP to error: posted work is flushed
}

bool VerbsEndpoint::connection_live_locked() {
  rdma_cm_event* e = nullptr;
  while (held_event_ == CmEvent::kNone && rdma_get_cm_event(ch_, &e) == 0) {
    on_cm_event_locked(e);
    rdma_ack_cm_event(e);
  }
  // (The QP's state would say more, but siw's query leaves it out.)
  return held_event_ == CmEvent::kNone;
}

// Why: siw stops reading its TCP socket when the QP leaves RTS and then
// closes it; bytes the peer sent meanwhile (credit updates) make that
// close a reset, which drops whatever our socket had not yet transmitted,
// though every send had completed. Waiting for a read's answer first
// means the peer holds all our messages before the reset can happen.
void VerbsEndpoint::fence_delivery_locked() {
  if (!connection_live_locked()) return;
  if (await_fence_locked(false)) SS_DEBUG("verbs: delivery fence answered");
}

// Why: siw's accept sends the MPA reply before it hands its TCP socket
// to the queue pair; bytes that arrive in between stay unread in the
// socket until more bytes arrive. Ours as the connecting side speaks
// first, so its first message can be stranded there (the peer would wait
// for ever for data we sent). The fence's answer shows the peer took it;
// until then zero-length writes bring it more bytes.
void VerbsEndpoint::confirm_first_message() {
  std::lock_guard<std::mutex> lk(mu_);
  if (passive_ || !can_fence_ || !established_) return;
  if (await_fence_locked(true)) SS_DEBUG("verbs: the peer took our first message");
}

bool VerbsEndpoint::await_fence_locked(bool nudge) {
  if (int rc = msg_send_->post_fence(id_->qp)) {
    SS_DEBUG("verbs: delivery fence not posted: %s", strerror(rc));
    return false;
  }
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(kFenceMs);
  // Nudges after 1, 2, 4... ms: a peer that took the read answers within
  // a round trip, and one whose socket sits unread needs only one.
  uint32_t nudges = 0;
  auto next_nudge = clock::now() + std::chrono::milliseconds(1);
  ibv_wc raw[16];
  while (clock::now() < deadline) {
    const int n = ibv_poll_cq(cq_, 16, raw);
    if (n < 0) break;
    const ibv_wc* fence = nullptr;
    for (int i = 0; i < n; i++) {
      Completion c;
      if (raw[i].wr_id == MsgSend::kFenceTag)
        fence = &raw[i];
      else if (translate(raw[i], &c))
        stash_.push_back(c);
    }
    stashed_.store(static_cast<int>(stash_.size()), std::memory_order_release);
    // A failed read (flushed, or refused by the peer) will not be answered:
    // stop waiting for it.
    if (fence) {
      if (nudges) SS_DEBUG("verbs: the fence completed after %u nudges", nudges);
      return fence->status == IBV_WC_SUCCESS;
    }
    if (n > 0) continue;
    // A peer that closed first answers no read: stop at its disconnect.
    if (!connection_live_locked()) return false;
    if (nudge && nudges < MsgSend::kMaxNudges && clock::now() >= next_nudge) {
      if (msg_send_->post_nudge(id_->qp)) return false;
      next_nudge = clock::now() + std::chrono::milliseconds(2 << nudges);
      nudges++;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  SS_DEBUG("verbs: delivery fence unanswered after %d ms (%u nudges)", kFenceMs, nudges);
  return false;
}

int VerbsEndpoint::post_send(const SendWr& wr) {
  ibv_sge sge[2];
  uint32_t total = 0;
  for (int i = 0; i < wr.num_sge; i++) {
    sge[i] = {wr.sge[i].addr, wr.sge[i].length, wr.sge[i].lkey};
    total += wr.sge[i].length;
  }
  ibv_send_wr sw{};
  sw.wr_id = wr.wr_id;
  sw.sg_list = sge;
  sw.num_sge = wr.num_sge;
  if (wr.op == Op::kWriteImm) {
    sw.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    sw.imm_data = htobe32(wr.imm);
  } else {
    sw.opcode = IBV_WR_RDMA_WRITE;
  }
  sw.wr.rdma.remote_addr = wr.remote_addr;
  sw.wr.rdma.rkey = wr.rkey;
  if (wr.inline_data) {
    if (total > qp_inline_) return -EINVAL;
    sw.send_flags = IBV_SEND_INLINE;
  }
  int rc;
  if (msg_send_ && wr.op == Op::kWriteImm) {
    sw.opcode = IBV_WR_RDMA_WRITE;
    rc = msg_send_->post(id_->qp, &sw, wr.wr_id, wr.imm);
  } else {
    ibv_send_wr* bad = nullptr;
    rc = ibv_post_send(id_->qp, &sw, &bad);
  }
  return post_errno(rc);  // never positive: that would read as kPostDone
}

int VerbsEndpoint::post_recv(uint64_t wr_id) {
  if (msg_send_) {
    return post_errno(msg_send_->post_recv(id_->qp, wr_id | kRecvTag));
  }
  ibv_recv_wr rw{};
  rw.wr_id = wr_id | kRecvTag;
  rw.num_sge = 0;  // every notification is immediate data
  ibv_recv_wr* bad = nullptr;
  return post_errno(ibv_post_recv(id_->qp, &rw, &bad));
}

namespace {
int wc_errno(const ibv_wc& wc) {
  switch (wc.status) {
    case IBV_WC_SUCCESS:
      return 0;
    case IBV_WC_WR_FLUSH_ERR:
      return ECONNRESET;
    default:
      return EIO;
  }
}

// A work request the device failed (not flushed): the connection ends
// here, and the status is the only account of why.
void warn_failed(const ibv_wc& wc, const char* what) {
  if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR)
    SS_WARN("verbs: %s failed: %s (vendor error 0x%x)", what, ibv_wc_status_str(wc.status),
            wc.vendor_err);
}
}  // namespace

// The engine fails the connection on a receive that completes in error.
void VerbsEndpoint::fail_protocol(const char* why, Completion* out) {
  SS_WARN("verbs: peer %s", why);
  out->status = EPROTO;
}

bool VerbsEndpoint::translate(const ibv_wc& in, Completion* out) {
  if (msg_send_) return translate_msg_send(in, out);
  out->wr_id = in.wr_id & ~kRecvTag;
  out->op = (in.wr_id & kRecvTag) ? WcOp::kRecvImm : WcOp::kSend;
  out->imm = (in.wc_flags & IBV_WC_WITH_IMM) ? be32toh(in.imm_data) : 0;
  out->byte_len = in.byte_len;
  out->status = wc_errno(in);
  warn_failed(in, out->op == WcOp::kRecvImm ? "a receive" : "a send");
  // A plain SEND (e.g. an iWARP peer's message) is not this protocol.
  if (out->op == WcOp::kRecvImm && !out->status && !(in.wc_flags & IBV_WC_WITH_IMM))
    fail_protocol("sent a message without immediate data", out);
  return true;
}

bool VerbsEndpoint::translate_msg_send(const ibv_wc& in, Completion* out) {
  out->status = wc_errno(in);
  if (in.wr_id & kRecvTag) {
    warn_failed(in, "a receive");
    out->wr_id = MsgSend::recv_wr_id(in.wr_id) & ~kRecvTag;
    out->op = WcOp::kRecvImm;
    out->imm = 0;
    out->byte_len = 0;  // the write's length is not known here (kCapNoWriteLen)
    if (!out->status && !msg_send_->message(in, &out->imm))
      fail_protocol("sent something other than a 4-byte message", out);
    return true;
  }
  // A fence answered after its wait ended; a nudge.
  if (in.wr_id == MsgSend::kFenceTag || in.wr_id == MsgSend::kNudgeTag) return false;
  warn_failed(in, in.wr_id & MsgSend::kWriteHalfTag ? "a write" : "a send");
  if (in.wr_id & MsgSend::kWriteHalfTag) {
    // The message completes with its send; a failed write is reported
    // there (the send behind it is flushed).
    if (out->status && !write_half_err_) write_half_err_ = out->status;
    return false;
  }
  out->wr_id = in.wr_id;
  out->op = WcOp::kSend;
  out->imm = 0;
  out->byte_len = in.byte_len;
  if (out->status && write_half_err_) out->status = write_half_err_;
  return true;
}

int VerbsEndpoint::poll_device(Completion* wc, int max) {
  ibv_wc raw[32];
  int kept = 0;
  // Hidden completions (iWARP write halves) must not end the poll early.
  while (kept < max) {
    const int want = std::min(max - kept, 32);
    int n = ibv_poll_cq(cq_, want, raw);
    if (n < 0) return kept ? kept : -EIO;
    for (int i = 0; i < n; i++) kept += translate(raw[i], &wc[kept]);
    if (n < want) break;
  }
  return kept;
}

int VerbsEndpoint::poll_into_stash_locked() {
  Completion wc[32];
  int n = poll_device(wc, 32);
  if (n <= 0) return 0;
  stash_.insert(stash_.end(), wc, wc + n);
  stashed_.store(static_cast<int>(stash_.size()), std::memory_order_release);
  return n;
}

int VerbsEndpoint::poll_cq(Completion* wc, int max) {
  if (!cq_ || max <= 0) return 0;
  int got = 0;
  if (stashed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lk(mu_);
    got = std::min<int>(max, static_cast<int>(stash_.size()));
    std::copy_n(stash_.begin(), got, wc);
    stash_.erase(stash_.begin(), stash_.begin() + got);
    stashed_.store(static_cast<int>(stash_.size()), std::memory_order_release);
  }
  if (got < max) {
    int n = poll_device(wc + got, max - got);
    if (n < 0) return got ? got : n;
    got += n;
  }
  return got;
}

int VerbsEndpoint::arm() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!cq_) return 0;  // still resolving or connecting: CM events wake us
  if (ibv_req_notify_cq(cq_, 0)) return 1;
  // Completions that came before the request do not raise an event.
  return stash_.empty() && !poll_into_stash_locked() ? 0 : 1;
}

void VerbsEndpoint::ack_events() { ack_cq_events(comp_, cq_); }

int VerbsEndpoint::local_name(sockaddr_storage* addr, socklen_t* len) const {
  return copy_name(rdma_get_local_addr(id_), addr, len);
}

int VerbsEndpoint::peer_name(sockaddr_storage* addr, socklen_t* len) const {
  return copy_name(rdma_get_peer_addr(id_), addr, len);
}

int VerbsEndpoint::route(void* buf, size_t* len) const { return export_route(id_, buf, len); }

}  // namespace ss::prov::verbs

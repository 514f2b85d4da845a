// A UD queue pair per local address: set-up through rdma_cm, posted
// receives, address handles from rdma_cm's route (GRH on RoCE), sends
// from registered slots.
#include "core/prov/verbs/ud_qp.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/base/log.h"
#include "core/prov/verbs/cm_events.h"
#include "core/res/verbs_manager.h"

namespace ss::prov::verbs {

namespace {

constexpr int kResolveMs = 2000;  // upstream's timeouts for address and route
constexpr uint64_t kSendFlag = uint64_t{1} << 32;
constexpr size_t kRecvSlot = UdQp::kGrh + UdQp::kSlot;

socklen_t addr_len(const sockaddr* a) {
  return a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

bool same_ip(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                     &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, 16) == 0;
}

// Waits for the one event the last resolve step produces; 0 when it is
// `want`, else -errno.
int await_event(rdma_event_channel* ch, rdma_cm_event_type want) {
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev)) return -errno;
  int rc = ev->event == want ? 0 : -(cm_event_errno(ev) ? cm_event_errno(ev) : EHOSTUNREACH);
  rdma_ack_cm_event(ev);
  return rc;
}

// The source GID's index in the port's table: on RoCE the RoCE v2 entry
// when there is one (rdma_cm's default mode), else the first match.
int sgid_index(ibv_context* ctx, uint8_t port, const ibv_port_attr& pa, const ibv_gid& sgid) {
  std::vector<ibv_gid_entry> table(static_cast<size_t>(std::max(pa.gid_tbl_len, 1)));
  ssize_t n = ibv_query_gid_table(ctx, table.data(), table.size(), 0);
  int first = -1;
  for (ssize_t i = 0; i < n; i++) {
    const ibv_gid_entry& e = table[static_cast<size_t>(i)];
    if (e.port_num != port || std::memcmp(&e.gid, &sgid, sizeof sgid) != 0) continue;
    if (pa.link_layer != IBV_LINK_LAYER_ETHERNET || e.gid_type == IBV_GID_TYPE_ROCE_V2)
      return static_cast<int>(e.gid_index);
    if (first < 0) first = static_cast<int>(e.gid_index);
  }
  return first;
}

// The address-handle attributes toward `dst` from `src`, through a
// throw-away rdma_cm id's address and route resolution. -errno.
int resolve_ah_attr(const sockaddr* src, const sockaddr* dst, ibv_context* ctx, ibv_ah_attr* attr) {
  rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) return -errno;
  rdma_cm_id* id = nullptr;
  int rc = rdma_create_id(ch, &id, nullptr, RDMA_PS_UDP) ? -errno : 0;
  sockaddr_storage s{}, d{};
  std::memcpy(&s, src, addr_len(src));
  std::memcpy(&d, dst, addr_len(dst));
  reinterpret_cast<sockaddr_in*>(&s)->sin_port = 0;  // same offset in sockaddr_in6
  if (!rc && rdma_resolve_addr(id, reinterpret_cast<sockaddr*>(&s), reinterpret_cast<sockaddr*>(&d),
                               kResolveMs))
    rc = -errno;
  if (!rc) rc = await_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
  if (!rc && rdma_resolve_route(id, kResolveMs)) rc = -errno;
  if (!rc) rc = await_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
  if (!rc && (id->verbs != ctx || !id->route.num_paths || !id->route.path_rec)) rc = -ENETUNREACH;
  ibv_port_attr pa{};
  if (!rc && ibv_query_port(ctx, id->port_num, &pa)) rc = -errno;
  if (!rc) {
    const ibv_sa_path_rec& p = *id->route.path_rec;
    std::memset(attr, 0, sizeof *attr);
    attr->port_num = id->port_num;
    attr->sl = p.sl;
    attr->dlid = ntohs(p.dlid);
    // RoCE always needs a GRH (its headers are built from the GIDs);
    // InfiniBand only beyond the subnet.
    if (pa.link_layer == IBV_LINK_LAYER_ETHERNET || p.hop_limit > 1) {
      int idx = sgid_index(ctx, id->port_num, pa, p.sgid);
      if (idx < 0) rc = -EADDRNOTAVAIL;
      attr->is_global = 1;
      attr->grh.dgid = p.dgid;
      attr->grh.sgid_index = static_cast<uint8_t>(idx);
      attr->grh.hop_limit = p.hop_limit ? p.hop_limit : 64;
      attr->grh.traffic_class = p.traffic_class;
      attr->grh.flow_label = ntohl(p.flow_label);
    }
  }
  if (id) rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  return rc;
}

}  // namespace

int UdQp::create(const sockaddr* addr, uint32_t slots, std::unique_ptr<UdQp>* out) {
  if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) return -EAFNOSUPPORT;
  std::unique_ptr<UdQp> qp(new UdQp());
  if (int rc = qp->setup(addr, slots)) return rc;
  *out = std::move(qp);
  return 0;
}

int UdQp::setup(const sockaddr* addr, uint32_t slots) {
  if (res::device_count() <= 0) return -ENODEV;
  if (int rc = res::usable_here()) return rc;  // a fork child's devices are the parent's
  if (rdma_create_id(nullptr, &id_, this, RDMA_PS_UDP)) return -errno;
  sockaddr_storage local{};
  std::memcpy(&local, addr, addr_len(addr));
  reinterpret_cast<sockaddr_in*>(&local)->sin_port = 0;
  if (rdma_bind_addr(id_, reinterpret_cast<sockaddr*>(&local)))
    return errno == EADDRNOTAVAIL || errno == ENODEV ? -ENODEV : -errno;
  ibv_context* ctx = id_->verbs;
  if (!ctx) return -ENODEV;  // an address no RDMA device owns
  if (ctx->device->transport_type == IBV_TRANSPORT_IWARP) return -EOPNOTSUPP;
  if (!(pd_ = res::pd_for(ctx))) return -errno;
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, id_->port_num, &pa)) return -errno;
  max_msg_ = std::min(kSlot, size_t{128} << pa.active_mtu);  // IBV_MTU_256 is 1
  ibv_device_attr dev{};
  if (int e = ibv_query_device(ctx, &dev)) return -e;
  slots_ = std::clamp<uint32_t>(slots, 2, static_cast<uint32_t>(dev.max_qp_wr));
  if (!(comp_ = ibv_create_comp_channel(ctx))) return -errno;
  if (int rc = set_nonblocking(comp_->fd)) return rc;
  if (!(cq_ = ibv_create_cq(ctx, std::min(static_cast<int>(2 * slots_), dev.max_cqe), this, comp_,
                            0)))
    return -errno;
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = cq_;
  qa.qp_type = IBV_QPT_UD;
  qa.sq_sig_all = 1;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = slots_;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = 64;
  if (rdma_create_qp(id_, pd_, &qa)) return -errno;  // RDMA_PS_UDP: Q_Key 0x01234567, up to RTS
  max_inline_ = qa.cap.max_inline_data;
  buf_len_ = slots_ * (kRecvSlot + kSlot);
  void* m = mmap(nullptr, buf_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return -errno;
  buf_ = static_cast<uint8_t*>(m);
  if (!(mr_ = ibv_reg_mr(pd_, buf_, buf_len_, int{IBV_ACCESS_LOCAL_WRITE}))) return -errno;
  for (uint32_t i = 0; i < slots_; i++) {
    if (int rc = post_recv(i)) return rc;
    free_send_.push_back(i);
  }
  ready_.reserve(slots_);
  res::hold_async_events(ctx);
  holds_async_ = true;
  return arm();
}

UdQp::~UdQp() {
  for (Dest& d : ahs_) ibv_destroy_ah(d.ah);
  if (id_ && id_->qp) rdma_destroy_qp(id_);
  if (cq_) ibv_destroy_cq(cq_);
  if (comp_) ibv_destroy_comp_channel(comp_);
  if (mr_) ibv_dereg_mr(mr_);
  if (buf_) munmap(buf_, buf_len_);
  if (id_) rdma_destroy_id(id_);
  if (holds_async_) res::release_async_events();
}

int UdQp::ah_for(const sockaddr* dst, ibv_ah** out) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (Dest& d : ahs_)
      if (same_ip(reinterpret_cast<sockaddr*>(&d.addr), dst)) return *out = d.ah, 0;
  }
  ibv_ah_attr attr{};
  const auto t0 = std::chrono::steady_clock::now();
  int rc = resolve_ah_attr(rdma_get_local_addr(id_), dst, id_->verbs, &attr);
  ibv_ah* ah = rc ? nullptr : ibv_create_ah(pd_, &attr);
  if (!rc && !ah) rc = -errno;
  SS_DEBUG("verbs: UD address handle: %s after %lld ms", rc ? strerror(-rc) : "made",
           static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count()));
  if (rc) return rc;
  std::lock_guard<std::mutex> lk(mu_);
  Dest d{};
  std::memcpy(&d.addr, dst, addr_len(dst));
  d.ah = ah;
  ahs_.push_back(d);
  *out = ah;
  return 0;
}

int UdQp::post_recv(uint32_t slot) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf_ + slot * kRecvSlot), kRecvSlot, mr_->lkey};
  ibv_recv_wr wr{}, *bad = nullptr;
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  int e = ibv_post_recv(id_->qp, &wr, &bad);
  return e ? -e : 0;
}

int UdQp::send(ibv_ah* ah, uint32_t qpn, const void* head, size_t head_len, const iovec* iov,
               size_t iovcnt) {
  size_t total = head_len;
  for (size_t i = 0; i < iovcnt; i++) total += iov[i].iov_len;
  if (total > max_msg_) return -EMSGSIZE;
  std::lock_guard<std::mutex> lk(mu_);
  if (free_send_.empty()) poll_locked();
  if (free_send_.empty()) return -EAGAIN;
  uint32_t slot = free_send_.back();
  uint8_t* p = buf_ + slots_ * kRecvSlot + slot * kSlot;
  std::memcpy(p, head, head_len);
  size_t off = head_len;
  for (size_t i = 0; i < iovcnt; i++) {
    if (iov[i].iov_len) std::memcpy(p + off, iov[i].iov_base, iov[i].iov_len);
    off += iov[i].iov_len;
  }
  ibv_sge sge{reinterpret_cast<uintptr_t>(p), static_cast<uint32_t>(total), mr_->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = kSendFlag | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = total <= max_inline_ ? IBV_SEND_INLINE : 0;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = qpn;
  wr.wr.ud.remote_qkey = kQkey;
  if (int e = ibv_post_send(id_->qp, &wr, &bad)) return -e;
  free_send_.pop_back();
  return 0;
}

void UdQp::poll_locked() {
  ibv_wc wc[16];
  int n;
  while ((n = ibv_poll_cq(cq_, 16, wc)) > 0) {
    for (int i = 0; i < n; i++) {
      const uint32_t slot = static_cast<uint32_t>(wc[i].wr_id);
      if (wc[i].wr_id & kSendFlag) {
        if (wc[i].status != IBV_WC_SUCCESS)
          SS_DEBUG("verbs: UD send failed: %s", ibv_wc_status_str(wc[i].status));
        free_send_.push_back(slot);
      } else if (wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len >= kGrh) {
        ready_.push_back({slot, wc[i].byte_len - static_cast<uint32_t>(kGrh)});
      } else if (wc[i].status != IBV_WC_WR_FLUSH_ERR) {
        SS_DEBUG("verbs: UD receive failed: %s (%u bytes)", ibv_wc_status_str(wc[i].status),
                 wc[i].byte_len);
        post_recv(slot);  // a failed receive: the slot goes back to the device
      }
    }
  }
}

int UdQp::front(const uint8_t** data, size_t* len) {
  std::lock_guard<std::mutex> lk(mu_);
  if (ready_head_ == ready_.size()) {
    ready_.clear();
    ready_head_ = 0;
    poll_locked();
    if (ready_.empty()) return -EAGAIN;
  }
  const Received& r = ready_[ready_head_];
  *data = buf_ + r.slot * kRecvSlot + kGrh;
  *len = r.len;
  return 0;
}

void UdQp::pop() {
  std::lock_guard<std::mutex> lk(mu_);
  if (ready_head_ == ready_.size()) return;
  post_recv(ready_[ready_head_++].slot);
}

int UdQp::arm() {
  ibv_cq* cq;
  void* ctx;
  unsigned acks = 0;
  while (ibv_get_cq_event(comp_, &cq, &ctx) == 0) acks++;
  if (acks) ibv_ack_cq_events(cq_, acks);
  int e = ibv_req_notify_cq(cq_, 0);
  return e ? -e : 0;
}

}  // namespace ss::prov::verbs

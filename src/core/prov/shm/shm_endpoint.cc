#include "core/prov/shm/shm_endpoint.h"

#include <netinet/in.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/fd_passing.h"
#include "core/base/fd_spare.h"
#include "core/base/log.h"
#include "core/base/pod_bytes.h"
#include "core/base/sandbox.h"
#include "core/prov/shm/rendezvous.h"

namespace ss::prov::shm {

using util::FrameHeader;
using util::FrameType;

namespace {
// Check the stream this often when the ring is idle (peer death, slow-path frames).
constexpr unsigned kIdlePollsPerStreamCheck = 64;
// Descriptors received and not yet taken by their frames.
constexpr size_t kMaxHeldFds = 64;
// Descriptors one read takes: a frame carries at most one, and the stream
// stops a read at each message that carries any (more is the peer's fault).
constexpr size_t kFdsPerRead = 4;

uint32_t pow2_at_least(uint32_t v) {
  uint32_t p = 64;
  while (p < v) p <<= 1;
  return p;
}
}  // namespace

ShmEndpoint::ShmEndpoint(int ufd, bool active) : StreamEndpoint(kProto, ufd, active) {}

ShmEndpoint::~ShmEndpoint() {
  set_async_progress(false);
  for (PeerRegion& r : peer_regions_) mem::Region::unmap_peer(r.map_base, r.map_len);
  if (tx_ring_map_) mem::Region::unmap_peer(tx_ring_map_, tx_ring_len_);
  for (int fd : rx_fds_) release_number(fd);
  if (active_) ::close(fd_);  // passive: the socket names the rsocket, which closes it
}

std::unique_ptr<ShmEndpoint> ShmEndpoint::make_active(int ufd, const sockaddr_storage& local,
                                                      socklen_t local_len, const sockaddr* dst,
                                                      socklen_t dst_len) {
  std::unique_ptr<ShmEndpoint> ep(new ShmEndpoint(ufd, true));
  if (dst_len > sizeof(ep->peer_)) return nullptr;
  ep->local_ = local;
  ep->local_len_ = local_len;
  memcpy(&ep->peer_, dst, dst_len);
  ep->peer_len_ = dst_len;
  return ep;
}

std::unique_ptr<Endpoint> ShmEndpoint::make_passive(int ufd, const uint8_t* pdata, size_t len) {
  if (!peer_trusted(ufd, true)) return nullptr;
  std::unique_ptr<ShmEndpoint> ep(new ShmEndpoint(ufd, false));
  ep->init_passive(pdata, len);
  return ep;
}

uint32_t ShmEndpoint::caps() const { return StreamEndpoint::caps() | kCapSameHost | kCapUnchunked; }

int ShmEndpoint::setup(EndpointAttr* attr) {
  int rc = StreamEndpoint::setup(attr);
  if (rc) return rc;
  Guard lock(*this);
  if (rx_ring_region_ || detached_rx_) return 0;
  // Room for every message the peer may have in flight: credits, control
  // messages and iomap updates.
  rx_ring_entries_ = pow2_at_least(2 * (attr->rq_size + attr->sq_size) + 64);
  rc = mem::Region::create(ring_bytes(rx_ring_entries_), "slipstream-ring", &rx_ring_region_);
  if (rc) return rc;
  rx_ring_.attach(static_cast<RingControl*>(rx_ring_region_->addr()), rx_ring_entries_);
  return 0;
}

int ShmEndpoint::reg_mr(void* addr, size_t len, int access, MemoryRegion* mr) {
  int rc = StreamEndpoint::reg_mr(addr, len, access, mr);
  if (rc || !(access & kAccessRemoteWrite) || detached_tx_) return rc;
  Guard lock(*this);
  Announce a{mr->rkey, addr, len};
  if (announced_)
    announce_region(a);
  else
    to_announce_.push_back(a);
  return 0;
}

void ShmEndpoint::dereg_mr(MemoryRegion* mr) {
  Guard lock(*this);
  uint32_t key = mr->rkey;
  to_announce_.erase(std::remove_if(to_announce_.begin(), to_announce_.end(),
                                    [key](const Announce& a) { return a.rkey == key; }),
                     to_announce_.end());
  // The peer keeps its mapping of memfd-backed memory; the memfd outlives
  // our use of it only in the peer's view (as a stale RDMA key would).
  StreamEndpoint::dereg_mr(mr);
}

void ShmEndpoint::announce_region(const Announce& a) {
  int fd;
  uint64_t offset;
  // Only memfd-backed memory can be shared; writes into the rest travel
  // on the stream and are placed by the owner. The memfd goes to the
  // frame, which closes it once passed.
  if (!mem::take_backing(a.addr, a.len, &fd, &offset)) return;
  uint8_t payload[kCtrlRegionPayload];
  uint64_t base = reinterpret_cast<uint64_t>(a.addr), len = a.len;
  memcpy(payload, &base, 8);
  memcpy(payload + 8, &len, 8);
  memcpy(payload + 16, &offset, 8);
  memcpy(payload + 24, &a.rkey, 4);
  Sge sge{reinterpret_cast<uint64_t>(payload), sizeof payload, 0};
  FrameHeader h{FrameType::kCtrl, kCtrlRegion, sizeof payload, 0, 0, 0};
  queue_frame(h, &sge, 1, 0, false, true, fd);
  last_slow_frame_ = static_cast<uint32_t>(tx_frames_);
}

// After our hello or reply: our names, our regions, then the ring. The
// peer reports the connection once the ring is here, so by then it holds
// every memfd we passed: a peer short of descriptors fails at accept or
// connect (EMFILE, as the kernel's), not at a later read.
void ShmEndpoint::send_announcements() {
  announced_ = true;
  if (active_) {
    // Our name and the name we dialled: the peer's rgetpeername/rgetsockname.
    uint8_t addr[2 + 2 * sizeof(sockaddr_in6)];
    if (local_len_ <= sizeof(sockaddr_in6) && peer_len_ <= sizeof(sockaddr_in6)) {
      addr[0] = static_cast<uint8_t>(local_len_);
      memcpy(addr + 1, &local_, local_len_);
      addr[1 + local_len_] = static_cast<uint8_t>(peer_len_);
      memcpy(addr + 2 + local_len_, &peer_, peer_len_);
      uint32_t n = 2u + local_len_ + peer_len_;
      Sge a{reinterpret_cast<uint64_t>(addr), n, 0};
      queue_frame({FrameType::kCtrl, kCtrlAddr, n, 0, 0, 0}, &a, 1, 0, false, true);
    }
  }
  for (const Announce& a : to_announce_) announce_region(a);
  to_announce_.clear();
  uint32_t entries = rx_ring_entries_;
  Sge sge{reinterpret_cast<uint64_t>(&entries), sizeof entries, 0};
  int ring_fd = -1;
  mem::take_backing(rx_ring_region_->addr(), rx_ring_region_->len(), &ring_fd, nullptr);
  queue_frame({FrameType::kCtrl, kCtrlRing, sizeof entries, 0, 0, 0}, &sge, 1, 0, false, true,
              ring_fd);
  last_slow_frame_ = static_cast<uint32_t>(tx_frames_);
}

int ShmEndpoint::connect(const void* pdata, size_t len) {
  Guard lock(*this);
  if (!rx_ring_region_) return -EINVAL;  // setup() first
  int rc = StreamEndpoint::connect(pdata, len);
  if (!rc) send_announcements();
  return rc;
}

int ShmEndpoint::accept(const void* pdata, size_t len) {
  Guard lock(*this);
  if (!rx_ring_region_) return -EINVAL;
  int rc = StreamEndpoint::accept(pdata, len);
  if (!rc) send_announcements();
  return rc;
}

ssize_t ShmEndpoint::rx_read(void* buf, size_t len, bool* cut) {
  iovec iov{buf, len};
  int fds[kFdsPerRead], got = 0;
  ssize_t n = recv_with_fds(fd_, &iov, 1, fds, kFdsPerRead, &got, MSG_DONTWAIT);
  rx_fds_.insert(rx_fds_.end(), fds, fds + got);
  *cut = got > 0;
  // EMFILE: the kernel had no descriptor slot left for one, this process's
  // shortage, not a peer fault. Each descriptor is taken by the frame it
  // came with, as that frame is parsed: more in one read than any frame
  // takes, or many held, means a peer attaching them to frames that take
  // none (it would use up our descriptor limit).
  if (n == -EMFILE) {
    SS_INFO("shm: fd %d: no descriptor left to take the peer's memory; connection failed", fd_);
  } else if (n == -EPROTO || rx_fds_.size() > kMaxHeldFds) {
    SS_WARN("shm: fd %d: peer sent more descriptors than announced; connection failed", fd_);
    n = -EPROTO;
  }
  if (n < 0) {
    errno = static_cast<int>(-n);
    return -1;
  }
  return n;
}

int ShmEndpoint::refuse_ctrl(const char* why, int fd) {
  release_number(fd);
  SS_WARN("shm: fd %d: %s from peer; connection failed", fd_, why);
  return -EPROTO;
}

// A memfd this process has no room to map (address space, map count) is
// its own shortage, not the peer's fault: the connection fails with ENOMEM,
// which rconnect (or the next call) reports, as a socket call out of memory.
int ShmEndpoint::unmappable(const char* what, int rc, int fd) {
  release_number(fd);
  if (rc == -ENOMEM) {
    SS_WARN("shm: fd %d: no memory to map the peer's %s; connection failed", fd_, what);
    return rc;
  }
  SS_WARN("shm: fd %d: a %s memfd from peer that cannot be mapped (%s); connection failed", fd_,
          what, strerror(-rc));
  return -EPROTO;
}

int ShmEndpoint::on_ctrl_frame(const FrameHeader& h, const uint8_t* p) {
  auto take_fd = [this]() {
    if (rx_fds_.empty()) return -1;
    int fd = rx_fds_.front();
    rx_fds_.pop_front();
    return fd;
  };
  switch (h.flags) {
    case kCtrlRing: {
      int fd = take_fd();
      uint32_t entries;
      if (tx_ring_map_ || detached_tx_) return refuse_ctrl("a second ring", fd);
      if (fd < 0 || h.length != sizeof entries)
        return refuse_ctrl("a ring without its memfd or of a bad length", fd);
      memcpy(&entries, p, sizeof entries);
      if (entries < 64 || entries > (1u << 20) || (entries & (entries - 1)))
        return refuse_ctrl("a ring of a bad size", fd);
      tx_ring_len_ = ring_bytes(entries);
      int rc = mem::Region::map_peer(fd, tx_ring_len_, PROT_READ | PROT_WRITE, &tx_ring_map_);
      if (rc) {
        tx_ring_map_ = nullptr;
        return unmappable("ring", rc, fd);
      }
      release_number(fd);
      tx_ring_.attach(static_cast<RingControl*>(tx_ring_map_), entries);
      flush_imms();
      return 0;
    }
    case kCtrlWake:
      if (h.length) return refuse_ctrl("a wake-up with a payload", -1);
      // Reading it woke whoever sleeps on the stream; a sleeper on the
      // async-progress thread's notifier hears it from here.
      if (async_.joinable()) notify_locked();
      return 0;
    case kCtrlRegion: {
      int fd = take_fd();
      // Locked in (core/base/sandbox.h) the memfd cannot come (read(2)
      // takes none): the region stays unmapped and writes to it keep
      // coming on the stream, as before the announcement.
      if (fd < 0 && h.length == kCtrlRegionPayload && sandbox::locked_in()) return 0;
      if (fd < 0 || h.length != kCtrlRegionPayload)
        return refuse_ctrl("a region announcement without its memfd or of a bad length", fd);
      PeerRegion r{};
      uint64_t offset;
      memcpy(&r.base, p, 8);
      memcpy(&r.len, p + 8, 8);
      memcpy(&offset, p + 16, 8);
      memcpy(&r.rkey, p + 24, 4);
      if (r.len == 0 || offset > (1ull << 40) || r.len > (1ull << 40))
        return refuse_ctrl("a region of an absurd size", fd);
      r.map_len = offset + r.len;
      int rc = mem::Region::map_peer(fd, r.map_len, PROT_READ | PROT_WRITE, &r.map_base);
      if (rc) return unmappable("region", rc, fd);
      release_number(fd);
      r.map = static_cast<uint8_t*>(r.map_base) + offset;
      peer_regions_.push_back(r);
      return 0;
    }
    case kCtrlDetach:
      if (h.length) return refuse_ctrl("a detach with a payload", -1);
      detach_rx();
      if (!detached_tx_) detach_tx();
      queue_frame({FrameType::kCtrl, kCtrlDetached, 0, 0, 0, 0}, nullptr, 0, 0, false, false);
      return cm_ == Cm::kFailed ? -EPROTO : 0;
    case kCtrlDetached:
      if (h.length) return refuse_ctrl("a detach answer with a payload", -1);
      detach_rx();
      return cm_ == Cm::kFailed ? -EPROTO : 0;
    case kCtrlImm: {
      uint32_t v[2];
      if (h.length != sizeof v) return refuse_ctrl("an immediate of a bad length", -1);
      memcpy(v, p, sizeof v);
      // What the ring holds came first.
      if (rx_ring_.attached()) drain_ring(nullptr, 0, false);
      if (cq_.size() >= max_cq_) return refuse_ctrl("more immediates than its credits", -1);
      cq_.push_back(Completion{0, 0, WcOp::kRecvImm, v[0], v[1]});
      return 0;
    }
    case kCtrlAddr: {
      if (active_) return refuse_ctrl("names sent to the connecting side", -1);
      if (h.length < 2 || p[0] > sizeof(sockaddr_in6) || h.length < 2u + p[0])
        return refuse_ctrl("malformed names", -1);
      uint8_t l1 = p[0], l2 = p[1 + l1];
      if (l2 > sizeof(sockaddr_in6) || h.length != 2u + l1 + l2)
        return refuse_ctrl("malformed names", -1);
      peer_len_ = l1;
      memcpy(&peer_, p + 1, l1);
      local_len_ = l2;
      memcpy(&local_, p + 2 + l1, l2);
      return 0;
    }
  }
  return StreamEndpoint::on_ctrl_frame(h, p);
}

uint8_t* ShmEndpoint::resolve_peer(uint32_t rkey, uint64_t addr, uint32_t len) const {
  for (const PeerRegion& r : peer_regions_) {
    if (r.rkey != rkey) continue;
    if (addr < r.base || len > r.len || addr - r.base > r.len - len) return nullptr;
    return r.map + (addr - r.base);
  }
  return nullptr;
}

// The peer sleeps on its end of the stream: one frame wakes it. Frames
// still queued here mean the kernel holds bytes the peer has not read, so
// its end is readable already (and a peer that never reads cannot make
// this queue grow).
void ShmEndpoint::kick_peer() {
  if (sendq_.empty())
    queue_frame({FrameType::kCtrl, kCtrlWake, 0, 0, 0, 0}, nullptr, 0, 0, false, false);
}

void ShmEndpoint::queue_imm_frame(uint32_t imm, uint32_t len) {
  const uint32_t v[2] = {imm, len};
  Sge sge{reinterpret_cast<uint64_t>(v), sizeof v, 0};
  queue_frame({FrameType::kCtrl, kCtrlImm, sizeof v, 0, 0, 0}, &sge, 1, 0, false, true);
}

void ShmEndpoint::detach_tx() {
  gate_out();  // a progress inside a gated write read the peer's detach
  // In stream order behind the frames they waited for.
  for (const PendingImm& p : pending_imms_) queue_imm_frame(p.imm, p.len);
  pending_imms_.clear();
  for (PeerRegion& r : peer_regions_) mem::Region::unmap_peer(r.map_base, r.map_len);
  peer_regions_.clear();
  if (tx_ring_map_) mem::Region::unmap_peer(tx_ring_map_, tx_ring_len_);
  tx_ring_map_ = nullptr;
  tx_ring_ = RingWriter{};
  detached_tx_ = true;
}

void ShmEndpoint::detach_rx() {
  if (detached_rx_) return;
  if (rx_ring_.attached()) {
    drain_ring(nullptr, 0, false);
    // An entry still there waits for a frame the peer sent after saying
    // it was done: a broken peer; the message would be lost.
    if (cm_ == Cm::kEstablished && rx_ring_.peek()) {
      SS_WARN("shm: fd %d: peer left ring entries behind its detach; connection failed", fd_);
      fail(EPROTO, Cm::kFailed);
    }
  }
  rx_ring_ = RingReader{};
  rx_ring_region_.reset();
  detached_rx_ = true;
}

void ShmEndpoint::push_imm(uint32_t imm, uint32_t len, uint32_t stream_seq) {
  // Detached while this send was under way (its progress read the peer's
  // kCtrlDetach): no ring any more, the stream carries it.
  if (detached_tx_) return queue_imm_frame(imm, len);
  bool wake = false;
  if (pending_imms_.empty() && tx_ring_.attached() && tx_ring_.push(imm, len, stream_seq, &wake)) {
    if (wake) kick_peer();
    return;
  }
  // The peer sized its ring for every message its credits allow in flight:
  // a ring full and as many more waiting means it grants credits it does
  // not back (it would make this queue grow without bound).
  if (tx_ring_.attached() && pending_imms_.size() >= tx_ring_.size()) {
    SS_WARN("shm: fd %d: peer leaves its ring full beyond its credits; connection failed", fd_);
    pending_imms_.clear();  // nobody will take them: no flush at disconnect
    fail(EPROTO, Cm::kFailed);
    return;
  }
  pending_imms_.push_back({imm, len, stream_seq});
}

void ShmEndpoint::flush_imms() {
  if (pending_imms_.empty() || !tx_ring_.attached() || !gate_in()) return;
  bool wake = false, any = false;
  while (!pending_imms_.empty()) {
    const PendingImm& p = pending_imms_.front();
    bool w = false;
    if (!tx_ring_.push(p.imm, p.len, p.stream_seq, &w)) break;
    wake |= w;
    any = true;
    pending_imms_.pop_front();
  }
  gate_out();
  if (any && wake) kick_peer();
}

int ShmEndpoint::post_send(const SendWr& wr) {
  // On the stream alone: a write with its immediate is one frame there.
  if (detached_tx_) return StreamEndpoint::post_send(wr);
  Guard lock(*this);
  if (cm_ != Cm::kEstablished)
    return cm_ == Cm::kFailed || cm_ == Cm::kClosed ? -ECONNRESET : -ENOTCONN;
  uint32_t len = 0;
  for (int i = 0; i < wr.num_sge; i++) len += wr.sge[i].length;
  if (!tx_ring_.attached() && !detached_tx_)
    progress_locked();  // the peer's ring may be on its way
  uint8_t* dst = len ? resolve_peer(wr.rkey, wr.remote_addr, len) : nullptr;
  if (len && !dst && peer_regions_.empty() && !detached_tx_) {
    progress_locked();
    dst = resolve_peer(wr.rkey, wr.remote_addr, len);
  }
  if (dst || len == 0) {
    if (!gate_in()) return StreamEndpoint::post_send(wr);  // the peer asked: the stream
    // Fast path: the copy is the transfer (none for an empty message,
    // whose dst is null: memcpy must not see it).
    for (int i = 0; len && i < wr.num_sge; i++) {
      memcpy(dst, reinterpret_cast<const void*>(wr.sge[i].addr), wr.sge[i].length);
      dst += wr.sge[i].length;
    }
    if (wr.op == Op::kWriteImm) push_imm(wr.imm, len, last_slow_frame_);
    gate_out();
    return kPostDone;
  }
  // Slow path: the payload goes on the stream; the immediate follows in the
  // ring, ordered after that frame.
  FrameHeader h{FrameType::kWrite, 0, len, wr.remote_addr, wr.rkey, 0};
  int rc = queue_frame(h, wr.sge, wr.num_sge, wr.wr_id, true, wr.inline_data);
  if (rc < 0) return rc;
  last_slow_frame_ = static_cast<uint32_t>(tx_frames_);
  if (wr.op == Op::kWriteImm) {
    const bool in = gate_in();  // refused: detached, the stream carries it
    push_imm(wr.imm, len, last_slow_frame_);
    if (in) gate_out();
  }
  return rc;
}

bool ShmEndpoint::gate_in() {
  if (detached_tx_) return false;
  if (!tx_ring_.attached() || tx_ring_.enter_write()) return true;
  // The peer asked (its exec): its memory is left, and kCtrlDetached marks
  // the place in the stream, so the peer takes what its ring holds before
  // the writes that follow on the stream (its kCtrlDetach, read later,
  // gets the same answer again, which changes nothing).
  detach_tx();
  queue_frame({FrameType::kCtrl, kCtrlDetached, 0, 0, 0, 0}, nullptr, 0, 0, false, false);
  return false;
}

void ShmEndpoint::gate_out() {
  if (tx_ring_.attached()) tx_ring_.exit_write();
}

int ShmEndpoint::drain_ring(Completion* out, int max, bool may_progress) {
  if (!rx_ring_.attached()) return 0;
  int n = 0;
  while (!out || n < max) {
    const RingEntry* e = rx_ring_.peek();
    if (!e) break;
    // Frames sent before this entry (slow-path payloads) must land first.
    // If the stream ended without them, the message is lost with it:
    // never deliver a completion whose data did not arrive.
    if (static_cast<int32_t>(e->stream_seq - static_cast<uint32_t>(rx_frames_)) > 0) {
      if (cm_ == Cm::kFailed || cm_ == Cm::kClosed) {
        SS_DEBUG("shm: fd %d: stream ended before frame %u (read %llu); message dropped", fd_,
                 e->stream_seq, static_cast<unsigned long long>(rx_frames_));
        break;
      }
      if (!may_progress) break;
      progress_locked();
      // The progress may have read the peer's detach: the ring's entries,
      // this one too, went to cq_ and its memory is gone.
      if (!rx_ring_.attached()) break;
      if (static_cast<int32_t>(e->stream_seq - static_cast<uint32_t>(rx_frames_)) > 0) break;
    }
    const Completion wc{0, 0, WcOp::kRecvImm, e->imm, e->len};
    if (out) {
      out[n++] = wc;
    } else {
      if (cq_.size() >= max_cq_) {
        SS_WARN("shm: peer overran its receive credits; connection failed");
        fail(EPROTO, Cm::kFailed);
        break;
      }
      cq_.push_back(wc);
    }
    rx_ring_.pop();
  }
  return n;
}

int ShmEndpoint::poll_cq(Completion* wc, int max) {
  Guard lock(*this);
  // The busy-poll case first: nothing queued or owed, only the ring to look at.
  if (cq_.empty() && pending_imms_.empty() && sendq_.empty() && cm_ == Cm::kEstablished &&
      !detached_rx_) {
    if (int n = drain_ring(wc, max)) {
      idle_polls_ = 0;
      return n;
    }
    if (++idle_polls_ % kIdlePollsPerStreamCheck) return 0;
    progress_locked();  // now and then: the stream's end, a slow-path frame
  }
  auto take_queued = [&](int n) {
    while (n < max && !cq_.empty()) {
      wc[n++] = cq_.front();
      cq_.pop_front();
    }
    return n;
  };
  // Older completions first; then ring entries straight into `wc` (the
  // engine consumes them at once, no queue in between).
  int n = take_queued(0);
  if (n < max && cm_ != Cm::kAwaitAccept && cm_ != Cm::kAwaitReply)
    n += drain_ring(wc + n, max - n);
  // Detached, everything comes on the stream: look at it each time.
  if (n == 0 && (detached_rx_ || ++idle_polls_ % kIdlePollsPerStreamCheck == 0)) progress_locked();
  if (!pending_imms_.empty()) flush_imms();
  if (!sendq_.empty()) flush_sends();
  n = take_queued(n);  // what the stream work above completed
  if (n) idle_polls_ = 0;
  return n;
}

namespace {
struct ShmState {
  uint64_t rx_tail, tx_head;
  uint32_t last_slow_frame, pending_imms;
  bool detached;  // both ways on the stream (kCtrlDetach): no ring, no mapping
};
// What make_restored needs besides the stream's state.
struct ShmExec {
  bool active;
  int ufd;
  sockaddr_storage local, peer;
  socklen_t local_len, peer_len;
};
}  // namespace

bool ShmEndpoint::save_more(std::vector<uint8_t>* out) const {
  // Descriptors received and not yet taken, or regions not yet announced,
  // cannot cross: no hand-over then.
  const bool detached = detached_rx_ && detached_tx_;
  if (!rx_fds_.empty() || !to_announce_.empty() ||
      (!detached && (!rx_ring_.attached() || !tx_ring_.attached())))
    return false;
  put_pod(out, ShmState{rx_ring_.position(), tx_ring_.position(), last_slow_frame_,
                        static_cast<uint32_t>(pending_imms_.size()), detached});
  for (const PendingImm& p : pending_imms_) put_pod(out, p);
  return true;
}

bool ShmEndpoint::load_more(const uint8_t* in, size_t len) {
  PodReader r(in, len);
  ShmState st{};
  if (!r.get(&st) || (!st.detached && (!rx_ring_.attached() || !tx_ring_.attached()))) return false;
  std::deque<PendingImm> imms;
  for (uint32_t i = 0; i < st.pending_imms; i++) {
    PendingImm p{};
    if (!r.get(&p)) return false;
    imms.push_back(p);
  }
  size_t left = 0;
  r.rest(&left);
  if (left) return false;
  if (st.detached) {
    // This copy was made before the detach: its mappings go as the
    // holder's went (nothing to tell the peer, which knows).
    pending_imms_.clear();
    detach_tx();
    rx_ring_ = RingReader{};
    rx_ring_region_.reset();
    detached_rx_ = true;
    last_slow_frame_ = st.last_slow_frame;
    idle_polls_ = 0;
    return imms.empty();
  }
  rx_ring_.set_position(st.rx_tail);
  tx_ring_.set_position(st.tx_head);
  last_slow_frame_ = st.last_slow_frame;
  pending_imms_ = std::move(imms);
  idle_polls_ = 0;
  return true;
}

int ShmEndpoint::prepare_exec() {
  Guard lock(*this);
  if (cm_ != Cm::kEstablished) return -ENOTCONN;
  if (async_.joinable()) return -EBUSY;   // riomap's thread: not quiet
  if (!detach_asked_ && !detached_rx_) {  // else the peer asked first, and we answered
    if (!detached_tx_) detach_tx();
    queue_frame({FrameType::kCtrl, kCtrlDetach, 0, 0, 0, 0}, nullptr, 0, 0, false, false);
    detach_asked_ = true;
    if (rx_ring_.attached()) rx_ring_.ask_leave();
  }
  if (!sendq_.empty()) flush_sends();
  progress_locked();
  if (cm_ != Cm::kEstablished) return -ECONNRESET;
  // A peer that honours the gate writes here no more once it is out of
  // its write: what it published is taken (with the frames it waits
  // for), and the ring left without its answer, which may never come
  // from a peer that makes no call meanwhile.
  if (!detached_rx_ && rx_ring_.attached() && rx_ring_.gated() && !rx_ring_.writing()) {
    drain_ring(nullptr, 0, true);
    if (!rx_ring_.attached() || !rx_ring_.peek()) detach_rx();
  }
  return detached_rx_ && detached_tx_ ? 0 : -EAGAIN;
}

bool ShmEndpoint::save_for_exec(std::vector<uint8_t>* out, std::vector<int>* keep) const {
  if (!detached_rx_ || !detached_tx_) return false;
  ShmExec st{};
  st.active = active_;
  st.ufd = fd_;
  st.local = local_;
  st.peer = peer_;
  st.local_len = local_len_;
  st.peer_len = peer_len_;
  put_pod(out, st);
  keep->push_back(fd_);
  return save_handover(out);
}

std::unique_ptr<Endpoint> ShmEndpoint::make_restored(const uint8_t* state, size_t len,
                                                     const Renumber& renumber) {
  PodReader r(state, len);
  ShmExec st{};
  if (r.get(&st)) st.ufd = renumber(st.ufd);
  if (!r.ok() || st.ufd < 0 || st.local_len > sizeof st.local || st.peer_len > sizeof st.peer)
    return nullptr;
  size_t rest_len = 0;
  const uint8_t* rest = r.rest(&rest_len);
  std::unique_ptr<ShmEndpoint> ep(new ShmEndpoint(st.ufd, st.active));
  ep->local_ = st.local;
  ep->peer_ = st.peer;
  ep->local_len_ = st.local_len;
  ep->peer_len_ = st.peer_len;
  ep->detached_tx_ = ep->detached_rx_ = true;
  ep->announced_ = true;  // nothing of ours is announced on a detached stream
  if (!ep->load_handover(rest, rest_len)) return nullptr;
  return ep;
}

void ShmEndpoint::disconnect() {
  Guard lock(*this);
  // Messages still waiting for the ring (its announcement may not have been
  // read yet, or it is full) go first; then the stream closes.
  if (!pending_imms_.empty() && !tx_ring_.attached()) progress_locked();
  for (int i = 0; i < 1000 && !pending_imms_.empty() && tx_ring_.attached(); i++) {
    flush_imms();
    if (!pending_imms_.empty()) usleep(1000);
  }
  SS_DEBUG("shm: fd %d: disconnect: ring head %llu, %zu waiting, %zu frames queued", fd_,
           static_cast<unsigned long long>(tx_ring_.position()), pending_imms_.size(),
           sendq_.size());
  StreamEndpoint::disconnect();
}

int ShmEndpoint::cm_progress(CmEvent* ev) {
  Guard lock(*this);
  // Established: the stream matters only for its end (and rare slow-path
  // frames); poll_cq and arm look at it without a syscall per call here.
  if (cm_ != Cm::kEstablished) progress_locked();
  // Established for the engine only once the peer's ring is here (it
  // follows the hello/reply on the stream): no message posted afterwards
  // can be left waiting for a ring nobody will poll for.
  if (cm_ == Cm::kEstablished && !cm_reported_ && !tx_ring_.attached() && !detached_tx_) {
    progress_locked();
    if (cm_ == Cm::kEstablished && !tx_ring_.attached()) {
      *ev = CmEvent::kNone;
      return -EAGAIN;
    }
  }
  // Messages in the ring were sent before the stream ended: deliver them first.
  if (cm_ == Cm::kFailed || cm_ == Cm::kClosed) drain_ring(nullptr, 0);
  return cm_report_locked(ev);
}

int ShmEndpoint::arm() {
  Guard lock(*this);
  // Before sleeping, look at the stream once: it may hold frames or EOF.
  progress_locked();
  // Waiting for the peer's ring announcement is a wait like any other (a
  // peer that never sends it must not make us spin).
  const bool awaiting_ring =
      cm_ == Cm::kEstablished && !cm_reported_ && !tx_ring_.attached() && !detached_tx_;
  if (!awaiting_ring) {
    int r = StreamEndpoint::arm();
    if (r) return r;
  } else {
    if (!cq_.empty()) return 1;
    armed_ = true;
  }
  if (rx_ring_.attached() && rx_ring_.prepare_sleep()) {
    if (sleepers_ == 0) rx_ring_.woke();
    return 1;
  }
  sleepers_++;
  return 0;
}

void ShmEndpoint::ack_events() {
  StreamEndpoint::ack_events();
  Guard lock(*this);
  // Take the wake-up frame off the stream now (the async-progress thread
  // reads it when there is one), or the next sleep would end at once.
  if (!async_.joinable()) progress_locked();
  if (sleepers_ > 0) sleepers_--;
  if (!rx_ring_.attached()) return;
  // Each wake-up clears the flag: while another thread still sleeps here,
  // raise it again, so the peer's next entry wakes that thread too (an
  // entry that came before is this thread's to process, and its progress
  // wakes the others).
  if (sleepers_ == 0)
    rx_ring_.woke();
  else
    rx_ring_.announce_sleep();
}

void ShmEndpoint::fork_child() {
  StreamEndpoint::fork_child();
  sleepers_ = 0;
}

void ShmEndpoint::drop_in_fork_child(int fd) {
  StreamEndpoint::drop_in_fork_child(fd);
  for (int rx : rx_fds_) own_close(rx);
  rx_fds_.clear();
}

// The names travel in a control frame right behind the hello: read it now
// if the application asks before anything else moved the stream.
void ShmEndpoint::await_names() const {
  auto* self = const_cast<ShmEndpoint*>(this);
  Guard lock(*self);
  for (int i = 0; i < 1000 && !peer_len_ && !active_ && cm_ == Cm::kEstablished; i++) {
    self->progress_locked();
    if (!peer_len_) usleep(100);
  }
}

int ShmEndpoint::local_name(sockaddr_storage* addr, socklen_t* len) const {
  if (!local_len_) await_names();
  if (!local_len_) return -ENOTCONN;
  *addr = local_;
  *len = local_len_;
  return 0;
}

int ShmEndpoint::peer_name(sockaddr_storage* addr, socklen_t* len) const {
  if (!peer_len_) await_names();
  if (!peer_len_) return -ENOTCONN;
  *addr = peer_;
  *len = peer_len_;
  return 0;
}

}  // namespace ss::prov::shm

// Fuzz target: what an shm peer hands its endpoint (ShmEndpoint): the
// stream's frames and control frames (ring, wake-up, region, names) with
// the descriptors a hostile peer attaches (memfds of any size, sealed or
// not, too many, none), and the entries it publishes in the completion
// ring it was given. The common records are in stream_peer.h; shm's own:
//   tag 5  a memfd: u8 size class, u8 flags (bit 0 sealed, bit 1 two of
//          them); it travels with the next bytes written (SCM_RIGHTS)
//   tag 6  a ring entry: imm, len, stream_seq (u32 each), u8 flags (bit 0:
//          then a u32 taken as the entry's seq instead of the next one)
//   tag 7  u8 what: 0 the endpoint posts a write with immediate (u32 key,
//          u32 address offset, u8 length), else a u64 written at a u16
//          offset of our last memfd (a peer changes shared memory at will)
#include <fcntl.h>
#include <linux/memfd.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <deque>
#include <vector>

#include "core/base/fd_passing.h"
#include "core/prov/shm/ring.h"
#include "core/prov/shm/shm_endpoint.h"
#include "tests/fuzz/stream_peer.h"

namespace {

using ss::prov::shm::RingControl;

class ShmPeer final : public fuzz::StreamPeer {
 public:
  ~ShmPeer() override {
    ep_.reset();
    for (int fd : to_send_) ::close(fd);
    for (int fd : got_fds_) ::close(fd);
    if (ring_) munmap(ring_, ring_len_);
    if (last_map_) munmap(last_map_, last_len_);
  }

 protected:
  void provider_record(int tag, fuzz::Input& in) override {
    if (tag == 5) return make_memfd(in.u8(), in.u8());
    if (tag == 6) return ring_entry(in);
    const uint8_t what = in.u8();
    if (what == 0) return post(in);
    const uint16_t off = static_cast<uint16_t>(in.u32());
    uint64_t v = static_cast<uint64_t>(in.u32()) << 32;
    v |= in.u32();
    if (last_map_ && off + sizeof v <= last_len_)
      memcpy(static_cast<uint8_t*>(last_map_) + off, &v, sizeof v);
  }

  void send_bytes(const uint8_t* b, size_t n) override {
    if (!n) return;
    iovec iov{const_cast<uint8_t*>(b), n};
    const int k = to_send_.size() > 2 ? 2 : static_cast<int>(to_send_.size());
    (void)ss::send_with_fds(peer_fd(), &iov, 1, to_send_.data(), k, MSG_DONTWAIT);
    for (int fd : to_send_) ::close(fd);  // ours closed; the endpoint has its copies
    to_send_.clear();
  }

  // Reads the endpoint's frames; its ring announcement gives us the ring
  // our entries go to.
  void drain() override {
    for (;;) {
      uint8_t buf[4096];
      iovec iov{buf, sizeof buf};
      int fds[ss::kMaxPassedFds], got = 0;
      const ssize_t n =
          ss::recv_with_fds(peer_fd(), &iov, 1, fds, ss::kMaxPassedFds, &got, MSG_DONTWAIT);
      got_fds_.insert(got_fds_.end(), fds, fds + got);
      if (n <= 0) return;
      stream_.insert(stream_.end(), buf, buf + n);
      parse_stream();
    }
  }

 private:
  // The endpoint's frames are its own (well formed): the ring frame names
  // the first descriptor it sent.
  void parse_stream() {
    using namespace ss::prov::util;
    while (stream_.size() - pos_ >= kFrameHeaderSize) {
      FrameHeader h;
      decode_frame(stream_.data() + pos_, &h);
      if (stream_.size() - pos_ < kFrameHeaderSize + h.length) return;
      const uint8_t* payload = stream_.data() + pos_ + kFrameHeaderSize;
      if (h.type == FrameType::kCtrl &&
          (h.flags == ss::prov::shm::kCtrlRing || h.flags == ss::prov::shm::kCtrlRegion) &&
          !got_fds_.empty()) {
        const int fd = got_fds_.front();
        got_fds_.pop_front();
        if (h.flags == ss::prov::shm::kCtrlRing && !ring_ && h.length == 4) {
          memcpy(&ring_entries_, payload, 4);
          ring_len_ = ss::prov::shm::ring_bytes(ring_entries_);
          void* m = mmap(nullptr, ring_len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
          if (m != MAP_FAILED) ring_ = static_cast<RingControl*>(m);
        }
        ::close(fd);
      }
      pos_ += kFrameHeaderSize + h.length;
    }
  }

  void make_memfd(uint8_t size_class, uint8_t flags) {
    const size_t len = size_class < 200 ? size_class * 64u : (size_class - 199u) * 65536u;
    for (int i = 0; i < ((flags & 2) ? 2 : 1); i++) {
      const int fd = memfd_create("fuzz-peer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
      if (fd < 0) return;
      if (ftruncate(fd, static_cast<off_t>(len)) < 0) {
        ::close(fd);
        return;
      }
      if (flags & 1) fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
      if (i == 0 && len) {
        if (last_map_) munmap(last_map_, last_len_);
        last_map_ = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        last_len_ = len;
        if (last_map_ == MAP_FAILED) last_map_ = nullptr;
      }
      to_send_.push_back(fd);
    }
  }

  void ring_entry(fuzz::Input& in) {
    const uint32_t imm = in.u32(), len = in.u32(), stream_seq = in.u32();
    const uint8_t flags = in.u8();
    const uint32_t seq = (flags & 1) ? in.u32() : static_cast<uint32_t>(head_ + 1);
    if (!ring_) drain();
    if (!ring_) return;
    ss::prov::shm::RingEntry& e = ring_->entries[head_ & (ring_entries_ - 1)];
    e.imm = imm;
    e.len = len;
    e.stream_seq = stream_seq;
    e.seq.store(seq, std::memory_order_release);
    head_++;
  }

  void post(fuzz::Input& in) {
    static uint8_t src[256];
    ss::prov::SendWr wr;
    wr.op = ss::prov::Op::kWriteImm;
    wr.rkey = in.u32();
    wr.remote_addr = in.u32();
    wr.sge[0] = {reinterpret_cast<uint64_t>(src), in.u8(), 0};
    wr.num_sge = 1;
    wr.imm = 7;
    wr.inline_data = true;
    ep_->post_send(wr);
  }

  std::vector<int> to_send_;
  std::deque<int> got_fds_;
  std::vector<uint8_t> stream_;
  size_t pos_ = 0;
  RingControl* ring_ = nullptr;
  size_t ring_len_ = 0;
  uint32_t ring_entries_ = 0;
  uint64_t head_ = 0;
  void* last_map_ = nullptr;
  size_t last_len_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t mode = in.u8();
  ShmPeer peer;
  std::unique_ptr<ss::prov::Endpoint> ep;
  if (mode & 1) {
    sockaddr_storage local{};
    sockaddr_in dst{};
    dst.sin_family = local.ss_family = AF_INET;
    ep = ss::prov::shm::ShmEndpoint::make_active(peer.ep_fd(), local, sizeof(sockaddr_in),
                                                 reinterpret_cast<sockaddr*>(&dst), sizeof dst);
    if (ep) peer.endpoint_owns_fd();  // the connecting side closes its socket
  } else {
    const uint8_t* pdata;
    const size_t n = in.take(in.u8() % 64, &pdata);
    ep = ss::prov::shm::ShmEndpoint::make_passive(peer.ep_fd(), pdata, n);
  }
  peer.run(std::move(ep), mode & 1, in);
  return 0;
}

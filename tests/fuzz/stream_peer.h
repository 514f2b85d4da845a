// The fuzzer as the peer of a stream endpoint (core/prov/util: tcp, and shm
// for its stream): the endpoint sits on one end of a socketpair, the
// fuzzer's bytes go into the other, split wherever the input says, and the
// endpoint is driven (poll_cq, cm_progress, arm) after every piece.
//
// The input is a list of records, each a tag byte then its bytes:
//   tag % 8 == 0  raw: u8 n, then n+1 bytes written as they are
//           == 1  a 24-byte frame header, as written except that a peer
//                 knowing our keys (as a real one learns them) may name
//                 them: in a write, an rkey field below 2 becomes the key
//                 of region rkey (and a remote_addr below 2^32 an offset
//                 into it)
//           == 2  the endpoint's waiting protocol: cm_progress, arm,
//                 ack_events
//           == 3  region u8 % 2 deregistered and registered again (a
//                 write may be landing in it)
//           == 4  what the endpoint sent us is read and dropped
//           5..7  the provider's own (shm: a memfd, a ring entry)
// Byte 0 of the input picks the side: bit 0 set, the endpoint connects
// (then waits for our reply); clear, it accepted our hello.
#pragma once
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>

#include "core/prov/connection.h"
#include "core/prov/util/frame.h"

namespace fuzz {

// Consumes the input front to back; reads past the end give zeros.
class Input {
 public:
  Input(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool empty() const { return n_ == 0; }
  uint8_t u8() {
    if (!n_) return 0;
    n_--;
    return *p_++;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = v << 8 | u8();
    return v;
  }
  // Up to `want` bytes; how many there were.
  size_t take(size_t want, const uint8_t** out) {
    const size_t n = want < n_ ? want : n_;
    *out = p_;
    p_ += n;
    n_ -= n;
    return n;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

constexpr int kRegions = 2;
// A small target and one above the direct-read threshold (4 KiB).
constexpr size_t kRegionSize[kRegions] = {256, 96 * 1024};

// One connection under fuzz. A provider's harness creates the endpoint on
// `ep_fd()` (its socketpair end), then calls run().
class StreamPeer {
 public:
  StreamPeer() {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds_) < 0) abort();
  }
  virtual ~StreamPeer() {
    ep_.reset();
    if (fds_[0] >= 0) ::close(fds_[0]);
    ::close(fds_[1]);
  }
  int ep_fd() const { return fds_[0]; }
  // The endpoint owns its descriptor from now on (shm's active side closes it).
  void endpoint_owns_fd() { fds_[0] = -1; }
  int peer_fd() const { return fds_[1]; }

  // Sets the endpoint up, connects or accepts, then plays the records.
  void run(std::unique_ptr<ss::prov::Endpoint> ep, bool active, Input& in) {
    ep_ = std::move(ep);
    if (!ep_) return;
    ss::prov::EndpointAttr attr{};
    attr.sq_size = attr.rq_size = 16;
    attr.max_inline = 64;
    if (ep_->setup(&attr)) return;
    for (int r = 0; r < kRegions; r++) register_region(r);
    static const uint8_t pdata[40] = {1};
    if (active ? ep_->connect(pdata, sizeof pdata) : ep_->accept(pdata, sizeof pdata)) return;
    while (!in.empty()) {
      const uint8_t tag = in.u8();
      switch (tag % 8) {
        case 0: {
          const uint8_t* b;
          const size_t n = in.take(in.u8() + 1u, &b);
          send_bytes(b, n);
          break;
        }
        case 1:
          frame(in);
          break;
        case 2: {
          ss::prov::CmEvent ev;
          ep_->cm_progress(&ev);
          if (ep_->arm() == 0) ep_->ack_events();
          break;
        }
        case 3: {
          const int r = in.u8() % kRegions;
          ep_->dereg_mr(&mr_[r]);
          register_region(r);
          break;
        }
        case 4:
          drain();
          break;
        default:
          provider_record(tag % 8, in);
          break;
      }
      poll();
    }
    // The end of the stream, then whatever the endpoint makes of it.
    ::shutdown(fds_[1], SHUT_WR);
    for (int i = 0; i < 3; i++) poll();
    ss::prov::CmEvent ev;
    ep_->cm_progress(&ev);
    for (int r = 0; r < kRegions; r++) ep_->dereg_mr(&mr_[r]);
    ep_->disconnect();
    drain();
  }

 protected:
  // A provider's records (tags 5..7).
  virtual void provider_record(int tag, Input& in) {
    (void)tag;
    (void)in;
  }
  // Bytes of the stream as the provider's peer writes them (shm attaches
  // descriptors).
  virtual void send_bytes(const uint8_t* b, size_t n) {
    if (n) (void)::send(fds_[1], b, n, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  // What the endpoint sent: read and dropped (shm looks at it).
  virtual void drain() {
    uint8_t buf[4096];
    while (::recv(fds_[1], buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
  }

  std::unique_ptr<ss::prov::Endpoint> ep_;

 private:
  void register_region(int r) {
    static uint8_t mem[kRegions][96 * 1024];
    ep_->reg_mr(mem[r], kRegionSize[r], ss::prov::kAccessLocal | ss::prov::kAccessRemoteWrite,
                &mr_[r]);
  }
  void frame(Input& in) {
    uint8_t h[ss::prov::util::kFrameHeaderSize] = {};
    const uint8_t* b;
    const size_t got = in.take(sizeof h, &b);
    memcpy(h, b, got);
    const uint8_t reserved[2] = {h[2], h[3]};
    ss::prov::util::FrameHeader f;
    ss::prov::util::decode_frame(h, &f);
    const bool write = f.type == ss::prov::util::FrameType::kWrite ||
                       f.type == ss::prov::util::FrameType::kWriteImm;
    if (write && f.rkey < kRegions) {
      const ss::prov::MemoryRegion& mr = mr_[f.rkey];
      f.rkey = mr.rkey;
      if (f.remote_addr >> 32 == 0) f.remote_addr += reinterpret_cast<uint64_t>(mr.addr);
    }
    ss::prov::util::encode_frame(f, h);
    memcpy(h + 2, reserved, 2);  // as the input had them
    send_bytes(h, sizeof h);
  }
  void poll() {
    ss::prov::Completion wc[8];
    ep_->poll_cq(wc, 8);
  }

  int fds_[2];
  ss::prov::MemoryRegion mr_[kRegions] = {};
};

}  // namespace fuzz

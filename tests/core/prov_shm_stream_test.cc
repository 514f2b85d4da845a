// The shm provider's stream as its endpoint reads it: this test plays the
// peer on the other end of a socketpair, writing frames by hand.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/fd_passing.h"
#include "core/prov/shm/ring.h"
#include "core/prov/shm/shm_endpoint.h"
#include "core/prov/util/frame.h"

namespace ss::prov::shm {
namespace {

using util::FrameHeader;
using util::FrameType;

// A memfd of `len` bytes sealed against shrinking, as peers' memory must be.
int sealed_memfd(size_t len) {
  const int fd = memfd_create("ss-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(len)) < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

class ShmStreamPeer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds_));
    static const uint8_t pdata[40] = {1};
    ep_ = ShmEndpoint::make_passive(fds_[0], pdata, sizeof pdata);
    ASSERT_TRUE(ep_);
    EndpointAttr attr{};
    attr.sq_size = attr.rq_size = 16;
    attr.max_inline = 64;
    ASSERT_EQ(0, ep_->setup(&attr));
    ASSERT_EQ(0, ep_->accept(pdata, sizeof pdata));
  }
  // Our ring, which the endpoint waits for before it reports the
  // connection; `then` (whole frames) travels in the same message.
  // `mapped` (optional): the ring as the endpoint writes it.
  void send_ring(const std::vector<uint8_t>& then = {}, RingControl** mapped = nullptr) {
    const uint32_t entries = 64;
    const int ring = sealed_memfd(ring_bytes(entries));
    ASSERT_GE(ring, 0);
    if (mapped) {
      void* m = mmap(nullptr, ring_bytes(entries), PROT_READ | PROT_WRITE, MAP_SHARED, ring, 0);
      ASSERT_NE(MAP_FAILED, m);
      *mapped = static_cast<RingControl*>(m);
    }
    std::vector<uint8_t> b = ctrl_frame(kCtrlRing, &entries, sizeof entries);
    b.insert(b.end(), then.begin(), then.end());
    send_bytes(b, ring);
    ::close(ring);
  }
  // The frames the endpoint has written so far (closing what they carry).
  int frames_sent() {
    std::vector<uint8_t> all;
    for (;;) {
      uint8_t b[4096];
      iovec iov{b, sizeof b};
      int got_fds[8], got = 0;
      const ssize_t n = recv_with_fds(fds_[1], &iov, 1, got_fds, 8, &got, MSG_DONTWAIT);
      for (int i = 0; i < got; i++) ::close(got_fds[i]);
      if (n <= 0) break;
      all.insert(all.end(), b, b + n);
    }
    int frames = 0;
    for (size_t at = 0; at + util::kFrameHeaderSize <= all.size(); frames++) {
      FrameHeader h{};
      util::decode_frame(all.data() + at, &h);
      at += util::kFrameHeaderSize + h.length;
    }
    return frames;
  }
  CmEvent next_event() {
    CmEvent ev = CmEvent::kNone;
    for (int i = 0; i < 100 && ev == CmEvent::kNone; i++) ep_->cm_progress(&ev);
    return ev;
  }

  static std::vector<uint8_t> ctrl_frame(uint8_t type, const void* payload, uint32_t len) {
    std::vector<uint8_t> b(util::kFrameHeaderSize + len);
    util::encode_frame(FrameHeader{FrameType::kCtrl, type, len, 0, 0, 0}, b.data());
    memcpy(b.data() + util::kFrameHeaderSize, payload, len);
    return b;
  }
  // One sendmsg, with `fd` (>= 0) attached.
  void send_bytes(const std::vector<uint8_t>& b, int fd = -1) {
    iovec iov{const_cast<uint8_t*>(b.data()), b.size()};
    ASSERT_EQ(static_cast<ssize_t>(b.size()),
              send_with_fds(fds_[1], &iov, 1, &fd, fd >= 0 ? 1 : 0, MSG_DONTWAIT));
  }

  int fds_[2] = {-1, -1};
  std::unique_ptr<Endpoint> ep_;
};

// A unix stream's read ends at a message carrying descriptors. What the
// peer sent behind it is read in the same look: a caller told "nothing
// yet" would sleep, or a non-blocking send say EAGAIN, while its credit
// waits in the socket.
TEST_F(ShmStreamPeer, FrameBehindADescriptorIsReadInTheSameLook) {
  ASSERT_NO_FATAL_FAILURE(send_ring());
  ASSERT_EQ(CmEvent::kEstablished, next_event());
  const int region = sealed_memfd(4096);
  ASSERT_GE(region, 0);
  uint8_t announce[kCtrlRegionPayload] = {};
  const uint64_t base = 0x10000, len = 4096, offset = 0;
  const uint32_t rkey = 9;
  memcpy(announce, &base, 8);
  memcpy(announce + 8, &len, 8);
  memcpy(announce + 16, &offset, 8);
  memcpy(announce + 24, &rkey, 4);
  send_bytes(ctrl_frame(kCtrlRegion, announce, sizeof announce), region);
  ::close(region);
  const uint32_t imm[2] = {0x1234, 0};
  send_bytes(ctrl_frame(kCtrlImm, imm, sizeof imm));

  EXPECT_EQ(1, ep_->arm()) << "one look at the stream stopped at the descriptor";
  Completion wc[4];
  ASSERT_EQ(1, ep_->poll_cq(wc, 4));
  EXPECT_EQ(WcOp::kRecvImm, wc[0].op);
  EXPECT_EQ(0x1234u, wc[0].imm);
}

// A peer that connects, sends and leaves before the accepting side looked:
// the connection is reported, then its message, then its end (as accept
// then read on Linux), not a failed connect that loses the message.
TEST_F(ShmStreamPeer, MessagesBeforeTheEndComeOnAnAcceptedConnection) {
  const uint32_t imm[2] = {0x55, 0};
  ASSERT_NO_FATAL_FAILURE(send_ring(ctrl_frame(kCtrlImm, imm, sizeof imm)));
  ASSERT_EQ(0, ::shutdown(fds_[1], SHUT_WR));

  EXPECT_EQ(CmEvent::kEstablished, next_event());
  Completion wc[4];
  ASSERT_EQ(1, ep_->poll_cq(wc, 4));
  EXPECT_EQ(0x55u, wc[0].imm);
  EXPECT_EQ(CmEvent::kError, next_event());
  EXPECT_EQ(ECONNRESET, ep_->cm_error());
}

// The memfds an endpoint passes (its ring, its regions) come before any
// message it sends after them: a ring entry counts those frames, so the
// peer takes the descriptors before the message, and a peer out of
// descriptors fails at the connection's first message, never mid-stream.
TEST_F(ShmStreamPeer, ARingEntryWaitsForTheMemoryPassedBeforeIt) {
  RingControl* ring = nullptr;
  ASSERT_NO_FATAL_FAILURE(send_ring({}, &ring));
  ASSERT_EQ(CmEvent::kEstablished, next_event());
  SendWr wr;
  wr.op = Op::kWriteImm;
  wr.imm = 0x77;
  ASSERT_EQ(kPostDone, ep_->post_send(wr));
  const int before = frames_sent();
  ASSERT_GE(before, 2) << "the reply and the endpoint's ring";
  const RingEntry& e = ring->entries[0];
  ASSERT_EQ(1u, e.seq.load());
  EXPECT_EQ(0x77u, e.imm);
  EXPECT_EQ(static_cast<uint32_t>(before), e.stream_seq);
  munmap(ring, ring_bytes(64));
}

}  // namespace
}  // namespace ss::prov::shm

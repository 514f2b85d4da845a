// EndpointRegistrar: a Pool's chunks registered with one connection's
// Endpoint through reg_mr/dereg_mr, keys read back through Buffer::reg(),
// failures passed on, nothing called once the endpoint is let go.
#include <cerrno>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "core/mem/pool.h"
#include "core/prov/endpoint_registrar.h"

namespace ss::prov {
namespace {

// Records registrations; everything else is unused here.
class RecordingEndpoint : public Endpoint {
 public:
  struct Call {
    void* addr;
    size_t len;
    int access;
    uint32_t lkey, rkey;
  };
  std::vector<Call> regs, deregs;
  int fail = 0;  // reg_mr's result when nonzero

  const char* provider_name() const override { return "recording"; }
  uint32_t caps() const override { return 0; }
  int setup(EndpointAttr*) override { return 0; }
  int reg_mr(void* addr, size_t len, int access, MemoryRegion* mr) override {
    if (fail) return fail;
    const uint32_t key = 100 + static_cast<uint32_t>(regs.size());
    *mr = {addr, len, key, key | 0x10000};
    regs.push_back({addr, len, access, mr->lkey, mr->rkey});
    return 0;
  }
  void dereg_mr(MemoryRegion* mr) override {
    deregs.push_back({mr->addr, mr->length, -1, mr->lkey, mr->rkey});
    *mr = MemoryRegion{};
  }
  int connect(const void*, size_t) override { return -ENOTSUP; }
  int accept(const void*, size_t) override { return -ENOTSUP; }
  int reject() override { return 0; }
  int cm_progress(CmEvent*) override { return -EAGAIN; }
  const uint8_t* peer_private_data(size_t* len) const override {
    *len = 0;
    return nullptr;
  }
  int cm_error() const override { return 0; }
  void disconnect() override {}
  int post_send(const SendWr&) override { return -ENOTSUP; }
  int post_recv(uint64_t) override { return -ENOTSUP; }
  int poll_cq(Completion*, int) override { return 0; }
  int arm() override { return 1; }
  int event_fd() const override { return -1; }
  short event_mask() const override { return 0; }
  void ack_events() override {}
  int local_name(sockaddr_storage*, socklen_t*) const override { return -ENOTCONN; }
  int peer_name(sockaddr_storage*, socklen_t*) const override { return -ENOTCONN; }
};

// As librsocket makes a connection buffer: one frame, one chunk.
std::unique_ptr<mem::Pool> one_frame_pool(size_t len) {
  mem::PoolOptions o;
  o.frame_size = len;
  o.frames_per_chunk = 1;
  o.max_chunks = 1;
  std::unique_ptr<mem::Pool> p;
  EXPECT_EQ(mem::Pool::create(o, &p), 0);
  return p;
}

TEST(EndpointRegistrar, ChunkRegisteredWithItsAccessAndKeysReachTheBuffer) {
  RecordingEndpoint ep;
  EndpointRegistrar r(kAccessRemoteWrite, &ep);
  {
    auto pool = one_frame_pool(8192);
    ASSERT_TRUE(pool);
    const int idx = pool->add_registrar(&r);
    ASSERT_GE(idx, 0);
    ASSERT_EQ(ep.regs.size(), 1u);
    EXPECT_EQ(ep.regs[0].addr, pool->chunk_base(0));
    EXPECT_EQ(ep.regs[0].len, pool->chunk_bytes());
    EXPECT_EQ(ep.regs[0].access, kAccessRemoteWrite);
    mem::Buffer b = pool->get();
    ASSERT_TRUE(b);
    EXPECT_EQ(b.data(), pool->chunk_base(0));
    EXPECT_EQ(b.lkey(idx), ep.regs[0].lkey);
    EXPECT_EQ(b.rkey(idx), ep.regs[0].rkey);
    EXPECT_TRUE(ep.deregs.empty());
  }
  // The pool's end deregisters exactly what was registered.
  ASSERT_EQ(ep.deregs.size(), 1u);
  EXPECT_EQ(ep.deregs[0].addr, ep.regs[0].addr);
  EXPECT_EQ(ep.deregs[0].len, ep.regs[0].len);
  EXPECT_EQ(ep.deregs[0].lkey, ep.regs[0].lkey);
  EXPECT_EQ(ep.deregs[0].rkey, ep.regs[0].rkey);
}

TEST(EndpointRegistrar, RegMrFailureFailsAddRegistrar) {
  RecordingEndpoint ep;
  ep.fail = -ENOMEM;
  EndpointRegistrar r(kAccessLocal, &ep);
  auto pool = one_frame_pool(4096);
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool->add_registrar(&r), -ENOMEM);
  pool.reset();
  EXPECT_TRUE(ep.deregs.empty()) << "nothing registered, nothing to undo";
}

TEST(EndpointRegistrar, NoEndpointIsNotConnected) {
  EndpointRegistrar r(kAccessLocal);
  auto pool = one_frame_pool(4096);
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool->add_registrar(&r), -ENOTCONN);
}

// An endpoint kept for another holder (after a fork) is not ours to call:
// once let go, the pool's end calls nothing on it.
TEST(EndpointRegistrar, LetGoEndpointIsNotCalled) {
  RecordingEndpoint ep;
  EndpointRegistrar r(kAccessRemoteWrite, &ep);
  auto pool = one_frame_pool(4096);
  ASSERT_TRUE(pool);
  ASSERT_GE(pool->add_registrar(&r), 0);
  r.set_endpoint(nullptr);
  pool.reset();
  EXPECT_EQ(ep.regs.size(), 1u);
  EXPECT_TRUE(ep.deregs.empty());
}

}  // namespace
}  // namespace ss::prov

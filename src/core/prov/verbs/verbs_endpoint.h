// The verbs provider: an rsocket connection over rdma_cm and an RC queue
// pair, as upstream librdmacm's rsockets sets it up (connection data as CM
// private data, writes with immediate, receives without SGEs, RNR retry 7;
// on iWARP devices write + 4-byte send, see msg_send.h), so either end may
// be a stock librdmacm peer.
#pragma once
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/prov/connection.h"
#include "core/prov/verbs/msg_send.h"
#include "core/res/mr_cache.h"

namespace ss::prov::verbs {

class VerbsEndpoint final : public Endpoint {
 public:
  // Starts resolving `dst` (address, then route unless RDMA_ROUTE path
  // records are given in `route`); resolve_progress() reports the outcome
  // (-ENODEV when no RDMA device leads to `dst`). The rsocket's kernel
  // socket `sock` lends its bound address, if any. `off_stream`
  // (librspreload): `sock`'s port may be a plain TCP program's, so an
  // iWARP device, whose rdma_cm connect is a TCP connection to that very
  // port with MPA's bytes on it, is refused (-ENOTSUP) once the address
  // resolves to one, before anything is sent.
  static int make_active(int sock, const sockaddr* dst, socklen_t len, const void* route,
                         size_t route_len, bool off_stream, std::unique_ptr<Endpoint>* out);
  // For a connection request taken from a listener: `id` (whose events are
  // all acknowledged) moves to a channel of its own. nullptr on failure
  // (the id is destroyed, which rejects the peer; errno says why). `peer_ird`: the
  // request's initiator_depth, the reads the peer will answer.
  static std::unique_ptr<Endpoint> make_passive(rdma_cm_id* id, const void* pdata, size_t len,
                                                uint8_t peer_ird);

  ~VerbsEndpoint() override;

  const char* provider_name() const override { return "verbs"; }
  uint32_t caps() const override;
  int resolve_progress() override;
  int setup(EndpointAttr* attr) override;
  int reg_mr(void* addr, size_t len, int access, MemoryRegion* mr) override;
  void dereg_mr(MemoryRegion* mr) override;
  int connect(const void* pdata, size_t len) override;
  int accept(const void* pdata, size_t len) override;
  int reject() override;
  int cm_progress(CmEvent* ev) override;
  const uint8_t* peer_private_data(size_t* len) const override;
  int cm_error() const override { return cm_err_; }
  void disconnect() override;
  int post_send(const SendWr& wr) override;
  int post_recv(uint64_t wr_id) override;
  int poll_cq(Completion* wc, int max) override;
  int arm() override;
  int event_fd() const override { return epfd_; }
  short event_mask() const override { return POLLIN; }
  void ack_events() override;
  int local_name(sockaddr_storage* addr, socklen_t* len) const override;
  int peer_name(sockaddr_storage* addr, socklen_t* len) const override;
  int set_async_progress(bool) override { return 0; }  // the device places writes
  int route(void* buf, size_t* len) const override;
  void confirm_first_message() override;

 private:
  VerbsEndpoint() = default;
  int open_channel();
  // Starts the current resolution step (address or route); 0 or -errno.
  int start_resolve_step();
  // Handles one event of the resolution; 0, or -errno when it failed.
  int on_resolve_event(const rdma_cm_event* e);
  int conn_param(const void* pdata, size_t len, rdma_conn_param* p);
  // Moves completions into stash_ (arm's look-ahead); count moved.
  int poll_into_stash_locked();
  int poll_device(Completion* wc, int max);
  // false when the completion is not one the engine sees (the write half
  // of an iWARP message).
  bool translate(const ibv_wc& in, Completion* out);
  bool translate_msg_send(const ibv_wc& in, Completion* out);
  void fail_protocol(const char* why, Completion* out);
  void save_private_data(const rdma_cm_event* ev);
  // Before an iWARP disconnect: waits (bounded) until the peer has
  // everything we sent (see MsgSend::post_fence); other completions are
  // stashed for the engine.
  void fence_delivery_locked();
  // Posts the fence and waits (at most kFenceMs) for its answer, stashing
  // other completions; with `nudge`, zero-length writes follow it while
  // unanswered. true when answered.
  bool await_fence_locked(bool nudge);
  // Still connected: no loss event, reading those pending (a peer that
  // closed its TCP connection shows as DISCONNECTED).
  bool connection_live_locked();
  // Applies one CM event to the endpoint's state; what the engine must
  // see at once (established, rejected), else kNone.
  CmEvent on_cm_event_locked(const rdma_cm_event* e);

  rdma_event_channel* ch_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* comp_ = nullptr;
  ibv_cq* cq_ = nullptr;
  bool qp_ = false;
  bool holds_async_ = false;
  bool passive_ = false;
  int epfd_ = -1;
  uint32_t qp_inline_ = 0;
  // Set on iWARP devices: messages go as write + send.
  std::unique_ptr<MsgSend> msg_send_;
  int write_half_err_ = 0;  // a failed write half, reported with its send
  uint8_t peer_ird_ = 0;    // passive side: reads the peer answers
  bool can_fence_ = false;  // iWARP with an ORD of 1 or more
  bool established_ = false;
  // iWARP, active side: our connect still awaits its reply, and until it
  // comes the kernel blocks a disconnect or destroy of the id (cm_reaper.h).
  bool reply_awaited_ = false;

  // Active side's resolution: address, then route, then ready.
  enum class Phase { kAddr, kRoute, kReady } phase_ = Phase::kReady;
  int resolve_tries_ = 0;
  int resolve_err_ = 0;
  bool has_src_ = false;
  bool off_stream_ = false;  // make_active's: no iWARP device
  sockaddr_storage src_{}, dst_{};
  std::vector<uint8_t> route_;

  mutable std::mutex mu_;  // CM events, the stash, arming
  std::vector<Completion> stash_;
  std::atomic<int> stashed_{0};
  uint8_t peer_pdata_[kMaxPrivateData] = {};
  size_t peer_len_ = 0;
  int cm_err_ = 0;
  bool disconnected_ = false;
  // A loss event waits until what arrived before it has been polled.
  CmEvent held_event_ = CmEvent::kNone;

  struct HeldMr {
    MemoryRegion mr;
    res::MrCache::Entry* entry;
  };
  std::mutex mr_mu_;
  std::vector<HeldMr> mrs_;
};

}  // namespace ss::prov::verbs

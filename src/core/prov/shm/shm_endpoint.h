// The shm provider's endpoint: peers on one host. The connection's unix
// stream socket (the util stream, util/frame.h) carries the handshake, the
// memfds of registered memory (SCM_RIGHTS, only to this connected and
// credential-checked peer) and any write whose target the sender cannot
// map. Writes into mapped peer memory are a memcpy; immediates travel in a
// completion ring in shared memory. A receiver about to sleep says so in
// its ring and sleeps on the stream socket; the sender then wakes it with a
// frame on that stream. Each memfd is closed as soon as it is passed or
// mapped: a connection holds its stream socket and nothing else.
#pragma once
#include <deque>
#include <memory>
#include <vector>

#include "core/mem/region.h"
#include "core/prov/shm/ring.h"
#include "core/prov/util/stream_endpoint.h"

namespace ss::prov::shm {

// Control frames on the stream (FrameType::kCtrl, in the header's flags).
enum CtrlType : uint8_t {
  kCtrlRing = 1,    // fd: ring memfd; payload: u32 entries
  kCtrlWake = 2,    // nothing: wakes the ring's owner, which said it sleeps
  kCtrlRegion = 3,  // fd: memfd; payload: base u64, len u64, offset u64, rkey u32
  kCtrlAddr = 4,    // payload: u8 len, sockaddr of the sender's rsocket
  // The sender no longer uses the receiver's memory (its regions, its
  // ring): what it pushed into that ring came before this frame, and its
  // writes and immediates come on the stream from now on. kCtrlDetach
  // asks the receiver to do the same and answer kCtrlDetached (an exec
  // on the sender's side is about to take its mappings away).
  kCtrlDetach = 5,    // nothing
  kCtrlDetached = 6,  // nothing
  // payload: u32 imm, u32 len: a receive completion in stream order (an
  // immediate that waited for the ring when the sender detached; later
  // ones travel in kWriteImm frames).
  kCtrlImm = 7,
};
constexpr uint32_t kCtrlRegionPayload = 28;

// The hello tag is a wire value (util/frame.h): 3 since wake-ups travel on
// the stream (1, retired, passed an eventfd): a peer of the other kind is
// refused at the hello, so auto falls back to tcp instead of hanging.
inline constexpr util::StreamProto kProto{"shm", 3, 4096};

class ShmEndpoint final : public util::StreamEndpoint {
 public:
  // Active: `ufd` is a unix stream socket connecting to the peer's
  // rendezvous; `local`/`peer` are the rsocket names reported to the peer.
  static std::unique_ptr<ShmEndpoint> make_active(int ufd, const sockaddr_storage& local,
                                                  socklen_t local_len, const sockaddr* dst,
                                                  socklen_t dst_len);
  static std::unique_ptr<Endpoint> make_passive(int ufd, const uint8_t* pdata, size_t len);
  // After exec (ConnectionOps::restore): the connection from what
  // save_for_exec wrote, on the stream alone; nullptr when the state is
  // not one.
  static std::unique_ptr<Endpoint> make_restored(const uint8_t* state, size_t len,
                                                 const Renumber& renumber);
  ~ShmEndpoint() override;

  uint32_t caps() const override;
  int setup(EndpointAttr* attr) override;
  int reg_mr(void* addr, size_t len, int access, MemoryRegion* mr) override;
  void dereg_mr(MemoryRegion* mr) override;
  int connect(const void* pdata, size_t len) override;
  int accept(const void* pdata, size_t len) override;
  int post_send(const SendWr& wr) override;
  int poll_cq(Completion* wc, int max) override;
  int cm_progress(CmEvent* ev) override;
  void disconnect() override;
  int arm() override;
  void ack_events() override;
  int local_name(sockaddr_storage* addr, socklen_t* len) const override;
  int peer_name(sockaddr_storage* addr, socklen_t* len) const override;
  // In a fork child: the stream's reset, and the parent's sleepers
  // (threads between arm() and ack_events()) no longer counted.
  void fork_child() override;
  void drop_in_fork_child(int fd) override;
  // exec: both ends stop using each other's memory (kCtrlDetach; the
  // peer's answer or, where it honours ring.h's gate, none), then the
  // stream's state, the names and the unix socket, which the exec keeps.
  int prepare_exec() override;
  bool save_for_exec(std::vector<uint8_t>* out, std::vector<int>* keep) const override;

 protected:
  int on_ctrl_frame(const util::FrameHeader& h, const uint8_t* payload) override;
  // The rings' positions and what waits to enter them (shm_endpoint.cc).
  bool save_more(std::vector<uint8_t>* out) const override;
  bool load_more(const uint8_t* in, size_t len) override;
  ssize_t rx_read(void* buf, size_t len, bool* cut) override;
  bool shares_memory(int access) const override {
    return !detached_tx_ && (access & kAccessRemoteWrite);
  }

 private:
  // Logs why a control frame is refused, closes its fd (if any): -EPROTO.
  int refuse_ctrl(const char* why, int fd);
  // A peer memfd map_peer refused (rc): ENOMEM passes through, the rest
  // is the peer's fault (EPROTO). Closes fd.
  int unmappable(const char* what, int rc, int fd);
  struct PeerRegion {
    uint32_t rkey;
    uint64_t base;  // the owner's address
    uint64_t len;
    uint8_t* map;  // our mapping of [offset, offset+len)
    void* map_base;
    size_t map_len;
  };
  struct Announce {
    uint32_t rkey;
    void* addr;
    size_t len;
  };
  struct PendingImm {
    uint32_t imm, len, stream_seq;
  };

  ShmEndpoint(int ufd, bool active);
  void send_announcements();
  void announce_region(const Announce& a);
  uint8_t* resolve_peer(uint32_t rkey, uint64_t addr, uint32_t len) const;
  void push_imm(uint32_t imm, uint32_t len, uint32_t stream_seq);
  void flush_imms();
  // Ring entries as receive completions: into `out` (at most `max`), or
  // all of them into cq_ when `out` is null. Returns how many went to `out`.
  // `may_progress`: an entry behind stream frames not yet read may read
  // them (not from inside the stream's own parsing).
  int drain_ring(Completion* out, int max, bool may_progress = true);
  void kick_peer();
  void await_names() const;
  // This end stops using the peer's memory: waiting immediates go on the
  // stream (kCtrlImm), the peer's regions and ring are let go of.
  void detach_tx();
  // Around a write into the peer's memory (ring.h's gate): gate_in is
  // false once detached, and detaches when the peer asked to be left.
  bool gate_in();
  void gate_out();
  // The peer stopped using ours: what it pushed into our ring is taken
  // (into cq_, ahead of anything the stream brings after), and the ring
  // is no longer read.
  void detach_rx();
  void queue_imm_frame(uint32_t imm, uint32_t len);

  std::unique_ptr<mem::Region> rx_ring_region_;
  uint32_t rx_ring_entries_ = 0;
  RingReader rx_ring_;
  void* tx_ring_map_ = nullptr;
  size_t tx_ring_len_ = 0;
  RingWriter tx_ring_;
  std::deque<PendingImm> pending_imms_;
  std::vector<PeerRegion> peer_regions_;
  std::vector<Announce> to_announce_;
  bool announced_ = false;
  std::deque<int> rx_fds_;  // received with SCM_RIGHTS, consumed in frame order
  unsigned idle_polls_ = 0;
  int sleepers_ = 0;  // threads between arm() and ack_events()
  // Stream position of our latest slow-path write or passed memfd: a ring
  // entry is placed only after the peer has read the stream that far, so a
  // receiver out of descriptors fails at the first message, not mid-stream.
  uint32_t last_slow_frame_ = 0;
  sockaddr_storage local_{}, peer_{};
  socklen_t local_len_ = 0, peer_len_ = 0;
  bool detached_tx_ = false;   // detach_tx() ran: everything we send is on the stream
  bool detached_rx_ = false;   // detach_rx() ran: everything we get is on the stream
  bool detach_asked_ = false;  // prepare_exec sent kCtrlDetach
};

}  // namespace ss::prov::shm

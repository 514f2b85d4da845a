// An Endpoint over one kernel stream socket, the base of the stream
// providers (tcp; shm for its handshake and slow path): the connection
// handshake, the write/write-with-immediate operations and their
// completions are all frames (frame.h) on that socket. The receiver places
// each write straight into the registered target after checking it. A
// provider adds what is its own by overriding; nothing here asks which
// provider it serves.
#pragma once
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/base/fifo.h"
#include "core/prov/connection.h"
#include "core/prov/util/frame.h"
#include "core/prov/util/region_table.h"

namespace ss::prov::util {

class StreamEndpoint : public Endpoint {
 public:
  ~StreamEndpoint() override;

  const char* provider_name() const override { return proto_.name; }
  uint32_t caps() const override;
  int setup(EndpointAttr* attr) override;
  int reg_mr(void* addr, size_t len, int access, MemoryRegion* mr) override;
  void dereg_mr(MemoryRegion* mr) override;
  int connect(const void* pdata, size_t len) override;
  int accept(const void* pdata, size_t len) override;
  int reject() override;
  int cm_progress(CmEvent* ev) override;
  const uint8_t* peer_private_data(size_t* len) const override;
  int cm_error() const override { return error_; }
  void disconnect() override;
  int post_send(const SendWr& wr) override;
  int post_recv(uint64_t) override { return 0; }
  int poll_cq(Completion* wc, int max) override;
  int arm() override;
  int event_fd() const override { return async_.joinable() ? notify_fd_ : fd_; }
  short event_mask() const override;
  void ack_events() override;
  int descriptor_fd() const override { return active_ ? -1 : fd_; }
  int stream_fd() const override { return fd_; }
  int set_async_progress(bool on) override;
  int local_name(sockaddr_storage* addr, socklen_t* len) const override;
  int peer_name(sockaddr_storage* addr, socklen_t* len) const override;
  // In a fork child: mu_ and the region table's lock made free (the
  // async-progress thread holds them while it moves the stream), and that
  // thread forgotten with its eventfds (the parent's: our drains would eat
  // its wake-ups): the child's calls move the stream themselves, as before
  // riomap, and wait on the socket.
  void fork_child() override;
  void drop_in_fork_child(int fd) override;
  // Between frames, nothing queued either way, no progress thread: the
  // stream's counters and the bytes of a frame not yet whole
  // (stream_handover.cc).
  bool save_handover(std::vector<uint8_t>* out) const override;
  bool load_handover(const uint8_t* in, size_t len) override;
  // riomap's progress thread moves the stream without the caller's lock:
  // no exec crossing then (-EBUSY).
  int prepare_exec() override { return async_.joinable() ? -EBUSY : 0; }
  int reserve_keys(uint32_t key) override;
  int alias_mr(const MemoryRegion& now, uint32_t wire_key, uint64_t wire_addr, size_t len) override;

 protected:
  // What a provider's own hand-over adds after the stream's (`in` past it).
  virtual bool save_more(std::vector<uint8_t>* out) const {
    (void)out;
    return true;
  }
  virtual bool load_more(const uint8_t* in, size_t len) {
    (void)in;
    return len == 0;
  }

  enum class Cm { kIdle, kConnecting, kAwaitReply, kAwaitAccept, kEstablished, kClosed, kFailed };
  // A descriptor travelling with a frame (SCM_RIGHTS): the frame owns it
  // and closes it once the kernel took it, or when the frame is dropped,
  // so it holds a slot of our descriptor limit no longer than that.
  class PassedFd {
   public:
    explicit PassedFd(int fd = -1) : fd_(fd) {}
    PassedFd(PassedFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    PassedFd& operator=(PassedFd&& o) noexcept {
      std::swap(fd_, o.fd_);
      return *this;
    }
    ~PassedFd() { reset(); }
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }  // the caller's now
    void reset();

   private:
    int fd_;
  };
  struct PendingSend {
    uint8_t header[kFrameHeaderSize];
    iovec iov[3];
    int iovcnt;
    size_t remaining;
    std::vector<uint8_t> owned;  // copy of an inline source that did not go out at once
    uint64_t wr_id;
    bool signal;       // produces a send completion
    PassedFd pass_fd;  // sent with the first byte, then closed
  };

  // Active: `fd` is a non-blocking stream socket; connect() starts the
  // kernel connect to `dst` (set_destination) unless none was set (already
  // connected). Passive (from a StreamListener): `fd` is connected and the
  // hello has been read: init_passive() takes its private data.
  StreamEndpoint(const StreamProto& proto, int fd, bool active);
  // false when `len` does not fit a sockaddr_storage.
  bool set_destination(const sockaddr* dst, socklen_t len);
  void init_passive(const uint8_t* pdata, size_t pdata_len);
  // Queues one frame; `pass_fd` (>= 0) travels with it as SCM_RIGHTS and
  // is the frame's from now on (closed once sent, or with the frame).
  int queue_frame(const FrameHeader& h, const Sge* sge, int nsge, uint64_t wr_id, bool signal,
                  bool copy_source, int pass_fd = -1);
  // Whether this provider hands memory registered with `access` to its
  // peer (then the memory's memfd is left for it: mem::take_backing);
  // otherwise registering closes the memfd, which nobody will map.
  virtual bool shares_memory(int access) const {
    (void)access;
    return false;
  }
  // Hooks for providers built on the stream (shm).
  virtual int on_ctrl_frame(const FrameHeader& h, const uint8_t* payload);
  // Reads what the stream has, without waiting. `*cut` says a short read
  // may not mean an empty stream (a unix stream's read ends at a message
  // carrying descriptors).
  virtual ssize_t rx_read(void* buf, size_t len, bool* cut);
  virtual void on_established() {}
  void flush_sends();
  // One sendmsg of what is left of `p`; advances it. The sendmsg result.
  ssize_t send_pending(PendingSend& p);
  void progress_rx();
  bool parse_rx();
  void fail(int err, Cm state);
  void progress_locked();
  // The pending connection event, without progressing the stream.
  int cm_report_locked(CmEvent* ev);
  void async_loop();

  const StreamProto& proto_;
  const int fd_;
  const bool active_;
  sockaddr_storage dst_{};
  socklen_t dst_len_ = 0;
  Cm cm_ = Cm::kIdle;
  bool cm_reported_ = false;
  // Failed while established and not yet reported so: the engine hears of
  // the connection first, and what the peer sent before its end with it.
  bool owes_established_ = false;
  int error_ = 0;
  uint8_t peer_pdata_[kMaxPrivateData] = {};
  size_t peer_pdata_len_ = 0;

  RegionTable regions_;
  std::deque<PendingSend> sendq_;
  Fifo<Completion> cq_;
  size_t max_cq_ = 4 * 0xFFFE;

  // Receive staging (proto_.rx_staging bytes): frames are parsed out of
  // it; large payloads go straight to their target.
  size_t rx_size_;
  std::unique_ptr<uint8_t[]> rx_buf_;
  size_t rx_begin_ = 0, rx_end_ = 0;
  bool rx_in_payload_ = false;
  bool sends_lost_ = false;       // a send found the peer gone (EPIPE): ours went unread
  bool rx_expect_large_ = false;  // the last header announced a direct-read payload
  FrameHeader rx_hdr_{};
  uint8_t* rx_dst_ = nullptr;
  uint32_t rx_done_ = 0;
  uint8_t rx_ctrl_[kMaxCtrlPayload];
  uint64_t rx_frames_ = 0;  // frames fully received
  uint64_t tx_frames_ = 0;  // frames queued

  // The lock serialises the application's calls with the async-progress
  // thread, which always takes it. The application's calls are already
  // serialised by their rsocket (provider.h), so they take it only while
  // that thread exists: it is started and joined from such a call.
  std::recursive_mutex mu_;
  class Guard {
   public:
    explicit Guard(StreamEndpoint& ep) : mu_(ep.async_.joinable() ? &ep.mu_ : nullptr) {
      if (mu_) mu_->lock();
    }
    ~Guard() {
      if (mu_) mu_->unlock();
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    std::recursive_mutex* mu_;
  };
  // Async progress: the thread places writes and queues completions; the
  // application then sleeps on notify_fd_, written when it armed.
  std::thread async_;
  std::atomic<bool> async_stop_{false};
  int async_wake_fd_ = -1;
  int notify_fd_ = -1;
  bool armed_ = false;
  void notify_locked();
  void kick_async();
};

}  // namespace ss::prov::util

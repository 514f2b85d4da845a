// The connection-provider interface: the small set of RDMA-like operations
// the rsocket protocol engine is written against (one-sided writes, writes
// with a 32-bit immediate, completions, connection management with private
// data). Providers: verbs (rdma-core), shm (same host), tcp (kernel TCP).
// Every call returns 0 / a count, or -errno; nothing throws.
#pragma once
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ss::prov {

// What a provider can do; a test checks the flags against behaviour.
enum Cap : uint32_t {
  kCapWrite = 1u << 0,       // plain one-sided write (receiver not notified)
  kCapWriteImm = 1u << 1,    // write carrying an immediate that completes at the receiver
  kCapInline = 1u << 2,      // SendWr::inline_data honoured: source reusable on return
  kCapRoute = 1u << 3,       // path records (SOL_RDMA RDMA_ROUTE)
  kCapRecvWr = 1u << 4,      // each immediate consumes a posted receive (verbs); else post_recv is a no-op
  kCapAsyncPlace = 1u << 5,  // can place writes while the application is not calling in
  kCapSameHost = 1u << 6,    // peers must share this host
  kCapCopyOnPost = 1u << 7,  // a post with inline_data copies (or sends) its source at
                             // once, whatever its size: any size may be posted straight
                             // from user memory
  kCapUnchunked = 1u << 8,   // the peer is always Slipstream and a post is one copy:
                             // a write may fill a whole published buffer at once
                             // (no 64 KiB rsocket chunks, no small-first ramp)
  kCapNoWriteLen = 1u << 9,  // a receive completion's byte_len is not the length of the
                             // write it announces (iWARP: a 4-byte send follows the
                             // write); the engine learns from memory what was written
  kCapActiveSpeaksFirst = 1u << 10,  // the accepting side must not send before the
                                     // connecting side's first message (iWARP's MPA
                                     // without ready-to-receive: siw fails a connect
                                     // whose reply has data behind it); the connecting
                                     // side sends one as soon as it is connected
};

enum class Kind : int { kAuto = 0, kShm = 1, kTcp = 2, kVerbs = 3 };
const char* kind_name(Kind kind);

enum Access : int { kAccessLocal = 0, kAccessRemoteWrite = 1 };

struct MemoryRegion {
  void* addr = nullptr;
  size_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

struct Sge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

enum class Op : uint8_t { kWrite, kWriteImm };

struct SendWr {
  uint64_t wr_id = 0;
  Op op = Op::kWrite;
  Sge sge[2] = {};
  int num_sge = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;          // host order; the provider owns the wire order
  bool inline_data = false;  // caller may reuse the source once post_send returns
};

enum class WcOp : uint8_t { kSend, kRecvImm };

// post_send: done already, no completion will come (see Endpoint::post_send).
constexpr int kPostDone = 1;

struct Completion {
  uint64_t wr_id;
  int status;  // 0, or a positive errno (EIO: transport error, ECONNRESET: flushed)
  WcOp op;
  uint32_t imm;  // host order (kRecvImm)
  uint32_t byte_len;
};

struct EndpointAttr {
  uint32_t sq_size;
  uint32_t rq_size;
  uint32_t max_inline;
};

enum class CmEvent { kNone, kEstablished, kRejected, kDisconnected, kError };

constexpr size_t kMaxPrivateData = 56;

// One connection: a queue pair with its completion queue and its CM state.
// The caller serialises calls on one Endpoint (the rsocket engine makes
// them under its socket's lock); a provider locks only against threads of
// its own.
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual Kind kind() const = 0;
  // Final once setup() has returned (a device may decide some).
  virtual uint32_t caps() const = 0;

  // An active endpoint may still be finding its peer (verbs: address and
  // route resolution) when it is created: 0 once setup() may run, -EAGAIN
  // meanwhile (wait with arm()/event_fd() as for completions), else -errno.
  virtual int resolve_progress() { return 0; }

  // Queue sizes: called once before connect/accept; attr gets granted values.
  virtual int setup(EndpointAttr* attr) = 0;
  // Memory the peer may write (kAccessRemoteWrite) is exposed to this
  // connection only; the receiver checks every key, offset and length.
  virtual int reg_mr(void* addr, size_t len, int access, MemoryRegion* mr) = 0;
  virtual void dereg_mr(MemoryRegion* mr) = 0;

  // Connection management. connect/accept start the exchange of private
  // data; cm_progress reports its outcome without blocking (-EAGAIN: none yet).
  virtual int connect(const void* pdata, size_t len) = 0;
  virtual int accept(const void* pdata, size_t len) = 0;
  virtual int reject() = 0;
  virtual int cm_progress(CmEvent* ev) = 0;
  virtual const uint8_t* peer_private_data(size_t* len) const = 0;
  // Positive errno behind a kRejected/kError event (ECONNREFUSED, ETIMEDOUT...).
  virtual int cm_error() const = 0;
  // Flushes the queue pair and tells the peer; idempotent.
  virtual void disconnect() = 0;
  // The connecting side under kCapActiveSpeaksFirst, right after its first
  // message: returns (bounded) once the peer has taken it, doing what the
  // transport needs for that (verbs: siw can strand it unread).
  virtual void confirm_first_message() {}

  // Data path. post_send returns kPostDone when the work request finished
  // at post time (the bytes are where they were going): no completion
  // follows for it, the caller accounts for it at once.
  virtual int post_send(const SendWr& wr) = 0;
  virtual int post_recv(uint64_t wr_id) = 0;
  virtual int poll_cq(Completion* wc, int max) = 0;

  // Waiting: arm(), then poll(2) event_fd() for event_mask(); after poll
  // returns (for whatever reason) ack_events() exactly once, then run
  // poll_cq()/cm_progress() again. arm() returns 1 when work is already
  // pending and the caller must not sleep (then no ack_events()). Several
  // threads may wait at once.
  virtual int arm() = 0;
  virtual int event_fd() const = 0;
  virtual short event_mask() const = 0;
  virtual void ack_events() = 0;

  // Socket names of the connection (AF_INET/AF_INET6), for rgetsockname/rgetpeername.
  virtual int local_name(sockaddr_storage* addr, socklen_t* len) const = 0;
  virtual int peer_name(sockaddr_storage* addr, socklen_t* len) const = 0;

  // The fd that names an accepted connection (its rsocket descriptor); -1
  // for active endpoints, which keep the descriptor the application made.
  virtual int descriptor_fd() const = 0;

  // Closes the rsocket's descriptor `fd` (the kernel socket it was named
  // by), in whatever way keeps data already sent deliverable.
  virtual void close_descriptor(int fd) = 0;

  // Places incoming writes even while the application is not calling in
  // (memory read without notification, e.g. riomap targets).
  virtual int set_async_progress(bool on) = 0;

  // The connection's path records as struct ibv_path_data entries (SOL_RDMA
  // RDMA_ROUTE); *len in: buffer size, out: bytes written. Providers
  // without kCapRoute have none.
  virtual int route(void* buf, size_t* len) const {
    (void)buf;
    (void)len;
    return -ENOTSUP;
  }
};

// A passive endpoint factory bound to a listening rsocket.
class Listener {
 public:
  virtual ~Listener() = default;
  // Readable when get_request() may return a connection request.
  virtual int fd() const = 0;
  // A request whose peer private data is ready (-EAGAIN: none; -EMFILE or
  // -ENFILE: a connection waits that no descriptor is left to take).
  virtual int get_request(std::unique_ptr<Endpoint>* ep) = 0;
};

}  // namespace ss::prov

// The vocabulary of connection providers: capability flags, memory
// regions, work requests, completions and CM events, shared by the
// interface (connection.h), the providers and the engine written against
// them. registry.h says which providers exist and picks one. Every call
// returns 0 / a count, or -errno; nothing throws.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ss::prov {

// What a provider can do; a test checks the flags against behaviour.
enum Cap : uint32_t {
  kCapWrite = 1u << 0,     // plain one-sided write (receiver not notified)
  kCapWriteImm = 1u << 1,  // write carrying an immediate that completes at the receiver
  kCapInline = 1u << 2,    // SendWr::inline_data honoured: source reusable on return
  kCapRoute = 1u << 3,     // path records (SOL_RDMA RDMA_ROUTE)
  kCapRecvWr =
      1u << 4,  // each immediate consumes a posted receive (verbs); else post_recv is a no-op
  kCapAsyncPlace = 1u << 5,          // can place writes while the application is not calling in
  kCapSameHost = 1u << 6,            // peers must share this host
  kCapCopyOnPost = 1u << 7,          // a post with inline_data copies (or sends) its source at
                                     // once, whatever its size: any size may be posted straight
                                     // from user memory
  kCapUnchunked = 1u << 8,           // the peer is always Slipstream and a post is one copy:
                                     // a write may fill a whole published buffer at once
                                     // (no 64 KiB rsocket chunks, no small-first ramp)
  kCapNoWriteLen = 1u << 9,          // a receive completion's byte_len is not the length of the
                                     // write it announces (iWARP: a 4-byte send follows the
                                     // write); the engine learns from memory what was written
  kCapActiveSpeaksFirst = 1u << 10,  // the accepting side must not send before the
                                     // connecting side's first message (iWARP's MPA
                                     // without ready-to-receive: siw fails a connect
                                     // whose reply has data behind it); the connecting
                                     // side sends one as soon as it is connected
  kCapForkCopies = 1u << 11,         // a fork child's copy of the connection works on its own
                                     // (kernel streams, shared memory): either process may use
                                     // it once the other dropped its copy. Without it (verbs)
                                     // the connection stays with the process that made it
};

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

// Private data a connection's handshake carries, at most: rdma_cm's bound
// for RC, which every connection provider honours so one engine runs on all.
constexpr size_t kMaxPrivateData = 56;

}  // namespace ss::prov

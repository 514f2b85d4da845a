// Wire format of the stream providers (tcp, shm): every operation is a
// 24-byte big-endian header, optionally followed by `length` payload bytes.
#pragma once
#include <endian.h>

#include <cstdint>
#include <cstring>

namespace ss::prov::util {

enum class FrameType : uint8_t {
  kHello = 1,       // active -> passive: private data; flags = the provider's hello_tag
  kHelloReply = 2,  // passive -> active: private data; flags = 0 accept, 1 reject
  kWrite = 3,       // one-sided write into [remote_addr, +length) of rkey
  kWriteImm = 4,    // the same, then a receive completion carrying imm
  kCtrl = 5,        // provider-specific control (flags = subtype), payload <= kMaxCtrlPayload
};

constexpr size_t kMaxCtrlPayload = 128;

constexpr uint32_t kHelloMagic = 0x53535253;  // "SSRS"
constexpr uint32_t kHelloVersion = 1;
constexpr size_t kFrameHeaderSize = 24;

// A provider speaking this stream: its registered name (for logs) and the
// byte its hellos carry, so a listener refuses a peer of another provider
// that reached the wrong socket. The tags are wire values: never reuse one.
struct StreamProto {
  const char* name;
  uint8_t hello_tag;
  // Bytes of receive staging per connection: frames are parsed out of it,
  // payloads of 4 KiB and more bypass it (StreamEndpoint::progress_rx).
  // What fits a provider: tcp's stream carries every small message, shm's
  // only control frames, wake-ups and writes to memory it cannot map.
  uint32_t rx_staging = 64 * 1024;
};

struct FrameHeader {
  FrameType type;
  uint8_t flags;
  uint32_t length;
  uint64_t remote_addr;
  uint32_t rkey;
  uint32_t imm;
};

inline void encode_frame(const FrameHeader& h, uint8_t out[kFrameHeaderSize]) {
  out[0] = static_cast<uint8_t>(h.type);
  out[1] = h.flags;
  out[2] = out[3] = 0;
  uint32_t len = htobe32(h.length);
  uint64_t addr = htobe64(h.remote_addr);
  uint32_t rkey = htobe32(h.rkey);
  uint32_t imm = htobe32(h.imm);
  memcpy(out + 4, &len, 4);
  memcpy(out + 8, &addr, 8);
  memcpy(out + 16, &rkey, 4);
  memcpy(out + 20, &imm, 4);
}

inline void decode_frame(const uint8_t in[kFrameHeaderSize], FrameHeader* h) {
  uint32_t len, rkey, imm;
  uint64_t addr;
  memcpy(&len, in + 4, 4);
  memcpy(&addr, in + 8, 8);
  memcpy(&rkey, in + 16, 4);
  memcpy(&imm, in + 20, 4);
  h->type = static_cast<FrameType>(in[0]);
  h->flags = in[1];
  h->length = be32toh(len);
  h->remote_addr = be64toh(addr);
  h->rkey = be32toh(rkey);
  h->imm = be32toh(imm);
}

}  // namespace ss::prov::util

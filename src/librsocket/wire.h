// rsockets protocol version 1: the structures and immediate-data encoding
// that cross the wire (see docs/protocol.md). Private data is big-endian;
// rs_sge and rs_iomap entries written into a peer's memory use the byte
// order of the memory's owner.
#pragma once
#include <endian.h>

#include <cstdint>
#include <cstring>

namespace ss::rs {

constexpr uint8_t kProtocolVersion = 1;
constexpr uint8_t kConnFlagNet = 1 << 0;    // sender is big-endian
constexpr uint8_t kConnFlagIomap = 1 << 1;  // iomap table follows the target SGL

constexpr uint32_t kOlapStartSize = 2048;
constexpr uint32_t kMaxTransfer = 65536;
constexpr uint32_t kSndLowat = 2048;
constexpr uint32_t kQpMinSize = 16;
constexpr uint32_t kQpMaxSize = 0xFFFE;
constexpr uint32_t kQpCtrlSize = 4;
constexpr uint32_t kSglSize = 2;

// Immediate data: op in the top 3 bits.
enum Op : uint32_t {
  kOpData = 0,
  kOpRsvdDataMore = 1,
  kOpWrite = 2,  // local tag of riowrite work requests; never on the wire
  kOpRsvdDraMore = 3,
  kOpSgl = 4,
  kOpRsvd = 5,
  kOpIomapSgl = 6,
  kOpCtrl = 7,
};
enum Ctrl : uint32_t { kCtrlDisconnect = 0, kCtrlKeepalive = 1, kCtrlShutdown = 2 };

constexpr uint32_t make_imm(uint32_t op, uint32_t data) { return op << 29 | data; }
constexpr uint32_t imm_op(uint32_t imm) { return imm >> 29; }
constexpr uint32_t imm_data(uint32_t imm) { return imm & 0x1FFFFFFF; }

// 16 bytes; in the owner's byte order.
struct RsSge {
  uint64_t addr;
  uint32_t key;
  uint32_t length;
};
static_assert(sizeof(RsSge) == 16);

// 24 bytes; in the owner's byte order.
struct RsIomap {
  uint64_t offset;
  RsSge sge;
};
static_assert(sizeof(RsIomap) == 24);

constexpr size_t kIomapEntrySize = 24;
constexpr size_t kConnDataSize = 40;

// The 40-byte connection data exchanged as private data.
struct ConnData {
  uint8_t version = kProtocolVersion;
  uint8_t flags = 0;
  uint16_t credits = 0;
  uint8_t target_iomap_size = 0;  // encoded (encode_iomap_size)
  RsSge target_sgl{};
  RsSge data_buf{};

  void encode(uint8_t out[kConnDataSize]) const {
    memset(out, 0, kConnDataSize);
    out[0] = version;
    out[1] = flags;
    uint16_t c = htobe16(credits);
    memcpy(out + 2, &c, 2);
    out[7] = target_iomap_size;
    put_sge(out + 8, target_sgl);
    put_sge(out + 24, data_buf);
  }
  void decode(const uint8_t in[kConnDataSize]) {
    version = in[0];
    flags = in[1];
    uint16_t c;
    memcpy(&c, in + 2, 2);
    credits = be16toh(c);
    target_iomap_size = in[7];
    target_sgl = get_sge(in + 8);
    data_buf = get_sge(in + 24);
  }

 private:
  static void put_sge(uint8_t* p, const RsSge& s) {
    uint64_t a = htobe64(s.addr);
    uint32_t k = htobe32(s.key), l = htobe32(s.length);
    memcpy(p, &a, 8);
    memcpy(p + 8, &k, 4);
    memcpy(p + 12, &l, 4);
  }
  static RsSge get_sge(const uint8_t* p) {
    uint64_t a;
    uint32_t k, l;
    memcpy(&a, p, 8);
    memcpy(&k, p + 8, 4);
    memcpy(&l, p + 12, 4);
    return {be64toh(a), be32toh(k), be32toh(l)};
  }
};

// The iomap slot count travels in 8 bits: up to 128 as is, else 0x80 plus
// the count in units of 256 (so 129..255 come back as 128, 256 as 256).
constexpr uint8_t encode_iomap_size(uint32_t v) {
  return v <= 128 ? static_cast<uint8_t>(v) : static_cast<uint8_t>(0x80 | ((v >> 8) & 0x7F));
}
constexpr uint32_t decode_iomap_size(uint8_t x) {
  return x <= 128 ? x : static_cast<uint32_t>(x & 0x7F) << 8;
}
static_assert(decode_iomap_size(encode_iomap_size(128)) == 128);
static_assert(decode_iomap_size(encode_iomap_size(200)) == 128);
static_assert(decode_iomap_size(encode_iomap_size(300)) == 256);
static_assert(decode_iomap_size(encode_iomap_size(32512)) == 32512);

inline bool host_is_big_endian() { return htobe16(1) == 1; }

}  // namespace ss::rs

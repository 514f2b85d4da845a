// Shared by the NetFrame* tests: frames the kernel sent (captured, not
// built by us), an independent plain RFC 1071 sum, and helpers that make a
// mutated frame's checksums right again so only the check under test can
// catch the mutation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ss::net::test {

using Bytes = std::vector<uint8_t>;

// Captured on 25 Nov 2026, Linux 6.18, veth between two namespaces
// (sender 02:..:0a with `ethtool -K tx off`, so checksums are complete;
// received on 02:..:0b with an AF_PACKET socket): Python sockets sending
// from 10.77.0.1 / fd77::1 port 40000 to port 9000.
// sendto(b"hello, frame"), unconnected: DF, ID 0x1009.
inline const char* const kKernelV4 =
    "02000000000b02000000000a08004500002810094000401116200a4d00010a4d0002"
    "9c4023280014e79568656c6c6f2c206672616d65";
// send(b"abc") on a connected socket from port 40001: DF, ID 0xc2b9;
// 45 bytes (veth does not pad to 60).
inline const char* const kKernelV4Connected =
    "02000000000b02000000000a08004500001fc2b94000401163780a4d00010a4d0002"
    "9c412328000b676f616263";
// sendto(b"hello, frame") over IPv6: flow label 0xfd8f6 (Linux's automatic one).
inline const char* const kKernelV6 =
    "02000000000b02000000000a86dd600fd8f600141140fd7700000000000000000000"
    "00000001fd7700000000000000000000000000029c4023280014014068656c6c6f2c"
    "206672616d65";
// sendto(b"") over IPv6 to port 9001.
inline const char* const kKernelV6Empty =
    "02000000000b02000000000a86dd600cb6aa00081140fd7700000000000000000000"
    "00000001fd7700000000000000000000000000029c40232900084582";

inline Bytes hex(const std::string& s) {
  Bytes b;
  for (size_t i = 0; i + 1 < s.size(); i += 2)
    b.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  return b;
}

// RFC 1071 the slow way: big-endian 16-bit words added one by one.
inline uint16_t ref_sum(const uint8_t* p, size_t n, uint32_t start = 0) {
  uint32_t s = start;
  for (size_t i = 0; i < n; i += 2) {
    s += static_cast<uint32_t>(p[i]) << 8 | (i + 1 < n ? p[i + 1] : 0);
    s = (s & 0xffff) + (s >> 16);
  }
  return static_cast<uint16_t>(s);
}

inline uint16_t get16(const Bytes& f, size_t off) {
  return static_cast<uint16_t>(f[off] << 8 | f[off + 1]);
}
inline void put16(Bytes& f, size_t off, uint16_t v) {
  f[off] = static_cast<uint8_t>(v >> 8);
  f[off + 1] = static_cast<uint8_t>(v);
}

constexpr size_t kL3 = 14;  // the IP header's offset
inline bool is_v4(const Bytes& f) { return get16(f, 12) == 0x0800; }
inline size_t ihl_bytes(const Bytes& f) { return (f[kL3] & 0xf) * 4u; }
inline size_t udp_off(const Bytes& f) { return kL3 + (is_v4(f) ? ihl_bytes(f) : 40); }
// The bytes the IP length field covers after the IP header.
inline size_t ip_payload_len(const Bytes& f) {
  return is_v4(f) ? get16(f, kL3 + 2) - ihl_bytes(f) : get16(f, kL3 + 4);
}

inline void fix_ipv4_checksum(Bytes& f) {
  put16(f, kL3 + 10, 0);
  put16(f, kL3 + 10, static_cast<uint16_t>(~ref_sum(&f[kL3], ihl_bytes(f))));
}

// UDP checksum over the IP payload, the pseudo-header's length being that
// payload's length (what the UDP length field should say).
inline void fix_udp_checksum(Bytes& f) {
  const size_t u = udp_off(f), len = ip_payload_len(f);
  put16(f, u + 6, 0);
  uint32_t s = 17 + static_cast<uint32_t>(len);
  s = is_v4(f) ? ref_sum(&f[kL3 + 12], 8, s) : ref_sum(&f[kL3 + 8], 32, s);
  const uint16_t c = static_cast<uint16_t>(~ref_sum(&f[u], len, s));
  put16(f, u + 6, c ? c : 0xffff);
}

}  // namespace ss::net::test
